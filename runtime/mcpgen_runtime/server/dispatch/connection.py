"""One client of a server: ``ServerConnection`` (both eras, version negotiation, dispatch) over one ``MessageStream``.

Where it sits: in the ``server`` layer, on top of ``jsonrpc.session.Session`` (JSON-RPC: ids, cancellation,
progress) and the generated ``mcp_bindings.<version>.server`` stubs, whose ``SERVER_ROUTES`` drive dispatch
(``dispatch``): params are validated into the version's models, the handlers (``handlers``) return its result
models, and those are dumped as the answer. It answers from a ``registry.Registry`` (what is served), runs the
server's ``middleware`` around each request and hands each request's functions a ``context.Context``.
``server.Server`` creates one per connection (``serve_stream``); over streamable HTTP, one per session of the
handshake era and one per POST of the modern era.

The two eras (MCP 2026-07-28 basic/versioning), on any connection:
- a request whose ``_meta`` names a modern ``io.modelcontextprotocol/protocolVersion`` (2026-07-28), and
  ``server/discover`` / ``subscriptions/listen`` in any case, belong to the modern era: served on their own by a
  ``modern.ModernRequest``, no ``initialize`` needed, nothing kept; a version this server does not know is -32022;
- everything else is the handshake era: versions 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25;
  ``initialize`` gets the client's version if supported, else the newest; methods of other versions (``tasks/*``)
  answer -32601; before ``initialize``, known methods answer -32600 (``ping`` is always answered, outside the
  middleware); after the ``initialize`` answer, requests are served even before ``notifications/initialized`` (over
  stdio that notification and the next request race inside the session, which handles them on different tasks);
- JSON-RPC batches only once 2025-03-26 has been negotiated (the session accepts them; ``_BatchGate`` refuses
  them on any other version, and before negotiation, since ``initialize`` may not be batched);
- change notifications (``notify``) go to the handshake-era client and to the ``subscriptions/listen`` requests
  open on the connection (``subscriptions``);
- list results are not paginated (cursors are ignored).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Final, cast

import anyio
from pydantic import BaseModel, ValidationError

from ...jsonrpc.context import PING, RequestContext
from ...jsonrpc.envelopes import (
    Batch,
    ErrorCode,
    InvalidParams,
    JSONParams,
    JSONRPCError,
    MethodNotFound,
    decode_frame,
    encode_frame,
    error_response,
)
from ...jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ...jsonrpc.session import Session, SessionClosedError
from ...jsonrpc.streams import Dispatcher, FrameSink, MessageStream, stream_extras
from ...protocol.results import field_errors
from ...protocol.versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS, PROTOCOL_VERSION_META
from ..authoring.context import LOG_LEVELS, Context, InvalidClientResultError
from .bindings import (
    bindings_for,
    declared,
    handlers_class,
    served_methods,
    source_of,
    stub_for,
    typed_params,
    validated_result,
)
from .handlers import Handlers, fit
from ..authoring.middleware import IncomingRequest, Middleware, run_chain
from .modern import MODERN_ONLY_METHODS, ModernRequest, unsupported_version
from ..authoring.registry import Registry
from .request_state import RequestStateCodec
from .subscriptions import Listeners

__all__ = ["LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS", "ServerConnection"]

logger = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS: Final = LEGACY_PROTOCOL_VERSIONS
"""The versions ``initialize`` negotiates (the handshake era); the modern ones are ``MODERN_PROTOCOL_VERSIONS``."""
LATEST_PROTOCOL_VERSION: Final = SUPPORTED_PROTOCOL_VERSIONS[-1]
BATCH_VERSIONS: Final = frozenset({"2025-03-26"})

# Every request method of a supported version: "not initialized yet" for these, "method not found" for the rest.
# Read from each version's method constants (the requests a client sends, which are the server stub's routes), so
# that starting a server does not build every version's models; the version a client negotiates loads its own.
_KNOWN_METHODS: Final = frozenset(
    str(method) for version in SUPPORTED_PROTOCOL_VERSIONS for method in bindings_for(version).CLIENT_REQUESTS
)


class _DeferredStub:
    """The newest version's server stub, imported on first use: what a connection consults before ``initialize``
    (rarely anything), so that opening one does not build that version's models when the client negotiates another."""

    def __getattr__(self, name: str) -> Any:
        return getattr(stub_for(LATEST_PROTOCOL_VERSION), name)


_LATEST_STUB: Final = cast(ModuleType, _DeferredStub())


class _BatchGate:
    """The connection's stream, with JSON-RPC batches refused unless the negotiated version has them.

    The session decides ``allow_batches`` when it is created, before any version is known, so it is created with
    batches allowed and this filter answers a batch itself (-32600, id null, as the session would) otherwise.
    Only a frame that parses as a batch is one: invalid JSON that happens to start with ``[`` goes on to the session,
    which answers it -32700 like any other parse error."""

    def __init__(self, inner: MessageStream, connection: ServerConnection) -> None:
        self._inner, self._connection = inner, connection
        self._set_dispatcher, self._send_message = stream_extras(inner)

    async def receive(self) -> bytes:
        while True:
            try:
                frame = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The client is done sending: its subscriptions/listen requests end now (with their graceful
                # result, if it still reads), not after the session's shutdown grace.
                self._connection.listeners.close()
                raise
            # The cheap test first: only a frame starting with "[" can be a batch, and only those get parsed here.
            if frame.lstrip()[:1] != b"[" or self._connection.protocol_version in BATCH_VERSIONS:
                return frame
            if not isinstance(decode_frame(frame), Batch):
                return frame
            version = self._connection.protocol_version or "before initialize"
            message = f"Invalid Request: JSON-RPC batches are not supported ({version})"
            await self._inner.send(encode_frame(error_response(None, ErrorCode.INVALID_REQUEST, message)))

    async def send(self, frame: bytes) -> None:
        await self._inner.send(frame)

    # The optional extras of the stream (jsonrpc.streams.Dispatcher), passed through: a request handed over
    # directly is a single request, never a batch, so nothing is bypassed.
    def set_dispatcher(self, dispatcher: Dispatcher | None) -> None:
        if self._set_dispatcher is not None:
            self._set_dispatcher(dispatcher)

    def set_frame_sink(self, sink: FrameSink | None) -> None:
        """``streams.FrameSink``, passed through: a frame that may be a batch this version refuses is left for
        ``receive``, which answers it (that takes a write, which a sink cannot wait for)."""
        inner = getattr(self._inner, "set_frame_sink", None)
        if inner is None or sink is None:
            if inner is not None:
                inner(None)
            return
        taken_by = sink

        def gated(frame: bytes, value: Any) -> bool:
            if frame.lstrip()[:1] == b"[" and self._connection.protocol_version not in BATCH_VERSIONS:
                return False
            return taken_by(frame, value)

        inner(gated)

    async def send_message(self, frame: bytes, message: Any) -> None:
        if self._send_message is not None:
            await self._send_message(frame, message)
        else:
            await self._inner.send(frame)

    async def aclose(self) -> None:
        await self._inner.aclose()


class ServerConnection:
    """One client: its lifecycle state, negotiated version and capabilities, log level and subscriptions (the
    handshake era), and the modern requests it carries, each served on its own (``modern``)."""

    def __init__(
        self,
        server: Registry,
        stream: MessageStream,
        *,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        middleware: Sequence[Middleware] = (),
        lifespan_state: Any = None,
        request_states: RequestStateCodec | None = None,
    ) -> None:
        """``max_requests_in_flight`` / ``max_batch_size``: the session's limits (see ``jsonrpc.session.Session``).
        ``middleware``: wrapped around every request (see ``middleware``); ``lifespan_state``: what the server's
        lifespan yielded, for ``Context.lifespan_state``; ``request_states``: seals and verifies the modern era's
        ``requestState`` (``Server`` passes its own; default: a codec with a key of its own)."""
        self.server = server
        self.middleware = middleware
        self.lifespan_state = lifespan_state
        self.request_states = request_states or RequestStateCodec()
        self.protocol_version = ""  # "" until initialize has been answered
        self.bindings: ModuleType = bindings_for(LATEST_PROTOCOL_VERSION)  # lazy: builds nothing until used
        self.stub: ModuleType = _LATEST_STUB  # until initialize picks the negotiated version's
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
            answer_pings=False,  # answered in _on_request: ping is not a method of the modern era
            max_requests_in_flight=max_requests_in_flight,
            max_batch_size=max_batch_size,
        )
        self.listeners = Listeners(server, lambda: self.session)

    async def run(self) -> None:
        """Serve until the client closes its side of the stream."""
        await self.session.run()

    # -- incoming -------------------------------------------------------------------------------------------------

    def _modern_request(self, method: str, params: JSONParams) -> ModernRequest | None:
        """A ``ModernRequest`` when this request belongs to the modern era, None for the handshake era; -32022 for a
        version this server does not speak (see the module docstring)."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        requested = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
        if requested is None:
            # Methods only the modern era has are modern requests even without _meta (which they then lack: -32602).
            if method in MODERN_ONLY_METHODS:
                return ModernRequest(self, MODERN_PROTOCOL_VERSIONS[-1], None)
            return None
        if not isinstance(requested, str):
            raise InvalidParams(f"Invalid params: _meta {PROTOCOL_VERSION_META} must be a string")
        if requested in MODERN_PROTOCOL_VERSIONS:
            return ModernRequest(self, requested, meta)
        if requested in SUPPORTED_PROTOCOL_VERSIONS and method not in MODERN_ONLY_METHODS:
            return None  # a handshake-era client that names its version in _meta too
        raise unsupported_version(requested)

    async def _on_request(self, method: str, params: JSONParams, request: RequestContext) -> dict[str, Any]:
        modern = self._modern_request(method, params)
        if method == PING and modern is None:
            return {}  # answered at once, before initialize too, and not through the middleware
        context: Context[Any] = Context(modern or self, request)
        if self.middleware:
            incoming: IncomingRequest[Any] = IncomingRequest(method, params, context)
            return await run_chain(self.middleware, incoming, self._endpoint, self._finish)
        if modern is None and self._handlers is not None and method in self._served and method != "initialize":
            # The usual request of an initialized handshake-era connection: what _route would decide, one call less.
            return await self._dispatch(self.stub.SERVER_ROUTES[method], params, context)
        return await self._route(method, params, context)

    async def _endpoint(self, incoming: IncomingRequest[Any]) -> dict[str, Any]:
        return await self._route(incoming.method, incoming.params, incoming.context)

    def _finish(self, incoming: IncomingRequest[Any], value: Any) -> dict[str, Any]:
        """A result a middleware returned itself, validated like a handler's (see ``middleware``)."""
        modern = incoming.context.connection
        if isinstance(modern, ModernRequest):
            route = modern.route(incoming.method)
            return modern.finish(route.result_type, value, f"a middleware's result for {incoming.method}")
        if incoming.method == "initialize" and self._handlers is None:
            logger.error("a middleware answered initialize without call_next: the connection stays uninitialized")
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "Internal error: initialize was not handled")
        route = self.stub.SERVER_ROUTES.get(incoming.method)
        if route is not None:
            return self._validated(route, value, f"a middleware's result for {incoming.method}")
        if isinstance(value, BaseModel):  # a method of the middleware's own: no model to check it against
            dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
            return dumped
        if isinstance(value, Mapping):
            return dict(value)
        raise TypeError(f"a middleware returned a {type(value).__name__} for {incoming.method}, not a dict or model")

    async def _route(self, method: str, params: JSONParams, context: Context[Any]) -> dict[str, Any]:
        modern = context.connection
        if isinstance(modern, ModernRequest):
            return await modern.dispatch(method, params, context)
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

    async def _initialize(self, params: JSONParams, context: Context[Any]) -> dict[str, Any]:
        if self._handlers is not None:
            raise JSONRPCError(ErrorCode.INVALID_REQUEST, "Invalid Request: initialize was already received")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        assert isinstance(version, str)
        bindings, stub = bindings_for(version), stub_for(version)
        route = stub.SERVER_ROUTES["initialize"]
        handlers = handlers_class(version)(self)
        capabilities = fit(bindings.ServerCapabilities, self.server.capabilities())
        served = served_methods(stub, handlers, capabilities, bool(self.server.completions))
        self.bindings, self.stub, self.capabilities = bindings, stub, capabilities
        result = await self._dispatch(route, params, context, handlers)
        # Only now: a bad initialize (-32602) leaves the connection uninitialized, and may be retried.
        self._handlers, self._served, self.protocol_version = handlers, served, version
        return result

    async def _dispatch(
        self, route: Any, params: JSONParams, context: Context[Any], handlers: Handlers | None = None
    ) -> dict[str, Any]:
        typed = typed_params(route, params)
        handler = getattr(handlers or self._handlers, route.handler)
        returned = await handler(typed, context)
        # Handlers return the result model or a dict (what they build, or a tool's own CallToolResult): either way
        # it is validated here, once, against the negotiated version (see protocol.results.as_result).
        return self._validated(route, returned, lambda: source_of(route, typed))

    def _validated(self, route: Any, returned: Any, source: str | Callable[[], str]) -> dict[str, Any]:
        """``returned`` validated as ``route``'s result model of the negotiated version, dumped as JSON."""
        return validated_result(route.result_type, returned, source, self.protocol_version)

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        """``Context.read_resource``: ``resources/read`` of ``uri`` answered by this server, as the negotiated
        version's result model (not through the middleware: it is not a request from the client)."""
        if self._handlers is None:
            raise RuntimeError("the connection is not initialized: there is no version to read the resource as")
        raw = await self._dispatch(self.stub.SERVER_ROUTES["resources/read"], {"uri": uri}, context)
        return self.bindings.parse_result("resources/read", raw)

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        if method == "notifications/initialized":
            if self._handlers is None:
                logger.warning("notifications/initialized before initialize ignored")
            self.initialized = self._handlers is not None
            return
        logger.debug("notification %r ignored", method)

    # -- outgoing -------------------------------------------------------------------------------------------------

    async def notify(self, capability: str, method: str, params: dict[str, Any] | None) -> None:
        """Send a change notification: to the handshake-era client if the connection is initialized and
        ``capability`` was declared, and to the ``subscriptions/listen`` requests open on it that opted in to it. A
        closed connection is skipped (it is on its way out of ``Server.connections``)."""
        await self.listeners.deliver(capability, method, params)
        if self._handlers is None or not declared(self.capabilities, capability):
            return
        try:
            await self.session.notify(method, params)
        except (SessionClosedError, RuntimeError):
            logger.debug("%s not sent: the connection is closed", method)

    async def notify_resource_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` for ``uri``, if this client subscribed to it (either era)."""
        params = {"uri": uri}
        await self.listeners.deliver("resources.subscribe", "notifications/resources/updated", params)
        if uri in self.subscriptions and self._handlers is not None:
            try:
                await self.session.notify("notifications/resources/updated", params)
            except (SessionClosedError, RuntimeError):
                logger.debug("notifications/resources/updated not sent: the connection is closed")

    async def listen(self, requested: Mapping[str, Any], context: Context[Any]) -> Any:
        """``subscriptions/listen`` exists only in the modern era (``ModernRequest.listen``)."""
        raise MethodNotFound("subscriptions/listen")

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        if self.log_level is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await self.notify("logging", "notifications/message", params)

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """Send a request to the client and parse its answer as the negotiated version's result model. An answer
        that does not validate raises ``InvalidClientResultError`` (a ``ResultValidationError``) naming the fields.
        ``input_key`` only matters in the modern era."""
        raw = await self.session.request(method, params, timeout=timeout)
        try:
            return self.bindings.parse_result(method, raw)
        except ValidationError as exc:
            model = self.bindings.RESULT_TYPES[method]
            error = InvalidClientResultError(f"the client's answer to {method}", model, field_errors(exc))
            logger.warning("%s", error)
            raise error from None
