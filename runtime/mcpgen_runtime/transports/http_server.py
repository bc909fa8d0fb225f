"""The MCP streamable HTTP transport, server side (spec 2025-03-26 and later): an ASGI app that turns HTTP into
per-session ``MessageStream`` s.

Where it sits: beside ``stdio`` under ``session``. ``StreamableHTTPApp`` (ASGI, served by uvicorn via
``run_http`` / ``serve_app``) creates one ``HTTPSessionStream`` per MCP session (an ``initialize`` POST without an
``Mcp-Session-Id`` that the handler answers with success; a refused one leaves nothing behind) and hands it to a
connection handler, ``async def handle(stream: MessageStream) -> None`` - the same entry a stdio server uses, so the
handler never learns it is behind HTTP. SSE encoding and the SSE response are in ``http_sse``; resumability's
storage in ``event_store``.

Routing the handler's outgoing frames: a response goes to the stream of the POST that carried its request (by id).
A server->client request or notification goes to the stream of the POST whose request the handler was serving when
it sent it, and otherwise to the standalone GET stream. "Which request was being served" is a context variable set
by ``receive``: ``Session`` runs each request's handler in a task spawned from its receive loop right after
``receive`` returned (or, for a request that waited for the in-flight limit, in the context it was read in), so the
task inherits the value; a request handed over directly (below) runs with it set by ``deliver``.

Speed: the app is plain ASGI (``http_asgi``; ``app`` is a starlette app of the same endpoint for those who want
one), and a POST carrying one request hands it to the session directly (``HTTPSessionStream.deliver``, the
session's ``dispatch_now``): its handler runs in the POST's own task, so the answer is there when it returns; an SSE
response then starts when the handler is done, or after a few milliseconds if it is not (``http_sse.InlineSSE``, on
asyncio). A task watches for the client's disconnect only once an answer has been pending a few milliseconds
(``http_asgi.DisconnectWatch``).

Limits (each an option, see ``StreamableHTTPApp``): body size, batch size, sessions, requests in flight per session
and per server, and an idle expiry of sessions. A request over an in-flight limit is refused at once, with HTTP 429
(this session's limit) or 503 (the server's) and ``Retry-After``, the body a JSON-RPC error with code
``TOO_MANY_REQUESTS_IN_FLIGHT``: the official SDK's client and ours surface a JSON-RPC error body of a 4xx/5xx as the
request's error, and the status tells any client and proxy that the refusal is temporary.
"""

from __future__ import annotations

import logging
import math
import secrets
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..jsonrpc.envelopes import (
    Batch,
    ErrorCode,
    Invalid,
    Request,
    decode_frame,
)
from ..jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ..jsonrpc.streams import MessageStream
from .event_store import EventStore, InMemoryEventStore
from .http_asgi import (
    JSON,
    SSE,
    Answer,
    DisconnectWatch,
    HTTPRequest,
    OriginCheck,
    accepts,
    is_json,
    on_asyncio,
    plain_text,
    route_path,
)
from .http_session import Channel, Event, HTTPSessionStream, InFlightBudget, _error_body
from .http_sse import InlineSSE, SSEResponse, sse_bytes
from .http_uvicorn import serve_app

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TOO_MANY_REQUESTS_IN_FLIGHT",
    "ConnectionHandler",
    "HTTPSessionStream",
    "StreamableHTTPApp",
    "run_http",
    "serve_app",
]

logger = logging.getLogger(__name__)

ConnectionHandler = Callable[[MessageStream], Awaitable[None]]

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
LAST_EVENT_ID_HEADER: Final = "last-event-id"
# The handshake-era versions whose wire is this transport (2026-07-28 has its own, stateless, envelope).
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
DEFAULT_MAX_BODY_SIZE: Final = 4 * 1024 * 1024
DEFAULT_MAX_SESSIONS: Final = 1000
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 30 * 60.0  # as the official SDK
DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL: Final = 1000
# The JSON-RPC error of a request refused for an in-flight limit. Outside the JSON-RPC reserved range -32768..-32000
# (MCP 2026-07-28, basic/index "Error Codes": new codes SHOULD be allocated outside it), next to the official SDK's
# REQUEST_CANCELLED (-32800).
TOO_MANY_REQUESTS_IN_FLIGHT: Final = -32810
LOCAL_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
METHODS: Final = ("GET", "POST", "DELETE")


async def _collect(channel: Channel, watch: DisconnectWatch) -> list[Event] | None:
    """Every event until the channel ends; None if the client disconnected first."""
    while not channel.closed and not watch.gone:
        await channel.wait()
    return None if watch.gone else channel.take()


_Answer = Answer | SSEResponse | InlineSSE | None  # None: the client is gone, nothing to send


class StreamableHTTPApp:
    """The streamable HTTP endpoint as an ASGI app: ``handler`` serves each MCP session's ``MessageStream``.

    Needs its lifespan run (uvicorn does; ``run_http`` / ``serve_app`` do it for you): session handlers are tasks
    of the app, not of the HTTP request that created the session.
    """

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        path: str = "/mcp",
        json_response: bool = False,
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        supported_versions: Collection[str] = SUPPORTED_PROTOCOL_VERSIONS,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        ping_interval: float = 15.0,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_requests_in_flight_total: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT_TOTAL,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        resumable: bool = True,
        event_store: EventStore | None = None,
        retry_interval: float = 1.0,
    ) -> None:
        """Options (every limit and timeout has a default; sizes in bytes, times in seconds):

        - ``json_response`` (False): answer request POSTs with one JSON body instead of an SSE stream (server->client
          messages then all travel on the GET stream; nothing is resumable).
        - ``allowed_hosts`` (local names): host names (any port) accepted in ``Host``; ``"*"`` turns the Host and
          Origin checks off (DNS-rebinding protection, so only behind something that checks).
        - ``allowed_origins`` (None): exact ``scheme://host[:port]`` origins a browser may call from. Without it an
          ``Origin`` must be the server's own: its scheme, a host of ``allowed_hosts`` and the port of ``Host``
          (``https://localhost`` or ``http://localhost:9999`` are refused by a server at ``http://localhost:8000``).
        - ``max_body_size`` (4 MiB): a larger POST body is refused with 413.
        - ``supported_versions`` (the handshake-era versions): ``MCP-Protocol-Version`` values accepted; any other
          value is refused with 400, whatever the session negotiated (as both official SDKs do).
        - ``max_sessions`` (1000): sessions open (or opening) at once; one more is refused with 503.
        - ``ping_interval`` (15): an SSE comment is sent after this long without an event.
        - ``session_idle_timeout`` (1800, like the official SDK; None: never): a session without any HTTP request
          being served (no POST answered, no GET stream open) for this long is ended; its id then answers 404.
        - ``max_requests_in_flight`` (100): requests of one session being handled; more are refused (429).
        - ``max_requests_in_flight_total`` (1000): the same over all sessions; more are refused (503).
        - ``max_batch_size`` (100): messages in one JSON-RPC batch (2025-03-26); more are refused (400, -32600).
        - ``resumable`` (True): SSE events get ids (stored in ``event_store``); 2025-11-25 clients get a priming
          event first, handlers may end a stream's connection (``http_session.close_sse_stream``), and a GET with
          ``Last-Event-ID`` replays what the client missed.
        - ``event_store`` (an ``InMemoryEventStore`` with its default bounds): where events are kept.
        - ``retry_interval`` (1.0): the SSE ``retry`` sent with priming events and when the server ends a
          connection (clients wait that long before they reconnect).

        A client that disconnects from a stream it cannot resume (JSON answers, or no event id sent yet) has its
        requests cancelled, as if it had sent ``notifications/cancelled``; a resumable stream's requests go on.
        """
        self._handler = handler
        self.json_response = json_response
        self._origins = OriginCheck(allowed_hosts or LOCAL_HOSTS, allowed_origins)
        self._max_body_size = max_body_size
        self._supported_versions = frozenset(supported_versions)
        self._max_sessions = max_sessions
        self._ping_interval = ping_interval
        if session_idle_timeout is not None and not (math.isfinite(session_idle_timeout) and session_idle_timeout > 0):
            raise ValueError("session_idle_timeout must be a positive number of seconds, or None")
        if min(max_requests_in_flight, max_requests_in_flight_total, max_batch_size) < 1:
            raise ValueError("the in-flight and batch limits must be at least 1")
        self._idle_timeout = session_idle_timeout
        self._max_in_flight = max_requests_in_flight
        self._budget = InFlightBudget(max_requests_in_flight_total)
        self._max_batch_size = max_batch_size
        self._event_store = (event_store or InMemoryEventStore()) if resumable else None
        self._retry_ms = max(0, round(retry_interval * 1000))
        self.sessions: dict[str, HTTPSessionStream] = {}
        self._opening = 0  # sessions whose initialize is being answered
        self._tg: TaskGroup | None = None
        self.path = path
        # The same endpoint as a starlette app, for code that drives it as one (its router's lifespan_context is
        # ``running``). Requests do not go through it: ``__call__`` is the app.
        self.app = Starlette(routes=[Route(path, endpoint=self, methods=list(METHODS))], lifespan=self._running)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: ``path`` (GET, POST, DELETE; other methods 405, other paths 404) and the lifespan."""
        kind = scope["type"]
        if kind == "http":
            path = route_path(scope)
            if path != self.path:
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
    def requests_in_flight(self) -> int:
        """Requests being handled over all sessions (the count ``max_requests_in_flight_total`` bounds)."""
        return self._budget.used

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager for the duration of the block: session handlers are tasks of it, and every session
        ends on exit. The ASGI lifespan runs it (uvicorn does; ``run_http`` / ``serve_app`` do it for you)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self.close_sessions()
                tg.cancel_scope.cancel()
                self._tg = None

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
        """End every session (their open streams end, their handlers see end of stream)."""
        for session in list(self.sessions.values()):
            session.terminate()

    async def _run_handler(self, session: HTTPSessionStream) -> None:
        watchdog = anyio.CancelScope()

        async def expire_when_idle() -> None:
            with watchdog:
                await session.expire_when_idle()

        if self._idle_timeout is not None and self._tg is not None:
            self._tg.start_soon(expire_when_idle)
        try:
            with session.idle_scope:
                await self._handler(session)
            if session.idle_scope.cancelled_caught:
                logger.info("HTTP session %s ended after %s s without requests", session.session_id, self._idle_timeout)
        except Exception:
            logger.exception("connection handler of HTTP session %s failed", session.session_id)
        finally:
            watchdog.cancel()
            session.terminate()

    # -- HTTP ------------------------------------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = HTTPRequest(scope, receive)
        session = self.sessions.get(request.headers.get(SESSION_ID_HEADER, ""))
        if session is None:
            response = await self._respond(request)
            if response is not None:
                await response(scope, receive, send)
            return
        # The whole request, answer included, keeps its session from expiring (an open GET stream too).
        session.enter_busy()
        try:
            response = await self._respond(request)
            if response is not None:
                await response(scope, receive, send)
        finally:
            session.leave_busy()

    async def _respond(self, request: HTTPRequest) -> _Answer:
        if (problem := self._origins.problem(request)) is not None:
            return self._error(403, ErrorCode.INVALID_REQUEST, f"Forbidden: {problem}")
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return await self._get(request)
        return self._delete(request)

    def _error(
        self,
        status: int,
        code: int,
        message: str,
        session: HTTPSessionStream | None = None,
        headers: dict[str, str] | None = None,
        request_id: Any = None,
    ) -> Answer:
        all_headers = {**self._headers(session), **(headers or {})}
        return Answer(_error_body(code, message, request_id), status, all_headers, media_type=JSON)

    def _headers(self, session: HTTPSessionStream | None) -> dict[str, str]:
        return {"Mcp-Session-Id": session.session_id} if session is not None else {}

    def _find_session(self, request: HTTPRequest) -> HTTPSessionStream | Answer:
        session_id = request.headers.get(SESSION_ID_HEADER)
        if session_id is None:
            return self._error(400, ErrorCode.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
        session = self.sessions.get(session_id)
        if session is None:
            return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: unknown or ended session")
        version = request.headers.get(PROTOCOL_VERSION_HEADER)
        # Spec (basic/transports, "Protocol Version Header"): 400 only for an invalid or unsupported version. A
        # supported one other than the negotiated is accepted, as both official SDKs do (the conformance suite
        # sends 2025-03-26 on sessions negotiated at 2025-11-25).
        if version is not None and version not in self._supported_versions:
            message = f"Bad Request: unsupported MCP-Protocol-Version {version!r}"
            return self._error(400, ErrorCode.INVALID_REQUEST, message, session)
        return session

    def _new_session(self) -> HTTPSessionStream:
        session = HTTPSessionStream(
            secrets.token_urlsafe(24),
            event_store=self._event_store,
            retry_ms=self._retry_ms,
            budget=self._budget,
            idle_timeout=self._idle_timeout,
        )

        def forget(ended: HTTPSessionStream) -> None:
            if self.sessions.get(ended.session_id) is ended:
                del self.sessions[ended.session_id]

        session.on_terminate.append(forget)
        return session

    async def _post(self, request: HTTPRequest) -> _Answer:
        wants_json, wants_sse = accepts(request.headers.get("accept", ""))
        if not wants_json or not (wants_sse or self.json_response):
            message = "Not Acceptable: the client must accept both application/json and text/event-stream"
            return self._error(406, ErrorCode.INVALID_REQUEST, message)
        if not is_json(request.headers.get("content-type", "")):
            return self._error(415, ErrorCode.INVALID_REQUEST, "Unsupported Media Type: use application/json")
        body = await request.body(self._max_body_size)
        if body is None:
            message = f"Payload Too Large: the limit is {self._max_body_size} bytes"
            return self._error(413, ErrorCode.INVALID_REQUEST, message)
        decoded = decode_frame(body)
        if isinstance(decoded, Invalid):
            return Answer(_error_body(decoded.code, decoded.message, decoded.id), 400, media_type=JSON)
        items = decoded.items if isinstance(decoded, Batch) else (decoded,)
        if len(items) > self._max_batch_size:
            message = f"Invalid Request: a batch of {len(items)} messages (the limit is {self._max_batch_size})"
            return self._error(400, ErrorCode.INVALID_REQUEST, message)
        for item in items:
            if isinstance(item, Invalid):
                return Answer(_error_body(item.code, item.message, item.id), 400, media_type=JSON)

        if isinstance(decoded, Request) and decoded.method == "initialize" and SESSION_ID_HEADER not in request.headers:
            return await self._initialize(request, body, decoded)
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        session = found

        if isinstance(decoded, Request):
            ids = [decoded.id]
            duplicate = decoded.id in session.by_id
        else:
            ids = [item.id for item in items if isinstance(item, Request)]
            duplicate = len(set(ids)) != len(ids) or any(i in session.by_id for i in ids)
        if duplicate:
            return self._error(400, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id", session)
        if (refused := self._over_limits(session, len(ids), decoded)) is not None:
            return refused
        if not ids:  # notifications and responses only
            try:
                await session.deliver(body, None)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: the session has ended")
            await session.cancel_notified(items)
            return Answer(status=202, headers=self._headers(session))

        sse = not self.json_response
        stored = sse and self._event_store is not None
        stream = session.open_stream(
            ids, sse=sse, batch=isinstance(decoded, Batch), stored=stored, http_scope=request.scope
        )
        channel = stream.attach()
        single = decoded if isinstance(decoded, Request) else None  # one request: the session may take it directly
        ended = "Not Found: the session has ended"
        if sse:
            await session.prime(stream)  # before the request reaches the handler: the priming event comes first

            async def on_close(client_gone: bool) -> None:
                await session.connection_closed(stream, channel, client_gone=client_gone)

            response = SSEResponse(channel, self._headers(session), self._ping_interval, on_close)
            if single is not None and on_asyncio():

                async def work() -> None:
                    await session.deliver(body, stream, single, inline=True)

                return InlineSSE(work, response, lambda: self._error(404, ErrorCode.INVALID_REQUEST, ended))
            try:
                await session.deliver(body, stream, single)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return self._error(404, ErrorCode.INVALID_REQUEST, ended)
            await session.cancel_notified(items)
            return response

        async def gone() -> None:
            await session.connection_closed(stream, channel, client_gone=True)

        async with DisconnectWatch(request.receive, gone) as watch:
            try:
                # With one request the handler usually runs right here, and its answer is queued on return.
                await session.deliver(body, stream, single, inline=True)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return self._error(404, ErrorCode.INVALID_REQUEST, ended)
            await session.cancel_notified(items)
            collected = await _collect(channel, watch)
        if collected is None:
            return None  # the watch has ended the stream (and cancelled its requests)
        await session.connection_closed(stream, channel, client_gone=False)
        frames = [event.frame for event in collected if event.frame is not None]
        if not frames:
            return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: the session ended before answering")
        content = b"[" + b",".join(frames) + b"]" if stream.batch else frames[0]
        return Answer(content, 200, self._headers(session), media_type=JSON)

    def _over_limits(self, session: HTTPSessionStream, count: int, decoded: Any) -> Answer | None:
        """A refusal if ``count`` more requests would exceed the session's or the server's in-flight limit."""
        if not count:
            return None
        request_id = decoded.id if isinstance(decoded, Request) else None
        if session.in_flight + count > self._max_in_flight:
            status, limit, whose = 429, self._max_in_flight, "this session"
        elif self._budget.used + count > self._budget.limit:
            status, limit, whose = 503, int(self._budget.limit), "the server"
        else:
            return None
        message = f"Too many requests in flight: {whose} handles at most {limit} at once; retry later"
        logger.warning("session %s: %s", session.session_id, message)
        code = TOO_MANY_REQUESTS_IN_FLIGHT
        return self._error(status, code, message, session, {"Retry-After": "1"}, request_id)

    async def _initialize(self, request: HTTPRequest, body: bytes, decoded: Request) -> _Answer:
        """A new session: it is kept (and its id sent) only if the handler answers ``initialize`` with success; a
        refused initialize, or a client that goes away meanwhile, leaves nothing behind. The answer is therefore
        complete before the response starts (an SSE answer carries whatever the handler sent before it)."""
        if self._tg is None:
            raise RuntimeError("StreamableHTTPApp needs its ASGI lifespan to run (uvicorn does; see run_http)")
        if len(self.sessions) + self._opening >= self._max_sessions:
            return self._error(503, ErrorCode.INTERNAL_ERROR, "Service Unavailable: too many sessions")
        session = self._new_session()
        self._opening += 1
        established = False
        try:
            with session.busy():
                self._tg.start_soon(self._run_handler, session)
                sse = not self.json_response
                stream = session.open_stream([decoded.id], sse=sse, batch=False, stored=False, http_scope=request.scope)
                session.initialize_id = decoded.id
                channel = stream.attach()

                async def gone() -> None:
                    channel.wake()

                async with DisconnectWatch(request.receive, gone) as watch:
                    try:
                        await session.deliver(body, stream)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        collected: list[Event] | None = []
                    else:
                        collected = await _collect(channel, watch)
                stream.detach(channel)
                established = collected is not None and session.protocol_version is not None
                established = established and not session.terminated
        finally:
            self._opening -= 1
            if established:
                self.sessions[session.session_id] = session
            else:
                session.terminate()
        if collected is None:
            return None
        frames = [event.frame for event in collected if event.frame is not None]
        if not frames:
            return self._error(500, ErrorCode.INTERNAL_ERROR, "Internal error: the session ended before answering")
        headers = self._headers(session if established else None)
        if self.json_response:
            return Answer(frames[-1], 200, headers, media_type=JSON)
        content = b"".join(sse_bytes(event) for event in collected)
        return Answer(content, 200, {"Cache-Control": "no-cache, no-transform", **headers}, media_type=SSE)

    async def _get(self, request: HTTPRequest) -> _Answer:
        if not accepts(request.headers.get("accept", ""))[1]:
            return self._error(
                406, ErrorCode.INVALID_REQUEST, "Not Acceptable: the client must accept text/event-stream"
            )
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        session = found
        last_event_id = request.headers.get(LAST_EVENT_ID_HEADER)
        if last_event_id and self._event_store is not None:
            return await self._resume(session, last_event_id)
        if session.standalone_open:
            return self._error(409, ErrorCode.INVALID_REQUEST, "Conflict: a GET stream is already open", session)
        channel = session.open_standalone()

        async def on_close(client_gone: bool) -> None:
            await session.connection_closed(session.standalone, channel, client_gone=client_gone)

        return SSEResponse(channel, self._headers(session), self._ping_interval, on_close)

    async def _resume(self, session: HTTPSessionStream, last_event_id: str) -> _Answer:
        """GET with ``Last-Event-ID``: replay the events of that stream after it, then go on with the stream live
        if it is not done (a POST's stream ends with its answer; the standalone stream is taken over)."""
        store = self._event_store
        assert store is not None
        replay = None
        try:
            replay = await store.replay_after(last_event_id)
        except Exception:
            logger.exception("the event store failed to replay after %r", last_event_id)
        if replay is None or not session.owns(replay.stream_id):
            message = "Bad Request: unknown or expired Last-Event-ID"
            return self._error(400, ErrorCode.INVALID_REQUEST, message, session)
        prelude = [Event(event.message, event.event_id) for event in replay.events]
        stream = session.find_stream(replay.stream_id)
        if stream is None:  # done: its answer is in the replay
            ended = Channel()
            ended.close()
            return SSEResponse(ended, self._headers(session), self._ping_interval, prelude=prelude)
        channel = session.open_standalone() if stream is session.standalone else stream.attach()
        # Events stored between the replay and the attach went to no connection: a second replay picks them up.
        # Those stored after the attach come live too; the response skips the ones the prelude has.
        after = next((event.event_id for event in reversed(prelude) if event.event_id), last_event_id)
        try:
            caught_up = await store.replay_after(after)
        except Exception:
            logger.exception("the event store failed to replay after %r", last_event_id)
            caught_up = None
        if caught_up is not None:
            prelude += [Event(event.message, event.event_id) for event in caught_up.events]
        skip = {event.event_id for event in prelude if event.event_id is not None}

        async def on_close(client_gone: bool) -> None:
            await session.connection_closed(stream, channel, client_gone=client_gone)

        return SSEResponse(channel, self._headers(session), self._ping_interval, on_close, prelude=prelude, skip=skip)

    def _delete(self, request: HTTPRequest) -> Answer:
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        found.terminate()
        return Answer(status=200, headers=self._headers(found))


async def run_http(
    handler: ConnectionHandler,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    shutdown_timeout: float = 5.0,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """Serve ``handler`` over streamable HTTP at ``http://host:port/mcp`` until cancelled. ``options``: those of
    ``StreamableHTTPApp`` (limits, timeouts, resumability, Host/Origin checks; each has a default).
    ``shutdown_timeout`` (5): on cancellation, how long uvicorn may finish its connections (see ``serve_app``).
    ``await task_group.start(run_http, handler, "127.0.0.1", 0)`` gives the base URL."""
    app = StreamableHTTPApp(handler, **options)
    await serve_app(
        app, host, port, before_shutdown=app.close_sessions, shutdown_timeout=shutdown_timeout, task_status=task_status
    )
