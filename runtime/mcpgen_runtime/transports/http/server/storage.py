"""What a streamable HTTP server keeps, as interfaces: where each kind of state lives is a component, passed in.

Where it sits: in the ``transports`` layer, beside ``event_store`` (the SSE event store, the first such interface).
``StreamableHTTPApp`` takes an ``HTTPStorage`` (every field has an in-memory default, bounded, for one process);
``scaleout`` builds one on Redis and plugs it in, subclassing nothing of the transport (as the Go SDK's
``EventStore``: an interface with a memory default, passed in the options). The interfaces:

- ``EventStore`` (``event_store``): the SSE events of every stream, for ``Last-Event-ID`` resumption.
- ``StreamTails``: following a stream another process writes (its events as they are stored, until its end mark).
- ``SessionStore``: the records of legacy-era HTTP sessions: create (bounded by ``max_sessions``), look up,
  refresh (touch), count, expire idle ones (``ttl``), change (log level, subscriptions), delete.
- ``SessionFanout``: a server-wide notification appended to the GET stream of every live legacy-era session that
  did not get it already.
- ``SessionMirror`` and ``SessionDirectory``: how one process's copy of a session and its legacy era consult the
  stores above (``scaleout.shared_session`` and ``scaleout.directory`` implement them; the default is none: a
  session lives in this process only).

The interfaces under a session (``SessionStore``, ``StreamTails``, ``SessionFanout``, ``SessionMirror``) are in
``stores``; here are those over the sessions (``SessionDirectory``, ``SessionHost``) and ``HTTPStorage``. The
in-memory implementations are in ``memory``; the Redis ones in ``scaleout``. ``tests/runtime/
test_storage_contracts.py`` and ``tests/scaleout/test_storage_contracts_redis.py`` run the same contract on both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .asgi import Answer
from .event_store import EventStore, InMemoryEventStore
from .session import HTTPSessionStream
from .sse import SSEResponse
from .stores import StreamTails

__all__ = ["HTTPStorage", "SessionDirectory", "SessionHost", "StreamLayout"]


@dataclass(frozen=True, slots=True)
class StreamLayout:
    """How a session's stream ids are made when other processes follow them: ``key`` (``session_stream_key``),
    the same everywhere; ``stream_tag``: this process's mark before each POST stream's number (so that ids made by
    different processes differ). Its GET stream then keeps no backlog: the event store is that backlog."""

    key: str
    stream_tag: str


class SessionHost(Protocol):
    """What a ``SessionDirectory`` uses of the legacy era it serves (``legacy.LegacyEra``)."""

    @property
    def sessions(self) -> Mapping[str, HTTPSessionStream]:
        """The sessions this process holds, by id."""
        ...

    ping_interval: float
    max_queued_events: int

    def new_session(self, session_id: str | None = None) -> HTTPSessionStream: ...

    def start(self, session: HTTPSessionStream) -> None:
        """Run the connection handler of ``session`` in the app's task group."""
        ...

    def keep(self, session: HTTPSessionStream) -> None:
        """Hold ``session`` (restored) under its id."""
        ...

    def make_room(self) -> None:
        """Drop idle local copies while this process is at its bound of sessions."""
        ...

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in the app's task group."""
        ...


class SessionDirectory(Protocol):
    """Where the legacy era finds sessions beyond this process's memory (``scaleout.directory``). The era keeps the
    sessions it holds; the directory restores the others, keeps their records, and serves GET streams from the
    store when this process does not write them."""

    def layout(self, session_id: str) -> StreamLayout:
        """How the streams of a session made here are named."""
        ...

    def new_session(self, session: HTTPSessionStream) -> None:
        """A session stream was made here (fresh or restored): give it its mirror."""
        ...

    async def find(
        self, session_id: str, local: HTTPSessionStream | None, host: SessionHost
    ) -> HTTPSessionStream | None:
        """The session a request names: ``local`` (checked, or refreshed), else restored into ``host``, None when
        ended everywhere. Raises ``StorageUnavailable`` (or ``TimeoutError``) when the store fails."""
        ...

    async def delete(self, session: HTTPSessionStream) -> None:
        """A DELETE: the session ends everywhere (the era then ends this copy)."""
        ...

    async def get_stream(
        self, session: HTTPSessionStream, last_event_id: str | None, host: SessionHost
    ) -> Answer | SSEResponse | None:
        """The response of a GET of ``session`` (``last_event_id``: a resumption); None: served from here."""
        ...


@dataclass(frozen=True)
class HTTPStorage:
    """Where a ``StreamableHTTPApp`` keeps its state (see the module docstring). ``events``: the SSE event store
    (None: nothing is resumable); ``tails`` (None: streams are served by the process writing them) and
    ``directory`` (None: sessions live in this process only) are set by ``scaleout``."""

    events: EventStore | None = field(default_factory=InMemoryEventStore)
    tails: StreamTails | None = None
    directory: SessionDirectory | None = None
