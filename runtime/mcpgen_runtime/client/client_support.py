"""The parts of the typed MCP client that do not need a connection: the registry of the MCP versions it speaks
(their generated packages, stubs and routes), type aliases over those versions, the client's errors and defaults,
capability paths, params validation for incoming messages, and the list cache behind ``client.tools()``.

Where it sits: in the ``client`` layer, imported by ``client`` (the ``Client`` itself), split out to keep that
module about the connection. ``VERSIONS`` holds the handshake-era versions (2024-11-05 .. 2025-11-25), the ones
``initialize`` negotiates; ``MODERN`` the 2026-07-28 one, adopted after ``server/discover`` (``modern``).
"""

from __future__ import annotations

import importlib
import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar

import anyio
from pydantic import TypeAdapter, ValidationError

from mcp_bindings import MODULES
from mcp_bindings import base as _base

from ..jsonrpc.envelopes import InvalidParams, JSONParams
from ..protocol.version_unions import EVERY_VERSION, VersionUnions
from ..protocol.versions import LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    import mcp_bindings.v2024_11_05 as _v1
    import mcp_bindings.v2025_03_26 as _v2
    import mcp_bindings.v2025_06_18 as _v3
    import mcp_bindings.v2025_11_25 as _v4
    import mcp_bindings.v2026_07_28 as _v5
    from mcp_bindings.v2024_11_05 import client as _c1
    from mcp_bindings.v2025_03_26 import client as _c2
    from mcp_bindings.v2025_06_18 import client as _c3
    from mcp_bindings.v2025_11_25 import client as _c4
    from mcp_bindings.v2026_07_28 import client as _c5

__all__ = [
    "DEFAULT_MAX_PAGES",
    "DEFAULT_REQUEST_TIMEOUT",
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "AnyClientHandlers",
    "AnyClientStub",
    "AnyImplementation",
    "AnyInitializeResult",
    "AnyPrompt",
    "AnyResource",
    "AnyResourceTemplate",
    "AnyTool",
    "CapabilityError",
    "ClientError",
    "InvalidResultError",
    "ListCache",
    "MalformedResponseError",
    "PaginationError",
    "UnsupportedVersionError",
    "VersionMismatchError",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Unions over the versions the client speaks. At run time each is built on first use (see
# protocol.version_unions): building one loads every version, and a client speaks one per connection.
if TYPE_CHECKING:
    AnyClientStub: TypeAlias = _c1.ClientStub | _c2.ClientStub | _c3.ClientStub | _c4.ClientStub | _c5.ClientStub
    AnyClientHandlers: TypeAlias = (
        _c1.ClientHandlers[Any]
        | _c2.ClientHandlers[Any]
        | _c3.ClientHandlers[Any]
        | _c4.ClientHandlers[Any]
        | _c5.ClientHandlers[Any]
    )
    AnyInitializeResult: TypeAlias = (
        _v1.InitializeResult | _v2.InitializeResult | _v3.InitializeResult | _v4.InitializeResult
    )
    AnyImplementation: TypeAlias = (
        _v1.Implementation | _v2.Implementation | _v3.Implementation | _v4.Implementation | _v5.Implementation
    )
    AnyTool: TypeAlias = _v1.Tool | _v2.Tool | _v3.Tool | _v4.Tool | _v5.Tool
    AnyPrompt: TypeAlias = _v1.Prompt | _v2.Prompt | _v3.Prompt | _v4.Prompt | _v5.Prompt
    AnyResource: TypeAlias = _v1.Resource | _v2.Resource | _v3.Resource | _v4.Resource | _v5.Resource
    AnyResourceTemplate: TypeAlias = (
        _v1.ResourceTemplate | _v2.ResourceTemplate | _v3.ResourceTemplate | _v4.ResourceTemplate | _v5.ResourceTemplate
    )
else:
    __getattr__ = VersionUnions(
        __name__,
        {
            "AnyClientStub": ("ClientStub", EVERY_VERSION, "client"),
            "AnyClientHandlers": ("ClientHandlers", EVERY_VERSION, "client"),
            "AnyInitializeResult": ("InitializeResult", LEGACY_PROTOCOL_VERSIONS, "models"),
            "AnyImplementation": ("Implementation", EVERY_VERSION, "models"),
            "AnyTool": ("Tool", EVERY_VERSION, "models"),
            "AnyPrompt": ("Prompt", EVERY_VERSION, "models"),
            "AnyResource": ("Resource", EVERY_VERSION, "models"),
            "AnyResourceTemplate": ("ResourceTemplate", EVERY_VERSION, "models"),
        },
    )


@dataclass(frozen=True)
class VersionSpec:
    """Everything the client needs from one generated version package."""

    version: str
    package: ModuleType
    stub: type[AnyClientStub]
    handlers_base: type[Any]
    client_routes: Mapping[str, _base.Route]  # server -> client requests
    client_notification_routes: Mapping[str, _base.Route]
    server_routes: Mapping[str, _base.Route]  # client -> server requests: their `capability` gates our calls
    server_notification_routes: Mapping[str, _base.Route]


def _version_spec(version: str) -> VersionSpec:
    package = importlib.import_module(MODULES[version])
    client, server = package.client, package.server
    return VersionSpec(
        version,
        package,
        client.ClientStub,
        client.ClientHandlers,
        client.CLIENT_ROUTES,
        client.CLIENT_NOTIFICATION_ROUTES,
        server.SERVER_ROUTES,
        server.SERVER_NOTIFICATION_ROUTES,
    )


class VersionTable(Mapping[str, VersionSpec]):
    """version -> ``VersionSpec``, each built (its package's models and stubs imported) when first looked up: a
    client loads only the version it negotiates. Membership and iteration build nothing."""

    def __init__(self, versions: Sequence[str]) -> None:
        self._versions = tuple(versions)
        self._specs: dict[str, VersionSpec] = {}

    def __getitem__(self, version: str) -> VersionSpec:
        spec = self._specs.get(version)
        if spec is None:
            if version not in self._versions:
                raise KeyError(version)
            spec = self._specs[version] = _version_spec(version)
        return spec

    def __contains__(self, version: object) -> bool:
        return version in self._versions

    def __iter__(self) -> Iterator[str]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)


VERSIONS: Final = VersionTable(LEGACY_PROTOCOL_VERSIONS)
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(VERSIONS)

# The modern versions (no initialize: adopted after server/discover, or pinned).
MODERN: Final = VersionTable(MODERN_PROTOCOL_VERSIONS)
LATEST_VERSION: Final = "2025-11-25"
# Seconds a request may take before it raises TimeoutError (and the server is sent notifications/cancelled). The
# official Python SDK gives up on an SSE stream after 300 s of silence (its HTTP read timeout) and sets no timeout on
# the request itself; 300 s as a whole-request limit bounds the same wait on every transport (a server answering
# with the wrong id over stdio, one that holds a stream open and never answers) while leaving room for slow tools.
# None (on the client) or math.inf (per call) waits forever.
DEFAULT_REQUEST_TIMEOUT: Final = 300.0
# Pages a list walk (client.tools() and friends) requests at most: each page is a round trip and its items are kept,
# so a server that hands out a new nextCursor forever must be stopped (the stubs' own default, MAX_PAGES, is the same).
DEFAULT_MAX_PAGES: Final = 1000
# A request class is defined in `<package>.models`; this says which version a class passed to send_request is from.
MODELS_MODULE_VERSION: Final = {f"{MODULES[version]}.models": version for version in (*VERSIONS, *MODERN)}


def version_of_module(module: str) -> str | None:
    """The version whose generated package ``module`` belongs to (``mcp_bindings.v2025_11_25.client`` ->
    "2025-11-25"); None for any other module."""
    package, _, _ = module.rpartition(".")
    return MODELS_MODULE_VERSION.get(f"{package}.models")


# Which cache a list_changed notification invalidates (resource templates go with resources: one notification).
LIST_CHANGED: Final = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resource_templates"),
}


class ClientError(Exception):
    """Base of the errors the typed client raises itself (JSON-RPC errors from the server stay ``JSONRPCError``)."""


class UnsupportedVersionError(ClientError):
    """The server answered ``initialize`` with a protocol version this client does not speak (or not the one
    that was required); the connection has been closed."""

    def __init__(self, answered: object, accepted: Sequence[str]) -> None:
        super().__init__(
            f"server answered with MCP protocol version {answered!r}; this client accepts {', '.join(accepted)}"
        )
        self.answered = answered
        self.accepted = tuple(accepted)


class CapabilityError(ClientError):
    """A call the negotiated capabilities do not allow; raised before anything is sent."""

    def __init__(self, method: str, capability: str, whose: str = "server") -> None:
        super().__init__(f"{method!r} needs the {whose} capability {capability!r}, which the {whose} did not declare")
        self.method = method
        self.capability = capability


class VersionMismatchError(ClientError):
    """A model or stub of one MCP version used on a connection that negotiated another."""


class InvalidResultError(ClientError):
    """The server's result does not validate as the method's result class of the negotiated version."""


class MalformedResponseError(ClientError):
    """The answer to a call arrived but could not be delivered: not JSON, over the transport's size limit, or an
    object with the call's id but neither ``result`` nor ``error``. Raised at once, instead of a wait for the
    timeout; ``reason`` says which."""

    def __init__(self, method: str, reason: str) -> None:
        super().__init__(f"the server's answer to {method!r} cannot be used: {reason}")
        self.method = method
        self.reason = reason


class PaginationError(ClientError):
    """A list walk (``client.tools()`` and friends) stopped: the server repeated a cursor, or had more pages than the
    client's ``max_pages``. ``pages`` were fetched; ``cursor`` is the next cursor the server sent."""

    def __init__(self, message: str, pages: int, cursor: str) -> None:
        super().__init__(message)
        self.pages = pages
        self.cursor = cursor


def has_path(capabilities: Mapping[str, Any], path: str) -> bool:
    """Whether a dotted capability path is declared: present and not null/false (``"subscribe": false`` is a no)."""
    node: Any = capabilities
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node is not None and node is not False


def set_path(capabilities: dict[str, Any], path: str) -> None:
    node = capabilities
    for part in path.split("."):
        node = node.setdefault(part, {})


def merge_capabilities(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge_capabilities(base[key], value)
        else:
            base[key] = value
    return base


_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def validate_params(route: _base.Route, params: JSONParams) -> Any:
    """Params of an incoming message as the route's typed model (None only when the method allows none)."""
    if params is None and not route.params_required:
        return None
    if not isinstance(params, dict):
        raise InvalidParams(f"Invalid params for {route.method}: expected an object")
    adapter = _ADAPTERS.get(id(route.params_type))
    if adapter is None:
        adapter = _ADAPTERS[id(route.params_type)] = TypeAdapter(route.params_type)
    try:
        return adapter.validate_python(params)
    except ValidationError as exc:
        raise InvalidParams(f"Invalid params for {route.method}", json.loads(exc.json(include_url=False))) from exc


class ListCache(Generic[T]):
    """The full list a ``fetch`` coroutine returns, fetched on first use and again after each ``invalidate``.

    Concurrent ``get`` calls share one fetch (a server is not asked ten times because ten tasks wanted the tool list
    at once). A ``list_changed`` that arrives while a fetch is under way makes that fetch's answer suspect (the
    server may have built it before the change), so it is not kept and the list is fetched again.

    Freshness (MCP 2026-07-28 cache hints): a fetch may call ``fresh_for(seconds)`` with the server's ``ttlMs``;
    the list is then kept that long only (0: not kept at all, every ``get`` asks the server). Without a call the
    list is kept until ``invalidate``, as in the handshake era, where ``list_changed`` is the only signal.
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
