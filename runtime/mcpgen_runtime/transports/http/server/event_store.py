"""Where the streamable HTTP server keeps the SSE events it sent, so that a client that lost a stream can come back
with ``Last-Event-ID`` and get what it missed (spec 2025-11-25, basic/transports, "Resumability and Redelivery").

Where it sits: in the ``transports`` layer, one of the storage interfaces of ``storage.HTTPStorage``, used by
``session`` (which stores every message it sends on an SSE stream, and the priming events) and ``legacy`` (which
replays on a GET with ``Last-Event-ID``). ``EventStore`` is the interface: a store shared by several server
processes (``scaleout.redis_events``, a database) implements its two methods. ``InMemoryEventStore`` is the
default, bounded in events per stream, in events and bytes overall, and in age.

Event ids are the store's business, with two rules from the spec: unique across every stream the store holds, and
enough to find the stream again. The server checks that a replayed stream belongs to the session asking for it.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

__all__ = ["EventStore", "InMemoryEventStore", "Replay", "StoredEvent"]

logger = logging.getLogger(__name__)

_SEPARATOR: Final = "/"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a stream: its id and the JSON-RPC frame it carried."""

    event_id: str
    message: bytes


@dataclass(frozen=True, slots=True)
class Replay:
    """What ``replay_after`` found: the stream the given id belongs to, and its events after that id, oldest first
    (priming events, which carry no message, are left out)."""

    stream_id: str
    events: Sequence[StoredEvent]


@runtime_checkable
class EventStore(Protocol):
    """Storage for resumable SSE streams (see the module docstring)."""

    async def store(self, stream_id: str, message: bytes | None) -> str:
        """Keep ``message`` (one JSON-RPC frame; None for a priming event, which carries only its id) as the next
        event of ``stream_id``, and return its event id (no CR, LF or NUL: it goes on an SSE ``id:`` line)."""
        ...

    async def replay_after(self, last_event_id: str) -> Replay | None:
        """The stream ``last_event_id`` belongs to and the events stored on it after that one; None if the id was
        never issued by this store or its stream is forgotten."""
        ...


@dataclass(slots=True)
class _Entry:
    seq: int
    message: bytes | None
    stored_at: float
    size: int
    kept: bool = True


class InMemoryEventStore:
    """The default ``EventStore``: events in this process's memory, dropped oldest first past any bound.

    ``max_events_per_stream`` (default 1,000), ``max_events`` (10,000 over all streams), ``max_bytes`` (64 MiB of
    frames over all streams) and ``ttl`` (seconds an event is kept, default 300) bound the events; ``max_streams``
    (default 10,000) bounds the streams remembered, least recently written first. A stream outlives its expired
    events, so that the client of a quiet stream can still resume it (it gets what is left). Event ids are
    ``<stream id>/<n>``, with ``n`` counting up over the whole store, so that no id is ever issued twice.
    """

    def __init__(
        self,
        *,
        max_events_per_stream: int = 1_000,
        max_events: int = 10_000,
        max_bytes: int = 64 * 1024 * 1024,
        ttl: float = 300.0,
        max_streams: int = 10_000,
    ) -> None:
        if min(max_events_per_stream, max_events, max_bytes, max_streams) < 1 or not ttl > 0:
            raise ValueError("every bound of the event store must be positive")
        self.max_events_per_stream, self.max_events, self.max_bytes = max_events_per_stream, max_events, max_bytes
        self.ttl, self.max_streams = ttl, max_streams
        self._next_seq = 1
        self._streams: OrderedDict[str, deque[_Entry]] = OrderedDict()  # least recently written first
        # Every event in the order stored, for the overall bounds and expiry. Events already dropped from their
        # stream stay here (as ``kept=False``, without their message) until they reach the front or a compaction.
        self._order: deque[tuple[str, _Entry]] = deque()
        self.events = 0
        self.bytes = 0

    async def store(self, stream_id: str, message: bytes | None) -> str:
        now = time.monotonic()
        entries = self._streams.get(stream_id)
        if entries is None:
            entries = self._streams[stream_id] = deque()
            while len(self._streams) > self.max_streams:
                _, dropped = self._streams.popitem(last=False)
                self._forget(dropped)
        else:
            self._streams.move_to_end(stream_id)
        entry = _Entry(self._next_seq, message, now, len(message) if message is not None else 0)
        self._next_seq += 1
        entries.append(entry)
        self._order.append((stream_id, entry))
        self.events += 1
        self.bytes += entry.size
        if len(entries) > self.max_events_per_stream:
            self._forget([entries.popleft()])
        self._expire(now)
        while self.events > self.max_events or self.bytes > self.max_bytes:
            self._drop_oldest()
        if len(self._order) > 2 * self.max_events:
            self._order = deque(item for item in self._order if item[1].kept)
        return f"{stream_id}{_SEPARATOR}{entry.seq}"

    def events_after(self, stream_id: str, seq: int) -> list[StoredEvent] | None:
        """The events of ``stream_id`` kept after number ``seq`` (0: all), oldest first; None for an unknown stream
        (``memory.InMemoryStreamTails`` follows streams with it)."""
        entries = self._streams.get(stream_id)
        if entries is None:
            return None
        self._expire(time.monotonic())
        return [
            StoredEvent(f"{stream_id}{_SEPARATOR}{entry.seq}", entry.message)
            for entry in entries
            if entry.seq > seq and entry.message is not None
        ]

    async def replay_after(self, last_event_id: str) -> Replay | None:
        stream_id, _, seq_text = last_event_id.rpartition(_SEPARATOR)
        entries = self._streams.get(stream_id)
        if entries is None or not seq_text.isdigit() or not 0 < int(seq_text) < self._next_seq:
            return None
        self._expire(time.monotonic())
        seq = int(seq_text)
        events = [
            StoredEvent(f"{stream_id}{_SEPARATOR}{entry.seq}", entry.message)
            for entry in entries
            if entry.seq > seq and entry.message is not None
        ]
        return Replay(stream_id, events)

    # -- bounds ----------------------------------------------------------------------------------------------------

    def _forget(self, entries: Iterable[_Entry]) -> None:
        for entry in entries:
            if entry.kept:
                entry.kept = False
                self.events -= 1
                self.bytes -= entry.size
                entry.message = None  # the frame is what costs memory; _order may hold the entry a while longer

    def _drop_oldest(self) -> None:
        stream_id, entry = self._order.popleft()
        if not entry.kept:
            return
        # The oldest event kept overall is the oldest kept in its stream: everything before it there is gone.
        entries = self._streams.get(stream_id)
        if entries and entries[0] is entry:
            entries.popleft()
        self._forget([entry])

    def _expire(self, now: float) -> None:
        while self._order and (not self._order[0][1].kept or now - self._order[0][1].stored_at > self.ttl):
            self._drop_oldest()
