"""The legacy era (MCP 2024-11-05 to 2025-11-25) of the streamable HTTP server: its sessions, ``LegacyEra``.

Where it sits: in the ``transports`` layer, a part composed into ``app.StreamableHTTPApp`` (which routes to it every
request of that era; the modern era, 2026-07-28, is ``modern``). Here: ``initialize`` creating a session, a POST to
a session (answered as JSON or an SSE stream, the request handed to the session directly when it can be), the
standalone GET stream and its resumption with ``Last-Event-ID``, ``DELETE``, and the in-flight limits of a session
and of the server. The sessions this process holds are ``sessions``; with a ``storage.SessionDirectory``
(``HTTPStorage.directory``, set by ``scaleout``) they also live in a shared store: a request naming a session held
elsewhere restores it here, a GET stream may be served from the store, a DELETE ends the session everywhere.

Bounds: an ``initialize`` request of more than ``stores.MAX_SESSION_INIT_BYTES`` (64 KiB) is refused (HTTP 400,
JSON-RPC -32602), since a session keeps it for its life; one more session than ``max_sessions`` (here, or over all
workers in the shared store), or a shared store that fails or does not answer in time, is answered 503 with
``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup

from ....jsonrpc.eager import Started
from ....jsonrpc.envelopes import ErrorCode, Request, RequestId
from .asgi import JSON, SSE, Answer, DisconnectWatch, HTTPRequest, accepts, running_loop
from .auth import AUTH_OWNER_KEY
from .channel import ResponseStream
from .session import DEFAULT_BACKLOG, Channel, Event, HTTPSessionStream, InFlightBudget, error_body
from .sse import InlineSSE, SSEResponse, sse_bytes
from .storage import HTTPStorage
from .stores import MAX_SESSION_INIT_BYTES, StorageUnavailable

__all__ = [
    "LAST_EVENT_ID_HEADER",
    "PROTOCOL_VERSION_HEADER",
    "SESSION_ID_HEADER",
    "TOO_MANY_REQUESTS_IN_FLIGHT",
    "LegacyAnswer",
    "LegacyEra",
    "error_answer",
    "session_headers",
]

logger = logging.getLogger(__name__)

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
LAST_EVENT_ID_HEADER: Final = "last-event-id"
# The JSON-RPC error of a request refused for an in-flight limit. Outside the JSON-RPC reserved range -32768..-32000
# (MCP 2026-07-28, basic/index "Error Codes": new codes SHOULD be allocated outside it), next to the official SDK's
# REQUEST_CANCELLED (-32800).
TOO_MANY_REQUESTS_IN_FLIGHT: Final = -32810

LegacyAnswer = Answer | SSEResponse | InlineSSE | None  # None: the client is gone, nothing to send


def session_headers(session: HTTPSessionStream | None) -> dict[str, str]:
    return {"Mcp-Session-Id": session.session_id} if session is not None else {}


def error_answer(
    status: int,
    code: int,
    message: str,
    session: HTTPSessionStream | None = None,
    headers: dict[str, str] | None = None,
    request_id: Any = None,
) -> Answer:
    """An HTTP error whose body is a JSON-RPC error response (with the session's id header, if any)."""
    all_headers = {**session_headers(session), **(headers or {})}
    return Answer(error_body(code, message, request_id), status, all_headers, media_type=JSON)


def _session_ended() -> Answer:
    return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: the session has ended")


def _unavailable(session_id: str, error: Exception) -> Answer:
    """The answer (and the one log line) of a request the shared session store failed."""
    logger.warning("session %s: the session store failed (%s): answered 503", session_id, error)
    message = "Service Unavailable: the session store does not answer; retry later"
    return error_answer(503, ErrorCode.INTERNAL_ERROR, message, None, {"Retry-After": "1"})


async def _collect(channel: Channel, watch: DisconnectWatch) -> list[Event] | None:
    """Every event until the channel ends; None if the client disconnected first."""
    await _until_closed(channel, watch)
    return None if watch.gone else channel.take()


async def _until_closed(channel: Channel, watch: DisconnectWatch) -> None:
    """Until the channel ends (nothing more is queued on it after that) or the client disconnects."""
    while not channel.closed and not watch.gone:
        await channel.wait()


class LegacyEra:
    """The legacy era's part of ``StreamableHTTPApp`` (see the module docstring). ``handler`` serves each session's
    stream; ``budget``: the app's in-flight count (shared with the modern era); the other arguments are the app's
    options of the same names (``StreamableHTTPApp``). Its session handlers run in ``task_group``, which the app
    sets while it runs. It is the ``storage.SessionHost`` a ``SessionDirectory`` restores sessions into."""

    def __init__(
        self,
        handler: Callable[[HTTPSessionStream], Awaitable[None]],
        budget: InFlightBudget,
        *,
        storage: HTTPStorage,
        json_response: bool,
        supported_versions: frozenset[str],
        max_sessions: int,
        ping_interval: float,
        idle_timeout: float | None,
        max_requests_in_flight: int,
        retry_ms: int,
        max_queued_events: int,
    ) -> None:
        self._handler = handler
        self._budget = budget
        self.json_response = json_response
        self._supported_versions = supported_versions
        self._max_sessions = max_sessions
        self.ping_interval = ping_interval
        self.idle_timeout = idle_timeout
        self._max_in_flight = max_requests_in_flight
        self.event_store = storage.events
        self._tails = storage.tails
        self._directory = storage.directory
        self.retry_ms = retry_ms
        self.max_queued_events = max_queued_events
        self.sessions: dict[str, HTTPSessionStream] = {}
        self._opening = 0  # sessions whose initialize is being answered
        self._task_group: TaskGroup | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the app's asyncio loop (None: another, or not running)

    @property
    def task_group(self) -> TaskGroup | None:
        return self._task_group

    @task_group.setter
    def task_group(self, task_group: TaskGroup | None) -> None:
        """Set by the app while it runs, in its loop: noted here for its requests (each look-up of the running loop
        is a system call, for the pid)."""
        self._task_group = task_group
        self._loop = running_loop() if task_group is not None else None

    # -- the sessions this process holds (storage.SessionHost) ------------------------------------------------------

    def start(self, session: HTTPSessionStream) -> None:
        """Run ``session``'s connection handler (and its idle expiry) in the app's task group."""
        if self.task_group is None:
            raise RuntimeError("StreamableHTTPApp needs its ASGI lifespan to run (uvicorn does; see run_http)")
        self.task_group.start_soon(self._run_handler, session)

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in the app's task group (a GET stream served from the store)."""
        assert self.task_group is not None

        async def run() -> None:
            await work()

        self.task_group.start_soon(run)

    def keep(self, session: HTTPSessionStream) -> None:
        """Hold ``session`` (established, or restored) under its id."""
        self.sessions[session.session_id] = session

    def make_room(self) -> None:
        """Drop local copies that serve nothing while this process is at ``max_sessions`` (only with a directory:
        the shared store keeps them)."""
        excess = len(self.sessions) + self._opening + 1 - self._max_sessions
        if excess <= 0:
            return
        for session in list(self.sessions.values()):
            if excess <= 0:
                break
            if session.idle:
                session.terminate()
                excess -= 1

    def close(self) -> None:
        for session in list(self.sessions.values()):
            session.terminate()

    async def session_for(self, session_id: str) -> HTTPSessionStream | Answer | None:
        """The session a request's ``Mcp-Session-Id`` names: held here, restored from the directory (if any), or
        None; the answer when the shared store fails."""
        session = self.sessions.get(session_id)
        if self._directory is None or not session_id:
            return session
        try:
            return await self._directory.find(session_id, session, self)
        except (StorageUnavailable, TimeoutError) as error:
            return _unavailable(session_id, error)

    async def _run_handler(self, session: HTTPSessionStream) -> None:
        watchdog = anyio.CancelScope()

        async def expire_when_idle() -> None:
            with watchdog:
                await session.expire_when_idle()

        if self.idle_timeout is not None and self.task_group is not None:
            self.task_group.start_soon(expire_when_idle)
        try:
            with session.idle_scope:
                await self._handler(session)
            if session.idle_scope.cancelled_caught:
                logger.info("HTTP session %s ended after %s s without requests", session.session_id, self.idle_timeout)
        except Exception:
            logger.exception("connection handler of HTTP session %s failed", session.session_id)
        finally:
            watchdog.cancel()
            session.terminate()

    def _find_session(self, request: HTTPRequest) -> HTTPSessionStream | Answer:
        session_id = request.headers.get(SESSION_ID_HEADER)
        if session_id is None:
            return error_answer(400, ErrorCode.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
        session = self.sessions.get(session_id)
        if session is None:
            return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: unknown or ended session")
        version = request.headers.get(PROTOCOL_VERSION_HEADER)
        # Spec (basic/transports, "Protocol Version Header"): 400 only for an invalid or unsupported version. A
        # supported one other than the negotiated is accepted, as both official SDKs do (the conformance suite
        # sends 2025-03-26 on sessions negotiated at 2025-11-25).
        if version is not None and version not in self._supported_versions:
            message = f"Bad Request: unsupported MCP-Protocol-Version {version!r}"
            return error_answer(400, ErrorCode.INVALID_REQUEST, message, session)
        return session

    def new_session(self, session_id: str | None = None) -> HTTPSessionStream:
        """A session under ``session_id`` (a new random id by default), dropped from ``sessions`` when it ends; with
        a directory, its streams are laid out to outlive this process and it gets its mirror."""
        session_id = session_id or secrets.token_urlsafe(24)
        directory = self._directory
        layout = directory.layout(session_id) if directory is not None else None
        session = HTTPSessionStream(
            session_id,
            event_store=self.event_store,
            retry_ms=self.retry_ms,
            budget=self._budget,
            idle_timeout=self.idle_timeout,
            max_queued_events=self.max_queued_events,
            tails=self._tails,
            key=layout.key if layout is not None else None,
            stream_tag=layout.stream_tag if layout is not None else "",
            backlog=0 if layout is not None else DEFAULT_BACKLOG,
        )
        if directory is not None:
            directory.new_session(session)

        def forget(ended: HTTPSessionStream) -> None:
            if self.sessions.get(ended.session_id) is ended:
                del self.sessions[ended.session_id]

        session.on_terminate.append(forget)
        return session

    async def post(self, request: HTTPRequest, body: bytes, decoded: Any, items: Any) -> LegacyAnswer:
        """A POST of the legacy era (its body decoded and checked): ``initialize`` or a session's messages."""
        single = decoded if isinstance(decoded, Request) else None  # one request: the session may take it directly
        if single is not None and single.method == "initialize" and SESSION_ID_HEADER not in request.headers:
            return await self._initialize(request, body, single)
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        session = found

        if single is not None:
            ids = [single.id]
            duplicate = single.id in session.by_id
        else:
            ids = [item.id for item in items if isinstance(item, Request)]
            duplicate = len(set(ids)) != len(ids) or any(i in session.by_id for i in ids)
        if duplicate:
            return error_answer(400, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id", session)
        if (refused := self._over_limits(session, len(ids), decoded)) is not None:
            return refused
        if not ids:  # notifications and responses only
            try:
                await session.deliver(body, None)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: the session has ended")
            await session.cancel_notified(items)
            return Answer(status=202, headers=session_headers(session))
        if self.json_response:
            started = None
            if single is not None:
                # A plain tool's call usually finishes without suspending: then it is answered before anything
                # (its stream, the disconnect watch, its tracking in the session) is set up for it.
                eager = session.answer_eagerly(single)
                if type(eager) is tuple:
                    return Answer(eager[1], 200, session_headers(session), media_type=JSON)
                started = cast(Started | None, eager)
            return await self._json(request, session, body, ids, single, items, started)

        stream = session.open_stream(
            ids, sse=True, batch=single is None, stored=self.event_store is not None, http_scope=request.scope
        )
        channel = stream.attach()
        await session.prime(stream)  # before the request reaches the handler: the priming event comes first

        def on_close(client_gone: bool) -> Awaitable[None] | None:
            return session.connection_ended(stream, channel, client_gone=client_gone)

        response = SSEResponse(channel, session_headers(session), self.ping_interval, on_close)
        if single is not None and (loop := self._loop) is not None:

            async def work() -> None:
                if not await session.answer_inline(stream, single):
                    await session.deliver(body, stream, single, inline=True)

            return InlineSSE(work, response, _session_ended, loop)
        try:
            await session.deliver(body, stream, single)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return _session_ended()
        await session.cancel_notified(items)
        return response

    async def _json(
        self,
        request: HTTPRequest,
        session: HTTPSessionStream,
        body: bytes,
        ids: list[RequestId],
        single: Request | None,
        items: Any,
        started: Started | None = None,
    ) -> LegacyAnswer:
        """The requests ``ids`` of a POST answered with one JSON body (``single``: the body is that one request;
        ``started``: its handler, started by ``answer_eagerly``, handed to the session before anything is
        awaited)."""
        stream = session.open_stream(ids, sse=False, batch=single is None, stored=False, http_scope=request.scope)
        channel = stream.attach()

        async def gone() -> None:
            await session.connection_closed(stream, channel, client_gone=True)

        watch = DisconnectWatch(request.receive, gone, self._loop)
        if self._loop is None:
            async with watch:
                answered = await self._answered(session, stream, channel, watch, body, single, items, started)
        else:  # entered without ``async with``, whose two coroutines were most of the watch's cost
            watch.start()
            try:
                answered = await self._answered(session, stream, channel, watch, body, single, items, started)
            finally:
                watch.stop()
        if answered is None:
            return _session_ended()
        if watch.gone:
            return None  # the watch has ended the stream (and cancelled its requests)
        stream.detach(channel)  # connection_ended's whole work for a POST's stream whose client is still there
        if isinstance(answered, bytes):
            return Answer(answered, 200, session_headers(session), media_type=JSON)
        frames = [event.frame for event in channel.take() if event.frame is not None]
        if not frames:
            return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: the session ended before answering")
        content = b"[" + b",".join(frames) + b"]" if stream.batch else frames[0]
        return Answer(content, 200, session_headers(session), media_type=JSON)

    async def _answered(
        self,
        session: HTTPSessionStream,
        stream: ResponseStream,
        channel: Channel,
        watch: DisconnectWatch,
        body: bytes,
        single: Request | None,
        items: Any,
        started: Started | None,
    ) -> bytes | bool | None:
        """``_json``'s requests handled: the answer's frame when it came back at once, else True once the channel is
        closed (the answers are on it); None when the session ended before they could be delivered."""
        # With one request the handler usually runs right here, and its answer comes back (or is queued).
        answered = await session.answer_inline(stream, single, started) if single is not None else False
        if answered is False:
            try:
                await session.deliver(body, stream, single, inline=True)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return None
            await session.cancel_notified(items)
        if isinstance(answered, bytes):
            return answered  # the answer is all there is: nothing is queued on the channel
        await _until_closed(channel, watch)
        return True

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
        return error_answer(status, code, message, session, {"Retry-After": "1"}, request_id)

    async def _initialize(self, request: HTTPRequest, body: bytes, decoded: Request) -> LegacyAnswer:
        """A new session: it is kept (and its id sent) only if the handler answers ``initialize`` with success; a
        refused initialize, or a client that goes away meanwhile, leaves nothing behind. The answer is therefore
        complete before the response starts (an SSE answer carries whatever the handler sent before it)."""
        if self.task_group is None:
            raise RuntimeError("StreamableHTTPApp needs its ASGI lifespan to run (uvicorn does; see run_http)")
        if len(body) > MAX_SESSION_INIT_BYTES:  # what a session keeps is bounded, not chosen by its client
            message = (
                f"Invalid params: an initialize request may have at most {MAX_SESSION_INIT_BYTES} bytes (this one has"
                f" {len(body)}): its clientInfo and capabilities are kept for the session's life"
            )
            return error_answer(400, ErrorCode.INVALID_PARAMS, message, None, None, decoded.id)
        if self._directory is not None:
            self.make_room()
        if len(self.sessions) + self._opening >= self._max_sessions:
            message = "Service Unavailable: too many sessions; retry later"
            return error_answer(503, ErrorCode.INTERNAL_ERROR, message, None, {"Retry-After": "1"}, decoded.id)
        session = self.new_session()
        session.owner = request.scope.get(AUTH_OWNER_KEY)  # only requests of the same owner reach it (``auth``)
        self._opening += 1
        established = False
        try:
            with session.busy():
                self.start(session)
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
                established = established and not session.terminated and session.refused is None
        finally:
            self._opening -= 1
            if established:
                self.sessions[session.session_id] = session
            else:
                session.terminate()
        if collected is None:
            return None
        if session.refused is not None:
            return error_answer(503, ErrorCode.INTERNAL_ERROR, session.refused, None, {"Retry-After": "1"}, decoded.id)
        frames = [event.frame for event in collected if event.frame is not None]
        if not frames:
            return error_answer(500, ErrorCode.INTERNAL_ERROR, "Internal error: the session ended before answering")
        headers = session_headers(session if established else None)
        if self.json_response:
            return Answer(frames[-1], 200, headers, media_type=JSON)
        content = b"".join(sse_bytes(event) for event in collected)
        return Answer(content, 200, {"Cache-Control": "no-cache, no-transform", **headers}, media_type=SSE)

    async def get(self, request: HTTPRequest) -> LegacyAnswer:
        if not accepts(request.headers.get("accept", ""))[1]:
            return error_answer(
                406, ErrorCode.INVALID_REQUEST, "Not Acceptable: the client must accept text/event-stream"
            )
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        session = found
        last_event_id = request.headers.get(LAST_EVENT_ID_HEADER)
        if self._directory is not None:
            try:
                served = await self._directory.get_stream(session, last_event_id or None, self)
            except (StorageUnavailable, TimeoutError) as error:
                return _unavailable(session.session_id, error)
            if served is not None:
                return served
        if last_event_id and self.event_store is not None:
            return await self._resume(session, last_event_id)
        if session.standalone_open:
            return error_answer(409, ErrorCode.INVALID_REQUEST, "Conflict: a GET stream is already open", session)
        channel = session.open_standalone()

        async def on_close(client_gone: bool) -> None:
            await session.connection_closed(session.standalone, channel, client_gone=client_gone)

        return SSEResponse(channel, session_headers(session), self.ping_interval, on_close)

    async def _resume(self, session: HTTPSessionStream, last_event_id: str) -> LegacyAnswer:
        """GET with ``Last-Event-ID``: replay the events of that stream after it, then go on with the stream live
        if it is not done (a POST's stream ends with its answer; the standalone stream is taken over)."""
        store = self.event_store
        assert store is not None
        replay = None
        try:
            replay = await store.replay_after(last_event_id)
        except Exception:
            logger.exception("the event store failed to replay after %r", last_event_id)
        if replay is None or not session.owns(replay.stream_id):
            message = "Bad Request: unknown or expired Last-Event-ID"
            return error_answer(400, ErrorCode.INVALID_REQUEST, message, session)
        prelude = [Event(event.message, event.event_id) for event in replay.events]
        stream = session.find_stream(replay.stream_id)
        if stream is None:  # done: its answer is in the replay
            ended = Channel()
            ended.close()
            return SSEResponse(ended, session_headers(session), self.ping_interval, prelude=prelude)
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

        return SSEResponse(channel, session_headers(session), self.ping_interval, on_close, prelude=prelude, skip=skip)

    async def delete(self, request: HTTPRequest) -> Answer:
        """A DELETE ends the session (everywhere, with a directory)."""
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        if self._directory is not None:
            try:
                await self._directory.delete(found)
            except (StorageUnavailable, TimeoutError) as error:
                return _unavailable(found.session_id, error)
        found.terminate()
        return Answer(status=200, headers=session_headers(found))
