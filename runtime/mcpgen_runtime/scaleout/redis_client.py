"""The Redis connection of a worker: one bounded pool for commands, one for the streams it tails.

Where it sits: under everything in ``scaleout`` that talks to Redis (redis-py's asyncio API). ``check_redis`` is the
synchronous check a command line runs before it starts any worker, so that a bad URL or an unreachable Redis is one
error line, not a traceback per worker.

Every command and every pipeline of ``open_redis``'s client has a total deadline (``RedisDeadline``, default
``MCPGEN_REDIS_TIMEOUT`` = 5 s; ``+ MCPGEN_TAIL_BLOCK`` for the tails' blocking reads): checking out a connection of
the pool, redis-py's own retries and reading the answer all count against it, so a Redis that is frozen (SIGSTOP),
gone, or dripping its answer fails the command with ``RedisDeadline`` (a ``redis.TimeoutError``, which the stores
answer as ``StorageUnavailable``: HTTP 503 with ``Retry-After``) and never hangs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import redis
import redis.asyncio
import redis.asyncio.client

from .settings import ScaleOutSettings, SettingsError

__all__ = ["DeadlineRedis", "RedisDeadline", "check_redis", "open_redis"]


class RedisDeadline(redis.TimeoutError):
    """A Redis command (or pipeline) did not complete within its total deadline."""


@contextmanager
def _deadline(seconds: float, what: Any) -> Iterator[None]:
    try:
        with anyio.fail_after(seconds):
            yield
    except TimeoutError:
        raise RedisDeadline(f"Redis did not complete {what} within {seconds:g} s") from None


class _DeadlinePipeline(redis.asyncio.client.Pipeline):
    deadline: float = 5.0

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        with _deadline(self.deadline, "a pipeline"):
            return await super().execute(raise_on_error)


class DeadlineRedis(redis.asyncio.Redis):
    """A client whose every command and pipeline completes within ``deadline`` seconds, or raises
    ``RedisDeadline`` (see the module docstring)."""

    deadline: float = 5.0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        with _deadline(self.deadline, args[0] if args else "a command"):
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> redis.asyncio.client.Pipeline:
        pipe = _DeadlinePipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.deadline = self.deadline
        return pipe


def _pool_options(settings: ScaleOutSettings) -> dict[str, Any]:
    return {"socket_connect_timeout": settings.redis_timeout, "health_check_interval": 30}


def open_redis(settings: ScaleOutSettings, *, tails: bool = False) -> redis.asyncio.Redis:
    """A client over a pool of ``max_redis_connections`` (``tails``: ``max_stream_tails``, with a socket timeout
    that outlasts a blocking read of ``tail_block``). A command waits at most ``redis_timeout`` for a connection and
    for its answer, and at most that long in all (``DeadlineRedis``)."""
    assert settings.redis_url is not None
    size = settings.max_stream_tails if tails else settings.max_redis_connections
    timeout = settings.redis_timeout + (settings.tail_block if tails else 0.0)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        settings.redis_url,
        max_connections=size,
        timeout=settings.redis_timeout,
        socket_timeout=timeout,
        **_pool_options(settings),
    )
    client = DeadlineRedis(connection_pool=pool)
    client.deadline = timeout
    return client


def check_redis(settings: ScaleOutSettings) -> None:
    """Raise ``SettingsError`` (one line, naming the URL) unless ``settings.redis_url`` is a Redis that answers."""
    url = settings.redis_url
    if not url:
        return
    try:
        client = redis.Redis.from_url(url, socket_timeout=settings.redis_timeout, **_pool_options(settings))
    except ValueError as error:
        raise SettingsError(f"--redis {url}: not a Redis URL ({error})") from None
    try:
        client.ping()
    except redis.RedisError as error:
        raise SettingsError(f"--redis {url}: Redis does not answer ({error})") from None
    finally:
        client.close()
