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

Tasks: ``task_store_like`` gives the server a ``task_store.RedisTaskStore`` on this worker's pool (the server layer
swaps it in for its in-memory default when it starts the worker), with its change listener in the app's task group.

The shared requestState key (when ``settings.request_state_key`` is not set): a worker never serves with a key its
peers do not share. Starting, it takes the key in Redis (``KeyLayout.request_state_key``); when that key is missing
(Redis restarted empty, FLUSHALL) or damaged (not a string, or shorter than ``MIN_SHARED_KEY_BYTES`` = 32 bytes), it
asks the running workers, on everyone's channel, to put theirs back, and waits for it at most ``KEY_AGREEMENT_WAIT``
(2 s); only with no peer (or none answering in time) does it make a new key, announced on the same channel. Every
worker also puts its key back on each heartbeat (``HEARTBEAT_INTERVAL``, 3 s) and adopts the one in Redis when it
differs, still accepting the tokens of its earlier keys (``KeyRing``: the current key and at most
``MAX_ACCEPTED_KEYS`` - 1 = 3 earlier ones; the ``server.dispatch.request_state.SigningKeys`` of its codec). Writing the key
and repairing a damaged one is one atomic script (a damaged key is logged once, at WARNING, by the worker that
replaced it).
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

from ..task_store import TaskStore
from ..transports.http.server.app import ConnectionHandler, HTTPAppOptions, StreamableHTTPApp
from ..transports.http.server.storage import HTTPStorage
from .directory import SharedDirectory
from .keys import KeyLayout
from .redis_client import open_redis
from .redis_events import RedisEventStore
from .session_fanout import RedisSessionFanout
from .settings import ScaleOutSettings
from .shared_session import ALL_WORKERS, SESSION_ENDED, STATE_CHANGED, RedisSessionStore
from .supervisor import notify_ready
from .task_store import RedisTaskStore

__all__ = [
    "HEARTBEAT_INTERVAL",
    "HEARTBEAT_TTL",
    "KEY_AGREEMENT_WAIT",
    "MAX_ACCEPTED_KEYS",
    "MIN_SHARED_KEY_BYTES",
    "KeyRing",
    "ScaleOut",
    "ScaleOutWorker",
    "WorkerHook",
]

logger = logging.getLogger(__name__)

HEARTBEAT_INTERVAL: Final = 3.0
HEARTBEAT_TTL: Final = 10  # seconds without a heartbeat after which a worker counts as gone
_SUBSCRIBER_POLL: Final = 1.0  # how long the channel subscriber waits per read (it is cancelled at shutdown)
KEY_AGREEMENT_WAIT: Final = 2.0  # seconds a starting worker waits for its peers to put the shared key back
MIN_SHARED_KEY_BYTES: Final = 32  # a shared requestState key in Redis shorter than this is damaged: replaced
MAX_ACCEPTED_KEYS: Final = 4  # keys a worker accepts tokens of: its current one and the most recent earlier ones
_KEY_POLL: Final = 0.05
_KEY_WANTED: Final = b"request-state-key?"  # on everyone's channel, with an empty session id
_KEY_CHANGED: Final = b"request-state-key!"
_KEPT, _MISSING, _DAMAGED = 0, 1, 2
# Atomically: the shared key when it is sound (status 0); else ARGV[1] replaces it (status 1: it was missing, 2: it
# was damaged), or, with ARGV[1] empty, nothing is written and the status says which it was.
_SHARE_KEY: Final = """
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'string' then
  local value = redis.call('GET', KEYS[1])
  if string.len(value) >= tonumber(ARGV[2]) then return {value, 0} end
end
local status = 2
if kind == 'none' then status = 1 end
if ARGV[1] == '' then return {'', status} end
if kind ~= 'none' then redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[1], ARGV[1])
return {ARGV[1], status}
"""

# A hook awaited with the worker once its app runs (Redis connected: ``redis``, ``task_group``).
WorkerHook = Callable[["ScaleOutWorker"], Awaitable[None]]


class KeyRing:
    """The shared requestState keys of a worker (``SigningKeys`` of its codec): ``current`` signs, ``accepted``
    (newest first, the current one included, at most ``MAX_ACCEPTED_KEYS``) verify."""

    def __init__(self, current: bytes) -> None:
        self.current = current
        self.accepted: tuple[bytes, ...] = (current,)

    def use(self, key: bytes) -> bool:
        """Sign with ``key`` from now on, still accepting the earlier keys; whether it changed anything."""
        if key == self.current:
            return False
        others = tuple(known for known in self.accepted if known != key)
        self.current, self.accepted = key, (key, *others)[:MAX_ACCEPTED_KEYS]
        return True


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
        self.request_state_keys: KeyRing | None = None  # the shared key, once taken (see the module docstring)
        self._app: StreamableHTTPApp | None = None
        self._task_store: RedisTaskStore | None = None

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
        notify_ready()  # to the supervisor, when it forked this worker

    async def shared_request_state_key(self) -> bytes | KeyRing:
        """``settings.request_state_key``, else the key every worker of the deployment shares in Redis, as a
        ``KeyRing`` this worker keeps agreed with its peers (see the module docstring)."""
        if self.settings.request_state_key is not None:
            return self.settings.request_state_key
        if self.request_state_keys is None:
            self.request_state_keys = KeyRing(await self._agree_on_key())
        return self.request_state_keys

    async def _share_key(self, mine: bytes) -> tuple[bytes, int]:
        """The sound key in Redis and ``_KEPT``, else ``mine`` written in its place (``b""``: nothing written) and
        whether the key was ``_MISSING`` or ``_DAMAGED``."""
        reply = await self.redis.eval(_SHARE_KEY, 1, self.keys.request_state_key, mine, MIN_SHARED_KEY_BYTES)
        key, status = reply
        return bytes(key), int(status)

    async def _agree_on_key(self) -> bytes:
        key, status = await self._share_key(b"")
        if status == _KEPT:
            return key
        receivers = await self.redis.publish(self.keys.cancellations, b"\n" + _KEY_WANTED)
        if receivers > 1:  # running peers (this worker is one of the receivers): they put their key back
            with anyio.move_on_after(KEY_AGREEMENT_WAIT):
                while status != _KEPT:
                    await anyio.sleep(_KEY_POLL)
                    key, status = await self._share_key(b"")
            if status == _KEPT:
                return key
        key, status = await self._share_key(secrets.token_bytes(32))
        self._log_repair(status)
        if status != _KEPT:
            logger.info("worker %s: a new requestState key shared in Redis", self.worker)
            await self.redis.publish(self.keys.cancellations, b"\n" + _KEY_CHANGED)
        return key

    def _log_repair(self, status: int) -> None:
        if status == _DAMAGED:
            logger.warning(
                "worker %s: the shared requestState key in Redis (%s) was damaged (not a string of at least %d "
                "bytes): replaced",
                self.worker,
                self.keys.request_state_key,
                MIN_SHARED_KEY_BYTES,
            )

    async def sync_request_state_key(self) -> None:
        """Put this worker's key back in Redis when it is missing or damaged, and adopt the one there when it
        differs (tokens of the earlier key stay accepted)."""
        ring = self.request_state_keys
        if ring is None:
            return
        key, status = await self._share_key(ring.current)
        self._log_repair(status)
        if status == _MISSING:
            logger.info("worker %s: put the shared requestState key back in Redis", self.worker)
        if ring.use(key):
            logger.info("worker %s: signs requestState with the key now shared in Redis", self.worker)

    def task_store_like(self, store: TaskStore) -> RedisTaskStore:
        """The task store every worker shares (``task_store.RedisTaskStore``), with the bounds of ``store`` (the
        server's own, usually the in-memory default: ``max_tasks_per_principal``, ``max_result_bytes``,
        ``default_ttl_ms``, ``max_ttl_ms``, each read when it has it) and this worker's command pool. Made once; its
        change listener (waking this worker's waiters when another worker changes a task) runs in the app's task
        group, so call it once the app runs (an ``on_started`` hook)."""
        if self._task_store is None:
            bounds = ("max_tasks_per_principal", "max_result_bytes", "default_ttl_ms", "max_ttl_ms")
            given = {name: getattr(store, name) for name in bounds if isinstance(getattr(store, name, None), int)}
            self._task_store = RedisTaskStore(self.redis, self.keys, deadline=self.settings.redis_timeout, **given)
            self.task_group.start_soon(self._task_store.listen_for_changes)
        return self._task_store

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
                    await self.sync_request_state_key()
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
        if not session_id_bytes and frame in (_KEY_WANTED, _KEY_CHANGED):
            await self.sync_request_state_key()
            return
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
