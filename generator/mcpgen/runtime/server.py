"""The typed MCP server: ``Server`` (what is served: tools, resources, prompts, completions) and
``ServerConnection`` (one client over one ``MessageStream``: lifecycle, version negotiation, dispatch).

Where it sits: on top of ``session.Session`` (JSON-RPC: ids, cancellation, progress, ping) and the generated
``mcp_bindings.<version>.server`` stubs, whose ``SERVER_ROUTES`` drive dispatch: params are validated into the
negotiated version's models, the handlers (``server_handlers``) return its result models, and those are dumped as
the answer. ``authoring`` turns functions into definitions; ``server_context.Context`` is what those functions see.
Transports call ``Server.serve_stream`` once per connection (stdio here, streamable HTTP elsewhere).

Protocol choices (see the README):
- versions 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25; ``initialize`` gets the client's version if supported,
  else the newest; methods of other versions (``server/discover``, 2026-07-28; ``tasks/*``) answer -32601, which is
  also what makes 2026-era clients such as the official SDK 2.x fall back to ``initialize``;
- before ``initialize``, known methods answer -32600 (ping is always answered); after the ``initialize`` answer,
  requests are served even before ``notifications/initialized`` (over stdio that notification and the next request
  race inside the session, which handles them on different tasks);
- JSON-RPC batches only once 2025-03-26 has been negotiated (the session accepts them; ``_BatchGate`` refuses
  them on any other version, and before negotiation, since ``initialize`` may not be batched);
- list results are not paginated (cursors are ignored).
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Final, TypeVar

import anyio
from pydantic import TypeAdapter, ValidationError

from mcp_bindings import MODULES

from .authoring import (
    AnyFunction,
    CompletionDef,
    PromptDef,
    ResourceDef,
    ResourceTemplateDef,
    ToolDef,
    description_of,
    validation_details,
)
from .context import RequestContext
from .jsonrpc import ErrorCode, InvalidParams, JSONParams, JSONRPCError, MethodNotFound, encode_frame, error_response
from .results import ResultValidationError, as_result, field_errors
from .server_context import LOG_LEVELS, Context
from .server_handlers import Handlers, fit
from .session import Session, SessionClosedError
from .stdio import stdio_server_stream
from .streams import MessageStream

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "InvalidClientResultError",
    "Server",
    "ServerConnection",
]

logger = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION: Final = SUPPORTED_PROTOCOL_VERSIONS[-1]
BATCH_VERSIONS: Final = frozenset({"2025-03-26"})

F = TypeVar("F", bound=AnyFunction)


@functools.cache
def _bindings(version: str) -> ModuleType:
    return importlib.import_module(MODULES[version])


@functools.cache
def _stub(version: str) -> ModuleType:
    """The generated server stub of ``version``: ``ServerHandlers``, ``SERVER_ROUTES``, ``implemented``."""
    return importlib.import_module(MODULES[version] + ".server")


@functools.cache
def _handlers_class(version: str) -> type[Handlers]:
    # The generated stub is the base (its routes name our methods; `implemented()` checks the overrides).
    stub = _stub(version).ServerHandlers
    return type(f"Handlers_{version.replace('-', '_')}", (Handlers, stub), {})


@functools.cache
def _adapter(params_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(params_type)


# Every request method of a supported version: "not initialized yet" for these, "method not found" for the rest.
_KNOWN_METHODS: Final = frozenset(
    method for version in SUPPORTED_PROTOCOL_VERSIONS for method in _stub(version).SERVER_ROUTES
)


class InvalidClientResultError(ResultValidationError):
    """The client answered ``sampling/createMessage`` / ``elicitation/create`` with something the negotiated
    version's result model rejects (raised by ``Context.sample`` and ``Context.elicit``)."""


def _source(route: Any, params: Any) -> str:
    """Whose result it is, for error messages: the handler, and the tool, prompt or resource it served."""
    target = getattr(params, "name", None) or getattr(params, "uri", None)
    return f"the result of {route.handler!r}" + (f" for {target!r}" if isinstance(target, str) else "")


def _declared(capabilities: Mapping[str, Any], path: str | None) -> bool:
    """Whether a dotted capability path (a route's ``capability``) is declared in ``capabilities``."""
    node: Any = capabilities
    for part in (path or "").split(".") if path else ():
        # Present and not null/false: an empty object ({} for logging, completions) declares the capability.
        if not isinstance(node, Mapping) or node.get(part) in (None, False):
            return False
        node = node[part]
    return True


class Server:
    """An MCP server: register functions with the decorators, then ``run_stdio()`` or ``await serve_stream(s)``."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        logging: bool = True,
    ) -> None:
        """``logging``: declare the logging capability (``Context.log`` sends nothing without it)."""
        self.name, self.version, self.title, self.instructions = name, version, title, instructions
        self.logging = logging
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, ResourceTemplateDef] = {}
        self.prompts: dict[str, PromptDef] = {}
        self.completions: dict[tuple[str, str, str], CompletionDef] = {}
        self.subscribe_hook: AnyFunction | None = None
        self.unsubscribe_hook: AnyFunction | None = None
        self.connections: set[ServerConnection] = set()

    # -- registration ---------------------------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Callable[[F], F]:
        """Register a tool: name from the function, description from its docstring, ``inputSchema`` from its
        parameters, ``outputSchema`` from an object-typed return annotation (unless ``structured_output=False``).
        A tool that returns a generated ``CallToolResult``, or is annotated ``-> CallToolResult`` and returns a dict,
        answers with that whole result, validated against the negotiated version (see ``authoring``)."""

        def register(fn: F) -> F:
            tool = ToolDef.build(
                fn,
                name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
            )
            self.tools[tool.name] = tool
            return fn

        return register

    def remove_tool(self, name: str) -> None:
        del self.tools[name]

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{variables}`` registers a resource template whose variables are bound
        to the function's parameters of the same names."""

        def register(fn: F) -> F:
            info: dict[str, Any] = {
                "name": name or fn.__name__,
                "title": title,
                "description": description_of(fn, description),
                "mime_type": mime_type,
            }
            if "{" in uri:
                self.templates[uri] = ResourceTemplateDef.build(fn, uri, **info)
            else:
                self.resources[uri] = ResourceDef.build(fn, uri, **info)
            return fn

        return register

    def prompt(
        self, name: str | None = None, *, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments (required unless they have a default)."""

        def register(fn: F) -> F:
            prompt = PromptDef.build(fn, name, title, description)
            self.prompts[prompt.name] = prompt
            return fn

        return register

    def completion(self, *, argument: str, prompt: str | None = None, resource: str | None = None) -> Callable[[F], F]:
        """Register the completion of ``argument`` of prompt ``prompt``, or of variable ``argument`` of the resource
        template ``resource``. The function takes ``(value)`` or ``(value, other_arguments)`` and returns values."""
        if (prompt is None) == (resource is None):
            raise TypeError("completion() needs exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", resource or "", argument)

        def register(fn: F) -> F:
            self.completions[key] = CompletionDef.build(fn)
            return fn

        return register

    def on_subscribe(self, fn: F) -> F:
        """Called with the URI of each ``resources/subscribe``; registering it declares ``resources.subscribe``."""
        self.subscribe_hook = fn
        return fn

    def on_unsubscribe(self, fn: F) -> F:
        self.unsubscribe_hook = fn
        return fn

    # -- capabilities and change notifications --------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The capabilities derived from what is registered (version-neutral; fitted per version on initialize)."""
        capabilities: dict[str, Any] = {}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            subscribe = self.subscribe_hook is not None or self.unsubscribe_hook is not None
            capabilities["resources"] = {"listChanged": True, **({"subscribe": True} if subscribe else {})}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self.logging:
            capabilities["logging"] = {}
        if self.completions:
            capabilities["completions"] = {}
        return capabilities

    async def notify_tools_changed(self) -> None:
        await self._broadcast("tools.listChanged", "notifications/tools/list_changed")

    async def notify_resources_changed(self) -> None:
        await self._broadcast("resources.listChanged", "notifications/resources/list_changed")

    async def notify_prompts_changed(self) -> None:
        await self._broadcast("prompts.listChanged", "notifications/prompts/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to the connections subscribed to ``uri``."""
        for connection in list(self.connections):
            if uri in connection.subscriptions:
                await connection.notify("resources.subscribe", "notifications/resources/updated", {"uri": uri})

    async def _broadcast(self, capability: str, method: str) -> None:
        for connection in list(self.connections):
            await connection.notify(capability, method, None)

    # -- running --------------------------------------------------------------------------------------------------

    async def serve_stream(self, stream: MessageStream) -> None:
        """Serve one client over ``stream`` until it closes its side."""
        await ServerConnection(self, stream).run()

    async def serve_stdio(self) -> None:
        async with stdio_server_stream() as stream:
            await self.serve_stream(stream)

    async def serve_http(
        self, host: str = "127.0.0.1", port: int = 8000, *, task_status: Any = anyio.TASK_STATUS_IGNORED, **options: Any
    ) -> None:
        """Serve over streamable HTTP at http://host:port/mcp until cancelled; each HTTP session gets its own
        connection. Binds to 127.0.0.1 unless told otherwise. ``options``: see http_server.StreamableHTTPApp."""
        from .http_server import run_http  # only HTTP servers need starlette and uvicorn

        await run_http(self.serve_stream, host, port, task_status=task_status, **options)

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Blocking form of ``serve_http``."""
        anyio.run(functools.partial(self.serve_http, host, port, **options))

    def run_stdio(self) -> None:
        """Serve one client over this process's stdin/stdout (logs go to stderr; stdout carries only protocol)."""
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        anyio.run(self.serve_stdio)


class _BatchGate:
    """The connection's stream, with JSON-RPC batches refused unless the negotiated version has them.

    The session decides ``allow_batches`` when it is created, before any version is known, so it is created with
    batches allowed and this filter answers a batch itself (-32600, id null, as the session would) otherwise."""

    def __init__(self, inner: MessageStream, connection: ServerConnection) -> None:
        self._inner, self._connection = inner, connection

    async def receive(self) -> bytes:
        while True:
            frame = await self._inner.receive()
            if frame.lstrip()[:1] != b"[" or self._connection.protocol_version in BATCH_VERSIONS:
                return frame
            version = self._connection.protocol_version or "before initialize"
            message = f"Invalid Request: JSON-RPC batches are not supported ({version})"
            await self._inner.send(encode_frame(error_response(None, ErrorCode.INVALID_REQUEST, message)))

    async def send(self, frame: bytes) -> None:
        await self._inner.send(frame)

    async def aclose(self) -> None:
        await self._inner.aclose()


class ServerConnection:
    """One client: its lifecycle state, negotiated version and capabilities, log level and subscriptions."""

    def __init__(self, server: Server, stream: MessageStream) -> None:
        self.server = server
        self.protocol_version = ""  # "" until initialize has been answered
        self.bindings: ModuleType = _bindings(LATEST_PROTOCOL_VERSION)
        self.stub: ModuleType = _stub(LATEST_PROTOCOL_VERSION)
        self.initialized = False  # notifications/initialized received
        self.capabilities: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self._handlers: Handlers | None = None
        self._served: frozenset[str] = frozenset()
        self.session = Session(
            _BatchGate(stream, self),
            request_handler=self._on_request,
            notification_handler=self._on_notification,
            allow_batches=True,
        )

    async def run(self) -> None:
        self.server.connections.add(self)
        try:
            await self.session.run()
        finally:
            self.server.connections.discard(self)

    # -- incoming -------------------------------------------------------------------------------------------------

    async def _on_request(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "initialize":
            return await self._initialize(params, context)
        if self._handlers is None:
            if method in _KNOWN_METHODS:
                raise JSONRPCError(ErrorCode.INVALID_REQUEST, "Invalid Request: the server is not initialized")
            raise MethodNotFound(method)
        route = self.stub.SERVER_ROUTES.get(method)
        if route is None or method not in self._served:
            raise MethodNotFound(method)
        return await self._dispatch(route, params, context)

    async def _initialize(self, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if self._handlers is not None:
            raise JSONRPCError(ErrorCode.INVALID_REQUEST, "Invalid Request: initialize was already received")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        assert isinstance(version, str)
        bindings, stub = _bindings(version), _stub(version)
        route = stub.SERVER_ROUTES["initialize"]
        handlers = _handlers_class(version)(self)
        capabilities = fit(bindings.ServerCapabilities, self.server.capabilities())
        served = stub.implemented(handlers)
        # A method is answered only if its capability is declared; completion/complete (no capability in 2024-11-05)
        # only if a completion is registered.
        served = frozenset(
            m
            for m in served
            if _declared(capabilities, stub.SERVER_ROUTES[m].capability)
            and (m != "completion/complete" or self.server.completions)
        )
        self.bindings, self.stub, self.capabilities = bindings, stub, capabilities
        result = await self._dispatch(route, params, context, handlers)
        # Only now: a bad initialize (-32602) leaves the connection uninitialized, and may be retried.
        self._handlers, self._served, self.protocol_version = handlers, served, version
        return result

    async def _dispatch(
        self, route: Any, params: JSONParams, context: RequestContext, handlers: Handlers | None = None
    ) -> dict[str, Any]:
        if params is None and route.params_required:
            raise InvalidParams(f"Invalid params: {route.method} requires params")
        if params is not None and not isinstance(params, dict):
            raise InvalidParams("Invalid params: params must be an object")
        try:
            typed = None if params is None else _adapter(route.params_type).validate_python(params)
        except ValidationError as exc:
            raise InvalidParams(f"Invalid params for {route.method}", validation_details(exc)) from None
        handler = getattr(handlers or self._handlers, route.handler)
        returned = await handler(typed, Context(self, context))
        # Handlers return the result model or a dict (what they build, or a tool's own CallToolResult): either way
        # it is validated here, once, against the negotiated version (see results.as_result).
        try:
            result = as_result(route.result_type, returned, source=_source(route, typed))
        except ResultValidationError as exc:
            # Our side's bug, not the client's: -32603, with the field paths for whoever debugs it.
            logger.error("%s (MCP %s)", exc, self.protocol_version or "initialize")
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR, f"Internal error: {exc.summary}", {"errors": exc.details}
            ) from None
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        if method == "notifications/initialized":
            if self._handlers is None:
                logger.warning("notifications/initialized before initialize ignored")
            self.initialized = self._handlers is not None
            return
        logger.debug("notification %r ignored", method)

    # -- outgoing -------------------------------------------------------------------------------------------------

    async def notify(self, capability: str, method: str, params: dict[str, Any] | None) -> None:
        """Send a notification if the connection is initialized and ``capability`` was declared; a closed
        connection is skipped (it is on its way out of ``Server.connections``)."""
        if self._handlers is None or not _declared(self.capabilities, capability):
            return
        try:
            await self.session.notify(method, params)
        except (SessionClosedError, RuntimeError):
            logger.debug("%s not sent: the connection is closed", method)

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        if self.log_level is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await self.notify("logging", "notifications/message", params)

    async def request_client(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any:
        """Send a request to the client and parse its answer as the negotiated version's result model. An answer
        that does not validate raises ``InvalidClientResultError`` (a ``ResultValidationError``) naming the fields.
        """
        raw = await self.session.request(method, params, timeout=timeout)
        try:
            return self.bindings.parse_result(method, raw)
        except ValidationError as exc:
            model = self.bindings.RESULT_TYPES[method]
            error = InvalidClientResultError(f"the client's answer to {method}", model, field_errors(exc))
            logger.warning("%s", error)
            raise error from None
