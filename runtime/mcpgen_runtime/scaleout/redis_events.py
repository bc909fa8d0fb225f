"""The SSE event store on Redis: every worker stores and replays the same streams, so a client resumes a stream
with ``Last-Event-ID`` on any worker, and a worker can follow ("tail") a stream another worker writes.

Where it sits: in ``scaleout``, the Redis ``EventStore`` and ``StreamTails`` of ``transports.http.server.storage``
(``worker`` plugs it in; ``directory`` tails with it). One Redis stream per SSE stream (``KeyLayout.events``), trimmed to ``max_events_per_stream`` entries and expiring
``event_ttl`` seconds after its last write (a POST's stream ``completed_stream_ttl`` seconds after its last response
went to a live connection). An entry is a message (field ``m``, the JSON-RPC frame), with ``end``
when it is the stream's last (its answer: the tails stop), or only ``end`` (a DELETE ends a GET stream). Event ids
are ``{stream id}/{entry id}``: unique (Redis makes entry ids grow), and enough to find the stream again; a priming
event is not stored, its id is ``{stream id}/0-1``, before every entry. A POST's stream also records the ids of its
requests when it opens (``note_requests``: one more command per SSE POST, at most ``MAX_STREAM_REQUESTS`` ids, in
``KeyLayout.stream_requests`` with the stream's TTL, renewed by each event before the last), so that a worker finding the stream's writer dead can answer
the ones still unanswered (``unanswered``; ``directory``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any, Final

import redis
import redis.asyncio

from ..jsonrpc.envelopes import RequestId
from ..transports.http.server.channel import Channel, Event
from ..transports.http.server.event_store import Replay, StoredEvent
from ..transports.http.server.stores import MAX_STREAM_REQUESTS, STANDALONE_STREAM, TailGoOn, answered_ids, request_ids
from .keys import KeyLayout
from .settings import ScaleOutSettings

__all__ = ["RedisEventStore", "split_event_id"]

logger = logging.getLogger(__name__)

_SEPARATOR: Final = "/"
_ENTRY_ID: Final = re.compile(r"\d{1,20}-\d{1,20}")
_MESSAGE, _END = b"m", b"end"
_PRIMING_ENTRY: Final = "0-1"  # the entry id of every priming event: below any entry Redis makes
# Entries read per round trip while replaying or tailing: a long backlog comes in pieces of this size.
READ_BATCH: Final = 256


def split_event_id(event_id: str) -> tuple[str, str] | None:
    """(stream id, Redis entry id) of an event id this store issued; None for anything else."""
    stream_id, _, entry = event_id.rpartition(_SEPARATOR)
    if not stream_id or not _ENTRY_ID.fullmatch(entry):
        return None
    return stream_id, entry


class RedisEventStore:
    """``EventStore`` and ``StreamTails`` on Redis streams (see the module docstring). ``client`` runs commands; ``tail_client`` (its own
    pool, see ``redis_client.open_redis``) the blocking reads of ``tail``."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        tail_client: redis.asyncio.Redis,
        keys: KeyLayout,
        settings: ScaleOutSettings,
    ) -> None:
        self._redis, self._tail_redis, self._keys = client, tail_client, keys
        self._max_events, self._ttl = settings.max_events_per_stream, max(1, round(settings.event_ttl))
        self._completed_ttl = max(1, round(settings.completed_stream_ttl))
        self._block_ms = max(1, round(settings.tail_block * 1000))
        # A tail whose client takes nothing of a full queue for this long is ended (it resumes): within the claim
        # of a GET stream (RedisSessionStore's get-stream TTL, 3 tail_block + 1), which is renewed between reads.
        self._stall_timeout = 2 * settings.tail_block

    async def _add(self, stream_id: str, fields: dict[bytes, bytes], ttl: int | None = None) -> str:
        try:
            return await self._add_once(stream_id, fields, ttl)
        except redis.ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            # Junk under the stream's key (not a stream): dropped, and the stream starts again.
            logger.warning("SSE stream %s: its Redis key held no stream; dropped it", stream_id)
            await self._redis.delete(self._keys.events(stream_id))
            return await self._add_once(stream_id, fields, ttl)

    async def _add_once(self, stream_id: str, fields: dict[bytes, bytes], ttl: int | None) -> str:
        key = self._keys.events(stream_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, fields, maxlen=self._max_events, approximate=False)  # type: ignore[arg-type]
            pipe.expire(key, ttl or self._ttl)
            # A POST stream's recorded requests live as long as it while it goes on (its answer needs them no more).
            renew = _END not in fields and stream_id.rpartition(".")[2] != STANDALONE_STREAM
            if renew:
                pipe.expire(self._keys.stream_requests(stream_id), ttl or self._ttl)
            entry = (await pipe.execute())[0]
        return entry.decode() if isinstance(entry, bytes) else str(entry)

    async def store_last(self, stream_id: str, message: bytes, *, delivered: bool) -> str:
        """``StreamTails.store_last``: nothing will follow on the stream (its tails stop after this one);
        ``delivered``: it goes to a live connection, so the whole stream is kept only ``completed_stream_ttl``
        seconds from now (a client cut off right then still resumes it meanwhile)."""
        return await self.store(stream_id, message, last=True, delivered=delivered)

    def split(self, event_id: str) -> tuple[str, str] | None:
        return split_event_id(event_id)

    async def store(self, stream_id: str, message: bytes | None, *, last: bool = False, delivered: bool = False) -> str:
        """``EventStore.store``; ``last`` and ``delivered``: see ``store_last``."""
        if message is None:
            # A priming event only names the start of its stream: an id below every entry's, no round trip.
            return f"{stream_id}{_SEPARATOR}{_PRIMING_ENTRY}"
        fields = {_MESSAGE: message, _END: b""} if last else {_MESSAGE: message}
        ttl = self._completed_ttl if last and delivered else None
        return f"{stream_id}{_SEPARATOR}{await self._add(stream_id, fields, ttl)}"

    async def end(self, stream_id: str) -> None:
        """Mark ``stream_id`` done: every tail of it stops after what came before."""
        await self._add(stream_id, {_END: b""})

    async def exists(self, stream_id: str) -> bool:
        return bool(await self._redis.exists(self._keys.events(stream_id), self._keys.stream_requests(stream_id)))

    async def note_requests(self, stream_id: str, ids: Sequence[RequestId]) -> None:
        data = json.dumps(list(ids[:MAX_STREAM_REQUESTS]), separators=(",", ":"))
        await self._redis.set(self._keys.stream_requests(stream_id), data, ex=self._ttl)

    async def unanswered(self, stream_id: str) -> list[RequestId]:
        try:
            data: Any = await self._redis.get(self._keys.stream_requests(stream_id))
        except redis.ResponseError:  # junk of another type under the key: no request recorded
            return []
        ids = request_ids(data if isinstance(data, bytes) else None)
        if not ids:
            return []
        replay = await self.replay_after(f"{stream_id}{_SEPARATOR}{_PRIMING_ENTRY}")
        answered = answered_ids(event.message for event in replay.events) if replay is not None else set()
        return [request_id for request_id in ids if request_id not in answered]

    async def replay_after(self, last_event_id: str) -> Replay | None:
        split = split_event_id(last_event_id)
        if split is None:
            return None
        stream_id, entry = split
        key = self._keys.events(stream_id)
        events: list[StoredEvent] = []
        start = f"({entry}"
        while True:
            entries: Any = await self._redis.xrange(key, min=start, max="+", count=READ_BATCH)
            for entry_id, fields in entries:
                if _MESSAGE in fields:
                    events.append(StoredEvent(f"{stream_id}{_SEPARATOR}{entry_id.decode()}", fields[_MESSAGE]))
            if len(entries) < READ_BATCH:
                break
            start = f"({entries[-1][0].decode()}"
        if not events and entry != _PRIMING_ENTRY and not await self._redis.exists(key):
            return None  # (a primed stream may have nothing stored yet)
        return Replay(stream_id, events)

    async def tail(self, stream_id: str, after: str | None, channel: Channel, *, go_on: TailGoOn) -> None:
        """Push every event of ``stream_id`` after entry ``after`` (None: from the start) into ``channel``, then
        each new one as it is stored, until the stream's end marker, the channel closing, or ``go_on`` answering
        False. ``go_on(last entry read, or None)`` is awaited after each read (one that brought entries, before they
        are pushed, or one that waited ``tail_block`` in vain). The channel is closed on return; a Redis error ends the tail (the client
        resumes, on this worker or another), and so does a client that takes nothing of a full channel (its
        ``max_queued`` events) for two ``tail_block``."""
        key, last = self._keys.events(stream_id), after or "0-0"
        try:
            while not channel.closed:
                # Read only what the connection has room for: a slow client slows the tail, not the memory.
                if not await channel.room_within(self._stall_timeout):
                    return  # it fell behind for good: it resumes with Last-Event-ID
                count = min(READ_BATCH, channel.room)
                reply: Any = await self._tail_redis.xread({key: last}, count=count, block=self._block_ms)
                entries = [(entry_id.decode(), fields) for _key, batch in reply or () for entry_id, fields in batch]
                # Asked before anything is pushed: a GET stream taken over elsewhere sends nothing more here.
                if not await go_on(entries[-1][0] if entries else None):
                    return
                for last, fields in entries:
                    if _MESSAGE in fields:
                        channel.push(Event(fields[_MESSAGE], f"{stream_id}{_SEPARATOR}{last}"))
                    if _END in fields:
                        return
        except redis.RedisError:
            logger.warning("tailing SSE stream %s from Redis failed; the client may resume", stream_id, exc_info=True)
        finally:
            channel.close()
