"""The in-memory implementations of the storage interfaces of ``storage`` (the event store's is ``event_store``).

Where it sits: in the ``transports`` layer, beside ``storage``; ``scaleout`` has the Redis implementations, and the
same contract tests run on both (``tests/runtime/test_storage_contracts.py``). Everything here is bounded and lives
in this process: ``InMemorySessionStore`` (at most ``max_sessions`` records, each ``ttl`` seconds from its last use),
``InMemoryStreamTails`` (following the streams of an ``InMemoryEventStore`` as they are written) and
``InMemorySessionFanout`` (a server-wide notification appended to the GET streams of the sessions of a
``SessionStore``, each notification once).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

import anyio

from ....jsonrpc.envelopes import RequestId
from .channel import Channel, Event
from .event_store import EventStore, InMemoryEventStore, Replay
from .stores import (
    MAX_STREAM_REQUESTS,
    STANDALONE_STREAM,
    FanoutJob,
    SessionRecord,
    SessionStore,
    TailGoOn,
    answered_ids,
    fanout_job,
    session_stream_key,
)

__all__ = ["InMemorySessionFanout", "InMemorySessionStore", "InMemoryStreamTails"]

_SEPARATOR: Final = "/"
# How many notification ids a fan-out remembers (a job run again within them appends nothing).
_REMEMBERED_JOBS: Final = 10_000


class InMemorySessionStore:
    """``SessionStore`` in this process's memory: at most ``max_sessions`` live records, each ``ttl`` seconds from
    its last ``save`` or ``touch`` (``clock``: ``time.monotonic``)."""

    def __init__(
        self, *, max_sessions: int = 10_000, ttl: float = 1800.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_sessions < 1 or not ttl > 0:
            raise ValueError("max_sessions and ttl must be positive")
        self.max_sessions, self.ttl, self._clock = max_sessions, ttl, clock
        self._records: OrderedDict[str, tuple[SessionRecord, float]] = OrderedDict()  # by deadline, soonest first

    def _expire(self) -> None:
        now = self._clock()
        while self._records:
            session_id, (_, deadline) = next(iter(self._records.items()))
            if deadline > now:
                return
            del self._records[session_id]

    def _keep(self, session_id: str, record: SessionRecord) -> None:
        self._records[session_id] = (record, self._clock() + self.ttl)
        self._records.move_to_end(session_id)

    async def save(self, session_id: str, record: SessionRecord) -> bool:
        self._expire()
        if session_id not in self._records and len(self._records) >= self.max_sessions:
            return False
        self._keep(session_id, record)
        return True

    async def load(self, session_id: str) -> SessionRecord | None:
        self._expire()
        kept = self._records.get(session_id)
        return kept[0] if kept is not None else None

    async def touch(self, session_id: str) -> SessionRecord | None:
        record = await self.load(session_id)
        if record is not None:
            self._keep(session_id, record)
        return record

    async def write(self, session_id: str, method: str, params: Any) -> None:
        record = await self.load(session_id)
        params = params if isinstance(params, dict) else {}
        if record is None:
            return
        if method == "logging/setLevel" and isinstance(params.get("level"), str):
            record = replace(record, level=params["level"])
        elif method == "resources/subscribe" and isinstance(params.get("uri"), str):
            record = replace(record, subscriptions=record.subscriptions | {params["uri"]})
        elif method == "resources/unsubscribe" and isinstance(params.get("uri"), str):
            record = replace(record, subscriptions=record.subscriptions - {params["uri"]})
        else:
            return
        self._keep(session_id, record)

    async def delete(self, session_id: str) -> None:
        self._records.pop(session_id, None)

    async def live(self) -> list[str]:
        self._expire()
        return list(self._records)


class InMemoryStreamTails:
    """``StreamTails`` over an ``InMemoryEventStore`` (and an ``EventStore`` itself: store through it, so that its
    tails wake). ``stall_timeout``: how long a tail waits for a client that takes nothing of a full channel."""

    def __init__(self, events: InMemoryEventStore | None = None, *, stall_timeout: float = 2.0) -> None:
        self.events = events if events is not None else InMemoryEventStore()
        self._ended: set[str] = set()
        # note_requests, by stream: as many streams as the event store remembers, least recently noted dropped.
        self._requests: OrderedDict[str, tuple[RequestId, ...]] = OrderedDict()
        self._stored = anyio.Event()  # set (and replaced) whenever anything is stored or ended
        self._stall_timeout = stall_timeout

    def _wake(self) -> None:
        self._stored.set()
        self._stored = anyio.Event()

    async def store(self, stream_id: str, message: bytes | None) -> str:
        event_id = await self.events.store(stream_id, message)
        self._wake()
        return event_id

    async def replay_after(self, last_event_id: str) -> Replay | None:
        return await self.events.replay_after(last_event_id)

    async def store_last(self, stream_id: str, message: bytes, *, delivered: bool) -> str:
        event_id = await self.events.store(stream_id, message)
        self._ended.add(stream_id)
        self._wake()
        return event_id

    async def end(self, stream_id: str) -> None:
        self._ended.add(stream_id)
        self._wake()

    async def exists(self, stream_id: str) -> bool:
        return stream_id in self._requests or self.events.events_after(stream_id, 0) is not None

    async def note_requests(self, stream_id: str, ids: Sequence[RequestId]) -> None:
        self._requests[stream_id] = tuple(ids[:MAX_STREAM_REQUESTS])
        self._requests.move_to_end(stream_id)
        while len(self._requests) > self.events.max_streams:
            self._requests.popitem(last=False)

    async def unanswered(self, stream_id: str) -> list[RequestId]:
        ids = self._requests.get(stream_id, ())
        answered = answered_ids(event.message for event in self.events.events_after(stream_id, 0) or ())
        return [request_id for request_id in ids if request_id not in answered]

    def split(self, event_id: str) -> tuple[str, str] | None:
        stream_id, _, position = event_id.rpartition(_SEPARATOR)
        return (stream_id, position) if stream_id and position.isdigit() else None

    async def tail(self, stream_id: str, after: str | None, channel: Channel, *, go_on: TailGoOn) -> None:
        seq = int(after) if after is not None and after.isdigit() else 0
        try:
            while not channel.closed:
                if not await channel.room_within(self._stall_timeout):
                    return  # it fell behind for good: it resumes with Last-Event-ID
                stored = self._stored
                events = (self.events.events_after(stream_id, seq) or [])[: channel.room]
                last = events[-1].event_id.rpartition(_SEPARATOR)[2] if events else None
                if not await go_on(last):
                    return
                for event in events:
                    channel.push(Event(event.message, event.event_id))
                if last is not None:
                    seq = int(last)
                    continue
                if stream_id in self._ended:
                    return
                with anyio.move_on_after(1.0):  # go_on is asked at least this often
                    await stored.wait()
        finally:
            channel.close()


class InMemorySessionFanout:
    """``SessionFanout`` over a ``SessionStore`` and an ``EventStore`` (any: this one is not atomic, so it suits
    one process). ``local()``: the sessions this process holds, each with the URIs it is subscribed to;
    ``declared(capability)``: whether the server declares it."""

    def __init__(
        self,
        sessions: SessionStore,
        events: EventStore,
        local: Callable[[], Mapping[str, Collection[str]]],
        declared: Callable[[str], bool],
    ) -> None:
        self._sessions, self._events, self._local, self._declared = sessions, events, local, declared
        self._done: deque[str] = deque(maxlen=_REMEMBERED_JOBS)
        self.appended = 0

    def prepare(self, capability: str, method: str, params: Mapping[str, Any] | None) -> FanoutJob | None:
        return fanout_job(capability, method, params, self._local(), self._declared)

    async def run(self, job: FanoutJob) -> int:
        if job.notification_id in self._done:
            return -1
        self._done.append(job.notification_id)
        appended = 0
        for session_id in await self._sessions.live():
            if session_id in job.skip:
                continue
            record = await self._sessions.load(session_id)
            if record is None or (job.uri is not None and job.uri not in record.subscriptions):
                continue
            await self._events.store(f"{session_stream_key(session_id)}.{STANDALONE_STREAM}", job.frame)
            appended += 1
        self.appended += appended
        return appended
