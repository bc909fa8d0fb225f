"""The handshake era (MCP 2025-03-26 to 2025-11-25) of the streamable HTTP server: its sessions.

Where it sits: in the ``transports`` layer, a part of ``http_server.StreamableHTTPApp`` (which inherits it and
routes to it every request of that era; the stateless 2026-07-28 era is ``http_modern``). Here: ``initialize``
creating a session, a POST to a session (answered as JSON or an SSE stream, the request handed to the session
directly when it can be), the standalone GET stream and its resumption with ``Last-Event-ID``, ``DELETE``, and the
in-flight limits of a session and of the server. The app's ``__init__`` sets the attributes declared below.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from ....jsonrpc.envelopes import Batch, ErrorCode, Request
from .event_store import EventStore
from .asgi import JSON, SSE, Answer, DisconnectWatch, HTTPRequest, accepts, on_asyncio
from .auth import AUTH_OWNER_KEY
from .session import Channel, Event, HTTPSessionStream, InFlightBudget, _error_body
from .sse import InlineSSE, SSEResponse, sse_bytes

__all__ = ["TOO_MANY_REQUESTS_IN_FLIGHT", "SessionEra", "error_answer"]

logger = logging.getLogger(__name__)

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
LAST_EVENT_ID_HEADER: Final = "last-event-id"
# The JSON-RPC error of a request refused for an in-flight limit. Outside the JSON-RPC reserved range -32768..-32000
# (MCP 2026-07-28, basic/index "Error Codes": new codes SHOULD be allocated outside it), next to the official SDK's
# REQUEST_CANCELLED (-32800).
TOO_MANY_REQUESTS_IN_FLIGHT: Final = -32810

_Answer = Answer | SSEResponse | InlineSSE | None  # None: the client is gone, nothing to send


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
    return Answer(_error_body(code, message, request_id), status, all_headers, media_type=JSON)


async def _collect(channel: Channel, watch: DisconnectWatch) -> list[Event] | None:
    """Every event until the channel ends; None if the client disconnected first."""
    while not channel.closed and not watch.gone:
        await channel.wait()
    return None if watch.gone else channel.take()


class SessionEra:
    """The handshake era's part of ``StreamableHTTPApp``: see the module docstring."""

    # Set by StreamableHTTPApp.__init__ (see its options).
    _handler: Any
    json_response: bool
    _supported_versions: frozenset[str]
    _max_sessions: int
    _ping_interval: float
    _idle_timeout: float | None
    _max_in_flight: int
    _budget: InFlightBudget
    _event_store: EventStore | None
    _retry_ms: int
    _max_queued_events: int
    sessions: dict[str, HTTPSessionStream]
    _opening: int
    _tg: TaskGroup | None
    # Whether sessions live in a store shared with other workers (scaleout.shared_app overrides what follows).
    shares_sessions: bool = False

    async def _shared_session(
        self, session_id: str, local: HTTPSessionStream | None
    ) -> HTTPSessionStream | Answer | None:
        """The session ``session_id`` for a request that names it: ``local`` (this worker's copy), restored from the
        shared store, None when it has ended or expired everywhere, or the answer when the store fails."""
        return local

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

    def _headers(self, session: HTTPSessionStream | None) -> dict[str, str]:
        return session_headers(session)

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

    def _new_session(self, session_id: str | None = None) -> HTTPSessionStream:
        """A session under ``session_id`` (a new random id by default), dropped from ``sessions`` when it ends."""
        session = self._session_stream(session_id or secrets.token_urlsafe(24))

        def forget(ended: HTTPSessionStream) -> None:
            if self.sessions.get(ended.session_id) is ended:
                del self.sessions[ended.session_id]

        session.on_terminate.append(forget)
        return session

    def _session_stream(self, session_id: str) -> HTTPSessionStream:
        """The stream of a new session (``scaleout`` makes its sessions shared ones here)."""
        return HTTPSessionStream(
            session_id,
            event_store=self._event_store,
            retry_ms=self._retry_ms,
            budget=self._budget,
            idle_timeout=self._idle_timeout,
            max_queued_events=self._max_queued_events,
        )

    async def _post_to_session(self, request: HTTPRequest, body: bytes, decoded: Any, items: Any) -> _Answer:
        """A POST of the handshake era (its body decoded and checked): ``initialize`` or a session's messages."""
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
            return error_answer(400, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id", session)
        if (refused := self._over_limits(session, len(ids), decoded)) is not None:
            return refused
        if not ids:  # notifications and responses only
            try:
                await session.deliver(body, None)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: the session has ended")
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

                return InlineSSE(work, response, lambda: error_answer(404, ErrorCode.INVALID_REQUEST, ended))
            try:
                await session.deliver(body, stream, single)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return error_answer(404, ErrorCode.INVALID_REQUEST, ended)
            await session.cancel_notified(items)
            return response

        async def gone() -> None:
            await session.connection_closed(stream, channel, client_gone=True)

        async with DisconnectWatch(request.receive, gone) as watch:
            try:
                # With one request the handler usually runs right here, and its answer is queued on return.
                await session.deliver(body, stream, single, inline=True)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return error_answer(404, ErrorCode.INVALID_REQUEST, ended)
            await session.cancel_notified(items)
            collected = await _collect(channel, watch)
        if collected is None:
            return None  # the watch has ended the stream (and cancelled its requests)
        await session.connection_closed(stream, channel, client_gone=False)
        frames = [event.frame for event in collected if event.frame is not None]
        if not frames:
            return error_answer(404, ErrorCode.INVALID_REQUEST, "Not Found: the session ended before answering")
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
        return error_answer(status, code, message, session, {"Retry-After": "1"}, request_id)

    async def _initialize(self, request: HTTPRequest, body: bytes, decoded: Request) -> _Answer:
        """A new session: it is kept (and its id sent) only if the handler answers ``initialize`` with success; a
        refused initialize, or a client that goes away meanwhile, leaves nothing behind. The answer is therefore
        complete before the response starts (an SSE answer carries whatever the handler sent before it)."""
        if self._tg is None:
            raise RuntimeError("StreamableHTTPApp needs its ASGI lifespan to run (uvicorn does; see run_http)")
        if len(self.sessions) + self._opening >= self._max_sessions:
            return error_answer(503, ErrorCode.INTERNAL_ERROR, "Service Unavailable: too many sessions")
        session = self._new_session()
        session.owner = request.scope.get(AUTH_OWNER_KEY)  # only requests of the same owner reach it (http_auth)
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
            return error_answer(500, ErrorCode.INTERNAL_ERROR, "Internal error: the session ended before answering")
        headers = self._headers(session if established else None)
        if self.json_response:
            return Answer(frames[-1], 200, headers, media_type=JSON)
        content = b"".join(sse_bytes(event) for event in collected)
        return Answer(content, 200, {"Cache-Control": "no-cache, no-transform", **headers}, media_type=SSE)

    async def _get(self, request: HTTPRequest) -> _Answer:
        if not accepts(request.headers.get("accept", ""))[1]:
            return error_answer(
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
            return error_answer(409, ErrorCode.INVALID_REQUEST, "Conflict: a GET stream is already open", session)
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
            return error_answer(400, ErrorCode.INVALID_REQUEST, message, session)
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

    async def _delete(self, request: HTTPRequest) -> Answer:
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        await self._end_session(found)
        return Answer(status=200, headers=self._headers(found))

    async def _end_session(self, session: HTTPSessionStream) -> None:
        """A DELETE ends ``session`` (everywhere, when it is shared)."""
        session.terminate()
