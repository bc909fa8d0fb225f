"""The Redis connection of a worker: one bounded pool for commands, one for the streams it tails.

Where it sits: under everything in ``scaleout`` that talks to Redis (redis-py's asyncio API). ``check_redis`` is the
synchronous check a command line runs before it starts any worker, so that a bad URL or an unreachable Redis is one
error line, not a traceback per worker.
"""

from __future__ import annotations

from typing import Any

import redis
import redis.asyncio

from .settings import ScaleOutSettings, SettingsError

__all__ = ["check_redis", "open_redis"]


def _pool_options(settings: ScaleOutSettings) -> dict[str, Any]:
    return {"socket_connect_timeout": settings.redis_timeout, "health_check_interval": 30}


def open_redis(settings: ScaleOutSettings, *, tails: bool = False) -> redis.asyncio.Redis:
    """A client over a pool of ``max_redis_connections`` (``tails``: ``max_stream_tails``, with a socket timeout
    that outlasts a blocking read of ``tail_block``). A command waits at most ``redis_timeout`` for a connection and
    for its answer."""
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
    return redis.asyncio.Redis(connection_pool=pool)


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
