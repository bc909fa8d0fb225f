"""``ListCache``: a full list fetched on first use and again after each ``invalidate``, with the freshness hints of
MCP 2026-07-28; what ``client.tools()`` and friends read from.

Where it sits: in the ``client`` layer, below ``lists`` (which makes one cache per list); needs only anyio.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import anyio

__all__ = ["ListCache"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ListCache(Generic[T]):
    """The full list a ``fetch`` coroutine returns, fetched on first use and again after each ``invalidate``.

    Concurrent ``get`` calls share one fetch (a server is not asked ten times because ten tasks wanted the tool list
    at once). A ``list_changed`` that arrives while a fetch is under way makes that fetch's answer suspect (the
    server may have built it before the change), so it is not kept and the list is fetched again.

    Freshness (MCP 2026-07-28 cache hints): a fetch may call ``fresh_for(seconds)`` with the server's ``ttlMs``;
    the list is then kept that long only (0: not kept at all, every ``get`` asks the server). Without a call the
    list is kept until ``invalidate``, as in the legacy era, where ``list_changed`` is the only signal.
    """

    def __init__(self, fetch: Callable[[], Awaitable[Sequence[T]]], *, max_refetches: int = 3) -> None:
        self._fetch = fetch
        self._max_refetches = max_refetches
        self._items: tuple[T, ...] | None = None
        # Bumped by every invalidate: a fetch that started under an older generation may be stale.
        self._generation = 0
        self._lock = anyio.Lock()
        self._fresh_until = math.inf  # anyio.current_time() after which the list is stale
        self._next_ttl: float | None = None  # set by the fetch under way through fresh_for
        self.fetches = 0  # how many times the list was actually fetched (tests and diagnostics)

    @property
    def cached(self) -> bool:
        return self._items is not None and anyio.current_time() < self._fresh_until

    def invalidate(self) -> None:
        """Forget the list (synchronous, so a notification handler can call it without awaiting anything)."""
        self._items = None
        self._generation += 1

    def fresh_for(self, seconds: float) -> None:
        """Called by the fetch under way: keep its answer ``seconds`` at most (the server's freshness hint)."""
        self._next_ttl = seconds if self._next_ttl is None else min(self._next_ttl, seconds)

    def _keep(self, fetched: tuple[T, ...]) -> None:
        ttl, self._next_ttl = self._next_ttl, None
        self._fresh_until = math.inf if ttl is None else anyio.current_time() + max(ttl, 0.0)
        self._items = fetched if ttl is None or ttl > 0 else None

    async def get(self) -> list[T]:
        """The whole list (a fresh copy: callers may mutate it without touching the cache)."""
        items = self._items
        if items is not None and anyio.current_time() < self._fresh_until:
            return list(items)
        async with self._lock:
            fetched: tuple[T, ...] = ()
            for _ in range(1 + self._max_refetches):
                if self._items is not None and anyio.current_time() < self._fresh_until:
                    # Another task fetched it while we waited for the lock.
                    return list(self._items)
                generation = self._generation
                self._next_ttl = None
                fetched = tuple(await self._fetch())
                self.fetches += 1
                if generation == self._generation:
                    self._keep(fetched)
                    return list(fetched)
            # The server keeps announcing changes faster than we can list: hand out the newest answer uncached
            # rather than loop forever; the next get fetches again.
            logger.info("list changed during every one of %d fetches; returning the last one uncached", self.fetches)
            return list(fetched)
