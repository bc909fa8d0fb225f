"""Resuming an SSE stream the server closed before it was done (MCP 2025-11-25, "Resumability and Redelivery"):
the ``SSEReconnect`` policy a user passes to ``Client.connect_http(reconnect=...)``, and the bookkeeping of one
stream's resumption (where it stands, how many reconnections failed).

Where it sits: in ``transports.http.client``, beside ``stream`` (which GETs with ``Last-Event-ID`` under this
policy); no httpx2 here, so the typed client imports the policy without loading the HTTP client. Modern requests
(2026-07-28) are never resumed: that era has no resumption.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReconnectAttempts", "SSEReconnect", "StreamPosition"]


@dataclass(frozen=True, slots=True)
class SSEReconnect:
    """How the HTTP client resumes an SSE stream the server closed before it was done (MCP 2025-11-25,
    "Resumability and Redelivery"): after the delay the server's ``retry:`` field asks for, it GETs the endpoint with
    ``Last-Event-ID``, for a request's answer and for the standalone GET stream alike.

    - ``default_delay`` (seconds) when the server sent no ``retry:``; the server's value is obeyed but capped at
      ``max_delay``, so that a ``retry:`` of an hour cannot stall a call.
    - ``max_failures``: reconnections in a row that fail outright (connection error, an HTTP error status) before
      the stream is given up.
    - ``max_reconnects``: reconnections in a row that deliver no JSON-RPC message, failed ones included (a server
      may legitimately close each poll after a priming event; one that does so forever, even with ``retry: 0``,
      stops here). Each message delivered starts the count again.

    A request's stream that cannot be resumed (no event id was ever sent, or either limit is reached) fails the
    request with -32000; its own timeout bounds the whole wait in any case.
    """

    default_delay: float = 1.0
    max_delay: float = 30.0
    max_failures: int = 3
    max_reconnects: int = 100

    def delay(self, retry_ms: int | None) -> float:
        """Seconds to wait before the next reconnection, given the last ``retry:`` (milliseconds) the server sent."""
        if retry_ms is None:
            return min(self.default_delay, self.max_delay)
        return min(max(retry_ms, 0) / 1000, self.max_delay)


@dataclass(slots=True)
class StreamPosition:
    """Where an SSE stream stands: what a reconnection sends as ``Last-Event-ID``, and how long it waits first."""

    last_event_id: str | None = None
    retry_ms: int | None = None
    messages: int = 0  # JSON-RPC messages delivered since the last (re)connection


@dataclass(slots=True)
class ReconnectAttempts:
    """Reconnections of one SSE stream, counted against ``SSEReconnect``'s bounds."""

    policy: SSEReconnect
    failed: int = 0  # in a row that could not open a stream
    idle: int = 0  # in a row that delivered no JSON-RPC message (failed ones included)

    def record(self, status: int, messages: int) -> None:
        self.failed = 0 if status == 200 else self.failed + 1
        self.idle = 0 if messages else self.idle + 1

    def exhausted(self) -> str | None:
        if self.failed >= self.policy.max_failures:
            return f"{self.failed} reconnection(s) in a row failed"
        if self.idle >= self.policy.max_reconnects:
            return f"{self.idle} reconnection(s) in a row brought no message"
        return None
