"""Stage 2a: turn one JSON Schema document into IR definitions.

Pipeline position: load -> **parse definitions** -> protocol analysis (protocol.py) -> render.

Handles every construct the MCP schemas use: draft-07 `definitions` and 2020-12 `$defs`, `$ref`
(with a sibling description), `anyOf`/`oneOf`, `allOf` (merged), string and integer `const`,
`enum`, `additionalProperties` as true/{}/a schema, type arrays, formats, recursive aliases and
inline objects, which get names from where they sit (CallToolRequest.params -> CallToolRequestParams).
Schemas written by zod (the extensions'), also: `propertyNames: {"type": "string"}` (says nothing: every JSON key is
a string), an `allOf` with one `anyOf` part (distributed: one arm per alternative, each merged with the other parts),
and, when asked (`named_copies`), inline copies of a named definition (that definition, not a second class).

Anything that would change validation but that we do not model (an unknown keyword or type, a
dangling or external $ref, an alias cycle) is an error naming its JSON pointer: we never
silently generate a looser type than the schema.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
from typing import Any

from ..errors import SpecError, SpecErrors, join_pointer
from ..ir import (
    AnyType,
    ArrayType,
    Definition,
    FieldDef,
    LiteralType,
    MapType,
    PrimitiveType,
    RefType,
    TypeExpr,
    UnionType,
)
from ..naming import clean_description, pascal_case, python_field_name, snake_case, unique_name

PRIMITIVES = ("string", "integer", "number", "boolean", "null")
# Keywords that only annotate: they never change what validates.
ANNOTATION_KEYWORDS = frozenset({"description", "title", "$comment", "default", "examples", "deprecated", "format"})
HANDLED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "$ref",
        "minimum",
        "maximum",
        "maxItems",
        "$schema",
        "$id",
    }
)
# The one `propertyNames` schema accepted: it restricts nothing, since every key of a JSON object is a string.
VACUOUS_PROPERTY_NAMES = {"type": "string"}
# An inline schema with one of these keys that equals a named definition is that definition (see _named_copy).
STRUCTURE_KEYWORDS = ("properties", "allOf", "anyOf", "oneOf")
# The discriminator we prefer when several properties would do.
PREFERRED_DISCRIMINATORS = ("method", "type")


class SchemaParser:
    def __init__(self, document: dict[str, Any], label: str, named_copies: bool = False) -> None:
        """`named_copies`: read an inline schema equal to a named definition as that definition (for schemas that
        write shared types out where they are used, as the extensions' zod-generated ones do). Off for the protocol
        versions, whose look-alike inline objects (InitializedNotification.params) stay classes of their own."""
        self.label = label
        self.document = document
        has_defs, has_definitions = "$defs" in document, "definitions" in document
        if has_defs and has_definitions:
            raise SpecError(label, "", "the schema has both '$defs' and 'definitions'; use one")
        if not has_defs and not has_definitions:
            raise SpecError(label, "", "the schema has neither '$defs' (2020-12) nor 'definitions' (draft-07)")
        self.defs_key = "$defs" if has_defs else "definitions"
        raw = document[self.defs_key]
        if not isinstance(raw, dict):
            raise SpecError(label, "/" + self.defs_key, f"'{self.defs_key}' must be an object")
        self.raw_definitions: dict[str, Any] = raw
        self.definition_names = frozenset(raw)
        self.taken_names: set[str] = set(raw)
        self.definitions: dict[str, Definition] = {}
        # A generator that inlines shared types (zod) writes a named definition out again where it is used, marked
        # only by the `$schema` every top-level definition carries: canonical JSON without it -> the definition.
        self.named_shapes: dict[str, str] = {}
        for name in (
            sorted(raw, reverse=True) if named_copies else ()
        ):  # the first name wins when two definitions are identical
            if isinstance(raw[name], dict) and any(key in raw[name] for key in STRUCTURE_KEYWORDS):
                self.named_shapes[_canonical(raw[name])] = name

    # -- entry point -------------------------------------------------------------------------

    def parse(self) -> dict[str, Definition]:
        errors: list[SpecError] = []
        for name in sorted(self.raw_definitions):
            pointer = join_pointer("", self.defs_key, name)
            try:
                self._check_definition_name(name, pointer)
                self.definitions[name] = self._named_definition(name, self.raw_definitions[name], pointer)
            except SpecError as error:
                errors.append(error)
        if not errors:
            errors.extend(self._alias_cycles())
        if errors:
            raise SpecErrors(errors)
        return {name: self._with_discriminators(d) for name, d in sorted(self.definitions.items())}

    def _error(self, pointer: str, message: str) -> SpecError:
        return SpecError(self.label, pointer, message)

    def _check_definition_name(self, name: str, pointer: str) -> None:
        if not name.isidentifier() or name.startswith("_") or keyword.iskeyword(name):
            raise self._error(pointer, f"definition name {name!r} is not usable as a Python class name")

    def _describe(self, node: dict[str, Any]) -> str | None:
        description = node.get("description")
        return clean_description(description if isinstance(description, str) else None, self.definition_names)

    # -- named definitions -------------------------------------------------------------------

    def _named_definition(self, name: str, node: Any, pointer: str) -> Definition:
        node = self._schema_object(node, pointer)
        description = self._describe(node)
        if "$ref" in node:
            return Definition(name, "alias", pointer, description, type=self._ref(node, pointer))
        distributed = self._distributed_all_of(node, pointer)
        if distributed is not None:
            node = distributed
        elif "allOf" in node:
            return self._object_definition(
                name, self._merge_all_of(node, pointer, frozenset({name})), pointer, inline=False
            )
        if "anyOf" in node or "oneOf" in node:
            union = self._union(node, name, pointer)
            if isinstance(union, UnionType):
                return Definition(name, "union", pointer, description, type=union)
            return Definition(name, "alias", pointer, description, type=union)
        if "enum" in node:
            return Definition(name, "enum", pointer, description, type=self._literal(node, pointer))
        if "const" in node:
            return Definition(name, "const", pointer, description, type=self._literal(node, pointer))
        if "properties" in node:
            return self._object_definition(name, node, pointer, inline=False)
        return Definition(name, "alias", pointer, description, type=self._type(node, name, pointer))

    def _object_definition(self, name: str, node: dict[str, Any], pointer: str, inline: bool) -> Definition:
        properties = node.get("properties", {})
        if not isinstance(properties, dict):
            raise self._error(pointer + "/properties", "'properties' must be an object")
        required = node.get("required", [])
        if not isinstance(required, list) or not all(isinstance(item, str) for item in required):
            raise self._error(pointer + "/required", "'required' must be an array of property names")
        for missing in sorted(set(required) - set(properties)):
            raise self._error(pointer + "/required", f"required property {missing!r} is not declared in 'properties'")
        fields = []
        python_names = _python_names(list(properties))
        for wire_name, subschema in properties.items():
            field_pointer = join_pointer(pointer, "properties", wire_name)
            subschema = self._schema_object(subschema, field_pointer)
            python_name = python_names[wire_name]
            field_type = self._type(subschema, name + pascal_case(wire_name), field_pointer)
            fields.append(
                FieldDef(wire_name, python_name, field_type, wire_name in required, self._describe(subschema))
            )
        extra = node.get("additionalProperties", True)
        extra_values = None
        if extra is False:
            raise self._error(pointer + "/additionalProperties", "'additionalProperties: false' is not supported")
        if extra is not True and extra != {}:
            extra_values = self._type(
                self._schema_object(extra, pointer + "/additionalProperties"),
                name + "Value",
                pointer + "/additionalProperties",
            )
        return Definition(name, "object", pointer, self._describe(node), tuple(fields), extra_values, inline=inline)

    def _merge_all_of(self, node: dict[str, Any], pointer: str, via: frozenset[str] = frozenset()) -> dict[str, Any]:
        """Flatten allOf into one object schema; later parts override earlier properties.
        `via` holds the definitions already being merged, so a cycle is an error, not a recursion."""
        parts = node["allOf"]
        if not isinstance(parts, list) or not parts:
            raise self._error(pointer + "/allOf", "'allOf' must be a non-empty array")
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for index, part in enumerate(parts):
            part_pointer = f"{pointer}/allOf/{index}"
            part_node = self._schema_object(part, part_pointer)
            target = self._ref(part_node, part_pointer).target if "$ref" in part_node else None
            if target is not None and target in via:
                raise self._error(part_pointer, f"allOf cycle: {target} includes itself")
            part = self._follow_refs(part_node, part_pointer)
            if "anyOf" in part or "oneOf" in part:
                # Merging would drop the alternatives (a looser type); only a direct union part is distributed.
                raise self._error(part_pointer, "an 'allOf' part that is a union is supported only written inline")
            if "allOf" in part:
                part = self._merge_all_of(part, part_pointer, via | ({target} if target else set()))
            if part.get("type", "object") != "object":
                raise self._error(part_pointer, "every 'allOf' part must be an object schema")
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += [key for key in part.get("required", []) if key not in merged["required"]]
            if "additionalProperties" in part:
                merged["additionalProperties"] = part["additionalProperties"]
        if "description" in node:
            merged["description"] = node["description"]
        return merged

    def _distributed_all_of(self, node: dict[str, Any], pointer: str) -> dict[str, Any] | None:
        """`allOf: [A, anyOf: [X, Y]]` as `anyOf: [allOf: [A, X], allOf: [A, Y]]` (the same instances validate), or
        None when no part of an allOf is a union written inline. Two union parts would multiply arms: refused."""
        parts = node.get("allOf")
        if not isinstance(parts, list):
            return None
        unions = [
            index
            for index, part in enumerate(parts)
            if isinstance(part, dict) and ("anyOf" in part or "oneOf" in part) and "$ref" not in part
        ]
        if not unions:
            return None
        if len(unions) > 1:
            raise self._error(pointer + "/allOf", "an 'allOf' with more than one union part is not supported")
        index = unions[0]
        union_part = self._schema_object(parts[index], f"{pointer}/allOf/{index}")
        keyword = "anyOf" if "anyOf" in union_part else "oneOf"
        arms = union_part[keyword]
        if not isinstance(arms, list) or not arms:
            raise self._error(f"{pointer}/allOf/{index}/{keyword}", f"'{keyword}' must be a non-empty array")
        rewritten: dict[str, Any] = {keyword: [{"allOf": [*parts[:index], arm, *parts[index + 1 :]]} for arm in arms]}
        if "description" in node:
            rewritten["description"] = node["description"]
        return rewritten

    def _named_copy(self, node: dict[str, Any]) -> RefType | None:
        """The named definition an inline schema copies (DetailedTask's arms are WorkingTask, ...), if any."""
        if not any(key in node for key in STRUCTURE_KEYWORDS):
            return None
        name = self.named_shapes.get(_canonical(node))
        return RefType(name) if name is not None else None

    def _follow_refs(self, node: dict[str, Any], pointer: str) -> dict[str, Any]:
        seen: set[str] = set()
        while "$ref" in node:
            target = self._ref(node, pointer).target
            if target in seen:
                raise self._error(pointer, f"$ref cycle through {target}")
            seen.add(target)
            pointer = join_pointer("", self.defs_key, target)
            node = self._schema_object(self.raw_definitions[target], pointer)
        return node

    # -- type expressions --------------------------------------------------------------------

    def _schema_object(self, node: Any, pointer: str) -> dict[str, Any]:
        if node is True:
            return {}
        if not isinstance(node, dict):
            raise self._error(pointer, f"a schema must be an object, not {type(node).__name__}")
        unknown = set(node) - ANNOTATION_KEYWORDS - HANDLED_KEYWORDS
        if "propertyNames" in node and node["propertyNames"] == VACUOUS_PROPERTY_NAMES:
            unknown.discard("propertyNames")
        if unknown:
            raise self._error(pointer, f"unsupported schema keyword(s): {', '.join(sorted(unknown))}")
        return node

    def _ref(self, node: dict[str, Any], pointer: str) -> RefType:
        ref = node["$ref"]
        prefix = f"#/{self.defs_key}/"
        if not isinstance(ref, str) or not ref.startswith(prefix):
            raise self._error(pointer + "/$ref", f"unsupported $ref {ref!r}: only local refs of the form {prefix}Name")
        target = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
        if target not in self.raw_definitions:
            raise self._error(pointer + "/$ref", f"dangling $ref: no definition {target!r}")
        siblings = set(node) - {"$ref"} - ANNOTATION_KEYWORDS
        if siblings:
            raise self._error(pointer, f"$ref with sibling keyword(s) {', '.join(sorted(siblings))} is not supported")
        return RefType(target)

    def _literal(self, node: dict[str, Any], pointer: str) -> LiteralType:
        values = node["enum"] if "enum" in node else [node["const"]]
        where = pointer + ("/enum" if "enum" in node else "/const")
        if not isinstance(values, list) or not values:
            raise self._error(where, "'enum' must be a non-empty array")
        for value in values:
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise self._error(where, f"only string and integer constants are supported, not {value!r}")
        return LiteralType(tuple(values))

    def _union(self, node: dict[str, Any], context: str, pointer: str) -> TypeExpr:
        keyword = "anyOf" if "anyOf" in node else "oneOf"
        arms_raw = node[keyword]
        if not isinstance(arms_raw, list) or not arms_raw:
            raise self._error(f"{pointer}/{keyword}", f"'{keyword}' must be a non-empty array")
        arms: list[TypeExpr] = []
        for index, arm in enumerate(arms_raw):
            arm_pointer = f"{pointer}/{keyword}/{index}"
            parsed = self._type(self._schema_object(arm, arm_pointer), f"{context}Variant{index + 1}", arm_pointer)
            for flat in parsed.arms if isinstance(parsed, UnionType) else (parsed,):
                if flat not in arms:
                    arms.append(flat)
        return arms[0] if len(arms) == 1 else UnionType(tuple(arms))

    def _type(self, node: dict[str, Any], context: str, pointer: str) -> TypeExpr:
        """The type expression for `node`; inline objects become definitions named `context`."""
        if "$ref" in node:
            return self._ref(node, pointer)
        named = self._named_copy(node)
        if named is not None:
            return named
        distributed = self._distributed_all_of(node, pointer)
        if distributed is not None:
            return self._union(distributed, context, pointer)
        if "allOf" in node:
            return self._inline_object(self._merge_all_of(node, pointer), context, pointer)
        if "anyOf" in node or "oneOf" in node:
            return self._union(node, context, pointer)
        if "enum" in node or "const" in node:
            return self._literal(node, pointer)
        declared = node.get("type")
        if isinstance(declared, list):
            if not declared or not all(isinstance(item, str) and item in PRIMITIVES for item in declared):
                raise self._error(pointer + "/type", f"type arrays may only list primitive types, not {declared!r}")
            arms = tuple(self._primitive(name, node, pointer) for name in declared)
            return arms[0] if len(arms) == 1 else UnionType(arms)
        if declared == "object" or (declared is None and "properties" in node):
            if node.get("properties"):
                return self._inline_object(node, context, pointer)
            extra = node.get("additionalProperties", True)
            if extra is False:
                raise self._error(pointer + "/additionalProperties", "'additionalProperties: false' is not supported")
            if extra is True or extra == {}:
                return MapType(AnyType())
            extra_pointer = pointer + "/additionalProperties"
            return MapType(self._type(self._schema_object(extra, extra_pointer), context + "Value", extra_pointer))
        if declared == "array":
            items = node.get("items", {})
            if isinstance(items, list):
                raise self._error(pointer + "/items", "tuple-form 'items' is not supported")
            items_pointer = pointer + "/items"
            item_type = self._type(self._schema_object(items, items_pointer), context + "Item", items_pointer)
            max_items = node.get("maxItems")
            if max_items is not None and (
                not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 0
            ):
                raise self._error(
                    pointer + "/maxItems", f"'maxItems' must be a non-negative integer, not {max_items!r}"
                )
            return ArrayType(item_type, max_items)
        if declared in PRIMITIVES:
            return self._primitive(declared, node, pointer)
        if declared is None:
            return AnyType()
        raise self._error(pointer + "/type", f"unknown type {declared!r}")

    def _primitive(self, name: str, node: dict[str, Any], pointer: str) -> PrimitiveType:
        numeric = name in ("integer", "number")
        for bound in ("minimum", "maximum"):
            value = node.get(bound)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise self._error(f"{pointer}/{bound}", f"'{bound}' must be a number, not {value!r}")
        fmt = node.get("format") if name == "string" else None
        return PrimitiveType(
            name,  # type: ignore[arg-type]  # checked against PRIMITIVES by the caller
            fmt if isinstance(fmt, str) else None,
            node.get("minimum") if numeric else None,
            node.get("maximum") if numeric else None,
        )

    def _inline_object(self, node: dict[str, Any], context: str, pointer: str) -> RefType:
        name = unique_name(context, self.taken_names)
        self.taken_names.add(name)
        self.definitions[name] = self._object_definition(name, node, pointer, inline=True)
        return RefType(name)

    # -- whole-schema checks -----------------------------------------------------------------

    def _alias_cycles(self) -> list[SpecError]:
        """An alias or union that reaches itself through aliases and unions alone has no type."""
        errors = []
        for start, definition in sorted(self.definitions.items()):
            if definition.kind not in ("alias", "union"):
                continue
            stack, seen = list(_direct_refs(definition.type)), set()
            while stack:
                target = stack.pop()
                if target == start:
                    errors.append(
                        self._error(definition.pointer, f"cyclic alias: {start} refers to itself through aliases only")
                    )
                    break
                if target in seen:
                    continue
                seen.add(target)
                reached = self.definitions[target]
                if reached.kind in ("alias", "union"):
                    stack.extend(_direct_refs(reached.type))
        return errors

    def _with_discriminators(self, definition: Definition) -> Definition:
        def visit(expr: TypeExpr) -> TypeExpr:
            if isinstance(expr, UnionType):
                arms = tuple(visit(arm) for arm in expr.arms)
                return UnionType(arms, self._discriminator(arms))
            if isinstance(expr, ArrayType):
                return ArrayType(visit(expr.items), expr.max_items)
            if isinstance(expr, MapType):
                return MapType(visit(expr.values))
            return expr

        def visit_optional(expr: TypeExpr | None) -> TypeExpr | None:
            return None if expr is None else visit(expr)

        fields = tuple(dataclasses.replace(f, type=visit(f.type)) for f in definition.fields)
        return dataclasses.replace(
            definition,
            fields=fields,
            type=visit_optional(definition.type),
            extra_values=visit_optional(definition.extra_values),
        )

    def _discriminator(self, arms: tuple[TypeExpr, ...]) -> str | None:
        """A property that every arm (an object definition) requires as a constant, with no value
        shared between arms: then a union is parsed in one pass instead of arm by arm."""
        objects = []
        for arm in arms:
            if not isinstance(arm, RefType) or self.definitions[arm.target].kind != "object":
                return None
            objects.append(self.definitions[arm.target])
        preference = {name: rank for rank, name in enumerate(PREFERRED_DISCRIMINATORS)}
        candidates = sorted(
            {f.wire_name for f in objects[0].fields}, key=lambda n: (preference.get(n, len(preference)), n)
        )
        for candidate in candidates:
            seen_values: set[str | int | bool] = set()
            for obj in objects:
                values = _required_constants(obj, candidate)
                if not values or seen_values & values:
                    break
                seen_values |= values
            else:
                return candidate
        return None


def _canonical(node: Any) -> str:
    """A schema as canonical JSON without the `$schema` keys (a top-level definition's copy lacks them)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key != "$schema"}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return json.dumps(strip(node), sort_keys=True)


def _python_names(wire_names: list[str]) -> dict[str, str]:
    """Python names that do not depend on property order: wire names that are already snake_case
    identifiers choose first, then the rest in sorted order ($schema after schema gets schema_)."""
    taken: set[str] = set()
    names = {}
    for wire_name in sorted(wire_names, key=lambda wire: (snake_case(wire) != wire, wire)):
        names[wire_name] = python_field_name(wire_name, taken)
        taken.add(names[wire_name])
    return names


def _required_constants(definition: Definition, wire_name: str) -> set[str | int | bool]:
    for field in definition.fields:
        if field.wire_name == wire_name and field.required and isinstance(field.type, LiteralType):
            return set(field.type.values)
    return set()


def _direct_refs(expr: TypeExpr | None) -> list[str]:
    if isinstance(expr, RefType):
        return [expr.target]
    if isinstance(expr, UnionType):
        return [arm.target for arm in expr.arms if isinstance(arm, RefType)]
    return []


def parse_definitions(document: dict[str, Any], label: str) -> dict[str, Definition]:
    return SchemaParser(document, label).parse()
