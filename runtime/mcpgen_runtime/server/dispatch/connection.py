"""One client over one long-lived ``MessageStream``: ``ServerConnection``, a legacy-era session (version negotiation,
lifecycle, dispatch), which also hands the modern requests it carries to the modern era's one-call dispatch.

Where it sits: in the ``server`` layer, on top of ``jsonrpc.session.Session`` (JSON-RPC: ids, cancellation,
progress) and the generated ``mcp_bindings.<version>.server`` stubs, whose ``SERVER_ROUTES`` drive dispatch
(``generated``): params are validated into the version's models (``validation``), the handlers (``handlers``)
return its result models, and those are dumped as the answer. Each request goes through ``pipeline.run_request``
(its ``context.Context``, the server's middleware) to this connection's endpoint. ``server.Server`` creates one per
stream (``serve_stream``): a stdio client, an in-memory peer, or a legacy session over streamable HTTP. A modern
request over HTTP never reaches one (``modern.answer_http``).

The two eras (MCP 2026-07-28 basic/versioning), on any connection:
- a request that ``modern.recognize`` finds modern (its ``_meta`` names a modern
  ``io.modelcontextprotocol/protocolVersion``; ``server/discover`` / ``subscriptions/listen`` in any case) is handed
  to ``modern.serve_modern``, in the session's task of that request: no ``initialize`` needed, nothing kept; its
  listen requests are this connection's ``listeners``; a version this server does not know is -32022;
- everything else is the legacy era: versions 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25;
  ``initialize`` gets the client's version if supported, else the newest; methods of other versions (and
  ``tasks/*`` without the ``tasks`` capability) answer -32601; before ``initialize``, known methods answer -32600
  (``ping`` is always answered, outside the middleware); after the ``initialize`` answer, requests are served even
  before ``notifications/initialized`` (over stdio that notification and the next request race inside the session,
  which handles them on different tasks);
- JSON-RPC batches only once 2025-03-26 has been negotiated (the session accepts them; ``_BatchGate`` refuses
  them on any other version, and before negotiation, since ``initialize`` may not be batched);
- change notifications (``notify``) go to the legacy client and to the ``subscriptions/listen`` requests open on
  the connection (``subscriptions``);
- list results are not paginated (cursors are ignored), except ``tasks/list``;
- 2025-11-25 tasks (``server.tasks.legacy``), when the server has a task engine and a tool that may run as a task:
  the ``tasks`` capability, task-augmented ``tools/call``, ``tasks/get|result|list|cancel`` and
  ``notifications/tasks/status`` (sent from watchers in the connection's own task group, which ends with it).
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Mapping, Sequence
from types import ModuleType
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ValidationError

from ...jsonrpc.context import PING, RequestContext
from ...jsonrpc.envelopes import (
    Batch,
    ErrorCode,
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
from ...protocol.results import ValidResult, field_errors
from ...task_store import TaskRecord
from ...transports.http.server import session as http_session
from ...transports.http.server.auth import AUTH_OWNER_KEY
from ...versions import (
    BATCH_VERSIONS,
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_ONLY_METHODS,
    resource_not_found_code,
)
from ..authoring.context import Context, InvalidClientResultError
from ..authoring.errors import ProtocolError
from ..authoring.middleware import IncomingRequest, Middleware
from ..authoring.registry import Registry
from ..authoring.tool_definition import ToolDef
from ..tasks.engine import TaskEngine, TaskRun
from ..tasks.legacy import (
    LegacyTasks,
    new_connection_id,
    related_meta,
    session_principal,
    wire_task,
)
from .direct_call import direct_plan, direct_result
from .generated import bindings_for, declared, handlers_class, not_initialized, served_methods, stub_for
from .handlers import Handlers, fit, protocol_error_answer, tool_result
from .modern import ModernServing, recognize, serve_modern
from .outgoing import client_answer, log_message, read_own_resource
from .pipeline import run_request
from .request_state import RequestStateCodec
from .subscriptions import Listeners
from .validation import source_of, typed_params, validated_result

__all__ = ["ServerConnection"]

logger = logging.getLogger(__name__)

TOOLS_CALL: Final = "tools/call"
_ABSENT: Final = object()


class _DeferredStub:
    """The newest legacy version's server stub, imported on first use: what a connection consults before ``initialize``
    (rarely anything), so that opening one does not build that version's models when the client negotiates another."""

    def __getattr__(self, name: str) -> Any:
        return getattr(stub_for(LATEST_LEGACY_VERSION), name)


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


class TaskConnectionView:
    """The connection view of a tool running as a 2025-11-25 task: the connection's, except that its questions go
    to the task's ``inputRequests`` (the client is asked during ``tasks/result``, see ``server.tasks.legacy``), its
    log and progress messages carry the related-task ``_meta``, and its HTTP request is the one that started the task.
    """

    def __init__(self, connection: ServerConnection, run: TaskRun, http_scope: Mapping[str, Any] | None) -> None:
        self.connection, self.run, self.http_scope = connection, run, http_scope
        self.task_run = run  # what Context looks for (task_id, task_status)
        self.relays_progress = True  # 2025-11-25: the call's progress token stays valid for the task's life
        self.protocol_version = connection.protocol_version
        self.bindings = connection.bindings
        self.client_capabilities = connection.client_capabilities
        self.client_info = connection.client_info
        self.lifespan_state = connection.lifespan_state

    def related_meta(self) -> dict[str, Any] | None:
        """The related-task ``_meta`` every notification of this task carries (the text's MUST), once it exists."""
        task_id = self.run.task_id
        return related_meta(task_id) if task_id is not None else None

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        params = log_message(level, data, logger_name, self.connection.log_level)
        meta = self.related_meta()
        if params is not None and meta is not None:
            params["_meta"] = meta
            await self.connection.notify("logging", "notifications/message", params)

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """Ask the client through the task (status ``input_required``), bounded by ``timeout`` when given, else by
        the task's life; the answer as the negotiated version's model (a bad one is the client's error)."""
        with anyio.fail_after(timeout):
            raw = await self.run.ask(method, params, input_key)

        def invalid(model: str, exc: ValidationError) -> Exception:
            return InvalidClientResultError(
                f"the client's answer to {method}", self.bindings.RESULT_TYPES[method], field_errors(exc)
            )

        return client_answer(self.bindings, method, raw, invalid)

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        return await self.connection.read_resource(uri, context)


class ServerConnection:
    """One client: its lifecycle state, negotiated version and capabilities, log level and subscriptions (the
    legacy era); the modern requests it carries are served on their own (``modern.serve_modern``)."""

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
        task_engine: TaskEngine | None = None,
    ) -> None:
        """``max_requests_in_flight`` / ``max_batch_size``: the session's limits (see ``jsonrpc.session.Session``).
        ``middleware``: wrapped around every request (see ``middleware``); ``lifespan_state``: what the server's
        lifespan yielded, for ``Context.lifespan_state``; ``request_states``: seals and verifies the modern era's
        ``requestState`` (``Server`` passes its own; default: a codec with a key of its own); ``task_engine``: runs
        tools as tasks (None: no 2025-11-25 tasks; a ``params.task`` is ignored, as the text says)."""
        self.server = server
        self.middleware = middleware
        self.lifespan_state = lifespan_state
        self.request_states = request_states or RequestStateCodec()
        self.modern = ModernServing(server, middleware, lifespan_state, self.request_states)
        self.protocol_version = ""  # "" until initialize has been answered
        self.bindings: ModuleType = bindings_for(LATEST_LEGACY_VERSION)  # lazy: builds nothing until used
        self.stub: ModuleType = _LATEST_STUB  # until initialize picks the negotiated version's
        self.initialized = False  # notifications/initialized received
        self.capabilities: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self._handlers: Handlers | None = None
        self.task_engine = task_engine
        self.legacy_tasks: LegacyTasks | None = None  # set by initialize when the tasks capability is declared
        self._connection_id = ""  # the task binding of an unauthenticated connection without a session id
        self._background: TaskGroup | None = None
        self._served: frozenset[str] = frozenset()
        # Once initialized, without middleware: each served method's route and bound handler, looked up once (the
        # usual request of the connection goes straight to its handler: see _on_request).
        self._bound_routes: dict[str, tuple[Any, Any]] = {}
        self.session = Session(
            _BatchGate(stream, self),
            request_handler=self._on_request,
            notification_handler=self._on_notification,
            allow_batches=True,
            answer_pings=False,  # answered in _on_request: ping is not a method of the modern era
            max_requests_in_flight=max_requests_in_flight,
            max_batch_size=max_batch_size,
            eager_handler=self._eager_call,
        )
        self.listeners = Listeners(server, lambda: self.session)

    async def run(self) -> None:
        """Serve until the client closes its side of the stream. The task status watchers run in a task group of
        the connection's own: they end with it."""
        failure: Exception | None = None
        async with anyio.create_task_group() as background:
            self._background = background
            try:
                await self.session.run()
            except Exception as exc:  # raised below as itself, not inside the task group's ExceptionGroup
                failure = exc
            finally:
                self._background = None
                background.cancel_scope.cancel()
        if failure is not None:
            raise failure

    @property
    def http_scope(self) -> Mapping[str, Any] | None:
        """The POST that carried the request being served, over a legacy HTTP session (None over stdio)."""
        return http_session.current_http_scope()  # looked up on the module: a test may stand in for it

    # -- incoming -------------------------------------------------------------------------------------------------

    async def _on_request(self, method: str, params: JSONParams, request: RequestContext) -> dict[str, Any]:
        bound = self._bound_routes.get(method)
        # A request without _meta is never a modern one (nor is any method of _bound_routes modern-only): the usual
        # request of an initialized legacy connection skips recognize.
        if bound is None or (type(params) is dict and "_meta" in params):
            plan = direct_plan(self.modern, method, params)  # a plain modern tools/call: answered in one function
            if plan is not None:
                return await direct_result(plan)
            recognized = recognize(method, params)
            if recognized is not None:
                version, meta = recognized
                return await serve_modern(
                    self.modern,
                    version,
                    meta,
                    method,
                    params,
                    request,
                    listeners=self.listeners,
                    http_scope=self.http_scope,
                )
            if method == PING:
                return {}  # answered at once, before initialize too, and not through the middleware
        if bound is not None:
            # What _route and _dispatch would do, the route and the handler looked up once per connection.
            route, handler = bound
            if method == TOOLS_CALL and (plain := self._plain_tool(params)) is not None:
                return await self._call_plain_tool(route, *plain)
            typed = typed_params(route, params)
            returned = await handler(typed, Context(self, request))
            return self._validated(route, returned, lambda: source_of(route, typed))
        return await run_request(self.middleware, self, method, params, request, self._route, self._finish)

    def _eager_call(self, method: str, params: JSONParams) -> Coroutine[Any, Any, dict[str, Any]] | None:
        """The session's ``eager_handler``: the coroutine of a legacy ``tools/call`` that takes the lane below (what
        ``_on_request`` would run for it, needing no ``RequestContext``), else None."""
        if method != TOOLS_CALL:
            return None
        bound = self._bound_routes.get(method)
        plain = self._plain_tool(params) if bound is not None else None
        return self._call_plain_tool(bound[0], *plain) if bound is not None and plain is not None else None

    def _plain_tool(self, params: JSONParams) -> tuple[ToolDef, dict[str, Any] | None] | None:
        """The tool and arguments of a ``tools/call`` that needs nothing of the general dispatch (see
        ``_call_plain_tool``): params of nothing but ``name`` (a string) and ``arguments`` (an object, or absent),
        a tool that exists and takes no ``Context``, and no 2025-11-25 tasks on the connection. None for any
        other request."""
        if type(params) is not dict or self.legacy_tasks is not None:
            return None
        name, arguments = params.get("name"), params.get("arguments", _ABSENT)
        if len(params) != (1 if arguments is _ABSENT else 2) or type(name) is not str:
            return None
        if arguments is _ABSENT:
            arguments = None
        elif type(arguments) is not dict:  # null too: the versions' params models refuse it (-32602)
            return None
        tool = self.server.tools.get(name)
        return (tool, arguments) if tool is not None and tool.sig.context_param is None else None

    async def _call_plain_tool(self, route: Any, tool: ToolDef, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """What the general dispatch answers a ``_plain_tool`` request with, without its params model, ``Context``
        and handler layers (they cost more than such a tool): the same functions, in the same order
        (``handlers.Handlers.call_tool``; the modern era's ``direct_call`` is the same idea). Params such as these
        always validate, and a legacy version has no ``Mcp-Param-*`` headers to check."""
        try:
            outcome = await tool.call(arguments, None)
        except ProtocolError as exc:
            code = resource_not_found_code(self.protocol_version)
            raise protocol_error_answer(exc, "call_tool", tool.name, code) from None
        return self._validated(route, tool_result(outcome, self.bindings), lambda: source_of(route, tool))

    def _finish(self, incoming: IncomingRequest[Any], value: Any) -> dict[str, Any]:
        """A result a middleware returned itself, validated like a handler's (see ``middleware``)."""
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
        """The pipeline's endpoint in this era: ``initialize``, or the negotiated version's handler of ``method``."""
        if method == "initialize":
            return await self._initialize(params, context)
        if self._handlers is None:
            raise not_initialized(method)
        route = self.stub.SERVER_ROUTES.get(method)
        if route is None or method not in self._served:
            raise MethodNotFound(method)
        return await self._dispatch(route, params, context)

    async def _initialize(self, params: JSONParams, context: Context[Any]) -> dict[str, Any]:
        if self._handlers is not None:
            raise JSONRPCError(ErrorCode.INVALID_REQUEST, "Invalid Request: initialize was already received")
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        assert isinstance(version, str)
        bindings, stub = bindings_for(version), stub_for(version)
        route = stub.SERVER_ROUTES["initialize"]
        handlers = handlers_class(version)(self)
        capabilities = fit(bindings.ServerCapabilities, self._offered_capabilities())
        served = served_methods(stub, handlers, capabilities, bool(self.server.completions))
        self.bindings, self.stub, self.capabilities = bindings, stub, capabilities
        result = await self._dispatch(route, params, context, handlers)
        # Only now: a bad initialize (-32602) leaves the connection uninitialized, and may be retried.
        self._handlers, self._served, self.protocol_version = handlers, served, version
        if not self.middleware:
            routes = stub.SERVER_ROUTES
            self._bound_routes = {
                method: (routes[method], getattr(handlers, routes[method].handler))
                for method in served
                if method not in ("initialize", PING) and method not in MODERN_ONLY_METHODS and method in routes
            }
        if "tasks" in capabilities and self.task_engine is not None:
            self.legacy_tasks = LegacyTasks(self.task_engine.store, self._ask_client, self.session.notify)
        return result

    def _offered_capabilities(self) -> dict[str, Any]:
        """The server's capabilities; without a task engine, not 2025-11-25's ``tasks`` (nothing would run them: a
        ``params.task`` is then ignored, as the text says of a receiver without the capability)."""
        capabilities = self.server.capabilities()
        if self.task_engine is None:
            capabilities.pop("tasks", None)
        return capabilities

    # -- 2025-11-25 tasks (server.tasks.legacy) -------------------------------------------------------------------

    def task_principal(self) -> str:
        """Who the tasks of the request being served belong to (see ``server.tasks.legacy``, "Binding")."""
        scope = self.http_scope
        owner = session_id = None
        if scope is not None:
            owner = scope.get(AUTH_OWNER_KEY)
            session_id = next(
                (v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"mcp-session-id"), None
            )
        if not owner and not session_id and not self._connection_id:
            self._connection_id = new_connection_id()
        return session_principal(owner, session_id, self._connection_id)

    async def start_task(self, params: Any, context: Context[Any]) -> ValidResult:
        """A task-augmented ``tools/call`` (``params``, the version's model): the tool started as a task, answered
        with its ``CreateTaskResult`` once the task is stored; its status changes are then sent as
        ``notifications/tasks/status``."""
        engine, tasks, handlers = self.task_engine, self.legacy_tasks, self._handlers
        assert engine is not None and tasks is not None and handlers is not None
        route = self.stub.SERVER_ROUTES["tools/call"]
        meta = context.meta
        # The task's own request context: its progress token stays valid for the task's life (the text), on this
        # connection's session; nothing else of the tools/call request is kept.
        request = RequestContext(self.session, context.request_id, "tools/call", {"_meta": meta} if meta else {})
        http_scope = self.http_scope

        async def body(run: TaskRun) -> dict[str, Any]:
            task_context: Context[Any] = Context(TaskConnectionView(self, run, http_scope), request)
            returned = await handlers.run_tool(params, task_context)
            return self._validated(route, returned, f"the result of tool {params.name!r}")

        arguments = params.arguments
        launched = await engine.launch(
            body,
            principal=self.task_principal(),
            protocol_version=self.protocol_version,
            request={"name": params.name, **({"arguments": arguments} if arguments is not None else {})},
            ttl_ms=engine.ttl_ms_for(params.task.ttl),
        )
        assert isinstance(launched, TaskRecord)  # a deferred task is the modern era's only
        if self._background is not None:
            self._background.start_soon(tasks.watch, launched)
        created = self._validated_as(self.bindings.CreateTaskResult, {"task": wire_task(launched)}, "CreateTaskResult")
        return ValidResult(created)

    async def _ask_client(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        return await self.session.request(method, params, timeout=timeout)

    async def _dispatch(
        self, route: Any, params: JSONParams, context: Context[Any], handlers: Handlers | None = None
    ) -> dict[str, Any]:
        typed = typed_params(route, params)
        handler = getattr(handlers or self._handlers, route.handler)
        returned = await handler(typed, context)
        # Handlers return the result model or a dict (what they build, or a tool's own CallToolResult): either way
        # it is validated here, once, against the negotiated version (see protocol.results.as_result).
        return self._validated(route, returned, lambda: source_of(route, typed))

    def _validated(self, route: Any, returned: Any, source: Any) -> dict[str, Any]:
        """``returned`` validated as ``route``'s result model of the negotiated version, dumped as JSON."""
        return validated_result(route.result_type, returned, source, self.protocol_version)

    def _validated_as(self, model: Any, returned: Any, source: str) -> dict[str, Any]:
        return validated_result(model, returned, source, self.protocol_version)

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        """``Context.read_resource``: ``resources/read`` of ``uri`` answered by this server, as the negotiated
        version's result model (not through the middleware: it is not a request from the client)."""
        if self._handlers is None:
            raise RuntimeError("the connection is not initialized: there is no version to read the resource as")
        return await read_own_resource(self._handlers, self.stub, {"uri": uri}, context, self._validated_as)

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        if method == "notifications/initialized":
            if self._handlers is None:
                logger.warning("notifications/initialized before initialize ignored")
            self.initialized = self._handlers is not None
            return
        logger.debug("notification %r ignored", method)

    # -- outgoing -------------------------------------------------------------------------------------------------

    async def notify(self, capability: str, method: str, params: dict[str, Any] | None) -> None:
        """Send a change notification: to the legacy client if the connection is initialized and ``capability``
        was declared, and to the ``subscriptions/listen`` requests open on it that opted in to it. A closed
        connection is skipped (it is on its way out of ``Server.connections``)."""
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
        params = log_message(level, data, logger_name, self.log_level)
        if params is not None:
            await self.notify("logging", "notifications/message", params)

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """Send a request to the client and parse its answer as the negotiated version's result model. An answer
        that does not validate raises ``InvalidClientResultError`` (a ``ResultValidationError``) naming the fields.
        ``input_key`` only matters in the modern era."""
        raw = await self.session.request(method, params, timeout=timeout)

        def invalid(model: str, exc: ValidationError) -> Exception:
            error = InvalidClientResultError(
                f"the client's answer to {method}", self.bindings.RESULT_TYPES[method], field_errors(exc)
            )
            logger.warning("%s", error)
            return error

        return client_answer(self.bindings, method, raw, invalid)
