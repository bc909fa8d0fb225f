"""The intermediate representation: what the parser builds and every backend reads.

Pipeline position: load (spec_loader) -> **parse into this IR** (parser, protocol) -> view -> render -> format -> write.

Everything here is a frozen dataclass of plain data, so `dataclasses.asdict` + `json.dumps` of a
`VersionIR` is the IR dump that `mcpgen ir` prints and that other-language backends can consume.
Names are resolved before they get here: `class_name` is a valid Python class name and
`python_name` a valid, non-shadowing attribute name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

PrimitiveName = Literal["string", "integer", "number", "boolean", "null"]


@dataclass(frozen=True)
class PrimitiveType:
    """A JSON primitive; `format` (uri, byte, uri-template, ...) is kept as information only."""

    name: PrimitiveName
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    kind: Literal["primitive"] = "primitive"


@dataclass(frozen=True)
class RefType:
    """A reference to a named definition (a schema definition or a named inline object)."""

    target: str
    kind: Literal["ref"] = "ref"


@dataclass(frozen=True)
class ArrayType:
    items: TypeExpr
    max_items: int | None = None
    kind: Literal["array"] = "array"


@dataclass(frozen=True)
class MapType:
    """An object with no declared properties: string keys, `values` typed."""

    values: TypeExpr
    kind: Literal["map"] = "map"


@dataclass(frozen=True)
class UnionType:
    """`anyOf` / type arrays. `discriminator` names a property whose constant tells the arms apart."""

    arms: tuple[TypeExpr, ...]
    discriminator: str | None = None
    kind: Literal["union"] = "union"


@dataclass(frozen=True)
class LiteralType:
    """`const` (one value) or `enum` (several)."""

    values: tuple[str | int | bool, ...]
    kind: Literal["literal"] = "literal"


@dataclass(frozen=True)
class AnyType:
    """Any JSON value (`{}` or a schema with no type)."""

    kind: Literal["any"] = "any"


TypeExpr: TypeAlias = PrimitiveType | RefType | ArrayType | MapType | UnionType | LiteralType | AnyType


@dataclass(frozen=True)
class FieldDef:
    wire_name: str
    python_name: str
    type: TypeExpr
    required: bool
    description: str | None = None


DefinitionKind = Literal["object", "union", "enum", "const", "alias"]
Role = Literal["request", "notification", "result", "none"]


@dataclass(frozen=True)
class Definition:
    """One named type. `pointer` is where it came from in the schema (JSON pointer)."""

    name: str
    kind: DefinitionKind
    pointer: str
    description: str | None = None
    # object
    fields: tuple[FieldDef, ...] = ()
    extra_values: TypeExpr | None = None  # typed additionalProperties next to declared properties
    # union / enum / const / alias
    type: TypeExpr | None = None
    inline: bool = False  # named by mcpgen from its position, not by the schema
    role: Role = "none"


Direction = Literal["client_to_server", "server_to_client", "both"]
MethodKind = Literal["request", "notification"]
Delivery = Literal["jsonrpc", "input_request"]


@dataclass(frozen=True)
class ResultAlternative:
    """A result type a request may get instead of its usual one, and how to recognise it.

    `key` is the result property that tells it apart; with `value` the property must equal it,
    without `value` its presence is enough.
    """

    type: str
    key: str
    value: str | None
    reason: str


@dataclass(frozen=True)
class Method:
    method: str
    kind: MethodKind
    direction: Direction
    message_type: str  # the request or notification definition
    params_type: str | None
    result_type: str | None = None  # requests only
    result_rule: str | None = None  # "naming", "exception" or "response-definition": how the pair was found
    alternatives: tuple[ResultAlternative, ...] = ()
    delivery: Delivery = "jsonrpc"
    description: str | None = None
    # The capability that allows this method, as a dotted wire path into the *receiver's*
    # capabilities for requests (ServerCapabilities for client->server requests, ClientCapabilities
    # for server->client ones) and into the *sender's* for notifications, e.g. "tools",
    # "resources.subscribe", "tools.listChanged". None: always allowed.
    capability: str | None = None


UnionSlot = Literal[
    "ClientRequest",
    "ServerRequest",
    "ClientNotification",
    "ServerNotification",
    "ClientResult",
    "ServerResult",
    "JSONRPCMessage",
]


@dataclass(frozen=True)
class UnionSlotInfo:
    """How one of the protocol-level unions is shaped in this version.

    `form` is "union" (an anyOf in the schema), "single" (written out as one message, as 2026-07-28
    does for ClientNotification), "alias" (a $ref, as 2026-07-28's ClientResult = Result) or
    "absent" (2026-07-28 has no ServerRequest). `members` are definition names.
    """

    slot: UnionSlot
    form: Literal["union", "single", "alias", "absent"]
    members: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class ErrorCode:
    name: str
    code: int
    description: str
    source: str  # "JSON-RPC 2.0" or the schema definition it came from


@dataclass(frozen=True)
class VersionIR:
    version: str
    module: str  # python subpackage name, e.g. v2025_06_18
    schema_path: str  # relative to the project root, e.g. spec/2025-06-18/schema.json
    schema_sha256: str  # of the vendored file, before patches
    dialect: str  # the $schema URI
    patches: tuple[str, ...]
    definitions: tuple[Definition, ...]
    methods: tuple[Method, ...]
    union_slots: tuple[UnionSlotInfo, ...]
    error_codes: tuple[ErrorCode, ...]
    generator_version: str = field(default="")

    def definition(self, name: str) -> Definition:
        for definition in self.definitions:
            if definition.name == name:
                return definition
        raise KeyError(name)

    def method(self, name: str) -> Method:
        for method in self.methods:
            if method.method == name:
                return method
        raise KeyError(name)

    def slot(self, slot: UnionSlot) -> UnionSlotInfo:
        for info in self.union_slots:
            if info.slot == slot:
                return info
        raise KeyError(slot)


Era = Literal["legacy", "modern"]


@dataclass(frozen=True)
class ServedVersion:
    """One protocol version the runtime serves, with what its IR and the reviewed overlay (spec/overlay/) say of it.

    Method sets hold wire method names, sorted; a method sent both ways is in both directions' sets.
    `capabilities` pairs each gated method with its `Method.capability`. `evidence` is the overlay entry's.
    """

    version: str
    era: Era
    json_rpc_batches: bool  # the schema defines JSONRPCBatchRequest
    sse_priming_events: bool
    progress_messages: bool  # notifications/progress carries a `message` (not in 2024-11-05)
    resource_not_found: int
    client_requests: tuple[str, ...]
    server_requests: tuple[str, ...]
    client_notifications: tuple[str, ...]
    server_notifications: tuple[str, ...]
    input_requests: tuple[str, ...]  # server->client requests carried in InputRequiredResult (modern)
    capabilities: tuple[tuple[str, str], ...]
    evidence: str


@dataclass(frozen=True)
class NamedConstant:
    """A name the runtime uses for a wire value of the modern era: a `_meta` key or an error code."""

    name: str
    value: str | int
    evidence: str


@dataclass(frozen=True)
class ProtocolFacts:
    """Version facts across every vendored version: what `mcp_bindings/protocol_facts.py` prints.

    `served` is oldest first; `unserved` are vendored versions the runtime neither offers nor accepts (draft).
    `modern_only_methods` are client requests of every modern version that no legacy version has.
    """

    overlay_path: str
    overlay_sha256: str
    served: tuple[ServedVersion, ...]
    unserved: tuple[str, ...]
    modern_only_methods: tuple[str, ...]
    meta_keys: tuple[NamedConstant, ...]
    error_codes: tuple[NamedConstant, ...]


@dataclass(frozen=True)
class ExtensionIR:
    """An extension (spec/extensions/<name>/<revision>/schema.json): the definitions and methods it adds to the protocol
    version it extends. Definitions the extension's schema copies from that version are not in `version`: they are
    that version's models (`shared`, imported by name), so a task's inputRequests hold the same classes as an
    InputRequiredResult's."""

    name: str  # the subpackage: mcp_bindings.extensions.<name>
    identifier: str  # the extension identifier, as in capabilities.extensions
    revision: str  # the extension's own revision (its schema directory), e.g. draft
    base_version: str
    base_module: str
    version: VersionIR  # its own definitions, methods and error codes
    shared: tuple[str, ...]  # the base version's definitions the extension's own refer to, sorted
    overlay_path: str
