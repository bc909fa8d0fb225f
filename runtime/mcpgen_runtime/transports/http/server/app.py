"""The MCP streamable HTTP transport, server side: an ASGI app that serves both eras of MCP on one endpoint.

Where it sits: the top of ``transports.http.server``, beside ``transports.stdio``. ``StreamableHTTPApp`` (ASGI,
served by uvicorn via ``run_http`` / ``serve_app``) hands ``MessageStream`` s to one connection handler, ``async def handle(stream: MessageStream) ->
None`` - the same entry a stdio server uses, so the handler never learns it is behind HTTP. Two eras share the
endpoint:

- the legacy era (2024-11-05 to 2025-11-25, ``legacy.LegacyEra``): one ``HTTPSessionStream`` per MCP session (an
  ``initialize`` POST without an ``Mcp-Session-Id`` that the handler answers with success; a refused one leaves
  nothing behind), SSE streams with event ids and resumption, a standalone GET stream, DELETE;
- the modern era (2026-07-28, ``modern``): a POST whose ``MCP-Protocol-Version`` names no legacy version, or
  whose request carries the ``_meta`` protocol version, is one request served as one call of the app's
  ``modern_handler`` (``modern.ModernHandler``), answered and forgotten; GET and DELETE of that era are 405.

A request carrying the id of a live session is that session's (its rules unchanged) unless it is a modern one
(its header names no legacy version, or its body the ``_meta`` version): the spec has a modern request's
``Mcp-Session-Id`` ignored, and a legacy header over a modern body refused as a mismatch (``modern.is_modern``).
Where the app keeps its state is its ``storage`` (``storage.HTTPStorage``: the event store, stream tails, a session
directory; in memory by default): ``scaleout.worker.ScaleOut`` passes one on Redis, so that several workers share
sessions (a request for a session this worker does not hold is restored from the store, or answered 404),
subclassing nothing here. SSE encoding and the SSE response are in ``sse``.

Routing the handler's outgoing frames of a session: a response goes to the stream of the POST that carried its
request (by id). A server->client request or notification goes to the stream of the POST whose request the handler
was serving when it sent it, and otherwise to the standalone GET stream. "Which request was being served" is a
context variable set by ``receive``: ``Session`` runs each request's handler in a task spawned from its receive loop
right after ``receive`` returned (or, for a request that waited for the in-flight limit, in the context it was read
in), so the task inherits the value; a request handed over directly (below) runs with it set by ``deliver``.

Speed: the app is plain ASGI (``asgi``; ``app`` is a starlette app of the same endpoint for those who want
one), and a POST carrying one request of a session hands it to the session directly (``HTTPSessionStream.deliver``,
the session's ``dispatch_now``): its handler runs in the POST's own task, so the answer is there when it returns; an
SSE response then starts when the handler is done, or after a few milliseconds if it is not (``sse.InlineSSE``,
on asyncio). A task watches for the client's disconnect only once an answer has been pending a few milliseconds
(``asgi.DisconnectWatch``).

Limits (each an option, see ``StreamableHTTPApp``): body size, batch size, sessions, requests in flight per session
and per server (modern requests count against the server's), listen streams, and an idle expiry of sessions. A
request over an in-flight limit is refused at once, with HTTP 429 (this session's limit) or 503 (the server's) and
``Retry-After``, the body a JSON-RPC error with code ``TOO_MANY_REQUESTS_IN_FLIGHT``: the official SDK's client and
ours surface a JSON-RPC error body of a 4xx/5xx as the request's error, and the status tells any client and proxy
that the refusal is temporary.
"""

from __future__ import annotations

import logging
import math
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Final, Protocol, TypedDict

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from typing_extensions import Unpack

from ....jsonrpc.envelopes import Batch, ErrorCode, Invalid, Request, decode_frame
from ....jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ....jsonrpc.streams import MessageStream
from .asgi import JSON, Answer, HTTPRequest, OriginCheck, accepts, is_json, plain_text, route_path, running_loop
from .auth import (
    AUTH_OWNER_KEY,
    AUTH_SCOPE_KEY,
    AnyHTTPAuth,
    Authenticated,
    AuthRefusal,
    authorization_of,
    bound_authenticator,
    metadata_answer,
    refusal_answer,
)
from .channel import DEFAULT_MAX_QUEUED_EVENTS
from .event_store import EventStore, InMemoryEventStore
from .legacy import (
    PROTOCOL_VERSION_HEADER,
    SESSION_ID_HEADER,
    TOO_MANY_REQUESTS_IN_FLIGHT,
    LegacyAnswer,
    LegacyEra,
    error_answer,
)
from .modern import (
    DEFAULT_MAX_LISTEN_STREAMS,
    LEGACY_VERSIONS,
    ModernEager,
    ModernEra,
    ModernExchange,
    ModernHandler,
    ModernJSONAnswer,
    is_modern,
    method_not_served,
    names_modern_version,
)
from .serving import serve_app
from .session import HTTPSessionStream, InFlightBudget, error_body
from .storage import HTTPStorage

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_LISTEN_STREAMS",
    "DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "TOO_MANY_REQUESTS_IN_FLIGHT",
    "AppFactory",
    "ConnectionHandler",
    "EndpointOptions",
    "HTTPAppOptions",
    "HTTPSessionStream",
    "StreamableHTTPApp",
    "run_http",
    "serve_app",
]

logger = logging.getLogger(__name__)

ConnectionHandler = Callable[[MessageStream], Awaitable[None]]

DEFAULT_MAX_BODY_SIZE: Final = 4 * 1024 * 1024
DEFAULT_MAX_SESSIONS: Final = 1000
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 30 * 60.0  # as the official SDK
DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL: Final = 1000
LOCAL_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
METHODS: Final = ("GET", "POST", "DELETE")

_AnyAnswer = LegacyAnswer | ModernExchange | ModernJSONAnswer


class StreamableHTTPApp:
    """The streamable HTTP endpoint as an ASGI app: ``handler`` serves each MCP session's ``MessageStream``,
    ``modern_handler`` each modern request, as one call (see the module docstring).

    Needs its lifespan run (uvicorn does; ``run_http`` / ``serve_app`` do it for you): session handlers are tasks
    of the app, not of the HTTP request that created the session (a modern request's handler runs in the task of
    its HTTP request).
    """

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        modern_handler: ModernHandler = method_not_served,
        modern_eager: ModernEager | None = None,
        path: str = "/mcp",
        json_response: bool = False,
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        supported_versions: Collection[str] = LEGACY_VERSIONS,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        ping_interval: float = 15.0,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_requests_in_flight_total: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        resumable: bool = True,
        event_store: EventStore | None = None,
        retry_interval: float = 1.0,
        max_listen_streams: int = DEFAULT_MAX_LISTEN_STREAMS,
        max_queued_events: int = DEFAULT_MAX_QUEUED_EVENTS,
        auth: AnyHTTPAuth | None = None,
        storage: HTTPStorage | None = None,
        lifespan: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        on_started: Sequence[Callable[[StreamableHTTPApp], Awaitable[None]]] = (),
    ) -> None:
        """Options (every limit and timeout has a default; sizes in bytes, times in seconds):

        - ``modern_handler`` (``modern.method_not_served``: -32601): serves each modern request, as one call.
        - ``modern_eager`` (None): starts the modern requests it can at once, before an exchange is made for them
          (``modern.ModernEager``; ``Server.start_modern``, beside ``Server.serve_modern``).
        - ``json_response`` (False): answer request POSTs with one JSON body instead of an SSE stream (server->client
          messages then all travel on the GET stream; nothing is resumable; a modern request's notifications are
          dropped, except on ``subscriptions/listen`` streams, which are always SSE).
        - ``allowed_hosts`` (local names): host names (any port) accepted in ``Host``; ``"*"`` turns the Host and
          Origin checks off (DNS-rebinding protection, so only behind something that checks).
        - ``allowed_origins`` (None): exact ``scheme://host[:port]`` origins a browser may call from. Without it an
          ``Origin`` must be the server's own: its scheme, a host of ``allowed_hosts`` and the port of ``Host``
          (``https://localhost`` or ``http://localhost:9999`` are refused by a server at ``http://localhost:8000``).
        - ``max_body_size`` (4 MiB): a larger POST body is refused with 413.
        - ``supported_versions`` (the legacy-era versions): ``MCP-Protocol-Version`` values a session accepts;
          any other value is refused with 400, whatever the session negotiated (as both official SDKs do). Without a
          session, a value that is no legacy-era version makes the request a modern one (the server layer
          answers a version it does not serve with -32022).
        - ``max_sessions`` (1000): sessions open (or opening) at once; one more is refused with 503.
        - ``ping_interval`` (15): an SSE comment is sent after this long without an event.
        - ``session_idle_timeout`` (1800, like the official SDK; None: never): a session without any HTTP request
          being served (no POST answered, no GET stream open) for this long is ended; its id then answers 404.
        - ``max_requests_in_flight`` (100): requests of one session being handled; more are refused (429).
        - ``max_requests_in_flight_total`` (1000): the same over all sessions and modern requests; more are
          refused (503).
        - ``max_batch_size`` (100): messages in one JSON-RPC batch (2025-03-26); more are refused (400, -32600).
        - ``resumable`` (True): SSE events get ids (stored in ``event_store``); 2025-11-25 clients get a priming
          event first, handlers may end a stream's connection (``session.close_sse_stream``), and a GET with
          ``Last-Event-ID`` replays what the client missed.
        - ``event_store`` (an ``InMemoryEventStore`` with its default bounds): where events are kept.
        - ``retry_interval`` (1.0): the SSE ``retry`` sent with priming events and when the server ends a
          connection (clients wait that long before they reconnect).
        - ``max_listen_streams`` (100): ``subscriptions/listen`` streams open at once (they do not count as requests
          in flight); one more is refused (503).
        - ``max_queued_events`` (1000): events waiting for one SSE connection whose client does not read them fast
          enough; one more ends that connection (``channel``): the client resumes with ``Last-Event-ID``, and
          nothing is lost if its events had ids (else a warning says how many were lost).
        - ``auth`` (None: unprotected): checks every request's credentials before anything else and serves the
          authorization metadata documents (``auth``; the server layer's ``server.auth.BearerAuth`` is one).
          A session is bound to the owner of the credentials that created it: another owner's request on it is
          answered 404, as an unknown session.
        - ``storage`` (``storage.HTTPStorage()``: in memory): where the app keeps its state; ``scaleout`` passes one
          on Redis. Its event store replaces ``event_store``, and is used even without ``resumable``.
        - ``lifespan`` (None): an async context manager entered around the app's run, outside its task group (the
          server's lifespan, or a Redis connection).
        - ``on_started`` (none): awaited with the app, in order, once it runs (``task_group`` is set).

        A client that disconnects from a stream it cannot resume (JSON answers, or no event id sent yet) has its
        requests cancelled, as if it had sent ``notifications/cancelled``; a resumable stream's requests go on.
        """
        self.auth = bound_authenticator(auth)
        # Credentials bound to the request (DPoP) are checked with the request's scope: see auth.HTTPAuthenticator.
        self._authenticate_request = getattr(self.auth, "authenticate_request", None)
        self.json_response = json_response
        self._origins = OriginCheck(allowed_hosts or LOCAL_HOSTS, allowed_origins)
        self._max_body_size = max_body_size
        if session_idle_timeout is not None and not (math.isfinite(session_idle_timeout) and session_idle_timeout > 0):
            raise ValueError("session_idle_timeout must be a positive number of seconds, or None")
        if min(max_requests_in_flight, max_requests_in_flight_total, max_batch_size) < 1:
            raise ValueError("the in-flight and batch limits must be at least 1")
        self._budget = InFlightBudget(max_requests_in_flight_total)
        self._max_batch_size = max_batch_size
        if max_queued_events < 1:
            raise ValueError("max_queued_events must be at least 1")
        if storage is None:
            storage = HTTPStorage(events=(event_store or InMemoryEventStore()) if resumable else None)
        self.storage = storage
        self._lifespan_context = lifespan
        self.on_started = list(on_started)
        self._tg: TaskGroup | None = None
        self.legacy = LegacyEra(
            handler,
            self._budget,
            storage=storage,
            json_response=json_response,
            supported_versions=frozenset(supported_versions),
            max_sessions=max_sessions,
            ping_interval=ping_interval,
            idle_timeout=session_idle_timeout,
            max_requests_in_flight=max_requests_in_flight,
            retry_ms=max(0, round(retry_interval * 1000)),
            max_queued_events=max_queued_events,
        )
        self.modern = ModernEra(
            modern_handler,
            self._budget,
            json_response=json_response,
            ping_interval=ping_interval,
            max_listen_streams=max_listen_streams,
            eager=modern_eager,
        )
        self.path = path
        # The same endpoint as a starlette app, for code that drives it as one (its router's lifespan_context is
        # ``running``). Requests do not go through it: ``__call__`` is the app.
        self.app = Starlette(routes=[Route(path, endpoint=self, methods=list(METHODS))], lifespan=self._running)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: ``path`` (GET, POST, DELETE; other methods 405, other paths 404) and the lifespan."""
        kind = scope["type"]
        if kind == "http":
            path = route_path(scope)
            document = self.auth.metadata(path) if self.auth is not None and path != self.path else None
            if document is not None:
                await self._metadata(document, scope, receive, send)
            elif path != self.path:
                await plain_text(404, "Not Found")(scope, receive, send)
            elif scope["method"] not in METHODS:
                await plain_text(405, "Method Not Allowed", {"Allow": ", ".join(METHODS)})(scope, receive, send)
            else:
                await self._asgi(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    @property
    def sessions(self) -> dict[str, HTTPSessionStream]:
        """The legacy-era sessions this process holds, by id."""
        return self.legacy.sessions

    @property
    def task_group(self) -> TaskGroup:
        """The app's task group while it runs (for the tasks of ``on_started`` hooks)."""
        if self._tg is None:
            raise RuntimeError("the app is not running")
        return self._tg

    @property
    def requests_in_flight(self) -> int:
        """Requests being handled over all sessions (the count ``max_requests_in_flight_total`` bounds)."""
        return self._budget.used

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager for the duration of the block: session handlers are tasks of it, and every session
        ends on exit. The ASGI lifespan runs it (uvicorn does; ``run_http`` / ``serve_app`` do it for you)."""
        async with AsyncExitStack() as stack:
            if self._lifespan_context is not None:
                await stack.enter_async_context(self._lifespan_context())
            tg = await stack.enter_async_context(anyio.create_task_group())
            self._tg = self.legacy.task_group = tg
            self.modern.loop = running_loop()
            try:
                for hook in self.on_started:
                    await hook(self)
                yield
            finally:
                self.close_sessions()
                tg.cancel_scope.cancel()
                self._tg = self.legacy.task_group = None
                self.modern.loop = None

    def _running(self, app: object) -> AbstractAsyncContextManager[None]:
        return self.running()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan (as starlette's): ``running`` from startup to shutdown."""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        started = False
        try:
            async with self.running():
                await send({"type": "lifespan.startup.complete"})
                started = True
                while (await receive())["type"] != "lifespan.shutdown":
                    pass
        except BaseException:
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": traceback.format_exc()})
            raise
        await send({"type": "lifespan.shutdown.complete"})

    def close_sessions(self) -> None:
        """End every session (their open streams end, their handlers see end of stream), and every modern
        request's exchange (listen streams end; their handlers are cancelled)."""
        self.legacy.close()
        self.modern.close()

    # -- HTTP ------------------------------------------------------------------------------------------------------

    async def metadata_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The authorization metadata documents as an ASGI app (for a parent app to route: ``mount_mcp`` does)."""
        document = self.auth.metadata(route_path(scope)) if self.auth is not None else None
        if document is None:
            await plain_text(404, "Not Found")(scope, receive, send)
        else:
            await self._metadata(document, scope, receive, send)

    async def _metadata(self, document: Any, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] in ("GET", "HEAD"):
            await metadata_answer(document)(scope, receive, send)
        elif scope["method"] == "OPTIONS":  # a browser's CORS preflight
            headers = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET"}
            await Answer(b"", 204, headers)(scope, receive, send)
        else:
            await plain_text(405, "Method Not Allowed", {"Allow": "GET"})(scope, receive, send)

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = HTTPRequest(scope, receive)
        if self.auth is not None:
            # Before anything else: nothing of an unauthenticated request is read, routed or answered.
            header = authorization_of(scope)  # more than one Authorization header: refused (400)
            if isinstance(header, AuthRefusal):
                verdict: Authenticated | AuthRefusal = header
            elif self._authenticate_request is not None:
                verdict = await self._authenticate_request(header, scope)
            else:
                verdict = await self.auth.authenticate(header)
            if isinstance(verdict, AuthRefusal):
                await refusal_answer(verdict)(scope, receive, send)
                return
            scope[AUTH_SCOPE_KEY], scope[AUTH_OWNER_KEY] = verdict.identity, verdict.owner
        # Held here, or (with a session directory: scaleout) restored from the shared store, or checked there.
        # A POST whose MCP-Protocol-Version names a modern version is a modern request: its Mcp-Session-Id is ignored,
        # as the spec says (modern.is_modern quotes it), so no session is looked up, restored or checked for it.
        session_id = request.headers.get(SESSION_ID_HEADER, "")
        if not session_id or (request.method == "POST" and names_modern_version(request)):
            session = None  # nothing to look up (every modern request): no call, no await
        else:
            session = await self.legacy.session_for(session_id)
        if isinstance(session, Answer):
            await session(scope, receive, send)
            return
        if session is not None and session.owner != scope.get(AUTH_OWNER_KEY):
            # Another identity's session (a leaked or guessed id): as unknown as an ended one.
            message = "Not Found: unknown or ended session"
            await error_answer(404, ErrorCode.INVALID_REQUEST, message)(scope, receive, send)
            return
        if session is None:
            response = await self._respond(request, in_session=False)
            if response is not None:
                await response(scope, receive, send)
            return
        # The whole request, answer included, keeps its session from expiring (an open GET stream too).
        session.enter_busy()
        try:
            response = await self._respond(request, in_session=True)
            if response is not None:
                await response(scope, receive, send)
        finally:
            session.leave_busy()

    async def _respond(self, request: HTTPRequest, *, in_session: bool) -> _AnyAnswer:
        """``in_session``: the request names a live session (of the legacy era, unless its body carries the modern
        ``_meta`` version: ``modern.is_modern``)."""
        if (problem := self._origins.problem(request)) is not None:
            return error_answer(403, ErrorCode.INVALID_REQUEST, f"Forbidden: {problem}")
        if request.method == "POST":
            return await self._post(request, in_session)
        version = request.headers.get(PROTOCOL_VERSION_HEADER)
        if not in_session and version is not None and version.strip() not in LEGACY_VERSIONS:
            # The modern era has no GET stream and no session to DELETE (spec, "Backward Compatibility").
            return plain_text(405, "Method Not Allowed", {"Allow": "POST"})
        if request.method == "GET":
            return await self.legacy.get(request)
        return await self.legacy.delete(request)

    async def _post(self, request: HTTPRequest, in_session: bool) -> _AnyAnswer:
        wants_json, wants_sse = accepts(request.headers.get("accept", ""))
        if not wants_json or not (wants_sse or self.json_response):
            message = "Not Acceptable: the client must accept both application/json and text/event-stream"
            return error_answer(406, ErrorCode.INVALID_REQUEST, message)
        if not is_json(request.headers.get("content-type", "")):
            return error_answer(415, ErrorCode.INVALID_REQUEST, "Unsupported Media Type: use application/json")
        body = await request.body(self._max_body_size)
        if body is None:
            message = f"Payload Too Large: the limit is {self._max_body_size} bytes"
            return error_answer(413, ErrorCode.INVALID_REQUEST, message)
        decoded = decode_frame(body)
        if isinstance(decoded, Invalid):
            return Answer(error_body(decoded.code, decoded.message, decoded.id), 400, media_type=JSON)
        items = decoded.items if isinstance(decoded, Batch) else (decoded,)
        if len(items) > self._max_batch_size:
            message = f"Invalid Request: a batch of {len(items)} messages (the limit is {self._max_batch_size})"
            return error_answer(400, ErrorCode.INVALID_REQUEST, message)
        for item in items:
            if isinstance(item, Invalid):
                return Answer(error_body(item.code, item.message, item.id), 400, media_type=JSON)
        if self.auth is not None:
            identity = request.scope.get(AUTH_SCOPE_KEY)
            for item in items:
                if isinstance(item, Request):
                    params = item.params if isinstance(item.params, dict) else None
                    refusal = self.auth.authorize(identity, item.method, params)
                    if refusal is not None:
                        return refusal_answer(refusal, item.id)

        if is_modern(request, decoded, in_session=in_session):  # see modern.is_modern: the spec's era rules
            return self.modern.post(request.scope, request, decoded)
        return await self.legacy.post(request, body, decoded, items)


class EndpointOptions(TypedDict, total=False):
    """The options of ``StreamableHTTPApp`` (see its ``__init__``) that configure the endpoint itself, the same
    wherever it is served (``run_http``, or mounted in another app: ``server.hosting.asgi.MountOptions``)."""

    json_response: bool
    allowed_hosts: Collection[str] | None
    allowed_origins: Collection[str] | None
    max_body_size: int
    supported_versions: Collection[str]
    max_sessions: int
    ping_interval: float
    session_idle_timeout: float | None
    max_requests_in_flight: int
    max_requests_in_flight_total: int
    max_batch_size: int
    resumable: bool
    event_store: EventStore | None
    retry_interval: float
    max_listen_streams: int
    max_queued_events: int
    auth: AnyHTTPAuth | None
    storage: HTTPStorage | None


class HTTPAppOptions(EndpointOptions, total=False):
    """All the options of ``StreamableHTTPApp``, for functions that build one (``run_http``): a misspelt option
    fails in mypy, and at run time with a TypeError naming it."""

    modern_handler: ModernHandler
    modern_eager: ModernEager | None
    path: str
    lifespan: Callable[[], AbstractAsyncContextManager[object]] | None
    on_started: Sequence[Callable[[StreamableHTTPApp], Awaitable[None]]]


class AppFactory(Protocol):
    """What builds the app ``run_http`` serves: ``StreamableHTTPApp`` itself, or ``scaleout.worker.ScaleOut``."""

    def __call__(self, handler: ConnectionHandler, /, **options: Unpack[HTTPAppOptions]) -> StreamableHTTPApp: ...


async def run_http(
    handler: ConnectionHandler,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    shutdown_timeout: float = 5.0,
    reuse_port: bool = False,
    app_factory: AppFactory | None = None,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    **options: Unpack[HTTPAppOptions],
) -> None:
    """Serve ``handler`` over streamable HTTP at ``http://host:port/mcp`` until cancelled. ``options``: those of
    ``StreamableHTTPApp`` (limits, timeouts, resumability, Host/Origin checks; each has a default), passed to
    ``app_factory`` (default ``StreamableHTTPApp``; ``scaleout.worker.ScaleOut`` builds a worker of a scaled-out
    server). ``shutdown_timeout`` (5): on
    cancellation, how long uvicorn may finish its connections; ``reuse_port``: several processes listen on the port
    (see ``serve_app``). ``await task_group.start(run_http, handler, "127.0.0.1", 0)`` gives the base URL."""
    unknown = set(options) - set(HTTPAppOptions.__annotations__)
    if unknown:
        raise TypeError(f"run_http() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    app = (app_factory or StreamableHTTPApp)(handler, **options)
    await serve_app(
        app,
        host,
        port,
        before_shutdown=app.close_sessions,
        shutdown_timeout=shutdown_timeout,
        reuse_port=reuse_port,
        task_status=task_status,
    )
