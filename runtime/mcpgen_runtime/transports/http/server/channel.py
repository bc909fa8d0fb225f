"""The queue between what a session sends and one live HTTP response that carries it: ``Channel`` of ``Event``s.

Where it sits: at the bottom of the streamable HTTP server (``session`` pushes into it, ``sse`` takes
from it; ``modern`` and ``scaleout``'s Redis tails push too). Pushing never blocks, so one slow HTTP client
cannot stall the session's shared send lock; instead the queue is bounded (``max_queued``, default
``DEFAULT_MAX_QUEUED_EVENTS``): a client that falls that far behind has its connection ended: what is queued still
goes out, then the end, and nothing more is queued (memory stays bounded by ``max_queued`` events). What comes
after is not lost when the events carry ids: they are in the event store, and the client resumes with
``Last-Event-ID`` after the last one it got (on any worker, when scaled out). Events without an id (no event store)
are lost, with a warning.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Final

import anyio

__all__ = ["DEFAULT_MAX_QUEUED_EVENTS", "Channel", "Event"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_QUEUED_EVENTS: Final = 1000


@dataclass(frozen=True, slots=True)
class Event:
    """One item for an HTTP response: a frame with its SSE event id (if stored), a priming event (an id, no
    frame), or only a ``retry`` hint (sent before the server ends a connection it wants the client to resume)."""

    frame: bytes | None
    event_id: str | None = None
    retry_ms: int | None = None


class Channel:
    """The events of one live HTTP response, in order: the session pushes them, the response takes them; ``close``
    ends it after what is queued. One consumer, which waits only when nothing is queued (an anyio memory object
    stream cost a task switch and a few objects per event). At most ``max_queued`` events wait: one more ends the
    response after them (``overflowed``; see the module docstring)."""

    __slots__ = ("_events", "_max_queued", "_room", "_wakeup", "closed", "overflowed")

    def __init__(self, max_queued: int = DEFAULT_MAX_QUEUED_EVENTS) -> None:
        if max_queued < 1:
            raise ValueError("max_queued must be at least 1")
        self._events: deque[Event] = deque()
        self._max_queued = max_queued
        self.closed = False
        self.overflowed = False  # ended because the client fell max_queued events behind
        self._wakeup: anyio.Event | None = None
        self._room: anyio.Event | None = None  # a producer waiting for room (wait_for_room)

    def push(self, event: Event) -> bool:
        """Queue ``event``; False once the channel is closed (or it closes now: ``max_queued`` are waiting)."""
        if self.closed:
            return False
        if len(self._events) >= self._max_queued:
            self.overflow(event)
            return False
        self._events.append(event)
        self.wake()
        return True

    @property
    def room(self) -> int:
        """How many more events may be queued now."""
        return self._max_queued - len(self._events)

    async def wait_for_room(self) -> None:
        """Return once the consumer has taken what was queued, or the channel is closed (at once if there is room):
        for a producer that reads from a store at its own pace (``scaleout``'s Redis tails) instead of overflowing."""
        if self.room > 0 or self.closed:
            return
        self._room = room = anyio.Event()
        await room.wait()

    async def room_within(self, timeout: float) -> bool:
        """Whether there is room, waiting at most ``timeout`` for the consumer to take what is queued; if it takes
        nothing in that time, the channel overflows (its client resumes with ``Last-Event-ID``) and this is False.
        For a producer that reads from a store at its own pace (the event stores' tails)."""
        if self.room > 0:
            return True
        with anyio.move_on_after(timeout):
            await self.wait_for_room()
        if self.room > 0:
            return True
        self.overflow()
        return False

    def overflow(self, event: Event | None = None) -> None:
        """End the connection: its client fell too far behind (``event``: the one that did not fit). What is queued
        still goes out (then the end), so the client's last event id is where it resumes; nothing more is queued."""
        self.overflowed = True
        self.close()
        if event is not None and event.frame is not None and event.event_id is None:
            logger.warning(
                "an HTTP client fell %d events behind: its connection is ended; this event and the next ones of its"
                " stream have no id, so it cannot resume them",
                len(self._events),
            )
        else:
            logger.info(
                "an HTTP client fell %d events behind: its connection is ended (it resumes with Last-Event-ID)",
                len(self._events),
            )

    def close(self) -> None:
        self.closed = True
        self.wake()
        if self._room is not None:
            self._room.set()
            self._room = None

    def wake(self) -> None:
        """Wake the consumer if it waits (it then looks again: an event, the end, or something of its own)."""
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def take(self) -> list[Event]:
        """Everything queued, oldest first."""
        events = list(self._events)
        self._events.clear()
        if self._room is not None:
            self._room.set()
            self._room = None
        return events

    @property
    def ended(self) -> bool:
        """Closed, and everything queued taken."""
        return self.closed and not self._events

    async def wait(self) -> None:
        """Return once an event is queued or the channel is closed (at once if so already), or ``wake`` is called."""
        if self._events or self.closed:
            return
        self._wakeup = wakeup = anyio.Event()
        await wakeup.wait()
