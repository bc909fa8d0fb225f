"""Cache hints (MCP 2026-07-28 server/utilities/caching): ``ttlMs`` and ``cacheScope`` on cacheable results.

Where it sits: at the bottom of the ``server`` layer, used by ``registry`` (what is configured) and ``handlers``
(which put the hints into ``server/discover``, the four lists and ``resources/read``; the fields exist only from
2026-07-28 on, so fitting a result to an older version drops them).

Where a hint comes from: ``@server.resource(..., cache=CacheHint(...))`` for the reads of that resource (or
template), else ``Server(cache_hints={method: CacheHint(...)})`` for a method, else ``DEFAULT_CACHE_HINTS``: zero
TTL everywhere (the client re-fetches whenever it needs the result: always correct, never stale), ``"public"`` for
the lists and ``server/discover`` (the same for every caller, as this runtime serves them), ``"private"`` for
``resources/read`` (a resource may well be the caller's own data). Change them where a longer TTL is right.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["CACHEABLE_METHODS", "DEFAULT_CACHE_HINTS", "CacheHint", "CacheScope", "hints_with_defaults"]

CacheScope = Literal["public", "private"]


@dataclass(frozen=True, slots=True)
class CacheHint:
    """How long a client may consider a result fresh (``ttl_ms``, milliseconds, >= 0) and who may cache it
    (``scope``: "public", any cache and any caller; "private", only for the same authorization context)."""

    ttl_ms: int = 0
    scope: CacheScope = "public"

    def __post_init__(self) -> None:
        if isinstance(self.ttl_ms, bool) or not isinstance(self.ttl_ms, int) or self.ttl_ms < 0:
            raise ValueError(f"ttl_ms must be an integer >= 0 (milliseconds), not {self.ttl_ms!r}")
        if self.scope not in ("public", "private"):
            raise ValueError(f'scope must be "public" or "private", not {self.scope!r}')

    def wire(self) -> dict[str, int | str]:
        """The result fields."""
        return {"ttlMs": self.ttl_ms, "cacheScope": self.scope}


CACHEABLE_METHODS: Final = (
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
)
DEFAULT_CACHE_HINTS: Final[Mapping[str, CacheHint]] = {
    **{method: CacheHint(0, "public") for method in CACHEABLE_METHODS},
    "resources/read": CacheHint(0, "private"),
}


def hints_with_defaults(given: Mapping[str, CacheHint] | None) -> dict[str, CacheHint]:
    """The defaults with ``given`` over them; raises ``ValueError`` for a method that has no cache hints."""
    unknown = sorted(set(given or {}) - set(CACHEABLE_METHODS))
    if unknown:
        raise ValueError(f"no cache hints for {', '.join(unknown)}; cacheable: {', '.join(CACHEABLE_METHODS)}")
    for method, hint in (given or {}).items():
        if not isinstance(hint, CacheHint):
            raise TypeError(f"the cache hint for {method} must be a CacheHint, not {type(hint).__name__}")
    return {**DEFAULT_CACHE_HINTS, **(given or {})}
