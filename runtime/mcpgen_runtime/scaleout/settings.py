"""The configuration of a scaled-out server: how many workers, which Redis, the shared requestState key, the bounds.

Every field can come from the environment (``ScaleOutSettings.from_env``), so a uvicorn/gunicorn command line, a
container and the runtime's own ``--workers N --redis URL`` all configure the workers the same way: each worker
process reads the same variables.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Final, TypedDict, Unpack

__all__ = ["ENVIRONMENT", "RUNTIME_REDIS_EXTRA", "ScaleOutSettings", "SettingsError", "require_redis_client"]

# What installs redis-py for the runtime: a project built on it names its own extra instead (`mcpgen new` declares one).
RUNTIME_REDIS_EXTRA: Final = "mcpgen-runtime[redis]"

# field name -> environment variable
ENVIRONMENT: Final[Mapping[str, str]] = {
    "redis_url": "MCPGEN_REDIS_URL",
    "workers": "MCPGEN_WORKERS",
    "request_state_key": "MCPGEN_REQUEST_STATE_KEY",
    "key_prefix": "MCPGEN_REDIS_PREFIX",
    "session_ttl": "MCPGEN_SESSION_TTL",
    "event_ttl": "MCPGEN_EVENT_TTL",
    "max_events_per_stream": "MCPGEN_MAX_EVENTS_PER_STREAM",
    "redis_timeout": "MCPGEN_REDIS_TIMEOUT",
    "max_redis_connections": "MCPGEN_MAX_REDIS_CONNECTIONS",
    "max_stream_tails": "MCPGEN_MAX_STREAM_TAILS",
    "tail_block": "MCPGEN_TAIL_BLOCK",
    "max_sessions": "MCPGEN_MAX_SESSIONS",
    "session_refresh": "MCPGEN_SESSION_REFRESH",
    "completed_stream_ttl": "MCPGEN_COMPLETED_STREAM_TTL",
    "max_queued_events": "MCPGEN_MAX_QUEUED_EVENTS",
}


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the setting (and its environment variable)."""


@dataclass(frozen=True)
class ScaleOutSettings:
    """What every worker of one deployment must agree on. Defaults are for one host; times in seconds.

    - ``redis_url`` (None): ``redis://host:port/db`` (or ``rediss://``, ``unix://``). None: one worker, in memory.
    - ``workers`` (1): worker processes on this host, all on one port. More than one needs ``redis_url``.
    - ``request_state_key`` (None): the HMAC key of 2026-07-28 ``requestState`` tokens, shared by every worker so that
      one worker accepts another's token (at least 32 bytes). None with ``redis_url``: the key given to ``Server``
      if any, else a random key the workers keep in Redis (``KeyLayout.request_state_key``, made by the first
      worker), so anyone who can read that Redis can mint tokens; set one (from a secret store) to keep it out.
    - ``key_prefix`` ("mcpgen"): the prefix of every Redis key and channel, so deployments can share one Redis.
    - ``session_ttl`` (1800, the official SDK's idle timeout): a legacy-era session idle this long expires in
      Redis (its keys carry the TTL, refreshed on use), and its id then answers 404 on every worker.
    - ``event_ttl`` (600): how long a stored SSE event can be resumed with ``Last-Event-ID``.
    - ``max_events_per_stream`` (1000): the events kept per SSE stream (oldest dropped first).
    - ``redis_timeout`` (5): the total deadline of every Redis command and pipeline (waiting for a connection,
      retries and the answer included; ``redis_client.DeadlineRedis``): a Redis that is frozen, gone or slow fails the
      request with 503 and ``Retry-After``, never hangs it.
    - ``max_redis_connections`` (50): the connection pool of each worker for commands; a command waits at most
      ``redis_timeout`` for a free connection.
    - ``max_stream_tails`` (100): SSE streams one worker serves from Redis at once (a GET stream, or a stream resumed
      on a worker that does not hold it); each holds a connection of a pool of its own while it waits. One more is
      refused with 503.
    - ``tail_block`` (1): how long one read of a tailed stream waits for new events before it checks that the
      session (or the worker that writes the stream) is still there.
    - ``max_sessions`` (10000): legacy-era sessions alive in Redis over all workers; one more ``initialize`` is
      refused with 503 (each worker also keeps at most ``StreamableHTTPApp``'s ``max_sessions`` in memory, dropping
      idle local copies first).
    - ``session_refresh`` (5): how long a worker serves a session from its own copy without asking Redis, the
      staleness bound of that copy. Within it a request costs no round trip for the session; after it, the next
      request renews the session's TTL and reads its log level and subscriptions (one pipelined round trip). A
      DELETE, a ``logging/setLevel`` or a ``resources/(un)subscribe`` served by another worker is also announced on
      every worker's channel, so copies usually learn of it at once; this bound holds when that message is lost.
      Capped at a quarter of ``session_ttl``, so a session in use never expires.
    - ``completed_stream_ttl`` (30): how long a POST's SSE stream stays resumable in Redis once its last response
      was written to the client's live connection (``event_ttl`` instead when it went out with no connection: the
      client has to come back for it).
    - ``max_queued_events`` (1000): events queued for one SSE connection the client does not read fast enough; one
      more ends that connection, and the client resumes from the event store with ``Last-Event-ID`` (events without
      an id are lost, with a warning). ``StreamableHTTPApp``'s ``max_queued_events``.
    """

    redis_url: str | None = None
    workers: int = 1
    request_state_key: bytes | None = None
    key_prefix: str = "mcpgen"
    session_ttl: float = 1800.0
    event_ttl: float = 600.0
    max_events_per_stream: int = 1000
    redis_timeout: float = 5.0
    max_redis_connections: int = 50
    max_stream_tails: int = 100
    tail_block: float = 1.0
    max_sessions: int = 10_000
    session_refresh: float = 5.0
    completed_stream_ttl: float = 30.0
    max_queued_events: int = 1000

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise SettingsError(f"workers ({ENVIRONMENT['workers']}) must be at least 1, not {self.workers}")
        if self.workers > 1 and not self.redis_url:
            raise SettingsError(
                f"{self.workers} workers need a shared Redis: give --redis URL (or {ENVIRONMENT['redis_url']})"
            )
        if self.redis_url and self.request_state_key is not None and len(self.request_state_key) < 32:
            raise SettingsError(f"the request-state key ({ENVIRONMENT['request_state_key']}) needs at least 32 bytes")
        for name in ("session_ttl", "event_ttl", "redis_timeout", "tail_block", "completed_stream_ttl"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} ({ENVIRONMENT[name]}) must be positive")
        if self.session_refresh < 0:
            raise SettingsError(f"session_refresh ({ENVIRONMENT['session_refresh']}) must not be negative")
        names = ("max_events_per_stream", "max_redis_connections", "max_stream_tails", "max_sessions")
        for name in (*names, "max_queued_events"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} ({ENVIRONMENT[name]}) must be at least 1")

    @property
    def refresh_interval(self) -> float:
        """``session_refresh``, at most a quarter of ``session_ttl``."""
        return min(self.session_refresh, self.session_ttl / 4)

    @property
    def shared(self) -> bool:
        """Whether state lives in Redis (any number of workers) rather than in this process."""
        return bool(self.redis_url)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Unpack[SettingsOverrides]
    ) -> ScaleOutSettings:
        """Settings from ``environ`` (default ``os.environ``), then ``overrides`` (those that are not None) on top."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        types = {field.name: field.type for field in fields(cls)}
        for name, variable in ENVIRONMENT.items():
            raw = environ.get(variable)
            if raw is None or raw == "":
                continue
            values[name] = _convert(name, variable, raw, str(types[name]))
        settings = cls(**values)
        unknown = sorted(set(overrides) - set(ENVIRONMENT))
        if unknown:  # a misspelt keyword: name it (mypy catches it first, through SettingsOverrides)
            raise TypeError(f"ScaleOutSettings.from_env() got unexpected keyword arguments: {', '.join(unknown)}")
        chosen: dict[str, Any] = {name: value for name, value in overrides.items() if value is not None}
        return replace(settings, **chosen) if chosen else settings

    def environment(self) -> dict[str, str]:
        """These settings as environment variables (what a parent process hands its workers)."""
        result: dict[str, str] = {}
        for name, variable in ENVIRONMENT.items():
            value = getattr(self, name)
            if value is None:
                continue
            result[variable] = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        return result


def require_redis_client(extra: str = RUNTIME_REDIS_EXTRA) -> None:
    """Raise ``SettingsError`` naming ``extra`` (what to ``pip install``) unless redis-py imports: a Redis URL is
    configured, and without it every worker would fail on its first import of ``scaleout`` with a traceback."""
    try:
        importlib.import_module("redis.asyncio")
    except ImportError:
        raise SettingsError(
            f"a Redis URL (--redis, {ENVIRONMENT['redis_url']}) needs redis-py, which is not installed: "
            f"pip install '{extra}'"
        ) from None


def _convert(name: str, variable: str, raw: str, annotation: str) -> Any:
    try:
        if annotation.startswith("int"):
            return int(raw)
        if annotation.startswith("float"):
            return float(raw)
    except ValueError:
        raise SettingsError(f"{variable}: {raw!r} is not a number") from None
    if annotation.startswith("bytes"):
        return raw.encode("latin-1") if raw.isascii() else raw.encode()
    return raw


class SettingsOverrides(TypedDict, total=False):
    """What ``ScaleOutSettings.from_env`` may override (None: keep the environment's value or the default)."""

    redis_url: str | None
    workers: int | None
    request_state_key: bytes | None
    key_prefix: str | None
    session_ttl: float | None
    event_ttl: float | None
    max_events_per_stream: int | None
    redis_timeout: float | None
    max_redis_connections: int | None
    max_stream_tails: int | None
    tail_block: float | None
    max_sessions: int | None
    session_refresh: float | None
    completed_stream_ttl: float | None
    max_queued_events: int | None
