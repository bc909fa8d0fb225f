"""The typed MCP client side: ``Client`` connects to a server, negotiates a version and sends through its stubs.

Holds ``client`` (``Client``, ``ClientContext``: the connection, capability gating, the server's requests) and
``client_support`` (the version registry, type aliases over the versions, the client's errors and defaults, the
list cache).

May import: ``jsonrpc`` (the session), ``transports`` (stdio and ``delivery`` eagerly; ``http_client`` only inside
``Client.connect_http``, so that stdio clients do not import httpx2), ``protocol`` (result validation), the standard
library, anyio, pydantic and ``mcp_bindings``; never ``server`` (the two sides share only what is below them).
This package re-exports the names a client author needs.
"""

from .client import Client, ClientContext
from .client_support import (
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    AnyClientHandlers,
    AnyClientStub,
    CapabilityError,
    ClientError,
    InvalidResultError,
    ListCache,
    MalformedResponseError,
    PaginationError,
    UnsupportedVersionError,
    VersionMismatchError,
)

__all__ = [
    "DEFAULT_MAX_PAGES",
    "DEFAULT_REQUEST_TIMEOUT",
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "AnyClientHandlers",
    "AnyClientStub",
    "CapabilityError",
    "Client",
    "ClientContext",
    "ClientError",
    "InvalidResultError",
    "ListCache",
    "MalformedResponseError",
    "PaginationError",
    "UnsupportedVersionError",
    "VersionMismatchError",
]
