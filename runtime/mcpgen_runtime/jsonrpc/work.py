"""The tasks a ``Session`` runs for what it reads (handlers, error answers, batches, the notification worker):
``SessionWork`` spawns them in the session's task group once the in-flight limit allows (``inflight.Admission``),
and counts them, so that the session can give those still running a grace period when the peer stops sending.

Where it sits: in the ``jsonrpc`` layer, under ``session``; ``execution`` counts the request tasks it starts itself
(on asyncio, outside the task group) here too.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from .inflight import Admission
from .writer import TRANSPORT_GONE

__all__ = ["SessionWork"]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


class SessionWork:
    """The session's task group (``tg``, set while it serves), its in-flight limit, and the count of its tasks."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        self.tg: TaskGroup | None = None
        # Tasks spawned but not finished (handlers, error answers, the notification worker), for the shutdown grace.
        self.active = 0
        # Set when the count drops to 0; made only while someone waits (the shutdown): making an anyio.Event
        # looks the async library up, and the count goes from 0 to 1 with every request of a sequential client.
        self._idle: anyio.Event | None = None

    def start(self, weight: int, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Spawn work for an incoming frame when the in-flight limit allows (see ``inflight.Admission``)."""
        self.admission.admit(weight, lambda: self.spawn(self._admitted, weight, func, *args))

    def spawn(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self.tg is not None
        # Counted here, synchronously, so that the shutdown wait cannot miss a task that has not started yet.
        self.count()
        self.tg.start_soon(self._guarded, func, *args)

    def count(self) -> None:
        """One more task to wait for (``done`` when it ends)."""
        self.active += 1

    def done(self) -> None:
        self.active -= 1
        if self.active == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def wait_idle(self) -> None:
        """Until every counted task has ended."""
        while self.active:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    async def _admitted(self, weight: int, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        finally:
            # Before _guarded's count goes down: a waiting request started here keeps the shutdown wait honest.
            self.admission.release(weight)

    async def _guarded(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        except TRANSPORT_GONE as exc:
            logger.info("could not send an answer, the stream is closed: %r", exc)
        except Exception:
            logger.exception("internal error in a session task")
        finally:
            self.done()
