"""Stage 2b: what the definitions mean as MCP: methods, directions, request->result pairs, error codes.

Pipeline position: load -> parse definitions (parser.py) -> **protocol analysis** -> render.

Directions come from the schema's own unions (ClientRequest, ServerRequest, ClientNotification,
ServerNotification). Results are paired explicitly, never guessed from union order:

1. the exception table (RESULT_EXCEPTIONS) for methods whose result is not named after them;
2. the naming rule `FooRequest -> FooResult`;
3. from 2026-07-28 on, the `FooResultResponse` definitions, which must agree with 1-2 and also
   name the alternatives (InputRequiredResult).

A request with no result found by these rules is an error, not a silent `Result`.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any

from ..errors import SpecError, SpecErrors, join_pointer
from ..ir import (
    Definition,
    Direction,
    ErrorCode,
    LiteralType,
    Method,
    RefType,
    ResultAlternative,
    Role,
    UnionSlot,
    UnionSlotInfo,
    UnionType,
)
from ..naming import snake_case

# Methods whose result type is not `<Name>Result`. Evidence: each one's schema description says it
# is answered by an empty result, and no `<Name>Result` definition exists.
RESULT_EXCEPTIONS = {
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
}

# In 2026-07-28 a server may answer a request with an InputRequiredResult; the `resultType`
# property tells it apart (see the ResultType definition's description).
# A method name is printable ASCII without spaces, quotes, backslashes, backticks, `|`, `<`, `>` or `*`: it is printed
# raw into docstrings, Markdown tables, comments and messages. Every real one (`notifications/tools/list_changed`) is.
METHOD_NAME = re.compile(r"[!#$%&()+,\-./0-9:;=?@A-Z\[\]^_a-z{}~]+")
INPUT_REQUIRED_RESULT = "InputRequiredResult"
INPUT_REQUIRED_VALUE = "input_required"
# In 2025-11-25 a request whose params carry `task` may be answered by CreateTaskResult.
CREATE_TASK_RESULT = "CreateTaskResult"

JSON_RPC_ERROR_CODES = (
    ErrorCode("PARSE_ERROR", -32700, "Invalid JSON was received.", "JSON-RPC 2.0"),
    ErrorCode("INVALID_REQUEST", -32600, "The JSON sent is not a valid Request object.", "JSON-RPC 2.0"),
    ErrorCode("METHOD_NOT_FOUND", -32601, "The method does not exist or is not available.", "JSON-RPC 2.0"),
    ErrorCode("INVALID_PARAMS", -32602, "Invalid method parameter(s).", "JSON-RPC 2.0"),
    ErrorCode("INTERNAL_ERROR", -32603, "Internal JSON-RPC error.", "JSON-RPC 2.0"),
)
# Documented in the specification text (server/resources, "Error Handling") for every version,
# though no schema definition carries it.
RESOURCE_NOT_FOUND = ErrorCode("RESOURCE_NOT_FOUND", -32002, "Resource not found.", "specification text")

# Which capability allows a method: (method prefix or exact method, capability path). The first
# match wins; a path whose first key is not a property of the relevant capabilities definition of
# this version (2024-11-05 has no `completions`) means the method is not gated there.
CAPABILITY_RULES: tuple[tuple[str, str], ...] = (
    ("resources/subscribe", "resources.subscribe"),
    ("resources/unsubscribe", "resources.subscribe"),
    ("notifications/resources/updated", "resources.subscribe"),
    ("notifications/tools/list_changed", "tools.listChanged"),
    ("notifications/prompts/list_changed", "prompts.listChanged"),
    ("notifications/resources/list_changed", "resources.listChanged"),
    ("notifications/roots/list_changed", "roots.listChanged"),
    ("notifications/message", "logging"),
    ("tools/", "tools"),
    ("resources/", "resources"),
    ("prompts/", "prompts"),
    ("logging/", "logging"),
    ("completion/", "completions"),
    ("sampling/", "sampling"),
    ("elicitation/", "elicitation"),
    ("roots/", "roots"),
    ("tasks/", "tasks"),
)

REQUEST_SLOTS: dict[UnionSlot, Direction] = {"ClientRequest": "client_to_server", "ServerRequest": "server_to_client"}
NOTIFICATION_SLOTS: dict[UnionSlot, Direction] = {
    "ClientNotification": "client_to_server",
    "ServerNotification": "server_to_client",
}
ALL_SLOTS: tuple[UnionSlot, ...] = typing.get_args(UnionSlot)


@dataclasses.dataclass(frozen=True)
class Protocol:
    definitions: dict[str, Definition]
    methods: tuple[Method, ...]
    union_slots: tuple[UnionSlotInfo, ...]
    error_codes: tuple[ErrorCode, ...]


class ProtocolAnalyzer:
    def __init__(self, definitions: dict[str, Definition], raw_definitions: dict[str, Any], label: str) -> None:
        self.definitions = dict(definitions)
        self.raw = raw_definitions
        self.label = label
        self.errors: list[SpecError] = []

    def analyze(self) -> Protocol:
        slots = tuple(self._slot(slot) for slot in ALL_SLOTS)
        by_slot = {info.slot: info for info in slots}
        methods: dict[str, Method] = {}
        for kind, slot_directions in (("request", REQUEST_SLOTS), ("notification", NOTIFICATION_SLOTS)):
            directions: dict[str, set[Direction]] = {}
            for slot, direction in slot_directions.items():
                for member in by_slot[slot].members:
                    directions.setdefault(member, set()).add(direction)
            for member, seen in sorted(directions.items()):
                method = self._method(member, kind, "both" if len(seen) > 1 else next(iter(seen)), "jsonrpc")
                if method is not None:
                    self._add_method(methods, method)
        # 2026-07-28: server->client requests travel inside InputRequiredResult, not as JSON-RPC.
        input_requests = self.definitions.get("InputRequest")
        if input_requests is not None and by_slot["ServerRequest"].form == "absent":
            for member in _ref_members(input_requests):
                method = self._method(member, "request", "server_to_client", "input_request")
                if method is not None:
                    self._add_method(methods, method)
        if self.errors:
            raise SpecErrors(self.errors)
        ordered = tuple(
            dataclasses.replace(methods[name], capability=self._capability(methods[name])) for name in sorted(methods)
        )
        self._assign_roles(ordered, by_slot)
        return Protocol(self.definitions, ordered, slots, self._error_codes())

    def _add_method(self, methods: dict[str, Method], method: Method) -> None:
        other = methods.get(method.method)
        if other is not None:
            pointer = self.definitions[method.message_type].pointer
            message = f"method {method.method!r} is defined twice: by {other.message_type} and {method.message_type}"
            self.errors.append(SpecError(self.label, pointer, message))
            return
        methods[method.method] = method

    def _capability(self, method: Method) -> str | None:
        rule = next((path for prefix, path in CAPABILITY_RULES if method.method.startswith(prefix)), None)
        if rule is None:
            return None
        # Requests are allowed by the receiver's capabilities, notifications by the sender's.
        server_side = (method.kind == "request") == (method.direction != "server_to_client")
        holder = self.definitions.get("ServerCapabilities" if server_side else "ClientCapabilities")
        if holder is None:
            return None
        top = rule.split(".")[0]
        return rule if any(f.wire_name == top for f in holder.fields) else None

    # -- unions --------------------------------------------------------------------------------

    def _slot(self, slot: UnionSlot) -> UnionSlotInfo:
        definition = self.definitions.get(slot)
        if definition is None:
            return UnionSlotInfo(slot, "absent", (), f"{slot} is not defined in this version.")
        if definition.kind == "union":
            arms = definition.type.arms if isinstance(definition.type, UnionType) else ()
            if slot != "JSONRPCMessage" and any(not isinstance(arm, RefType) for arm in arms):
                message = f"every member of {slot} must be a $ref to a message definition"
                self.errors.append(SpecError(self.label, definition.pointer, message))
            return UnionSlotInfo(slot, "union", tuple(_ref_members(definition)))
        if definition.kind == "alias" and isinstance(definition.type, RefType):
            target = definition.type.target
            return UnionSlotInfo(slot, "alias", (target,), f"{slot} is only an alias of {target} in this version.")
        if definition.kind == "object":
            twin = self._identical_definition(slot)
            if twin is not None:
                # Written out inline instead of as a union of one: point it at the definition it
                # copies, so the message has one class and one method-table entry.
                self.definitions[slot] = dataclasses.replace(definition, kind="alias", fields=(), type=RefType(twin))
                note = f"{slot} is written out as a single message, identical to {twin}; it is an alias of it."
                return UnionSlotInfo(slot, "single", (twin,), note)
            return UnionSlotInfo(slot, "single", (slot,), f"{slot} is written out as a single message.")
        self.errors.append(SpecError(self.label, definition.pointer, f"{slot} must be a union, an alias or a message"))
        return UnionSlotInfo(slot, "absent", ())

    def _identical_definition(self, name: str) -> str | None:
        for other in sorted(self.raw):
            if other != name and self.raw[other] == self.raw[name]:
                return other
        return None

    # -- methods -------------------------------------------------------------------------------

    def _method(self, name: str, kind: str, direction: Direction, delivery: str) -> Method | None:
        definition = self.definitions[name]
        method_field = next((f for f in definition.fields if f.wire_name == "method"), None)
        if (
            method_field is None
            or not isinstance(method_field.type, LiteralType)
            or len(method_field.type.values) != 1
            or not isinstance(method_field.type.values[0], str)
        ):
            self.errors.append(SpecError(self.label, definition.pointer, f"{name} has no constant string 'method'"))
            return None
        method = method_field.type.values[0]
        if not METHOD_NAME.fullmatch(method):
            # A method name is printed raw (docstrings, backticks, error messages, TypeScript): refuse what could
            # end or corrupt the text around it rather than guess an escape for each place.
            pointer = join_pointer(definition.pointer, "properties", "method")
            self.errors.append(SpecError(self.label, pointer, f"method name {method!r} is not printable ASCII"))
            return None
        params = next((f for f in definition.fields if f.wire_name == "params"), None)
        params_type = params.type.target if params is not None and isinstance(params.type, RefType) else None
        if kind == "notification":
            return Method(method, "notification", direction, name, params_type, description=definition.description)
        result, rule, alternatives = self._pair_result(name, method, params_type, definition)
        return Method(
            method,
            "request",
            direction,
            name,
            params_type,
            result,
            rule,
            alternatives,
            delivery,  # type: ignore[arg-type]
            definition.description,
        )

    def _pair_result(
        self, request: str, method: str, params_type: str | None, definition: Definition
    ) -> tuple[str | None, str | None, tuple[ResultAlternative, ...]]:
        stem = request.removesuffix("Request")
        by_name = stem + "Result" if stem + "Result" in self.definitions else None
        result, rule = (RESULT_EXCEPTIONS[method], "exception") if method in RESULT_EXCEPTIONS else (by_name, "naming")
        if result is not None and result not in self.definitions:
            result = None
        alternatives: list[ResultAlternative] = []
        response = self.definitions.get(stem + "ResultResponse")
        if response is not None:
            arms = self._response_result_arms(response)
            main = [arm for arm in arms if arm != INPUT_REQUIRED_RESULT]
            if result is None and len(main) == 1:
                result, rule = main[0], "response-definition"
            elif main != [result]:
                self.errors.append(
                    SpecError(
                        self.label,
                        response.pointer,
                        f"{response.name} says {method} returns {main}, the pairing rules say {result}",
                    )
                )
            if INPUT_REQUIRED_RESULT in arms:
                alternatives.append(
                    ResultAlternative(
                        INPUT_REQUIRED_RESULT,
                        "resultType",
                        INPUT_REQUIRED_VALUE,
                        "the server needs more input from the client before it can complete the request",
                    )
                )
        if params_type is not None and CREATE_TASK_RESULT in self.definitions:
            # Params may be a union of shapes (ElicitRequestParams: form | url); any with `task` counts.
            shapes = [self.definitions[name] for name in [params_type, *_ref_members(self.definitions[params_type])]]
            if any(f.wire_name == "task" for shape in shapes for f in shape.fields):
                alternatives.append(
                    ResultAlternative(
                        CREATE_TASK_RESULT, "task", None, "the request was task-augmented (params.task was set)"
                    )
                )
        if result is None:
            self.errors.append(
                SpecError(
                    self.label,
                    definition.pointer,
                    f"no result type for {method!r}: no {stem}Result definition and no entry in the exception table",
                )
            )
            return None, None, ()
        return result, rule, tuple(alternatives)

    def _response_result_arms(self, response: Definition) -> list[str]:
        field = next((f for f in response.fields if f.wire_name == "result"), None)
        if field is None:
            return []
        if isinstance(field.type, RefType):
            return [field.type.target]
        if isinstance(field.type, UnionType):
            return [arm.target for arm in field.type.arms if isinstance(arm, RefType)]
        return []

    # -- roles and error codes -----------------------------------------------------------------

    def _assign_roles(self, methods: tuple[Method, ...], by_slot: dict[UnionSlot, UnionSlotInfo]) -> None:
        roles: dict[str, Role] = {}
        for method in methods:
            roles[method.message_type] = method.kind
            if method.result_type:
                roles[method.result_type] = "result"
            for alternative in method.alternatives:
                roles[alternative.type] = "result"
        for slot in ("ClientResult", "ServerResult"):
            for member in by_slot[slot].members:
                roles.setdefault(member, "result")
        for name in ("Result", "EmptyResult"):
            if name in self.definitions:
                roles.setdefault(name, "result")
        for name, role in roles.items():
            definition = self.definitions[name]
            if definition.kind in ("object", "alias"):
                self.definitions[name] = dataclasses.replace(definition, role=role)

    def _error_codes(self) -> tuple[ErrorCode, ...]:
        codes = {code.code: code for code in (*JSON_RPC_ERROR_CODES, RESOURCE_NOT_FOUND)}
        for name, definition in sorted(self.definitions.items()):
            code = _constant_code(definition) or _constant_code(self._error_object(definition))
            if code is None or code in codes:
                continue
            constant = snake_case(name).upper().removesuffix("_ERROR")
            codes[code] = ErrorCode(constant, code, definition.description or name, f"schema definition {name}")
        return tuple(sorted(codes.values(), key=lambda c: -c.code))

    def _error_object(self, definition: Definition) -> Definition | None:
        error = next((f for f in definition.fields if f.wire_name == "error"), None)
        if error is not None and isinstance(error.type, RefType):
            return self.definitions[error.type.target]
        return None


def _constant_code(definition: Definition | None) -> int | None:
    if definition is None:
        return None
    code = next((f for f in definition.fields if f.wire_name == "code"), None)
    if code is not None and isinstance(code.type, LiteralType) and len(code.type.values) == 1:
        value = code.type.values[0]
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _ref_members(definition: Definition) -> list[str]:
    if isinstance(definition.type, UnionType):
        return [arm.target for arm in definition.type.arms if isinstance(arm, RefType)]
    if isinstance(definition.type, RefType):
        return [definition.type.target]
    return []


def analyze_protocol(definitions: dict[str, Definition], raw_definitions: dict[str, Any], label: str) -> Protocol:
    return ProtocolAnalyzer(definitions, raw_definitions, label).analyze()
