"""The typed MCP client side: ``Client`` connects to a server, negotiates a version and sends through its stubs.

Holds ``client`` (``Client``, ``ClientContext``: the connection, negotiation in either era, capability gating, the
request path), ``client_support`` (the version registry, type aliases over the versions, the client's errors and
defaults, the list cache), ``modern`` (the modes, the 2026-07-28 ``_meta`` and the ``server/discover`` probe),
``input_required`` (multi round-trip requests), ``handlers`` (answering the server's requests, in either era),
``lists`` (the cached lists), ``tool_headers`` (``x-mcp-header``), ``subscriptions`` (``subscriptions/listen``)
and the ``auth`` package (OAuth 2.1: ``OAuthProvider`` for ``connect_http(url, auth=...)``; authlib loads only
when it is used).

May import: ``jsonrpc`` (the session), ``transports`` (stdio and ``delivery`` eagerly; ``http_client`` only inside
``Client.connect_http``, so that stdio clients do not import httpx2), ``protocol`` (result validation), the standard
library, anyio, pydantic and ``mcp_bindings``; never ``server`` (the two sides share only what is below them).
This package re-exports the names a client author needs.
"""

from typing import TYPE_CHECKING, Any

from . import client_support
from .auth.errors import AuthorizationError
from .client import Client, ClientContext
from .client_support import (
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    CapabilityError,
    ClientError,
    InvalidResultError,
    ListCache,
    MalformedResponseError,
    PaginationError,
    UnsupportedVersionError,
    VersionMismatchError,
)
from .input_required import DEFAULT_MAX_INPUT_ROUNDS, InputRequiredError
from .modern import DEFAULT_DISCOVER_TIMEOUT, LATEST_MODERN_VERSION, MODERN_VERSIONS
from .subscriptions import DEFAULT_MAX_PENDING, Subscription, SubscriptionLostError

if TYPE_CHECKING:
    from .client_support import AnyClientHandlers, AnyClientStub
else:

    def __getattr__(name: str) -> Any:
        # The unions over every version's stubs, built on first use (see client_support): not on import.
        if name in ("AnyClientHandlers", "AnyClientStub"):
            value = getattr(client_support, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_DISCOVER_TIMEOUT",
    "DEFAULT_MAX_INPUT_ROUNDS",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_MAX_PENDING",
    "DEFAULT_REQUEST_TIMEOUT",
    "LATEST_MODERN_VERSION",
    "LATEST_VERSION",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "AnyClientHandlers",
    "AnyClientStub",
    "AuthorizationError",
    "CapabilityError",
    "Client",
    "ClientContext",
    "ClientError",
    "InputRequiredError",
    "InvalidResultError",
    "ListCache",
    "MalformedResponseError",
    "PaginationError",
    "Subscription",
    "SubscriptionLostError",
    "UnsupportedVersionError",
    "VersionMismatchError",
]
