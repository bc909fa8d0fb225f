"""Where a scaled-out server keeps things in Redis: every key and channel name, in one place.

Where it sits: the bottom of the ``scaleout`` package (no Redis import; a session's stream ids come from the
transport's ``stores``); docs/how-to/deploy.md describes the same layout. Every name starts with the deployment's prefix (``ScaleOutSettings.key_prefix``), so that several
deployments can share one Redis.
"""

from __future__ import annotations

from dataclasses import dataclass

# The stream ids of a session the same on every worker: "{session_stream_key}.{n}", its GET stream's "{key}.0".
from ..transports.http.server.stores import STANDALONE_STREAM, session_stream_key

__all__ = ["STANDALONE_STREAM", "KeyLayout", "session_stream_key"]


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """The names of one deployment's keys and channels (see /work/plan_session.md, "A1 fixed names")."""

    prefix: str

    def session(self, session_id: str) -> str:
        """Hash: version, init (the client's initialize frame), owner, level, cursor. TTL: session_ttl."""
        return f"{self.prefix}:session:{session_id}"

    def subscriptions(self, session_id: str) -> str:
        """Set of the resource URIs the session subscribed to. TTL: session_ttl."""
        return f"{self.prefix}:session:{session_id}:subs"

    def get_stream(self, session_id: str) -> str:
        """String: which GET response serves the session's GET stream (one at a time). TTL: a few tail_block."""
        return f"{self.prefix}:session:{session_id}:get"

    @property
    def sessions(self) -> str:
        """Sorted set: session id -> the unix time it expires at (the bound on sessions over all workers)."""
        return f"{self.prefix}:sessions"

    def events(self, stream_id: str) -> str:
        """Redis stream of one SSE stream's events. TTL: event_ttl, MAXLEN: max_events_per_stream."""
        return f"{self.prefix}:events:{stream_id}"

    def stream_requests(self, stream_id: str) -> str:
        """String: the JSON list of the request ids a POST's SSE stream carries (``StreamTails.note_requests``).
        TTL: its stream's (renewed with it)."""
        return f"{self.prefix}:events:{stream_id}:ids"

    def worker_channel(self, worker: str) -> str:
        """Pub/sub channel of one worker: client responses to the requests it sent."""
        return f"{self.prefix}:worker:{worker}"

    @property
    def cancellations(self) -> str:
        """Pub/sub channel of every worker: a client's ``notifications/cancelled`` for a request that the worker
        receiving it is not handling (the one that is ends it)."""
        return f"{self.prefix}:cancel"

    @property
    def request_state_key(self) -> str:
        """String: the random requestState key the workers share when none is configured (made once, no TTL)."""
        return f"{self.prefix}:request-state-key"

    def worker_alive(self, worker: str) -> str:
        """Set while the worker runs (a heartbeat with a TTL): a stream it writes is still going."""
        return f"{self.prefix}:alive:{worker}"
