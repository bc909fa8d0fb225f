"""The streamable HTTP endpoint of one worker of a scaled-out server: ``ScaleOutHTTPApp``.

Where it sits: the top of ``scaleout`` (``server`` runs it in place of ``transports.http.server.app.StreamableHTTPApp``
when a Redis URL is configured). It is that app, with the handshake era's sessions shared through Redis so that any
worker serves any request of any session, with no affinity:

- a request naming a session this worker does not hold restores it from Redis (``shared_session``); one it holds is
  served as it is while its copy is fresh (``ScaleOutSettings.session_refresh``), else checked first (an ended or
  expired session answers 404 on every worker) and brought up to date; a DELETE or a state change on another worker
  is announced on every worker's channel, and the copies read the session again (or end) at once;
- DELETE ends the session in Redis and marks the end of its GET stream;
- SSE events are stored in Redis (``redis_events``): a GET stream is always served from there, by following
  ("tailing") the session's stream, so a notification any worker stores for the session reaches it; a stream
  resumed with ``Last-Event-ID`` on a worker that does not write it is served the same way, until its end marker
  (or until the worker writing it is gone: its heartbeat, ``KeyLayout.worker_alive``, has expired);
- a client's answer to a request another worker sent reaches that worker through its pub/sub channel, and a
  cancellation of a request another worker handles reaches it through everyone's.

Each worker has a token of its own (``worker``), one Redis pool for commands and one for tails, a heartbeat, and a
subscriber on its channel, all started by the app's lifespan.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Final

import anyio
import redis

from ..jsonrpc.envelopes import ErrorCode, Request
from ..transports.http.server.asgi import Answer, HTTPRequest, accepts
from ..transports.http.server.legacy import LAST_EVENT_ID_HEADER, _Answer, error_answer
from ..transports.http.server.app import ConnectionHandler, StreamableHTTPApp
from ..transports.http.server.session import Channel, HTTPSessionStream
from ..transports.http.server.sse import SSEResponse
from .keys import KeyLayout
from .redis_client import open_redis
from .redis_events import RedisEventStore, split_event_id
from .session_fanout import SessionFanout
from .settings import ScaleOutSettings
from .shared_session import ALL_WORKERS, SESSION_ENDED, STATE_CHANGED, SessionRecords, SharedSessionStream

__all__ = ["HEARTBEAT_INTERVAL", "HEARTBEAT_TTL", "ScaleOutHTTPApp"]

logger = logging.getLogger(__name__)

HEARTBEAT_INTERVAL: Final = 3.0
HEARTBEAT_TTL: Final = 10  # seconds without a heartbeat after which a worker counts as gone
_SUBSCRIBER_POLL: Final = 1.0  # how long the channel subscriber waits per read (it is cancelled at shutdown)


class ScaleOutHTTPApp(StreamableHTTPApp):
    """``StreamableHTTPApp`` with its sessions shared through Redis (see the module docstring).

    ``scale_out``: the deployment's settings (a Redis URL is required). ``around``: an async context manager entered
    for the app's run, outside it (the server's lifespan, for an app built by a factory). ``on_started``: awaited
    with the app once it runs, Redis connected (``app.redis``, ``app.task_group``). The other options are
    ``StreamableHTTPApp``'s; ``session_idle_timeout`` defaults to ``scale_out.session_ttl`` (a local copy of a
    session idle that long is dropped here; Redis keeps the session until its own TTL) and the event store is
    always Redis (GET streams are served from it; ``resumable=False`` is ignored).
    """

    shares_sessions = True

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        scale_out: ScaleOutSettings,
        around: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
        on_started: list[Callable[[ScaleOutHTTPApp], Awaitable[None]]] | None = None,
        **options: Any,
    ) -> None:
        if not scale_out.redis_url:
            raise ValueError("ScaleOutHTTPApp needs scale_out.redis_url")
        options.setdefault("session_idle_timeout", scale_out.session_ttl)
        options.setdefault("max_queued_events", scale_out.max_queued_events)
        super().__init__(handler, **options)
        self.settings = scale_out
        self.keys = KeyLayout(scale_out.key_prefix)
        self.worker = secrets.token_hex(6)
        self.on_started: list[Callable[[ScaleOutHTTPApp], Awaitable[None]]] = list(on_started or ())
        self._around = around
        self._restoring: dict[str, anyio.Event] = {}
        self._tails = 0
        self._refresh = scale_out.refresh_interval
        self.redis: redis.asyncio.Redis | None = None
        self._records: SessionRecords | None = None
        self.events: RedisEventStore | None = None

    @property
    def task_group(self) -> Any:
        """The app's task group while it runs (for the tasks of ``on_started`` hooks)."""
        return self._tg

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if self._around is not None:
                await stack.enter_async_context(self._around())
            self.redis = client = open_redis(self.settings)
            stack.push_async_callback(client.aclose)
            tails = open_redis(self.settings, tails=True)
            stack.push_async_callback(tails.aclose)
            self._records = SessionRecords(client, self.keys, self.settings)
            self.events = self._event_store = RedisEventStore(client, tails, self.keys, self.settings)
            await client.ping()  # a worker that cannot reach Redis does not start
            await stack.enter_async_context(super().running())
            assert self._tg is not None
            await self._tg.start(self._heartbeat)
            await self._tg.start(self._subscriber)
            for hook in self.on_started:
                await hook(self)
            yield

    async def shared_request_state_key(self) -> bytes:
        """``settings.request_state_key``, else the random key every worker of the deployment shares in Redis."""
        if self.settings.request_state_key is not None:
            return self.settings.request_state_key
        assert self.redis is not None
        key = self.keys.request_state_key
        await self.redis.set(key, secrets.token_bytes(32), nx=True)
        shared = await self.redis.get(key)
        assert isinstance(shared, bytes) and len(shared) >= 32
        return shared

    def session_fanout(self, declared: Callable[[str], bool]) -> SessionFanout:
        """Server-wide notifications to the handshake-era sessions of every worker (for ``broadcast``);
        ``declared(capability)``: whether the server declares it. Call once the app runs."""
        assert self.redis is not None
        return SessionFanout(self.redis, self.keys, self.settings, self.sessions, declared)

    # -- worker tasks --------------------------------------------------------------------------------------------

    async def _heartbeat(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        assert self.redis is not None
        key = self.keys.worker_alive(self.worker)
        await self.redis.set(key, b"1", ex=HEARTBEAT_TTL)
        task_status.started()
        try:
            while True:
                await anyio.sleep(HEARTBEAT_INTERVAL)
                try:
                    await self.redis.set(key, b"1", ex=HEARTBEAT_TTL)
                except redis.RedisError as error:
                    logger.debug("worker %s: the heartbeat could not reach Redis: %s", self.worker, error)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                try:
                    await self.redis.delete(key)
                except redis.RedisError:
                    pass  # it expires

    async def _subscriber(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Messages other workers forward: ``{session id}\\n{frame}``, client answers on this worker's channel and
        cancellations on everyone's. Survives Redis outages (subscribing again every second, one warning each);
        what was published meanwhile is lost (the waiting requests time out, as their callers set)."""
        assert self.redis is not None
        channels = (self.keys.worker_channel(self.worker), self.keys.cancellations)
        started = failing = False
        while True:
            try:
                async with self.redis.pubsub() as pubsub:
                    await pubsub.subscribe(*channels)
                    if not started:
                        task_status.started()
                        started = True
                    if failing:
                        logger.info("worker %s: its Redis channels are back", self.worker)
                        failing = False
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=_SUBSCRIBER_POLL)
                        if message is not None and isinstance(message.get("data"), bytes):
                            cancellation = message.get("channel") == channels[1].encode()
                            await self._forwarded(message["data"], cancellation=cancellation)
            except redis.RedisError:
                if not started:
                    raise
                if not failing:
                    logger.warning("worker %s: its Redis channels failed; subscribing again every second", self.worker)
                    failing = True
                await anyio.sleep(1)

    async def _forwarded(self, data: bytes, *, cancellation: bool) -> None:
        try:
            await self._deliver_forwarded(data, cancellation=cancellation)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session ended meanwhile
        except Exception:  # one bad message must not end the subscriber
            logger.exception("worker %s: a forwarded message could not be delivered", self.worker)

    async def _deliver_forwarded(self, data: bytes, *, cancellation: bool) -> None:
        session_id, _, frame = data.partition(b"\n")
        session = self.sessions.get(session_id.decode())
        if frame in (STATE_CHANGED, SESSION_ENDED):
            if isinstance(session, SharedSessionStream):
                session.synced_at = -math.inf  # read it again before the next request
                if frame == SESSION_ENDED:
                    session.terminate()
            return
        request_id = None
        if cancellation:  # only the copy handling the request takes it
            params = json.loads(frame).get("params") if session is not None else None
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if session is None or request_id not in session.by_id:
                return
        elif session is None:
            logger.info("an answer for session %s came after its copy here ended", session_id)
            return
        await session.deliver(frame, None)
        if request_id is not None:
            await session.cancel_request(request_id)  # its stream ends, as on the worker that got the POST

    async def _forward(self, worker: str, session_id: str, frame: bytes) -> None:
        assert self.redis is not None
        everyone = worker == ALL_WORKERS
        channel = self.keys.cancellations if everyone else self.keys.worker_channel(worker)
        receivers = await self.redis.publish(channel, session_id.encode() + b"\n" + frame)
        if not receivers and not everyone:
            logger.warning("session %s: an answer for worker %s, which is gone; dropped", session_id, worker)

    # -- sessions ------------------------------------------------------------------------------------------------

    def _session_stream(self, session_id: str) -> HTTPSessionStream:
        assert self._records is not None
        return SharedSessionStream(
            session_id,
            worker=self.worker,
            records=self._records,
            forward=self._forward,
            event_store=self._event_store,
            retry_ms=self._retry_ms,
            budget=self._budget,
            idle_timeout=self._idle_timeout,
            max_queued_events=self._max_queued_events,
        )

    def _make_room(self) -> None:
        """Drop local copies that serve nothing (Redis keeps them) while this worker is at ``max_sessions``."""
        excess = len(self.sessions) + self._opening + 1 - self._max_sessions
        if excess <= 0:
            return
        for session in list(self.sessions.values()):
            if excess <= 0:
                break
            if session.idle:
                session.terminate()
                excess -= 1

    async def _initialize(self, request: HTTPRequest, body: bytes, decoded: Request) -> _Answer:
        self._make_room()
        return await super()._initialize(request, body, decoded)

    async def _shared_session(
        self, session_id: str, local: HTTPSessionStream | None
    ) -> HTTPSessionStream | Answer | None:
        try:
            return await self._shared_session_from_redis(session_id, local)
        except (redis.RedisError, TimeoutError) as error:
            logger.warning("session %s: Redis failed (%s): answered 503", session_id, error)
            message = "Service Unavailable: the session store does not answer; retry later"
            return error_answer(503, ErrorCode.INTERNAL_ERROR, message, None, {"Retry-After": "1"})

    async def _shared_session_from_redis(
        self, session_id: str, local: HTTPSessionStream | None
    ) -> HTTPSessionStream | None:
        assert self._records is not None
        if local is not None:
            assert isinstance(local, SharedSessionStream)
            now = time.monotonic()
            if now - local.synced_at < self._refresh:
                return local  # fresh enough (ScaleOutSettings.session_refresh): no round trip
            alive, level, subscriptions = await self._records.touch(session_id)
            if not alive:
                local.terminate()
                return None
            with anyio.fail_after(self.settings.redis_timeout):
                await local.sync(level, subscriptions)
            local.synced_at = now
            return local
        waiting = self._restoring.get(session_id)
        if waiting is not None:
            await waiting.wait()
            return self.sessions.get(session_id)
        self._restoring[session_id] = done = anyio.Event()
        try:
            return await self._restore(session_id)
        finally:
            del self._restoring[session_id]
            done.set()

    async def _restore(self, session_id: str) -> HTTPSessionStream | None:
        assert self._records is not None and self._tg is not None
        state = await self._records.load(session_id)
        if state is None:
            return None
        await self._records.touch(session_id)
        synced_at = time.monotonic()
        self._make_room()
        session = self._new_session(session_id)
        assert isinstance(session, SharedSessionStream)
        session.owner = state.owner
        self._tg.start_soon(self._run_handler, session)
        try:
            with anyio.fail_after(self.settings.redis_timeout):
                await session.restore(state)
        except BaseException:
            session.terminate()
            raise
        session.synced_at = synced_at
        self.sessions[session_id] = session
        logger.debug("worker %s restored session %s", self.worker, session_id)
        return session

    async def _end_session(self, session: HTTPSessionStream) -> None:
        assert self._records is not None and self.events is not None
        await self._records.delete(session.session_id)
        await self.events.end(session.standalone.stream_id)  # GET streams on every worker end
        await self._forward(ALL_WORKERS, session.session_id, SESSION_ENDED)  # and the copies other workers hold
        session.terminate()

    # -- GET streams, from Redis ---------------------------------------------------------------------------------

    async def _get(self, request: HTTPRequest) -> _Answer:
        if not accepts(request.headers.get("accept", ""))[1]:
            message = "Not Acceptable: the client must accept text/event-stream"
            return error_answer(406, ErrorCode.INVALID_REQUEST, message)
        found = self._find_session(request)
        if isinstance(found, Answer):
            return found
        last_event_id = request.headers.get(LAST_EVENT_ID_HEADER)
        if last_event_id:
            return await self._resume(found, last_event_id)
        assert self._records is not None
        cursor = await self._records.cursor(found.session_id)
        return await self._tail_response(found, found.standalone.stream_id, cursor or "0-0", take_over=False)

    async def _resume(self, session: HTTPSessionStream, last_event_id: str) -> _Answer:
        split = split_event_id(last_event_id)
        unknown = "Bad Request: unknown or expired Last-Event-ID"
        if split is None or not session.owns(split[0]):
            return error_answer(400, ErrorCode.INVALID_REQUEST, unknown, session)
        stream_id, entry = split
        local = session.find_stream(stream_id)
        if local is not None and local is not session.standalone:
            return await super()._resume(session, last_event_id)  # a POST stream this worker writes
        assert self.events is not None
        if stream_id != session.standalone.stream_id and not await self.events.exists(stream_id):
            return error_answer(400, ErrorCode.INVALID_REQUEST, unknown, session)
        return await self._tail_response(session, stream_id, entry, take_over=True)

    async def _tail_response(
        self, session: HTTPSessionStream, stream_id: str, after: str, *, take_over: bool
    ) -> _Answer:
        """An SSE response following ``stream_id`` in Redis from entry ``after`` (``RedisEventStore.tail``). The
        GET stream has one response at a time over all workers (a claim in Redis): a new GET while one is open is
        refused (409), a resumed one (``take_over``) takes its place, and the other ends."""
        assert self._records is not None and self.events is not None and self._tg is not None
        if self._tails >= self.settings.max_stream_tails:
            message = f"Service Unavailable: this worker serves {self._tails} streams from Redis, its limit"
            return error_answer(503, ErrorCode.INTERNAL_ERROR, message, session, {"Retry-After": "1"})
        records, events, session_id = self._records, self.events, session.session_id
        standalone = stream_id == session.standalone.stream_id
        holder = f"{self.worker}:{secrets.token_hex(4)}"
        if standalone and not await records.claim_get_stream(session_id, holder, take_over=take_over):
            message = "Conflict: a GET stream is already open"
            return error_answer(409, ErrorCode.INVALID_REQUEST, message, session)
        writer = stream_id.rpartition(".")[2].partition("-")[0]
        channel, scope = Channel(self._max_queued_events), anyio.CancelScope()

        async def go_on(entry: str | None) -> bool:
            if standalone:
                return await records.follow_get_stream(session_id, holder, entry)
            return entry is not None or await records.worker_alive(writer)

        async def tail() -> None:
            try:
                with scope:
                    await events.tail(stream_id, after, channel, go_on=go_on)
            finally:
                self._tails -= 1
                if standalone:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(self.settings.redis_timeout):
                        try:
                            await records.release_get_stream(session_id, holder)
                        except redis.RedisError:
                            pass  # it expires

        self._tails += 1
        self._tg.start_soon(tail)

        async def on_close(client_gone: bool) -> None:
            scope.cancel()

        return SSEResponse(channel, self._headers(session), self._ping_interval, on_close)
