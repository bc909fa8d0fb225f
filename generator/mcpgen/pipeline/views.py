"""Stage 3a: the Python backend's view of a VersionIR, with every string a template prints precomputed.

Pipeline position: IR -> **view** -> render (templates print these) -> format -> write.

Templates print; they do not compute. So this module decides everything about Python syntax:
type expressions, field declarations, base classes, class order, import aliases. Every collection
is sorted here, so the output does not depend on dict or set order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..ir import (
    AnyType,
    ArrayType,
    Definition,
    FieldDef,
    LiteralType,
    MapType,
    Method,
    PrimitiveType,
    RefType,
    TypeExpr,
    UnionType,
    VersionIR,
)
from ..naming import escape_unprintable, snake_case
from .class_order import dependency_order, referenced_names

BASE = "_base"  # how generated version modules import mcp_bindings.base; no definition starts with "_"
TYPING_NAMES = ("TYPE_CHECKING", "Annotated", "Any", "ClassVar", "Literal", "Union")
PYDANTIC_NAMES = ("Field", "StrictBool", "StrictFloat", "StrictInt", "StrictStr")
TYPING_EXTENSIONS_NAMES = ("TypeAlias", "TypeAliasType")


def python_string(text: str) -> str:
    """A double-quoted Python literal (JSON string syntax is valid Python). JSON escapes control characters; the
    other unprintable ones (U+2028, bidi controls, a lone surrogate) are escaped too (`escape_unprintable`)."""
    return escape_unprintable(json.dumps(text, ensure_ascii=False))


def python_value(value: str | int | bool | None) -> str:
    return python_string(value) if isinstance(value, str) else repr(value)


def docstring_body(text: str | None) -> str | None:
    if not text:
        return None
    # Backslashes first, then unprintable characters as escapes: the docstring's value is the description itself.
    escaped = escape_unprintable(text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"'))
    # A quote right before the closing """ would end the string early: escape it, never drop it.
    return escaped[:-1] + '\\"' if escaped.endswith('"') else escaped


def indent_continuation(text: str | None, indent: str) -> str | None:
    """Indent every line but the first, for docstrings black does not re-indent (attribute docstrings)."""
    if text is None:
        return None
    return "\n".join(line if not line or index == 0 else indent + line for index, line in enumerate(text.split("\n")))


def method_constant(method: str) -> str:
    """tools/call -> TOOLS_CALL, notifications/tools/list_changed -> NOTIFICATIONS_TOOLS_LIST_CHANGED."""
    return snake_case(method).upper()


@dataclass(frozen=True)
class FieldView:
    declaration: str
    docstring: str | None


@dataclass(frozen=True)
class ClassView:
    name: str
    bases: str
    docstring: str | None
    class_vars: tuple[str, ...]
    fields: tuple[FieldView, ...]
    extra_declaration: str | None
    same_as: str | None = None  # printed as `name = same_as`: an inline object identical to that class


@dataclass(frozen=True)
class AliasView:
    name: str
    expression: str  # with every definition name quoted, so aliases can precede the classes
    docstring: str | None


@dataclass(frozen=True)
class MethodView:
    method: str
    constant: str
    kind: str
    direction: str
    delivery: str
    message_type: str
    params_type: str
    result_type: str | None
    result_rule: str | None
    alternatives: tuple[tuple[str, str, str | None, str], ...]  # (type, key, value or None, reason)
    summary: str
    direction_text: str
    result_annotation: str  # what parse_result returns for this method, in interfaces.py
    capability: str | None


@dataclass(frozen=True)
class ParseHelper:
    function: str
    target: str
    slot: str


DIRECTION_TEXT = {"client_to_server": "client → server", "server_to_client": "server → client", "both": "both"}
PARSE_HELPER_SLOTS = ("ClientRequest", "ServerRequest", "ClientNotification", "ServerNotification")


@dataclass(frozen=True)
class JsonRpcShapes:
    request: str
    notification: str
    result: str
    error: str


class TypeRenderer:
    """Python type expressions. `strict_primitives` spells str/int/float/bool as pydantic's Strict*
    types: needed in type aliases, which pydantic may build outside any strict model config
    (TypeAdapter(RequestId), or an alias shared between fields), where `True` would become `1`."""

    def __init__(self, names: dict[str, str], strict_primitives: bool = False) -> None:
        self.names = names  # imported helper name -> how this module spells it
        self.strict_primitives = strict_primitives

    def render(self, expr: TypeExpr, quote: bool) -> str:
        n = self.names
        if isinstance(expr, RefType):
            return python_string(expr.target) if quote else expr.target
        if isinstance(expr, PrimitiveType):
            return self._primitive(expr)
        if isinstance(expr, ArrayType):
            inner = f"list[{self.render(expr.items, quote)}]"
            if expr.max_items is None:
                return inner
            return f"{n['Annotated']}[{inner}, {n['Field']}(max_length={expr.max_items})]"
        if isinstance(expr, MapType):
            return f"dict[str, {self.render(expr.values, quote)}]"
        if isinstance(expr, LiteralType):
            values = ", ".join(python_value(v) for v in expr.values)
            if any(isinstance(v, int) for v in expr.values):
                # Literal[-32603] alone would also take -32603.0 and True (and dump -32603, 1).
                return f"{n['Annotated']}[{n['Literal']}[{values}], {BASE}.EXACT_INTEGER]"
            return f"{n['Literal']}[{values}]"
        if isinstance(expr, UnionType):
            # A number arm is itself Union[int, float]: spell its two arms out instead of nesting.
            arms = ", ".join(
                (
                    f"{self._spell('int')}, {self._spell('float')}"
                    if self._is_plain_number(arm)
                    else self.render(arm, quote)
                )
                for arm in expr.arms
            )
            union = f"{n['Union']}[{arms}]"
            if expr.discriminator is None:
                return union
            return f"{n['Annotated']}[{union}, {n['Field']}(discriminator={python_string(expr.discriminator)})]"
        if isinstance(expr, AnyType):
            return n["Any"]
        raise TypeError(expr)

    @staticmethod
    def _is_plain_number(expr: TypeExpr) -> bool:
        return (
            isinstance(expr, PrimitiveType) and expr.name == "number" and expr.minimum is None and expr.maximum is None
        )

    def _primitive(self, expr: PrimitiveType) -> str:
        if expr.name == "null":
            return "None"
        if expr.name == "number":
            return f"{self.names['Union']}[{self._bounded(self._spell('int'), expr)}, {self._bounded(self._spell('float'), expr)}]"
        return self._bounded(self._spell({"string": "str", "integer": "int", "boolean": "bool"}[expr.name]), expr)

    def _spell(self, python: str) -> str:
        return self.names["Strict" + python.capitalize()] if self.strict_primitives else python

    def _bounded(self, python: str, expr: PrimitiveType) -> str:
        bounds = [
            f"{key}={value!r}" for key, value in (("ge", expr.minimum), ("le", expr.maximum)) if value is not None
        ]
        if not bounds:
            return python
        return f"{self.names['Annotated']}[{python}, {self.names['Field']}({', '.join(bounds)})]"


def is_nullable(expr: TypeExpr) -> bool:
    if isinstance(expr, PrimitiveType):
        return expr.name == "null"
    if isinstance(expr, UnionType):
        return any(is_nullable(arm) for arm in expr.arms)
    return isinstance(expr, AnyType)


def is_omittable(field: FieldDef) -> bool:
    """A property that may be absent but is never null (``base.Omittable``): optional, not a constant, and its
    type has no null. The constructor treats a None given for it as absent (``base.MCPModel.OMITTABLE_FIELDS``)."""
    return not field.required and single_constant(field) is None and not is_nullable(field.type)


def required_meta(definition: Definition) -> tuple[FieldDef, str] | None:
    """The `_meta` field of an object definition and the definition it names, when it is required and names one."""
    meta = next((f for f in definition.fields if f.wire_name == "_meta"), None)
    if meta is None or not meta.required or not isinstance(meta.type, RefType):
        return None
    return meta, meta.type.target


def single_constant(field: FieldDef) -> str | int | bool | None:
    if field.required and isinstance(field.type, LiteralType) and len(field.type.values) == 1:
        return field.type.values[0]
    return None


JSON_SCHEMA_KEYS = {
    "$schema": PrimitiveType("string"),
    "properties": MapType(MapType(AnyType())),
    "required": ArrayType(PrimitiveType("string")),
    "type": LiteralType(("object",)),
}


def is_json_schema_value(definition: Definition) -> bool:
    """An object that is itself a JSON Schema with untyped property schemas (Tool.inputSchema,
    Tool.outputSchema): rendered as a base.JSONSchemaObject, the dict itself checked on the keys the
    definition types, instead of a model per schema. A schema whose properties are typed (an elicitation's
    requestedSchema: PrimitiveSchemaDefinition) stays a model."""
    fields = {field.wire_name: field for field in definition.fields}
    return (
        definition.kind == "object"
        and definition.extra_values is None
        and "type" in fields
        and fields["type"].required
        and all(JSON_SCHEMA_KEYS.get(name) == field.type for name, field in fields.items())
        and not any(field.required for name, field in fields.items() if name != "type")
    )


class ModelsView:
    """Everything models.py, methods.py, interfaces.py and INTERFACES.md print for one version."""

    def __init__(self, ir: VersionIR) -> None:
        self.ir = ir
        self.definitions = {d.name: d for d in ir.definitions}
        self.names = {name: (f"_{name}" if name in self.definitions else name) for name in self._imported_names()}
        self.types = TypeRenderer(self.names)
        self.alias_types = TypeRenderer(self.names, strict_primitives=True)
        self.slot_aliases = {info.slot for info in ir.union_slots if info.form in ("alias", "single")}
        self.sender_fields = self._sender_fields()

    @staticmethod
    def _imported_names() -> tuple[str, ...]:
        return TYPING_NAMES + PYDANTIC_NAMES + TYPING_EXTENSIONS_NAMES

    def imports(self) -> dict[str, tuple[str, ...]]:
        """module -> sorted 'Name' or 'Name as _Name' entries."""

        def entries(names: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(sorted(n if self.names[n] == n else f"{n} as {self.names[n]}" for n in names))

        return {
            "typing": entries(TYPING_NAMES),
            "pydantic": entries(PYDANTIC_NAMES),
            "typing_extensions": entries(TYPING_EXTENSIONS_NAMES),
        }

    # -- models.py -----------------------------------------------------------------------------

    def _is_class(self, definition: Definition) -> bool:
        if definition.kind == "object":
            return True
        return (
            definition.kind == "alias"
            and isinstance(definition.type, RefType)
            and definition.name not in self.slot_aliases
            and self._is_class(self.definitions[definition.type.target])
        )

    def aliases(self) -> tuple[AliasView, ...]:
        return tuple(
            AliasView(d.name, self.alias_types.render(d.type, quote=True), docstring_body(d.description))  # type: ignore[arg-type]
            for d in self.ir.definitions
            if not self._is_class(d)
        )

    def classes(self) -> tuple[ClassView, ...]:
        """Classes in dependency order (see class_order): each after the classes its fields name and,
        for a subclass-alias (EmptyResult(Result)), after its base."""
        same_as = self._shared_definitions()
        dependencies = {
            d.name: (
                {same_as[d.name]}
                if d.name in same_as
                else (
                    set().union(*(referenced_names(f.type) for f in d.fields), referenced_names(d.extra_values))
                    if d.kind == "object"
                    else referenced_names(d.type)
                )
            )
            for d in self.ir.definitions
            if self._is_class(d)
        }
        defined: set[str] = set()
        views = []
        for name in dependency_order(dependencies):
            definition = self.definitions[name]
            if name in same_as:
                views.append(ClassView(name, "", None, (), (), None, same_as=same_as[name]))
            elif definition.kind == "object":
                views.append(self._object_class(definition, frozenset(dependencies.keys() - defined)))
            else:
                views.append(self._alias_class(definition))
            defined.add(name)
        return tuple(views)

    def _shared_definitions(self) -> dict[str, str]:
        """Inline `_meta` objects identical to another (same properties, descriptions, docstring), as the
        `_meta` of every request's params is (CallToolRequestParamsMeta is RequestParamsMeta): each is
        made the same class as the first of its kind (the shortest name, then by name), which saves a
        class per copy when a version is imported. name -> the class it is."""
        first: dict[tuple[object, ...], str] = {}
        same_as: dict[str, str] = {}
        objects = sorted((d for d in self.ir.definitions if d.kind == "object"), key=lambda d: (len(d.name), d.name))
        for definition in objects:
            if not (definition.inline and definition.pointer.endswith("/properties/_meta")):
                continue  # only `_meta` objects: params or results that look alike stay distinct classes
            shape = (definition.fields, definition.extra_values, definition.description, definition.role)
            if shape in first:
                same_as[definition.name] = first[shape]
            else:
                first.setdefault(shape, definition.name)
        return same_as

    def _sender_fields(self) -> dict[str, tuple[FieldDef, ...]]:
        """definition name -> its fields the sending connection fills in (base.MCPModelWithSenderFields): a
        required `_meta` of the class a request's params require as `_meta` (2026-07-28's RequestMetaObject, which
        carries the version, capabilities and identity the client stamps on every request). Older versions'
        request `_meta` is optional, so none of their fields is one. Shapes that are not a request's params but
        share its `_meta` (RequestParams, PaginatedRequestParams) are included: they are built to be sent too."""
        request_params = {m.params_type for m in self.ir.methods if m.kind == "request" and m.params_type}
        request_metas = {meta[1] for name in request_params if (meta := required_meta(self.definitions[name]))}
        # Only a class can be left out this way (the constructor stands an empty instance in for it).
        request_metas = {name for name in request_metas if self._is_class(self.definitions[name])}
        sender_fields: dict[str, tuple[FieldDef, ...]] = {}
        for definition in self.ir.definitions:
            meta = required_meta(definition)
            if meta is not None and meta[1] in request_metas:
                sender_fields[definition.name] = (meta[0],)
        return sender_fields

    def _alias_class(self, definition: Definition) -> ClassView:
        target = definition.type.target  # type: ignore[union-attr]
        docstring = docstring_body(definition.description or f"The same shape as {target}.")
        return ClassView(definition.name, target, docstring, (), (), None)

    def _object_class(self, definition: Definition, undefined: frozenset[str] = frozenset()) -> ClassView:
        """`undefined`: the classes not defined yet at this point of models.py (annotations naming one
        are strings, resolved by pydantic on first use)."""
        if is_json_schema_value(definition):
            keys = ", ".join(python_string(name) for name in sorted(f.wire_name for f in definition.fields))
            typed_keys = f"TYPED_KEYS: {self.names['ClassVar']}[frozenset[str]] = frozenset({{{keys}}})"
            docstring = docstring_body(definition.description)
            return ClassView(definition.name, f"{BASE}.JSONSchemaObject", docstring, (typed_keys,), (), None)
        constants = [f.python_name for f in definition.fields if single_constant(f) is not None]
        sender_fields = self.sender_fields.get(definition.name, ())
        bases = [f"{BASE}.MCPModelWithConstants"] if constants else []
        bases += [f"{BASE}.MCPModelWithSenderFields"] if sender_fields else []
        bases = bases or [f"{BASE}.MCPModel"]
        class_vars: list[str] = []
        method = self._method_for(definition.name)
        if definition.role == "request":
            result = method.result_type if method and method.result_type else "Any"
            bases.append(f"{BASE}.Request[{self._params_argument(definition, undefined)}, {python_string(result)}]")
        elif definition.role == "notification":
            bases.append(f"{BASE}.Notification[{self._params_argument(definition, undefined)}]")
        elif definition.role == "result":
            bases.append(f"{BASE}.Result")
        if method is not None:
            class_vars.append(f"METHOD: {self.names['ClassVar']}[str] = {python_string(method.method)}")
        if constants:
            members = ", ".join(
                f"{python_string(f.python_name)}: {python_value(single_constant(f))}"
                for f in sorted(definition.fields, key=lambda f: f.python_name)
                if single_constant(f) is not None
            )
            class_vars.append(
                f"CONSTANT_FIELDS: {self.names['ClassVar']}[dict[str, {self.names['Any']}]] = {{{members}}}"
            )
        if sender_fields:
            members = ", ".join(
                f"{python_string(f.python_name)}: {python_string(f.wire_name)}"
                for f in sorted(sender_fields, key=lambda f: f.python_name)
            )
            class_vars.append(f"SENDER_FIELDS: {self.names['ClassVar']}[dict[str, str]] = {{{members}}}")
        omittable = sorted(
            {name for f in definition.fields if is_omittable(f) for name in (f.python_name, f.wire_name)}
        )
        if omittable:
            # Both spellings: the constructor takes a field by its Python name or its wire name.
            members = ", ".join(python_string(name) for name in omittable)
            class_vars.append(f"OMITTABLE_FIELDS: {self.names['ClassVar']}[frozenset[str]] = frozenset({{{members}}})")
        extra = None
        if definition.extra_values is not None:
            values = self._annotation(definition.extra_values, undefined)
            extra = f"__pydantic_extra__: dict[str, {values}] = {self.names['Field']}(init=False)"
        return ClassView(
            definition.name,
            ", ".join(bases),
            docstring_body(definition.description),
            tuple(class_vars),
            tuple(self._field(f, undefined, f in sender_fields) for f in definition.fields),
            extra,
        )

    def _params_argument(self, definition: Definition, undefined: frozenset[str]) -> str:
        params = next((f for f in definition.fields if f.wire_name == "params"), None)
        if params is None:
            return "None"
        rendered = self.types.render(params.type, quote=bool(referenced_names(params.type) & undefined))
        return rendered if params.required else f"{self.names['Union']}[{rendered}, None]"

    def _method_for(self, definition_name: str) -> Method | None:
        for method in self.ir.methods:
            if method.message_type == definition_name:
                return method
        return None

    def _annotation(self, expr: TypeExpr, undefined: frozenset[str]) -> str:
        rendered = self.types.render(expr, quote=False)
        return python_string(rendered) if referenced_names(expr) & undefined else rendered

    def _field(self, field: FieldDef, undefined: frozenset[str], filled_by_sender: bool = False) -> FieldView:
        annotation = self.types.render(field.type, quote=False)
        forward = bool(referenced_names(field.type) & undefined)
        alias = field.wire_name if field.wire_name != field.python_name else None
        alias_argument = f"alias={python_string(alias)}" if alias is not None else None
        constant = single_constant(field)
        declaration = f"{field.python_name}: {python_string(annotation) if forward else annotation}"
        if constant is not None:
            # Required on the wire, filled in by the constructor: see base.constant.
            arguments = ", ".join(a for a in (python_value(constant), alias_argument) if a)
            declaration += f" = {BASE}.constant({arguments})"
        elif filled_by_sender:
            # Required on the wire, may be left out by the constructor: see base.filled_by_sender.
            declaration += f" = {BASE}.filled_by_sender({alias_argument or ''})"
        elif not field.required:
            if is_omittable(field):
                # May be absent, but an explicit null is invalid: see base.Omittable.
                omittable = f"{BASE}.Omittable[{annotation}]"
                declaration = f"{field.python_name}: {python_string(omittable) if forward else omittable}"
            if alias_argument:
                declaration += f" = {self.names['Field']}(default=None, {alias_argument})"
            else:
                declaration += " = None"
        elif alias_argument:
            declaration += f" = {self.names['Field']}({alias_argument})"
        return FieldView(declaration, indent_continuation(docstring_body(field.description), "    "))

    def result_assignments(self) -> tuple[tuple[str, str], ...]:
        return tuple(
            (m.message_type, m.result_type)
            for m in self.ir.methods
            if m.kind == "request" and m.result_type is not None
        )

    def exported_names(self) -> tuple[str, ...]:
        return tuple(sorted(d.name for d in self.ir.definitions))

    def methods_exports(self) -> tuple[str, ...]:
        """methods.py's public names: its `__all__`, and what the version package loads from it."""
        return ("Method", "ErrorCode", *self.method_sets())

    def interfaces_exports(self) -> tuple[str, ...]:
        """interfaces.py's public names: its `__all__`, and what the version package loads from it."""
        parse_message = ("parse_message",) if self.jsonrpc_shapes() else ()
        return (
            "JSONInput",
            "NOTIFICATION_TYPES",
            "REQUEST_TYPES",
            "RESULT_ALTERNATIVES",
            "RESULT_TYPES",
            *(helper.function for helper in self.parse_helpers()),
            *parse_message,
            "parse_result",
        )

    def package_exports(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(sub-module, its public names) in the order the version package's `__all__` lists them."""
        return (
            ("models", self.exported_names()),
            ("methods", self.methods_exports()),
            ("interfaces", self.interfaces_exports()),
        )

    # -- methods.py, interfaces.py, INTERFACES.md ---------------------------------------------

    def methods(self) -> tuple[MethodView, ...]:
        return tuple(self._method_view(m) for m in self.ir.methods)

    def _method_view(self, method: Method) -> MethodView:
        summary = escape_unprintable((method.description or "").split("\n", 1)[0]).replace("|", "\\|")
        return MethodView(
            method.method,
            method_constant(method.method),
            method.kind,
            method.direction,
            method.delivery,
            method.message_type,
            method.params_type or "",
            method.result_type,
            method.result_rule,
            tuple((a.type, a.key, a.value, a.reason) for a in method.alternatives),
            summary,
            DIRECTION_TEXT[method.direction]
            + (" (inside InputRequiredResult)" if method.delivery == "input_request" else ""),
            self._result_annotation(method),
            method.capability,
        )

    @staticmethod
    def _result_annotation(method: Method) -> str:
        results = [f"_m.{name}" for name in [method.result_type, *(a.type for a in method.alternatives)] if name]
        return results[0] if len(results) == 1 else f"Union[{', '.join(results)}]"

    def parse_helpers(self) -> tuple[ParseHelper, ...]:
        helpers = []
        for info in self.ir.union_slots:
            if info.slot in PARSE_HELPER_SLOTS and info.form != "absent":
                helpers.append(ParseHelper("parse_" + snake_case(info.slot), info.slot, info.slot))
        return tuple(helpers)

    def slot_notes(self) -> tuple[str, ...]:
        notes = [info.note for info in self.ir.union_slots if info.note]
        if self.method_sets()["INPUT_REQUESTS"]:
            notes.append(
                "Server-to-client requests are not JSON-RPC requests in this version: they travel inside an "
                "InputRequiredResult (`inputRequests`), and the client answers in the retried request's "
                "`inputResponses`. They are listed in INPUT_REQUESTS."
            )
        return tuple(notes)

    def method_sets(self) -> dict[str, tuple[str, ...]]:
        """Constant name -> sorted method constants, for the per-direction subsets."""
        sets: dict[str, list[str]] = {
            "CLIENT_REQUESTS": [],
            "SERVER_REQUESTS": [],
            "CLIENT_NOTIFICATIONS": [],
            "SERVER_NOTIFICATIONS": [],
            "INPUT_REQUESTS": [],
        }
        for m in self.ir.methods:
            constant = method_constant(m.method)
            if m.delivery == "input_request":
                sets["INPUT_REQUESTS"].append(constant)
                continue
            prefix = "REQUESTS" if m.kind == "request" else "NOTIFICATIONS"
            if m.direction in ("client_to_server", "both"):
                sets[f"CLIENT_{prefix}"].append(constant)
            if m.direction in ("server_to_client", "both"):
                sets[f"SERVER_{prefix}"].append(constant)
        return {name: tuple(sorted(members)) for name, members in sets.items()}

    def jsonrpc_shapes(self) -> JsonRpcShapes | None:
        """Which JSON-RPC definitions are request, notification, result response and error
        response; None when the schema does not define all four (then no parse_message)."""
        if self.ir.slot("JSONRPCMessage").form != "union":
            return None
        by_shape: dict[str, str] = {}
        for name in self.ir.slot("JSONRPCMessage").members:
            wire = {f.wire_name for f in self.definitions[name].fields}
            if {"method", "id"} <= wire:
                by_shape["request"] = name
            elif "method" in wire:
                by_shape["notification"] = name
            elif "error" in wire:
                by_shape["error"] = name
            else:
                by_shape["result"] = name
        if set(by_shape) != {"request", "notification", "result", "error"}:
            return None
        return JsonRpcShapes(by_shape["request"], by_shape["notification"], by_shape["result"], by_shape["error"])
