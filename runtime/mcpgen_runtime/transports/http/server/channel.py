"""The queue between what a session sends and one live HTTP response that carries it: ``Channel`` of ``Event``s;
and the stream of a session whose live response it is, which may come and go (``ResponseStream``).

Where it sits: at the bottom of the streamable HTTP server (``session`` pushes into it, ``sse`` takes
from it; ``modern`` and ``scaleout``'s Redis tails push too). Pushing never blocks, so one slow HTTP client
cannot stall the session's shared send lock; instead the queue is bounded (``max_queued``, default
``DEFAULT_MAX_QUEUED_EVENTS``): a client that falls that far behind has its connection ended: what is queued still
goes out, then the end, and nothing more is queued (memory stays bounded by ``max_queued`` events). What comes
after is not lost when the events carry ids: they are in the event store, and the client resumes with
``Last-Event-ID`` after the last one it got (on any worker, when scaled out). Events without an id (no event store)
are lost, with a warning.

A ``ResponseStream`` is one stream of a session (``session.HTTPSessionStream`` routes to it): a request POST's, or
the standalone GET's; its live connection is a ``Channel``, replaced when a client resumes the stream.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Collection, Mapping
from typing import Any, Final, NamedTuple

import anyio

from ....jsonrpc.envelopes import RequestId

__all__ = ["DEFAULT_MAX_QUEUED_EVENTS", "Channel", "Event", "ResponseStream"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_QUEUED_EVENTS: Final = 1000


class Event(NamedTuple):
    """One item for an HTTP response: a frame with its SSE event id (if stored), a priming event (an id, no
    frame), or only a ``retry`` hint (sent before the server ends a connection it wants the client to resume).
    A named tuple, not a frozen dataclass: made for every event of every response, and a frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field) cost twice as much."""

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


class ResponseStream:
    """One stream of a session: a request POST's (its requests' related messages and responses) or the standalone
    GET's. Its live HTTP response (``attach``) may end and be replaced by another (a resuming GET) while it lasts."""

    # One per request POST: slots make it cheaper to build and to read.
    __slots__ = (
        "_connection",
        "batch",
        "done",
        "http_scope",
        "max_queued",
        "primed",
        "resumable",
        "retry_ms",
        "sse",
        "stored",
        "stream_id",
        "unanswered",
    )

    def __init__(
        self,
        stream_id: str,
        ids: Collection[RequestId],
        *,
        sse: bool,
        stored: bool,
        batch: bool,
        retry_ms: int,
        http_scope: Mapping[str, Any] | None = None,
        max_queued: int = DEFAULT_MAX_QUEUED_EVENTS,
    ) -> None:
        """``sse``: answered as an SSE stream (else one JSON body); ``stored``: its events go to the event store
        first (they get ids); ``retry_ms``: the ``retry`` hint sent when the server ends its connection;
        ``http_scope``: the ASGI scope of the POST that opened it (``current_http_scope``); ``max_queued``: the
        bound of each live connection's queue (``channel.Channel``)."""
        self.max_queued = max_queued
        self.stream_id = stream_id
        self.http_scope = http_scope
        self.unanswered: set[RequestId] = set(ids)
        self.sse, self.stored, self.batch, self.retry_ms = sse, stored, batch, retry_ms
        self.resumable = False  # an event id went out on it: a client that loses it can come back for the rest
        self.primed = False  # it began with a priming event: the client (2025-11-25) expects server-ended connections
        self.done = False  # every request answered (or cancelled, or the session ended): nothing more will come
        self._connection: Channel | None = None

    def attach(self) -> Channel:
        """A new live connection (replacing the one there was): what to send, and the token for ``detach``."""
        self.end_connection()
        channel = self._connection = Channel(self.max_queued)
        if self.done:
            channel.close()
        return channel

    def detach(self, token: Channel) -> bool:
        """The response behind ``token`` ended; False if another had taken over already."""
        token.close()
        if self._connection is not token:
            return False
        self._connection = None
        return True

    @property
    def connected(self) -> bool:
        return self._connection is not None

    def push(self, event: Event) -> bool:
        """Hand ``event`` to the live connection; False if there is none."""
        if self._connection is None:
            return False
        if not self._connection.push(event):
            self._connection = None
            return False
        if event.event_id is not None:
            self.resumable = True
        return True

    def end_connection(self, retry_ms: int | None = None) -> None:
        """End the live response (after what is queued on it), without ending the stream."""
        if self._connection is not None:
            if retry_ms is not None:
                self.push(Event(None, retry_ms=retry_ms))
            self._connection.close()
            self._connection = None

    def finish(self) -> None:
        self.done = True
        self.unanswered.clear()
        self.end_connection()
