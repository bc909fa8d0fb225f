"""Stage 3a, second half: what the server.py and client.py stubs of one version print.

Pipeline position: IR -> views (models.py, methods.py, interfaces.py) and **stub views** -> render -> format.

A stub method is one request or notification travelling in one direction: a handler method and its
`base.Route` on the receiving side, a typed call on the sending side. Everything a stub template prints is
precomputed here, every collection sorted by the Python name, so the templates only print.

The two eras differ only in what the IR says:
- legacy era (2024-11-05 .. 2025-11-25): server -> client requests are JSON-RPC requests;
- modern era (2026-07-28, draft): there is no `initialize` but `server/discover`; a server may answer
  `tools/call`, `prompts/get` and `resources/read` with an `InputRequiredResult` (the schema's
  `*ResultResponse` definitions say which, see protocol.py), and the server -> client requests
  (elicitation, sampling, roots) travel inside it (`inputRequests`, INPUT_REQUESTS) instead of as
  JSON-RPC. The client still answers them with typed handlers, so they keep their ClientHandlers
  methods and CLIENT_ROUTES entries; the routes of requests that may be answered so carry the version's
  InputRequiredResult class (`base.Route.input_required_result`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

from ..ir import ArrayType, Definition, FieldDef, Method, RefType, VersionIR
from ..naming import snake_case
from .protocol import INPUT_REQUIRED_RESULT
from .views import BASE, TypeRenderer, docstring_body, python_string

# The methods that make a version's stubs worth generating: the handshake (`initialize`) or, without one, the
# modern era's discovery request, which its servers must implement (server/discover.mdx). A schema with
# neither (the small golden cases) describes no server to stub.
ENTRY_METHODS = ("initialize", "server/discover")
SENTENCE_ENDS = (".", "!", "?", ":")
DOCSTRING_WIDTH = 100  # the stub modules' other docstring lines are about this wide


def summary_line(description: str | None) -> str:
    """A description's first line, or, when that line stops mid-sentence (2026-07-28 wraps its descriptions,
    older schemas wrap a few), its paragraph up to the end of the sentence the first line starts to finish."""
    paragraph = (description or "").split("\n\n", 1)[0].split("\n")
    first = paragraph[0].strip()
    if first.endswith(SENTENCE_ENDS):
        return first
    text = " ".join(line.strip() for line in paragraph if line.strip())
    ends = [text.find(end + " ", len(first)) for end in SENTENCE_ENDS]
    found = [index for index in ends if index >= 0]
    return text[: min(found) + 1] if found else text


@dataclass(frozen=True)
class StubMethod:
    """One typed method of a generated handler base or stub, and its dispatch route."""

    method: str
    name: str  # python method name: call_tool, list_roots, on_initialized, notify_progress
    message_type: str
    params_annotation: str  # "_m.CallToolRequestParams", or "None" when the message has no params
    params_required: bool  # on the wire: what the route checks
    call_params_optional: bool  # the sending stub may leave params out: none, or none but what the sender fills in
    handler_params: str  # the handler's `params` annotation: "_m.PaginatedRequestParams | None" when optional
    result_type: str | None  # the complete result, for requests; None for notifications
    handler_result: str  # what a handler returns: "_m.CallToolResult | _m.InputRequiredResult", or "None"
    input_required_result: str | None  # "_m.InputRequiredResult" when the server may answer with it
    inside_input_required: bool  # a server -> client request carried in InputRequiredResult.inputRequests
    capability: str | None
    summary: str
    route: str  # the `_base.Route(...)` expression of SERVER_ROUTES / CLIENT_ROUTES


@dataclass(frozen=True)
class StubModule:
    """One generated stub module, as its `__all__` and INTERFACES.md list it."""

    module: str  # "server" or "client"
    names: tuple[str, ...]  # public names in isort's order (constants, classes, functions), as `__all__` lists them
    all_list: str  # `__all__`'s value as Python source

    @classmethod
    def of(cls, module: str, names: tuple[str, ...]) -> StubModule:
        return cls(module, names, "[" + ", ".join(python_string(name) for name in names) + "]")


SERVER_MODULE = StubModule.of(
    "server", ("SERVER_NOTIFICATION_ROUTES", "SERVER_ROUTES", "ServerHandlers", "implemented")
)
CLIENT_MODULE = StubModule.of(
    "client",
    (
        "CLIENT_NOTIFICATION_ROUTES",
        "CLIENT_ROUTES",
        "MAX_PAGES",
        "ClientHandlers",
        "ClientStub",
        "PaginationError",
        "implemented",
    ),
)


@dataclass(frozen=True)
class Pagination:
    """A list method that walks `nextCursor`: list_tools -> list_all_tools() -> list[_m.Tool].

    When the caller must build the params (a required field other than what the sending connection fills in),
    the helper takes the first page's params and copies them with each next cursor; otherwise it starts from no
    params (2026-07-28's required `_meta` is the connection's: see base.filled_by_sender)."""

    name: str  # list_all_tools
    call: str  # list_tools
    params_type: str
    params_required: bool
    items_field: str  # python attribute of the result holding the page's items
    item_annotation: str


class StubsView:
    """Everything server.py and client.py print for one version."""

    def __init__(self, ir: VersionIR, types: TypeRenderer, sender_fields: Mapping[str, tuple[FieldDef, ...]]) -> None:
        self.ir = ir
        self.types = types
        self.definitions: dict[str, Definition] = {d.name: d for d in ir.definitions}
        self.sender_fields = sender_fields  # ModelsView.sender_fields: what the sending connection fills in

    def has_stubs(self) -> bool:
        return any(m.method in ENTRY_METHODS for m in self.ir.methods)

    def modules(self) -> tuple[StubModule, ...]:
        """The stub modules this version gets (none without an entry method), for INTERFACES.md and __init__."""
        return (SERVER_MODULE, CLIENT_MODULE) if self.has_stubs() else ()

    def stub_methods(self, kind: str, direction: str, prefix: str) -> tuple[StubMethod, ...]:
        """Requests or notifications travelling in `direction` ("client_to_server" or "server_to_client";
        "both" methods are included), named prefix + snake_case(message name without Request/Notification).
        Server -> client requests include those carried inside InputRequiredResult."""
        chosen = [
            self._stub_method(m, prefix)
            for m in self.ir.methods
            if m.kind == kind and m.direction in (direction, "both")
        ]
        return tuple(sorted(chosen, key=lambda stub: stub.name))

    def _stub_method(self, method: Method, prefix: str) -> StubMethod:
        request = method.kind == "request"
        stem = method.message_type.removesuffix("Request" if request else "Notification")
        params = next((f for f in self.definitions[method.message_type].fields if f.wire_name == "params"), None)
        if params is None:
            annotation = "None"
        elif isinstance(params.type, RefType):
            annotation = "_m." + params.type.target
        else:
            annotation = self.types.render(params.type, quote=False)
        required = params is not None and params.required
        optional = params is not None and not required
        call_optional = params is not None and (optional or self._only_sender_fields_required(params.type))
        input_required = next((f"_m.{a.type}" for a in method.alternatives if a.type == INPUT_REQUIRED_RESULT), None)
        result = f"_m.{method.result_type}" if request and method.result_type else None
        handler_result = " | ".join(r for r in (result, input_required) if r) or "None"
        name = prefix + snake_case(stem)
        route_arguments = [
            python_string(method.method),
            python_string(name),
            annotation,
            str(required),
            result or "None",
            python_string(method.capability) if method.capability is not None else "None",
        ]
        if input_required is not None:
            route_arguments.append(f"input_required_result={input_required}")
        return StubMethod(
            method.method,
            name,
            method.message_type,
            annotation,
            required,
            call_optional,
            annotation + (" | None" if optional else ""),
            method.result_type,
            handler_result,
            input_required,
            method.delivery == "input_request",
            method.capability,
            docstring_body(summary_line(method.description)) or "",  # printed inside a docstring
            f"{BASE}.Route({', '.join(route_arguments)})",
        )

    def _only_sender_fields_required(self, params_type: object) -> bool:
        """Whether a required params object needs nothing from the caller: every required field is one the
        sending connection fills in (2026-07-28's `_meta`), so the stub may send no params and let it."""
        if not isinstance(params_type, RefType):
            return False
        definition = self.definitions[params_type.target]
        filled = self.sender_fields.get(definition.name, ())
        # Only where the connection fills something in does it send params of its own: a required params object
        # with nothing required in it (2025-11-25's CancelledNotificationParams) must still be sent by the caller.
        return (
            bool(filled) and definition.kind == "object" and all(f in filled for f in definition.fields if f.required)
        )

    # -- module docstrings -----------------------------------------------------------------------

    def _input_required_methods(self) -> str:
        methods = [
            f"`{m.method}`" for m in self.ir.methods if any(a.type == INPUT_REQUIRED_RESULT for a in m.alternatives)
        ]
        return ", ".join(methods[:-1]) + f" and {methods[-1]}" if len(methods) > 1 else "".join(methods)

    def server_notes(self) -> tuple[str, ...]:
        """Paragraphs for server.py's docstring about what this version does differently."""
        notes = []
        if not any(m.method == "initialize" for m in self.ir.methods):
            notes.append(
                "There is no `initialize` in this version: every request carries the client's protocol version "
                "and capabilities in its params' `_meta`, and `server/discover` says what the server supports."
            )
        methods = self._input_required_methods()
        if methods:
            notes.append(
                f"A server may answer {methods} with an InputRequiredResult (their routes' "
                "`input_required_result`), whose `inputRequests` the client answers before it retries the request "
                "with `inputResponses` and the echoed `requestState`; their handlers are typed to return either."
            )
        return tuple(textwrap.fill(note, DOCSTRING_WIDTH) for note in notes)

    def client_notes(self) -> tuple[str, ...]:
        """Paragraphs for client.py's docstring about what this version does differently."""
        notes = []
        methods = self._input_required_methods()
        if methods:
            notes.append(
                f"A server may answer {methods} with an InputRequiredResult (their routes' "
                "`input_required_result`). The ClientStub's calls of them return the complete result: the Peer "
                "answers the `inputRequests` and retries until the result is complete (see base.Peer)."
            )
        if any(m.delivery == "input_request" for m in self.ir.methods):
            notes.append(
                "Server -> client requests are not JSON-RPC requests in this version: they arrive inside an "
                "InputRequiredResult (`inputRequests`), and the client runtime answers each one through "
                "CLIENT_ROUTES and ClientHandlers, as it answers a JSON-RPC request in older versions."
            )
        return tuple(textwrap.fill(note, DOCSTRING_WIDTH) for note in notes)

    # -- list_all_* helpers ----------------------------------------------------------------------

    def paginations(self) -> tuple[Pagination, ...]:
        pages = []
        for stub in self.stub_methods("request", "client_to_server", ""):
            result = self.definitions[stub.result_type] if stub.result_type else None
            params = self.definitions.get(stub.params_annotation.removeprefix("_m."))
            if result is None or params is None or not any(f.wire_name == "cursor" for f in params.fields):
                continue
            lists = [f for f in result.fields if f.required and isinstance(f.type, ArrayType)]
            if len(lists) == 1 and any(f.wire_name == "nextCursor" for f in result.fields):
                items = lists[0].type.items  # type: ignore[union-attr]
                item = self.types.render(items, quote=False)
                item = "_m." + item if isinstance(items, RefType) else item
                name = stub.name.replace("list_", "list_all_", 1)
                pages.append(
                    Pagination(
                        name,
                        stub.name,
                        stub.params_annotation,
                        not stub.call_params_optional,
                        lists[0].python_name,
                        item,
                    )
                )
        return tuple(pages)
