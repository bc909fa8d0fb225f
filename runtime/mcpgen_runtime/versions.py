"""The MCP protocol versions the runtime serves, their two eras, and what differs between versions: the one module
of the runtime that knows version facts, read from the generated ``mcp_bindings.protocol_facts``.

Where it sits: its own layer, on ``jsonrpc``'s level (it imports neither), below ``transports`` and ``protocol``, so
that the HTTP transport and the server and client alike read the same facts. It imports only the generated facts
module (plain data, no pydantic), so importing it is cheap.

The eras (2026-07-28 basic/versioning "Terminology"): the *legacy* versions establish a session with the
``initialize`` handshake; the *modern* ones carry version, client identity and capabilities in every request's
``_meta`` and have no handshake. ISO dates compare as strings, so a version the runtime does not know is "modern"
when it is on or after the first modern version.

The facts come from the schemas and the reviewed overlay ``spec/overlay/versions.json``; adding a protocol version is
``mcpgen spec fetch``, an overlay entry and ``mcpgen generate``, with no edit here. Names: ``SUPPORTED_VERSIONS`` is
every version served (both eras), ``LEGACY_VERSIONS`` and ``MODERN_VERSIONS`` one era each, all oldest first.

May import: the standard library and ``mcp_bindings.protocol_facts``; nothing of the runtime.
"""

from __future__ import annotations

from typing import Final

from mcp_bindings import protocol_facts as _facts

__all__ = [
    "BATCH_VERSIONS",
    "CLIENT_CAPABILITIES_META",
    "CLIENT_INFO_META",
    "FIRST_MODERN_VERSION",
    "HEADER_MISMATCH",
    "LATEST_LEGACY_VERSION",
    "LATEST_MODERN_VERSION",
    "LEGACY_RESOURCE_NOT_FOUND",
    "LEGACY_VERSIONS",
    "LOG_LEVEL_META",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_ONLY_METHODS",
    "MODERN_VERSIONS",
    "PROGRESS_MESSAGE_VERSIONS",
    "PROTOCOL_VERSION_META",
    "SERVER_INFO_META",
    "SSE_PRIMING_VERSIONS",
    "SUBSCRIPTION_ID_META",
    "SUPPORTED_VERSIONS",
    "SUPPORTED_VERSIONS_NEWEST_FIRST",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "is_modern",
    "resource_not_found_code",
    "versions_with_method",
]

LEGACY_VERSIONS: Final[tuple[str, ...]] = _facts.LEGACY_VERSIONS
MODERN_VERSIONS: Final[tuple[str, ...]] = _facts.MODERN_VERSIONS
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = _facts.SUPPORTED_VERSIONS
SUPPORTED_VERSIONS_NEWEST_FIRST: Final[tuple[str, ...]] = tuple(reversed(SUPPORTED_VERSIONS))
"""What ``server/discover`` and an UnsupportedProtocolVersion error list."""
LATEST_LEGACY_VERSION: Final[str] = _facts.LATEST_VERSIONS["legacy"]
LATEST_MODERN_VERSION: Final[str] = _facts.LATEST_VERSIONS["modern"]
FIRST_MODERN_VERSION: Final[str] = MODERN_VERSIONS[0]

BATCH_VERSIONS: Final[frozenset[str]] = _facts.BATCH_VERSIONS
"""The versions that allow a JSON-RPC batch (an array of messages in one frame or POST)."""
SSE_PRIMING_VERSIONS: Final[frozenset[str]] = _facts.SSE_PRIMING_VERSIONS
"""The versions whose HTTP server opens a stored SSE stream with a priming event (an event ID, empty data)."""
PROGRESS_MESSAGE_VERSIONS: Final[frozenset[str]] = _facts.PROGRESS_MESSAGE_VERSIONS
"""The versions whose ``notifications/progress`` may carry a ``message`` (all but 2024-11-05)."""
MODERN_ONLY_METHODS: Final[frozenset[str]] = _facts.MODERN_ONLY_METHODS
"""Client requests that only the modern era has (``server/discover``, ``subscriptions/listen``)."""

PROTOCOL_VERSION_META: Final = _facts.PROTOCOL_VERSION_META
CLIENT_CAPABILITIES_META: Final = _facts.CLIENT_CAPABILITIES_META
CLIENT_INFO_META: Final = _facts.CLIENT_INFO_META
LOG_LEVEL_META: Final = _facts.LOG_LEVEL_META
SERVER_INFO_META: Final = _facts.SERVER_INFO_META
SUBSCRIPTION_ID_META: Final = _facts.SUBSCRIPTION_ID_META

HEADER_MISMATCH: Final = _facts.HEADER_MISMATCH
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = _facts.MISSING_REQUIRED_CLIENT_CAPABILITY
UNSUPPORTED_PROTOCOL_VERSION: Final = _facts.UNSUPPORTED_PROTOCOL_VERSION
LEGACY_RESOURCE_NOT_FOUND: Final[int] = _facts.RESOURCE_NOT_FOUND_CODES[LATEST_LEGACY_VERSION]
"""-32002: a missing resource in the legacy era (the modern era answers -32602, Invalid Params)."""


def is_modern(version: str) -> bool:
    """Whether ``version`` (an ISO date) belongs to the modern, handshake-less era."""
    return version >= FIRST_MODERN_VERSION


def resource_not_found_code(version: str | None) -> int:
    """The error code of a missing resource under ``version``; a version not served takes its era's (no version:
    the legacy one, which every client accepts)."""
    code = _facts.RESOURCE_NOT_FOUND_CODES.get(version or LATEST_LEGACY_VERSION)
    if code is None:
        assert version is not None
        code = _facts.RESOURCE_NOT_FOUND_CODES[LATEST_MODERN_VERSION if is_modern(version) else LATEST_LEGACY_VERSION]
    return code


def versions_with_method(method: str) -> tuple[str, ...]:
    """The served versions that have ``method`` in either direction, oldest first."""
    tables = (
        _facts.CLIENT_REQUESTS,
        _facts.SERVER_REQUESTS,
        _facts.INPUT_REQUESTS,
        _facts.CLIENT_NOTIFICATIONS,
        _facts.SERVER_NOTIFICATIONS,
    )
    return tuple(version for version in SUPPORTED_VERSIONS if any(method in table[version] for table in tables))
