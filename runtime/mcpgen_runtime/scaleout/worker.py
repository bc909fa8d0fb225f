"""One worker of a scaled-out server: ``ScaleOut`` builds its ``StreamableHTTPApp`` with Redis storage plugged in.

Where it sits: the top of ``scaleout`` (the server layer uses ``ScaleOut`` as ``run_http``'s ``app_factory`` when a
Redis URL is configured, and ``server.runner.create_app`` for an ASGI server's workers). Nothing here subclasses the
transport: the app is a plain ``transports.http.server.app.StreamableHTTPApp`` given an ``HTTPStorage`` on Redis
(``redis_events.RedisEventStore`` as its event store and stream tails, ``directory.SharedDirectory`` as its session
directory), a ``lifespan`` (Redis connected, the server's own lifespan around it) and ``on_started`` hooks (this
worker's heartbeat and channel subscriber, then the server's: the shared requestState key, the broadcast).

Each worker has a token of its own (``worker``), one Redis pool for commands and one for tails, a heartbeat, and a
subscriber on its channel: a client's answer to a request another worker sent reaches that worker through its
pub/sub channel, and a cancellation of a request another worker handles reaches it through everyone's.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Final

import anyio
import redis
import redis.asyncio
from anyio.abc import TaskGroup
from typing_extensions import Unpack

from ..transports.http.server.app import ConnectionHandler, HTTPAppOptions, StreamableHTTPApp
from ..transports.http.server.storage import HTTPStorage
from .directory import SharedDirectory
from .keys import KeyLayout
from .redis_client import open_redis
from .redis_events import RedisEventStore
from .session_fanout import RedisSessionFanout
from .settings import ScaleOutSettings
from .shared_session import ALL_WORKERS, SESSION_ENDED, STATE_CHANGED, RedisSessionStore

__all__ = ["HEARTBEAT_INTERVAL", "HEARTBEAT_TTL", "ScaleOut", "ScaleOutWorker", "WorkerHook"]

logger = logging.getLogger(__name__)

HEARTBEAT_INTERVAL: Final = 3.0
HEARTBEAT_TTL: Final = 10  # seconds without a heartbeat after which a worker counts as gone
_SUBSCRIBER_POLL: Final = 1.0  # how long the channel subscriber waits per read (it is cancelled at shutdown)

# A hook awaited with the worker once its app runs (Redis connected: ``redis``, ``task_group``).
WorkerHook = Callable[["ScaleOutWorker"], Awaitable[None]]


class ScaleOut:
    """The ``run_http`` ``app_factory`` of a worker (``transports.http.server.app.AppFactory``): each call builds a
    ``ScaleOutWorker`` and its app. ``settings``: the deployment's (a Redis URL is required); ``around``: an async
    context manager entered for the app's run, outside it (the server's lifespan); ``on_started``: awaited with
    the worker once the app runs."""

    def __init__(
        self,
        settings: ScaleOutSettings,
        *,
        around: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        on_started: Sequence[WorkerHook] = (),
    ) -> None:
        if not settings.redis_url:
            raise ValueError("ScaleOut needs settings.redis_url")
        self.settings, self._around, self._on_started = settings, around, tuple(on_started)

    def __call__(self, handler: ConnectionHandler, /, **options: Unpack[HTTPAppOptions]) -> StreamableHTTPApp:
        return ScaleOutWorker(self.settings, around=self._around, on_started=self._on_started).app(handler, **options)


class ScaleOutWorker:
    """One worker: its Redis clients and stores, its tasks, and the app it serves (``app``; see the module
    docstring)."""

    def __init__(
        self,
        settings: ScaleOutSettings,
        *,
        around: Callable[[], AbstractAsyncContextManager[object]] | None = None,
        on_started: Sequence[WorkerHook] = (),
    ) -> None:
        self.settings = settings
        self.keys = KeyLayout(settings.key_prefix)
        self.worker = secrets.token_hex(6)
        self.on_started = list(on_started)
        self._around = around
        # Pools connect lazily: nothing reaches Redis before ``running`` pings it.
        self.redis: redis.asyncio.Redis = open_redis(settings)
        self._tail_redis = open_redis(settings, tails=True)
        self.records = RedisSessionStore(self.redis, self.keys, settings)
        self.events = RedisEventStore(self.redis, self._tail_redis, self.keys, settings)
        self.directory = SharedDirectory(
            worker=self.worker, settings=settings, records=self.records, events=self.events, forward=self.forward
        )
        self.storage = HTTPStorage(events=self.events, tails=self.events, directory=self.directory)
        self._app: StreamableHTTPApp | None = None

    def app(self, handler: ConnectionHandler, /, **options: Unpack[HTTPAppOptions]) -> StreamableHTTPApp:
        """This worker's app: ``StreamableHTTPApp`` with ``options``, and this worker's storage, lifespan and hooks.
        ``session_idle_timeout`` defaults to ``settings.session_ttl`` (a local copy of a session idle that long is
        dropped here; Redis keeps the session until its own TTL); the event store is always Redis (GET streams are
        served from it; ``resumable=False`` is ignored)."""
        options.setdefault("session_idle_timeout", self.settings.session_ttl)
        options.setdefault("max_queued_events", self.settings.max_queued_events)
        options["on_started"] = [*options.get("on_started", ()), self._started]
        options["storage"], options["lifespan"] = self.storage, self.running
        self._app = StreamableHTTPApp(handler, **options)
        return self._app

    @property
    def task_group(self) -> TaskGroup:
        """The app's task group while it runs (for the tasks of ``on_started`` hooks)."""
        assert self._app is not None
        return self._app.task_group

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan, outside its task group: ``around``, then Redis (a worker that cannot reach it does
        not start); the clients are closed after the app's sessions."""
        async with AsyncExitStack() as stack:
            if self._around is not None:
                await stack.enter_async_context(self._around())
            stack.push_async_callback(self.redis.aclose)
            stack.push_async_callback(self._tail_redis.aclose)
            await self.redis.ping()
            yield

    async def _started(self, app: StreamableHTTPApp) -> None:
        await app.task_group.start(self._heartbeat)
        await app.task_group.start(self._subscriber)
        for hook in self.on_started:
            await hook(self)

    async def shared_request_state_key(self) -> bytes:
        """``settings.request_state_key``, else the random key every worker of the deployment shares in Redis."""
        if self.settings.request_state_key is not None:
            return self.settings.request_state_key
        key = self.keys.request_state_key
        await self.redis.set(key, secrets.token_bytes(32), nx=True)
        shared = await self.redis.get(key)
        assert isinstance(shared, bytes) and len(shared) >= 32
        return shared

    def session_fanout(self, declared: Callable[[str], bool]) -> RedisSessionFanout:
        """Server-wide notifications to the legacy-era sessions of every worker (for ``broadcast``);
        ``declared(capability)``: whether the server declares it."""
        return RedisSessionFanout(self.redis, self.keys, self.settings, self.directory.subscriptions, declared)

    # -- worker tasks --------------------------------------------------------------------------------------------

    async def _heartbeat(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
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
        session_id_bytes, _, frame = data.partition(b"\n")
        session_id = session_id_bytes.decode()
        if frame in (STATE_CHANGED, SESSION_ENDED):
            self.directory.stale(session_id, ended=frame == SESSION_ENDED)  # read again before the next request
            return
        session = self._app.sessions.get(session_id) if self._app is not None else None
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

    async def forward(self, worker: str, session_id: str, frame: bytes) -> None:
        """``frame`` to ``worker``'s copy of ``session_id`` (``ALL_WORKERS``: to every worker's)."""
        everyone = worker == ALL_WORKERS
        channel = self.keys.cancellations if everyone else self.keys.worker_channel(worker)
        receivers = await self.redis.publish(channel, session_id.encode() + b"\n" + frame)
        if not receivers and not everyone:
            logger.warning("session %s: an answer for worker %s, which is gone; dropped", session_id, worker)
