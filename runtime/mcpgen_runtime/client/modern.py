"""The client's side of MCP 2026-07-28 (the "modern" era): no handshake, every request carries its version,
capabilities and identity in ``_meta``, and the era of a server is found with ``server/discover``.

Where it sits: in the ``client`` layer, used by ``connection`` (which negotiates the era and keeps the
connection) and ``requests`` (which stamps and completes every modern request); this module holds what needs no
connection: the connection modes, the ``_meta`` stamp (``ModernState``), the ``server/discover`` probe
with its fallback rule (``probe_era``), and the completion of results (``complete_result``). Spec:
basic/versioning.mdx, server/discover.mdx, basic/transports/stdio.mdx and streamable-http.mdx ("Backward
Compatibility"), server/utilities/caching.mdx.

Modes, as the official SDK's ``Client(mode=...)``:

- ``"legacy"``: the ``initialize`` handshake, as before 2026 (what a legacy ``version=`` with no mode asks for).
- ``"auto"`` (the default of ``Client`` and every ``connect``): probe with ``server/discover`` at the newest modern
  version. A ``DiscoverResult`` naming a modern version we speak: modern. ``UnsupportedProtocolVersionError``
  (-32022) naming one: probe again at it, once. One naming only legacy versions, any other error, or no answer
  within ``discover_timeout``: a legacy server, so ``initialize``. A -32022 naming only modern versions we do not
  speak: ``UnsupportedVersionError``. (The rule is a deny-list, not keyed to one error code, as the stdio text
  requires.)
- ``"2026-07-28"`` (a modern version): adopted at once, with no probe; the server's capabilities are then unknown,
  so calls are not gated by them.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..jsonrpc.envelopes import JSONRPCError
from ..versions import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    HEADER_MISMATCH,
    LATEST_MODERN_VERSION,
    LEGACY_VERSIONS,
    LOG_LEVEL_META,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META,
    SERVER_INFO_META,
    SUPPORTED_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .capabilities import merge_capabilities
from .errors import UnsupportedVersionError

__all__ = [
    "CACHEABLE_METHODS",
    "DEFAULT_DISCOVER_TIMEOUT",
    "HEADER_MISMATCH",  # mcpgen_runtime.versions' own, re-exported for requests.py
    "LATEST_MODERN_VERSION",
    "MODERN_VERSIONS",
    "MODES",
    "ModernState",
    "complete_result",
    "modern_capabilities",
    "probe_era",
]

logger = logging.getLogger(__name__)

MODES: Final = ("legacy", "auto", *MODERN_VERSIONS)
# Seconds the auto mode waits for the server/discover answer before taking the server for a legacy one (stdio: "does
# not respond within a reasonable timeout"); the official SDK waits 10 s too.
DEFAULT_DISCOVER_TIMEOUT: Final = 10.0
# Results that carry cache hints (ttlMs, cacheScope) in 2026-07-28.
CACHEABLE_METHODS: Final = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
# The client capabilities 2026-07-28 defines (roots lost listChanged with notifications/roots/list_changed).
_MODERN_CAPABILITIES: Final = frozenset({"elicitation", "experimental", "extensions", "roots", "sampling"})


def complete_result(method: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A result as the 2026-07-28 models read it: without ``resultType`` it is ``"complete"`` (results of older
    servers); a cacheable complete result without ``ttlMs`` is immediately stale (0) and a negative one counts as
    0, as caching.mdx says; one without ``cacheScope`` is ``"private"`` (the narrower reading)."""
    result = dict(raw)
    result.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS and result["resultType"] == "complete":
        ttl = result.get("ttlMs")
        if not isinstance(ttl, int | float) or isinstance(ttl, bool) or ttl < 0:
            result["ttlMs"] = 0
        result.setdefault("cacheScope", "private")
    return result


def modern_capabilities(legacy: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """What the client declares in ``_meta``: the capabilities its handlers answer (``legacy``: as a legacy version
    declares them), as 2026-07-28 defines them, with the user's ``capabilities`` merged over them."""
    declared = {key: value for key, value in legacy.items() if key in _MODERN_CAPABILITIES}
    if isinstance(declared.get("roots"), dict):
        declared["roots"] = {key: value for key, value in declared["roots"].items() if key != "listChanged"}
    return merge_capabilities(declared, extra)


@dataclass
class ModernState:
    """What a modern connection puts on every request, and what it learnt about the server."""

    version: str
    client_info: dict[str, Any]
    capabilities: dict[str, Any]
    log_level: str | None = None
    discover: dict[str, Any] | None = None  # the server/discover result (None in a pinned mode)
    server_info: dict[str, Any] | None = None  # the latest `_meta` serverInfo of any result

    def stamp(self, params: Mapping[str, Any] | None, declare: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``params`` with the request ``_meta`` every modern request carries (a ``logLevel`` the caller put in
        ``_meta`` wins over the client's default; the version, capabilities and identity are the client's).
        ``declare``: capabilities this one request declares on top of the client's (capabilities are per request
        in 2026-07-28, so a task request can declare the tasks extension without every other request doing so)."""
        stamped = dict(params or {})
        meta = dict(stamped.get("_meta") or {})
        meta[PROTOCOL_VERSION_META] = self.version
        meta[CLIENT_CAPABILITIES_META] = (
            self.capabilities if not declare else merge_capabilities(copy.deepcopy(self.capabilities), declare)
        )
        meta[CLIENT_INFO_META] = self.client_info
        if self.log_level is not None:
            meta.setdefault(LOG_LEVEL_META, self.log_level)
        stamped["_meta"] = meta
        return stamped

    def observe(self, result: Mapping[str, Any]) -> None:
        """Remember the server's identity from a result's ``_meta`` (display only: the spec says not to act on it)."""
        meta = result.get("_meta")
        info = meta.get(SERVER_INFO_META) if isinstance(meta, dict) else None
        if isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
            self.server_info = info


def _supported(error: JSONRPCError) -> list[str] | None:
    data = error.data
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(version, str) for version in supported):
        return supported
    return None


# (version to probe at) -> the raw server/discover result; raises JSONRPCError or TimeoutError.
Discover = Callable[[str], Awaitable[dict[str, Any]]]


async def probe_era(discover: Discover) -> tuple[str, dict[str, Any]] | None:
    """The auto mode's probe: ``(version, discover result)`` for a modern server, None for a legacy one (the
    caller then sends ``initialize``). Raises ``UnsupportedVersionError`` for a modern server that speaks none of
    our modern versions and no legacy version either."""
    version = LATEST_MODERN_VERSION
    for attempt in range(2):
        try:
            raw = await discover(version)
        except TimeoutError:
            logger.info("server/discover was not answered in time: taking the server for a legacy one")
            return None
        except JSONRPCError as exc:
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION:
                logger.debug("server/discover answered %s %s: a legacy server", exc.code, exc.message)
                return None
            supported = _supported(exc)
            mutual = [v for v in MODERN_VERSIONS if v in (supported or ())]
            if mutual and attempt == 0:
                version = mutual[-1]  # the server named a version we speak: ask again at it, once
                continue
            if supported is not None and mutual == [] and not set(supported) & set(LEGACY_VERSIONS):
                raise UnsupportedVersionError(supported, SUPPORTED_VERSIONS) from None
            return None
        offered = raw.get("supportedVersions")
        mutual = [v for v in MODERN_VERSIONS if isinstance(offered, list) and v in offered]
        if not mutual:
            # A server that answers discover but lists only legacy versions is a legacy one (the official SDKs
            # fall back here too).
            return None
        return mutual[-1], raw
    return None
