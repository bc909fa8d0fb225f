"""The incoming notifications of a ``Session``, handled in order on one worker task: ``NotificationQueue``.

Where it sits: in the ``jsonrpc`` layer, used by ``session`` and ``outgoing`` (one concern with its own counts).
The counts let a request that got its answer wait until the notifications the peer sent before that answer have
been handled (a progress notification reaches its callback before the call returns: ``Pending.notifications_before``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .context import NotificationHandler, ProgressCallback, route_progress
from .envelopes import Notification, RequestId

__all__ = ["NotificationQueue"]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


class NotificationQueue:
    """Notifications queued by the session's receive loop (``put``, which never blocks) and handled in order by
    ``run``: a progress notification goes to its request's callback (``progress_callbacks``), any other to
    ``handler``."""

    def __init__(self, handler: NotificationHandler, progress_callbacks: Mapping[RequestId, ProgressCallback]) -> None:
        self._handler = handler
        self._progress_callbacks = progress_callbacks
        self.queued = 0
        self.handled = 0
        self._handled_one = anyio.Event()
        # The queue and its worker are made on the first notification: many sessions get none (a stateless HTTP
        # request's session lives for one request), and a task per session is a good part of what one costs.
        self._start_worker: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self._send: MemoryObjectSendStream[Notification] | None = None
        self._receive: MemoryObjectReceiveStream[Notification] | None = None
        self._closed = False

    def start_with(self, spawn: Callable[[Callable[[], Awaitable[None]]], None]) -> None:
        """The session is running: ``spawn(run)`` starts the worker when the first notification comes."""
        self._start_worker = spawn

    def put(self, notification: Notification) -> None:
        if self._send is None:
            if self._closed or self._start_worker is None:
                logger.debug("notification %r after shutdown dropped", notification.method)
                return
            # Unbounded: the receive loop must never block on a slow notification handler.
            self._send, self._receive = anyio.create_memory_object_stream[Notification](math.inf)
            self._start_worker(self.run)
        try:
            self._send.send_nowait(notification)
            self.queued += 1
        except anyio.ClosedResourceError:
            logger.debug("notification %r after shutdown dropped", notification.method)

    def close_sending(self) -> None:
        """No more notifications: ``run`` ends once the queued ones are handled."""
        self._closed = True
        if self._send is not None:
            self._send.close()

    def close(self) -> None:
        self._closed = True
        if self._send is not None and self._receive is not None:
            self._send.close()
            self._receive.close()

    async def wait_handled(self, count: int, stop: Callable[[], bool]) -> None:
        """Wait until ``count`` notifications have been handled, or ``stop()`` says to give up."""
        while self.handled < count and not stop():
            await self._handled_one.wait()

    async def run(self) -> None:
        assert self._receive is not None  # started by put, which made the queue
        async with self._receive:
            async for notification in self._receive:
                try:
                    if not await route_progress(self._progress_callbacks, notification):
                        await self._handler(notification.method, notification.params)
                except Exception:
                    logger.exception("notification handler for %r failed", notification.method)
                finally:
                    self.handled += 1
                    self._handled_one.set()
                    self._handled_one = anyio.Event()
