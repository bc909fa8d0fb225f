"""The request metadata headers a streamable HTTP client sends in MCP 2026-07-28 (the "modern" era), read off the
JSON-RPC request itself.

Where it sits: in the ``transports`` layer, used by ``stream`` for every POST whose request carries the
``_meta`` protocol version (``io.modelcontextprotocol/protocolVersion``), and by ``client`` to encode the
``Mcp-Param-{Name}`` values it mirrors from tool arguments. No httpx2 here, so the client imports it freely.

The spec (basic/transports/streamable-http.mdx, "Request Metadata"): every POST carries ``MCP-Protocol-Version``
(equal to the ``_meta`` version) and ``Mcp-Method``; ``tools/call`` and ``prompts/get`` carry ``Mcp-Name`` with
``params.name``, ``resources/read`` with ``params.uri``. A value that is not plain printable ASCII (or that has
leading or trailing whitespace, or looks like the sentinel itself) goes as ``=?base64?{UTF-8 as Base64}?=``.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

from ...routing_headers import METHOD_HEADER, NAME_HEADER, NAME_PARAMS, PROTOCOL_VERSION_HEADER

__all__ = [
    "METHOD_HEADER",
    "NAME_HEADER",
    "NAME_PARAMS",
    "PARAM_HEADER_PREFIX",
    "PROTOCOL_VERSION_HEADER",
    "PROTOCOL_VERSION_META",
    "encode_header_value",
    "meta_protocol_version",
    "standard_headers",
]

PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
PARAM_HEADER_PREFIX: Final = "Mcp-Param-"

# Visible ASCII and space: what survives as a header value unchanged. A tab is allowed by RFC 9110, but the spec's
# own examples (and the conformance suite) treat it as needing the Base64 form, so it is encoded too.
_PLAIN = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.DOTALL)


def encode_header_value(value: str) -> str:
    """``value`` as it may travel in an HTTP header: unchanged when it is plain printable ASCII without leading or
    trailing whitespace, else the ``=?base64?...?=`` form (a plain value that looks like that form is encoded too,
    so that it cannot be mistaken for one)."""
    if _PLAIN.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def meta_protocol_version(params: Any) -> str | None:
    """The ``_meta`` protocol version of a request's params: set on every modern request, absent in the legacy
    era (which is how the transport tells the two apart, request by request)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def standard_headers(method: str, params: Any, version: str) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and, where the method has one, ``Mcp-Name`` for one request."""
    headers = {PROTOCOL_VERSION_HEADER: version, METHOD_HEADER: method}
    member = NAME_PARAMS.get(method)
    name = params.get(member) if member is not None and isinstance(params, dict) else None
    if isinstance(name, str):
        headers[NAME_HEADER] = encode_header_value(name)
    return headers
