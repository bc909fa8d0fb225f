"""Where a worker finds the legacy-era sessions of a scaled-out server: ``SharedDirectory``.

Where it sits: in ``scaleout``, the ``transports.http.server.storage.SessionDirectory`` that ``worker.ScaleOut`` plugs
into a ``StreamableHTTPApp`` (through its ``HTTPStorage``); the app's ``LegacyEra`` consults it, and it consults the
Redis stores (``shared_session.RedisSessionStore``, ``redis_events.RedisEventStore``). Any worker serves any request
of any session, with no affinity:

- a request naming a session this worker does not hold restores it from Redis (``SharedSession.restore``); one it
  holds is served as it is while its copy is fresh (``ScaleOutSettings.session_refresh``), else checked first (an
  ended or expired session answers 404 on every worker) and brought up to date; a DELETE or a state change on
  another worker is announced on every worker's channel, and the copies read the session again (or end) at once;
- DELETE ends the session in Redis and marks the end of its GET stream;
- a GET stream is always served from Redis, by following ("tailing") the session's stream, so a notification any
  worker stores for the session reaches it; a stream resumed with ``Last-Event-ID`` on a worker that does not write
  it is served the same way, until its end mark (or until the worker writing it is gone: its heartbeat,
  ``KeyLayout.worker_alive``, has expired: then each of its requests still unanswered, ``StreamTails.unanswered``,
  gets a -32603 error answer "the worker serving this request stopped; retry the request" as the stream's last
  events, so that the client's call fails instead of ending silently).
"""

from __future__ import annotations

import logging
import math
import secrets
import time

import anyio
import redis

from ..jsonrpc.envelopes import ErrorCode
from ..transports.http.server.asgi import Answer
from ..transports.http.server.channel import Channel
from ..transports.http.server.legacy import error_answer, session_headers
from ..transports.http.server.session import HTTPSessionStream, error_body
from ..transports.http.server.sse import SSEResponse
from ..transports.http.server.storage import SessionHost, StreamLayout
from ..transports.http.server.stores import StorageUnavailable, session_stream_key
from .redis_events import RedisEventStore
from .settings import ScaleOutSettings
from .shared_session import ALL_WORKERS, SESSION_ENDED, Forward, RedisSessionStore, SharedSession

__all__ = ["SharedDirectory"]

logger = logging.getLogger(__name__)

# The error answer (-32603) of a request whose worker stopped before answering it.
ABANDONED = "the worker serving this request stopped; retry the request"


class SharedDirectory:
    """See the module docstring. ``worker``: this worker's token; ``forward(worker, session id, frame)``: to another
    worker's copy of a session (``worker.ScaleOutWorker.forward``)."""

    def __init__(
        self,
        *,
        worker: str,
        settings: ScaleOutSettings,
        records: RedisSessionStore,
        events: RedisEventStore,
        forward: Forward,
    ) -> None:
        self.worker, self.settings = worker, settings
        self.records, self.events, self._forward = records, events, forward
        self.mirrors: dict[str, SharedSession] = {}  # the copies this worker holds, by session id
        self._restoring: dict[str, anyio.Event] = {}
        self._tails = 0
        self._refresh = settings.refresh_interval

    # -- storage.SessionDirectory ------------------------------------------------------------------------------

    def layout(self, session_id: str) -> StreamLayout:
        return StreamLayout(session_stream_key(session_id), f"{self.worker}-")

    def new_session(self, session: HTTPSessionStream) -> None:
        mirror = SharedSession(session, worker=self.worker, records=self.records, forward=self._forward)
        session.mirror = mirror
        self.mirrors[session.session_id] = mirror

        def forget(ended: HTTPSessionStream) -> None:
            if self.mirrors.get(ended.session_id) is mirror:
                del self.mirrors[ended.session_id]

        session.on_terminate.append(forget)

    def subscriptions(self) -> dict[str, frozenset[str]]:
        """The sessions this worker holds, with the URIs each is subscribed to as far as its last sync knows."""
        return {session_id: mirror.applied_subscriptions for session_id, mirror in self.mirrors.items()}

    async def find(
        self, session_id: str, local: HTTPSessionStream | None, host: SessionHost
    ) -> HTTPSessionStream | None:
        try:
            return await self._find(session_id, local, host)
        except redis.RedisError as error:
            raise StorageUnavailable(str(error)) from error

    async def _find(
        self, session_id: str, local: HTTPSessionStream | None, host: SessionHost
    ) -> HTTPSessionStream | None:
        if local is not None:
            mirror = self.mirrors[session_id]
            now = time.monotonic()
            if now - mirror.synced_at < self._refresh:
                return local  # fresh enough (ScaleOutSettings.session_refresh): no round trip
            record = await self.records.touch(session_id)
            if record is None:
                local.terminate()
                return None
            with anyio.fail_after(self.settings.redis_timeout):
                await mirror.sync(record.level, record.subscriptions)
            mirror.synced_at = now
            return local
        waiting = self._restoring.get(session_id)
        if waiting is not None:
            await waiting.wait()
            return host.sessions.get(session_id)
        self._restoring[session_id] = done = anyio.Event()
        try:
            return await self._restore(session_id, host)
        finally:
            del self._restoring[session_id]
            done.set()

    async def _restore(self, session_id: str, host: SessionHost) -> HTTPSessionStream | None:
        state = await self.records.load(session_id)
        if state is None:
            return None
        await self.records.touch(session_id)
        synced_at = time.monotonic()
        host.make_room()
        session = host.new_session(session_id)
        session.owner = state.owner
        host.start(session)
        try:
            with anyio.fail_after(self.settings.redis_timeout):
                await self.mirrors[session_id].restore(state)
        except BaseException:
            session.terminate()
            raise
        self.mirrors[session_id].synced_at = synced_at
        host.keep(session)
        logger.debug("worker %s restored session %s", self.worker, session_id)
        return session

    async def delete(self, session: HTTPSessionStream) -> None:
        try:
            await self._delete(session)
        except redis.RedisError as error:
            raise StorageUnavailable(str(error)) from error

    async def _delete(self, session: HTTPSessionStream) -> None:
        await self.records.delete(session.session_id)
        await self.events.end(session.standalone.stream_id)  # GET streams on every worker end
        await self._forward(ALL_WORKERS, session.session_id, SESSION_ENDED)  # and the copies other workers hold

    def stale(self, session_id: str, *, ended: bool) -> None:
        """Another worker changed (or ended) the session: this copy reads it again before its next request."""
        mirror = self.mirrors.get(session_id)
        if mirror is not None:
            mirror.synced_at = -math.inf
            if ended:
                mirror.session.terminate()

    # -- GET streams, from Redis ---------------------------------------------------------------------------------

    async def get_stream(
        self, session: HTTPSessionStream, last_event_id: str | None, host: SessionHost
    ) -> Answer | SSEResponse | None:
        try:
            return await self._get_stream(session, last_event_id, host)
        except redis.RedisError as error:
            raise StorageUnavailable(str(error)) from error

    async def _get_stream(
        self, session: HTTPSessionStream, last_event_id: str | None, host: SessionHost
    ) -> Answer | SSEResponse | None:
        if last_event_id is None:
            cursor = await self.records.cursor(session.session_id)
            return await self._tail_response(session, session.standalone.stream_id, cursor, host, take_over=False)
        split = self.events.split(last_event_id)
        unknown = "Bad Request: unknown or expired Last-Event-ID"
        if split is None or not session.owns(split[0]):
            return error_answer(400, ErrorCode.INVALID_REQUEST, unknown, session)
        stream_id, entry = split
        local = session.find_stream(stream_id)
        if local is not None and local is not session.standalone:
            return None  # a POST stream this worker writes: the legacy era resumes it from here
        if stream_id != session.standalone.stream_id and not await self.events.exists(stream_id):
            return error_answer(400, ErrorCode.INVALID_REQUEST, unknown, session)
        return await self._tail_response(session, stream_id, entry, host, take_over=True)

    async def _answer_abandoned(self, stream_id: str) -> bool:
        """The writer of POST stream ``stream_id`` is dead: store an error answer for each of its requests still
        unanswered, the last one ending the stream; False when there is none (the tail ends). Two workers doing this
        at once only add answers after the end mark, which no tail reads."""
        pending = await self.events.unanswered(stream_id)
        for index, request_id in enumerate(pending):
            frame = error_body(ErrorCode.INTERNAL_ERROR, ABANDONED, request_id)
            if index + 1 < len(pending):
                await self.events.store(stream_id, frame)
            else:
                await self.events.store_last(stream_id, frame, delivered=False)
        if pending:
            logger.warning(
                "SSE stream %s: its worker stopped; answered %d request(s) with an error", stream_id, len(pending)
            )
        return bool(pending)

    async def _tail_response(
        self, session: HTTPSessionStream, stream_id: str, after: str | None, host: SessionHost, *, take_over: bool
    ) -> Answer | SSEResponse:
        """An SSE response following ``stream_id`` in Redis from entry ``after`` (``RedisEventStore.tail``). The
        GET stream has one response at a time over all workers (a claim in Redis): a new GET while one is open is
        refused (409), a resumed one (``take_over``) takes its place, and the other ends."""
        if self._tails >= self.settings.max_stream_tails:
            message = f"Service Unavailable: this worker serves {self._tails} streams from Redis, its limit"
            return error_answer(503, ErrorCode.INTERNAL_ERROR, message, session, {"Retry-After": "1"})
        records, events, session_id = self.records, self.events, session.session_id
        standalone = stream_id == session.standalone.stream_id
        holder = f"{self.worker}:{secrets.token_hex(4)}"
        if standalone and not await records.claim_get_stream(session_id, holder, take_over=take_over):
            message = "Conflict: a GET stream is already open"
            return error_answer(409, ErrorCode.INVALID_REQUEST, message, session)
        writer = stream_id.rpartition(".")[2].partition("-")[0]
        channel, scope = Channel(host.max_queued_events), anyio.CancelScope()

        async def go_on(entry: str | None) -> bool:
            if standalone:
                return await records.follow_get_stream(session_id, holder, entry)
            if entry is not None or await records.worker_alive(writer):
                return True
            return await self._answer_abandoned(stream_id)

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
        host.spawn(tail)

        async def on_close(client_gone: bool) -> None:
            scope.cancel()

        return SSEResponse(channel, session_headers(session), host.ping_interval, on_close)
