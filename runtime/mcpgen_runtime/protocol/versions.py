"""The MCP protocol versions the runtime speaks, the two eras they belong to, and the names the modern era puts in
``_meta`` and its error codes.

Where it sits: in the ``protocol`` layer (shared by ``server`` and ``client``); plain constants, no imports.

The eras (2026-07-28 basic/versioning "Terminology"): the *legacy* versions establish a session with the
``initialize`` handshake; the *modern* ones carry version, client identity and capabilities in every request's
``_meta`` and have no handshake. ISO dates compare as strings, so "modern" is "2026-07-28 or later".
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLIENT_CAPABILITIES_META",
    "CLIENT_INFO_META",
    "HEADER_MISMATCH",
    "LEGACY_PROTOCOL_VERSIONS",
    "LOG_LEVEL_META",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "MODERN_PROTOCOL_VERSIONS",
    "PROTOCOL_VERSION_META",
    "SERVER_INFO_META",
    "SUBSCRIPTION_ID_META",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "is_modern",
]

LEGACY_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
_FIRST_MODERN: Final = "2026-07-28"

PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_META: Final = "io.modelcontextprotocol/subscriptionId"

# 2026-07-28 basic/index "Error codes": -32020..-32099 are the specification's.
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022


def is_modern(version: str) -> bool:
    """Whether ``version`` (an ISO date) belongs to the modern, handshake-less era."""
    return version >= _FIRST_MODERN
