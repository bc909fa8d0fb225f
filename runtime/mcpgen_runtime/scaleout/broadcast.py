"""Change notifications across workers (MCP 2026-07-28 ``subscriptions/listen``): Redis publish/subscribe.

Where it sits: in the ``scaleout`` layer, under ``server`` (it knows the server only by the shape it uses,
``RelayingServer``): one ``NotificationBroadcast`` per worker process, run by the worker's app
(``serve_broadcast``), sets ``server.relay`` (a ``server.dispatch.subscriptions.NotificationRelay``) so that what the server
raises (``Server.notify_tools_changed`` ...) is also published, and delivers what other workers published to the
listen streams this worker holds (``server.dispatch.subscriptions.Listeners``). Without Redis it is not created, and the
server's hot path is one ``relay is None`` test.

Exactly once, everywhere: the raising worker delivers to its own listen streams at once (as without Redis, so that
works even while Redis is down) and publishes ``{"origin": its id, ...}``; every worker's subscriber skips messages
of its own origin. Redis pub/sub is at most once: a message published while a subscriber is disconnected is lost for
it, so after every reconnection (ours, or redis-py's own, which re-subscribes: both show as a new ``subscribe``
confirmation) the local listen streams are ``resync``-ed: each gets the list changes it opted in to.

Nothing waits on Redis on the caller's side: ``publish`` puts the message in a bounded outbox (``max_queued``,
default 1024; a full outbox drops the message with a warning) and a publisher task sends it, retrying with backoff
while Redis is unreachable. Received messages go through a bounded inbox of the same size to a delivery task, so a
slow delivery never stalls the reading of the subscription (Redis disconnects pub/sub clients that fall behind).
Losing Redis logs one WARNING per outage for each task, and one more when the subscription is back (the resync);
reconnection is tried after ``min_backoff`` (0.1 s), doubling up to ``max_backoff`` (5 s). A silent connection is
detected by a PING every ``health_interval`` (30 s) with no traffic: no answer within ``timeout`` (5 s,
``ScaleOutSettings.redis_timeout``) counts as lost.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from redis.exceptions import RedisError

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from .session_fanout import FanoutJob, RedisSessionFanout
    from .settings import ScaleOutSettings

__all__ = [
    "CHANNEL_SUFFIX",
    "DEFAULT_MAX_QUEUED",
    "Deliver",
    "NotificationBroadcast",
    "RelayingServer",
    "deliver_to_listen_streams",
    "serve_broadcast",
]

logger = logging.getLogger(__name__)

CHANNEL_SUFFIX: Final = "notifications"
"""The channel is ``{key_prefix}:notifications``."""
DEFAULT_MAX_QUEUED: Final = 1024
DEFAULT_MIN_BACKOFF: Final = 0.1
DEFAULT_MAX_BACKOFF: Final = 5.0
DEFAULT_HEALTH_INTERVAL: Final = 30.0
DEFAULT_TIMEOUT: Final = 5.0
# What may travel on the channel: the change notifications a listen stream can opt in to, by the capability each needs
# (server.dispatch.subscriptions.LIST_CHANGED_METHODS, and resource updates).
RELAYED: Final[Mapping[str, str]] = {
    "tools.listChanged": "notifications/tools/list_changed",
    "prompts.listChanged": "notifications/prompts/list_changed",
    "resources.listChanged": "notifications/resources/list_changed",
    "resources.subscribe": "notifications/resources/updated",
}
_PING_MESSAGE: Final = "mcpgen-broadcast-health"
_SUBSCRIBED: Final = object()  # in the inbox: a (re)subscription was confirmed

Deliver = Callable[[str, str, "Mapping[str, Any] | None"], Awaitable[None]]
"""``deliver(capability, method, params)``: hands a notification from another worker to this worker's streams."""


class _Listeners(Protocol):
    def __len__(self) -> int: ...

    async def deliver(self, capability: str, method: str, params: Mapping[str, Any] | None) -> None: ...

    async def resync(self) -> None: ...


class _Connection(Protocol):
    @property
    def listeners(self) -> _Listeners: ...


class RelayingServer(Protocol):
    """What a broadcast uses of ``server.Server``: its live connections (each with its ``subscriptions.Listeners``)
    and the ``relay`` it hands raised notifications to."""

    relay: Any

    @property
    def connections(self) -> Collection[_Connection]: ...


class _RedisLost(Exception):
    """The subscription's connection answered nothing within the health check's deadline."""


def deliver_to_listen_streams(server: RelayingServer) -> tuple[Deliver, Callable[[], Awaitable[None]]]:
    """The default ``deliver`` and ``resync`` of a worker: the ``subscriptions/listen`` streams open on ``server``'s
    connections. (Legacy-era sessions are not reached: their notifications are the session layer's business.)"""

    async def deliver(capability: str, method: str, params: Mapping[str, Any] | None) -> None:
        for connection in list(server.connections):
            if len(connection.listeners):
                await connection.listeners.deliver(capability, method, params)

    async def resync() -> None:
        for connection in list(server.connections):
            if len(connection.listeners):
                await connection.listeners.resync()

    return deliver, resync


class NotificationBroadcast:
    """One worker's end of the ``{key_prefix}:notifications`` channel (see the module docstring).

    ``redis``: a ``redis.asyncio.Redis`` (its pool gives the subscription its own connection); ``key_prefix``: as
    ``ScaleOutSettings.key_prefix``. The bounds and times are the module's ``DEFAULT_*`` unless given."""

    def __init__(
        self,
        redis: Redis,
        key_prefix: str = "mcpgen",
        *,
        max_queued: int = DEFAULT_MAX_QUEUED,
        timeout: float = DEFAULT_TIMEOUT,
        min_backoff: float = DEFAULT_MIN_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        health_interval: float = DEFAULT_HEALTH_INTERVAL,
        fanout: RedisSessionFanout | None = None,
    ) -> None:
        if max_queued < 1:
            raise ValueError("max_queued must be at least 1")
        if not 0 < min_backoff <= max_backoff or timeout <= 0 or health_interval <= 0:
            raise ValueError("timeout, health_interval and 0 < min_backoff <= max_backoff must be positive")
        self._redis = redis
        self.channel = f"{key_prefix}:{CHANNEL_SUFFIX}"
        self.origin = uuid.uuid4().hex  # this worker, in the messages it publishes
        self._timeout, self._health_interval = timeout, health_interval
        self._min_backoff, self._max_backoff = min_backoff, max_backoff
        self._max_queued = max_queued
        # Legacy-era sessions of every worker get the notifications too (in the same script as the PUBLISH).
        self._fanout = fanout
        self._outbox: MemoryObjectSendStream[tuple[bytes, FanoutJob | None]] | None = None
        self.published = self.received = self.dropped = 0  # counters, for tests and a curious operator
        self._dropping = False  # warned of dropped notifications since the last one that went through
        self.subscribed = anyio.Event()  # set once the first subscription is confirmed (tests wait for it)

    # -- the raising side -----------------------------------------------------------------------------------------

    def publish(self, capability: str, method: str, params: Mapping[str, Any] | None) -> None:
        """Queue ``method`` for the other workers (``server.dispatch.subscriptions.NotificationRelay``). Never blocks or
        raises: outside ``running``, or with the outbox full, the notification is dropped (with a warning)."""
        if self._outbox is None:
            return
        frame = json.dumps(
            {"origin": self.origin, "capability": capability, "method": method, "params": params},
            separators=(",", ":"),
        ).encode()
        job = self._fanout.prepare(capability, method, params) if self._fanout is not None else None
        try:
            self._outbox.send_nowait((frame, job))
        except anyio.WouldBlock:
            self._drop(f"{self._max_queued} notifications wait for Redis: {method} not sent to the other workers")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # shutting down

    def _drop(self, why: str) -> None:
        """Count a dropped notification; warn once until one goes through again (an outage drops many)."""
        self.dropped += 1
        if not self._dropping:
            self._dropping = True
            logger.warning("%s (and any more until Redis keeps up; %d dropped so far)", why, self.dropped)

    # -- running --------------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(
        self,
        server: RelayingServer,
        deliver: Deliver | None = None,
        resync: Callable[[], Awaitable[None]] | None = None,
    ) -> AsyncIterator[NotificationBroadcast]:
        """Relay ``server``'s change notifications while inside: sets ``server.relay`` and runs the publisher, the
        subscriber and the delivery task; on exit all three stop and the relay is removed. ``deliver`` / ``resync``
        (default: ``deliver_to_listen_streams(server)``) hand received notifications to this worker's streams."""
        if deliver is None or resync is None:
            default_deliver, default_resync = deliver_to_listen_streams(server)
            deliver, resync = deliver or default_deliver, resync or default_resync
        outbox_send, outbox_receive = anyio.create_memory_object_stream[tuple[bytes, "FanoutJob | None"]](
            self._max_queued
        )
        inbox_send, inbox_receive = anyio.create_memory_object_stream[Any](self._max_queued)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._publish_loop, outbox_receive)
            tg.start_soon(self._subscribe_loop, inbox_send)
            tg.start_soon(self._deliver_loop, inbox_receive, deliver, resync)
            self._outbox = outbox_send
            server.relay = self
            try:
                yield self
            finally:
                if server.relay is self:
                    server.relay = None
                self._outbox = None
                outbox_send.close()
                tg.cancel_scope.cancel()

    async def _publish_loop(self, outbox: MemoryObjectReceiveStream[tuple[bytes, FanoutJob | None]]) -> None:
        backoff = 0.0
        async with outbox:
            async for frame, job in outbox:
                while True:  # this message until it is out (while Redis is down the outbox fills, then drops)
                    try:
                        with anyio.fail_after(self._timeout):
                            if job is not None and self._fanout is not None:
                                await self._fanout.run(job, self.channel, frame)  # the PUBLISH included
                            else:
                                await self._redis.publish(self.channel, frame)
                    except (RedisError, OSError, TimeoutError) as exc:
                        backoff = self._next_backoff(backoff)
                        if backoff == self._min_backoff:
                            why = str(exc) or type(exc).__name__
                            logger.warning(
                                "cannot publish to Redis (%s): retrying, at most %g s apart", why, self._max_backoff
                            )
                        await anyio.sleep(backoff)
                        continue
                    if backoff:
                        logger.warning("publishing to Redis again")
                        backoff = 0.0
                    self.published += 1
                    self._dropping = False
                    break

    async def _subscribe_loop(self, inbox: MemoryObjectSendStream[Any]) -> None:
        backoff = 0.0
        async with inbox:
            while True:
                try:
                    await self._subscription(inbox)
                except (RedisError, OSError, TimeoutError, _RedisLost) as exc:
                    backoff = self._next_backoff(backoff)
                    if backoff == self._min_backoff:
                        logger.warning(
                            "lost the Redis subscription %s (%s): change notifications from other workers wait until"
                            " it is back; reconnecting",
                            self.channel,
                            str(exc) or type(exc).__name__,
                        )
                    await anyio.sleep(backoff)
                else:
                    backoff = 0.0

    async def _subscription(self, inbox: MemoryObjectSendStream[Any]) -> None:
        """One connection's subscription, until it fails (raises) or the broadcast stops (cancelled)."""
        async with self._redis.pubsub() as pubsub:  # gives its connection back to the pool on the way out
            with anyio.fail_after(self._timeout):
                await pubsub.subscribe(self.channel)
            last_heard = anyio.current_time()
            pinged = False
            while True:
                message = await pubsub.get_message(timeout=min(1.0, self._health_interval))
                now = anyio.current_time()
                if message is None:
                    if not pinged and now - last_heard > self._health_interval:
                        await pubsub.ping(_PING_MESSAGE)
                        pinged = True
                    elif pinged and now - last_heard > self._health_interval + self._timeout:
                        raise _RedisLost(f"no answer to a PING within {self._timeout:g} s")
                    continue
                last_heard, pinged = now, False
                kind = message.get("type")
                if kind == "subscribe":  # the first, or a re-subscription after a reconnection: a gap
                    self._forward(inbox, _SUBSCRIBED)
                elif kind == "message":
                    self._forward(inbox, message.get("data"))

    def _forward(self, inbox: MemoryObjectSendStream[Any], item: Any) -> None:
        try:
            inbox.send_nowait(item)
        except anyio.WouldBlock:
            self._drop(f"{self._max_queued} notifications from other workers wait for delivery: one dropped")

    async def _deliver_loop(
        self, inbox: MemoryObjectReceiveStream[Any], deliver: Deliver, resync: Callable[[], Awaitable[None]]
    ) -> None:
        async with inbox:
            async for item in inbox:
                try:
                    if item is _SUBSCRIBED:
                        if self.subscribed.is_set():
                            logger.warning(
                                "the Redis subscription %s was interrupted and is back: notifications from other"
                                " workers may have been missed, so every local listen stream was sent the list"
                                " changes it asked for",
                                self.channel,
                            )
                            await resync()
                        self.subscribed.set()
                        continue
                    notification = self._parse(item)
                    if notification is not None:
                        self.received += 1
                        self._dropping = False
                        await deliver(*notification)
                except Exception:
                    logger.exception("delivering a notification from another worker failed")

    def _parse(self, data: Any) -> tuple[str, str, Mapping[str, Any] | None] | None:
        """(capability, method, params) of a message from another worker; None for our own or a malformed one."""
        try:
            message = json.loads(data)
        except (TypeError, ValueError):
            message = None
        if not isinstance(message, dict):
            logger.warning("ignored a message on %s that is not a JSON object", self.channel)
            return None
        if message.get("origin") == self.origin:
            return None  # delivered here when it was raised
        capability, method, params = message.get("capability"), message.get("method"), message.get("params")
        known = isinstance(capability, str) and isinstance(method, str) and RELAYED.get(capability) == method
        if not known or not (params is None or isinstance(params, dict)):
            logger.warning("ignored a message on %s that is no change notification: %.200r", self.channel, data)
            return None
        assert isinstance(capability, str) and isinstance(method, str)
        if method == "notifications/resources/updated" and not isinstance((params or {}).get("uri"), str):
            logger.warning("ignored a resources/updated message on %s without a uri", self.channel)
            return None
        return capability, method, params

    def _next_backoff(self, backoff: float) -> float:
        return self._min_backoff if not backoff else min(self._max_backoff, backoff * 2)


async def serve_broadcast(
    server: RelayingServer,
    redis: Redis,
    settings: ScaleOutSettings,
    *,
    fanout: RedisSessionFanout | None = None,
    task_status: Any = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Relay ``server``'s change notifications through ``redis`` until cancelled: a worker's task
    (``await task_group.start(serve_broadcast, server, redis, settings)`` gives the ``NotificationBroadcast``).
    ``fanout``: also to the legacy-era sessions of every worker (``session_fanout``)."""
    broadcast = NotificationBroadcast(redis, settings.key_prefix, timeout=settings.redis_timeout, fanout=fanout)
    async with broadcast.running(server):
        task_status.started(broadcast)
        await anyio.sleep_forever()
