"""The storage interfaces under a legacy-era session: its record, the stream tails, the fan-out, its mirror.

Where it sits: in the ``transports`` layer, under ``session`` (which uses ``StreamTails`` and ``SessionMirror``) and
``storage`` (which gathers what an app is given, ``HTTPStorage``). See ``storage``'s docstring for the whole set;
``memory`` has the in-memory implementations, ``scaleout`` the Redis ones.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from ....jsonrpc.envelopes import Request, RequestId, encode_frame, notification_message
from .channel import Channel

__all__ = [
    "MAX_SESSION_INIT_BYTES",
    "MAX_STREAM_REQUESTS",
    "RESOURCE_UPDATED",
    "STANDALONE_STREAM",
    "STATE_METHODS",
    "FanoutJob",
    "SessionFanout",
    "SessionMirror",
    "SessionRecord",
    "SessionStore",
    "StorageUnavailable",
    "StreamTails",
    "TailGoOn",
    "answered_ids",
    "fanout_job",
    "session_stream_key",
]


@dataclass(frozen=True, slots=True)
class FanoutJob:
    """One notification to append (``SessionFanout``): made when it is raised (``prepare``), then ``run``."""

    notification_id: str
    frame: bytes
    uri: str | None  # a resource update's (only sessions subscribed to it get it); None for a list change
    skip: frozenset[str]  # the sessions the raising process delivered to itself


RESOURCE_UPDATED: Final = "notifications/resources/updated"


def fanout_job(
    capability: str,
    method: str,
    params: Mapping[str, Any] | None,
    local: Mapping[str, Collection[str]],
    declared: Callable[[str], bool],
) -> FanoutJob | None:
    """``SessionFanout.prepare`` of either store: ``local``: the sessions this process holds, with the URIs each is
    subscribed to (as far as it knows); ``declared(capability)``: whether the server declares it. A resource update
    skips the local sessions subscribed to its URI, a list change every local session (their connections had it)."""
    uri = (params or {}).get("uri") if method == RESOURCE_UPDATED else None
    if method == RESOURCE_UPDATED:
        if not isinstance(uri, str):
            return None
        skip = frozenset(sid for sid, uris in local.items() if uri in uris)
    elif declared(capability):
        skip = frozenset(local)
    else:
        return None
    frame = encode_frame(notification_message(method, dict(params) if params is not None else None))
    return FanoutJob(uuid.uuid4().hex, frame, uri, skip)


# The suffix of a session's standalone (GET) stream id: "{key}.0".
STANDALONE_STREAM: Final = "0"
# The requests whose success changes a legacy-era session's state (``SessionStore.write``).
STATE_METHODS: Final = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


def session_stream_key(session_id: str) -> str:
    """The prefix of a session's SSE stream ids when its streams outlive this process (``HTTPSessionStream.key``),
    the same in every process: a ``Last-Event-ID`` is replayed only to the session it belongs to."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:16]


# The largest initialize request a legacy-era session keeps (its client info and capabilities: what the session
# costs in any store); a larger one is refused (``legacy``: HTTP 400, JSON-RPC -32602). 64 KiB.
MAX_SESSION_INIT_BYTES: Final = 64 * 1024


class StorageUnavailable(Exception):
    """A store did not answer (the request is refused with 503 and ``Retry-After``, never left hanging)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What is kept of one legacy-era session: what its client's requests built."""

    version: str
    init: bytes  # the client's initialize request, as it sent it
    owner: str | None = None
    level: str | None = None
    subscriptions: frozenset[str] = frozenset()


@runtime_checkable
class SessionStore(Protocol):
    """The records of legacy-era sessions, by session id. A record lives ``ttl`` seconds from its last ``save`` or
    ``touch`` (then it is gone: an expired session is an unknown one); at most ``max_sessions`` live at once."""

    async def save(self, session_id: str, record: SessionRecord) -> bool:
        """Keep a new session's record; False (nothing kept) when ``max_sessions`` are alive already."""
        ...

    async def load(self, session_id: str) -> SessionRecord | None:
        """The record, or None for a session never saved, deleted or expired."""
        ...

    async def touch(self, session_id: str) -> SessionRecord | None:
        """``load``, and the session's life renewed (it was used); None when it is gone (nothing renewed)."""
        ...

    async def write(self, session_id: str, method: str, params: Any) -> None:
        """The state change of a successful request of ``STATE_METHODS`` (its ``method`` and ``params``)."""
        ...

    async def delete(self, session_id: str) -> None: ...

    async def live(self) -> list[str]:
        """The ids of the live sessions (expired ones are dropped first)."""
        ...


# The most request ids a POST's stream records (``StreamTails.note_requests``; a batch's first ones): a stream whose
# writer died gets an error answer for each of them still unanswered (``scaleout.directory``). 256.
MAX_STREAM_REQUESTS: Final = 256


def answered_ids(frames: Iterable[bytes]) -> set[RequestId]:
    """The ids of the JSON-RPC responses (answers, errors) among ``frames`` (a batch frame counts each of its
    items); anything that does not parse is skipped."""
    found: set[RequestId] = set()
    for frame in frames:
        try:
            decoded = json.loads(frame)
        except ValueError:
            continue
        for item in decoded if isinstance(decoded, list) else [decoded]:
            if isinstance(item, dict) and "method" not in item and ("result" in item or "error" in item):
                if isinstance(item.get("id"), str | int) and not isinstance(item.get("id"), bool):
                    found.add(item["id"])
    return found


def request_ids(data: bytes | None) -> list[RequestId]:
    """The request ids ``note_requests`` recorded, from their JSON text (anything else: none)."""
    try:
        decoded = json.loads(data) if data else []
    except ValueError:
        return []
    if not isinstance(decoded, list):
        return []
    return [item for item in decoded if isinstance(item, str | int) and not isinstance(item, bool)]


# go_on(last entry read, or None): awaited after each read of a tail; False ends the tail.
TailGoOn = Callable[[str | None], Awaitable[bool]]


@runtime_checkable
class StreamTails(Protocol):
    """Following SSE streams that another process writes, through the event store both use. A position is what
    follows the last ``/`` of an event id (``split``); ``None``: the start of the stream."""

    async def store_last(self, stream_id: str, message: bytes, *, delivered: bool) -> str:
        """``EventStore.store`` of a stream's last event (its tails stop after it); ``delivered``: it goes to a
        live connection (the store may then forget the stream sooner)."""
        ...

    async def end(self, stream_id: str) -> None:
        """Mark ``stream_id`` done: every tail of it stops after what came before."""
        ...

    async def exists(self, stream_id: str) -> bool:
        """Whether anything of ``stream_id`` is kept (an event, an end mark, or its ``note_requests``)."""
        ...

    async def note_requests(self, stream_id: str, ids: Sequence[RequestId]) -> None:
        """Record the requests a POST's SSE stream carries (its first ``MAX_STREAM_REQUESTS``), kept as long as the
        stream's events, so that another process can answer them if the stream's writer dies (``unanswered``)."""
        ...

    async def unanswered(self, stream_id: str) -> list[RequestId]:
        """The recorded requests of ``stream_id`` (``note_requests``) with no answer stored on it, in order."""
        ...

    def split(self, event_id: str) -> tuple[str, str] | None:
        """(stream id, position) of an event id this store issued; None for anything else."""
        ...

    async def tail(self, stream_id: str, after: str | None, channel: Channel, *, go_on: TailGoOn) -> None:
        """Push every event of ``stream_id`` after ``after`` into ``channel``, then each new one as it is stored,
        until the stream's end mark, the channel closing, or ``go_on`` answering False; the channel is closed on
        return. A client that takes nothing of a full channel for a while ends the tail (it resumes)."""
        ...


@runtime_checkable
class SessionFanout(Protocol):
    """Server-wide change notifications to the GET streams of the live legacy-era sessions this process does not
    hold (those it holds get them through their connections)."""

    def prepare(self, capability: str, method: str, params: Mapping[str, Any] | None) -> FanoutJob | None:
        """The job for a notification raised here, noting at once which local sessions have it (``fanout_job``);
        None when no session is to get it."""
        ...

    async def run(self, job: FanoutJob) -> int:
        """Append ``job`` to every other live session's GET stream, once (-1: this job ran already)."""
        ...


class SessionMirror(Protocol):
    """What a session shares with other processes (``HTTPSessionStream(mirror=...)``): it sees what the client
    sends before the session does, and what the session sends before it is routed."""

    async def incoming(self, body: bytes, request: Request | None) -> bytes | None:
        """The POST body to deliver (``request``: the body is that one request); None: nothing is left for here."""
        ...

    async def outgoing(self, frame: bytes, message: Any) -> tuple[bytes, Any] | None:
        """What to route instead of (``frame``, ``message``); None: nothing goes out."""
        ...
