"""How the streamable HTTP server tells a modern (2026-07-28) request from a legacy one, and what it checks of a modern
request's routing before its handler sees it: the ``_meta`` fields the era needs and the ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers (spec basic/transports/streamable-http, "Request Metadata"
and "Server Validation").

Where it sits: in the ``transports`` layer, under ``app`` (``is_modern``, ``names_modern_version``: which era a POST
is of) and ``modern`` (``routing_problem``: the checks of a modern POST).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from starlette.types import Scope

from ....jsonrpc.envelopes import ErrorCode, Notification, Request
from ....versions import (
    CLIENT_CAPABILITIES_META,
    HEADER_MISMATCH,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META,
)
from ...routing_headers import METHOD_HEADER, NAME_HEADER, NAME_PARAMS, PROTOCOL_VERSION_HEADER
from .asgi import HTTPRequest

__all__ = [
    "ROUTING_HEADERS",
    "decode_header_value",
    "header_problem",
    "is_modern",
    "names_modern_version",
    "routing_problem",
]

# LEGACY_VERSIONS (mcpgen_runtime.versions): every version of the legacy era (whose requests carry no per-request
# ``_meta`` version); an ``MCP-Protocol-Version`` header naming another value is a request of the modern era, as the
# official SDK routes.
ROUTING_HEADERS: Final = frozenset({PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER})
_PARAM_PREFIX: Final = b"mcp-param-"
_ROUTING_HEADER_NAMES: Final = frozenset(name.encode("latin-1") for name in ROUTING_HEADERS)
# b"mcp-" in every case (header names are case-insensitive): a set lookup, not a lower() per header.
_MCP_PREFIXES: Final = frozenset(bytes([m, c, p, 0x2D]) for m in b"mM" for c in b"cC" for p in b"pP")
# The bytes a header value may hold (spec "Value Encoding", after RFC 9110): tab, space and visible ASCII.
_HEADER_VALUE_BYTES: Final = b"\t" + bytes(range(0x20, 0x7F))
_BASE64_SENTINEL: Final = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)


def _meta(message: Request | Notification) -> Mapping[str, Any] | None:
    params = message.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def names_modern_version(request: HTTPRequest) -> bool:
    """Whether the POST's ``MCP-Protocol-Version`` header names a version of the modern era (the request is then a
    modern one, whatever ``Mcp-Session-Id`` it carries: see ``is_modern``)."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    return version is not None and version.strip() in MODERN_VERSIONS


def is_modern(request: HTTPRequest, decoded: Any, *, in_session: bool = False) -> bool:
    """Whether a POST is of the modern era: its ``MCP-Protocol-Version`` names a modern version (without a live
    session: any version that is not of the legacy era, so that an unknown one is told -32022), or its request
    (not ``initialize``) carries the ``_meta`` protocol version, whatever the header says (it is then told it
    mismatches, -32020) and whatever ``Mcp-Session-Id`` it carries, live session or not. A request of a live
    session (``in_session``) with neither keeps the session's rules (an unknown header version: the session's 400).

    The spec (2026-07-28 basic/versioning, "Backward Compatibility"): "A dual-era server selects its behavior from
    how the client opens: A request carrying modern per-request ``_meta`` is served statelessly according to this
    revision"; and basic/transports/streamable-http, "Earlier Streamable HTTP Revisions": "An ``Mcp-Session-Id``
    header on a request: ignore it, and do not mint or echo session IDs". So a session id never makes a modern
    request legacy; and "Protocol Version Header": the header "MUST match the
    ``io.modelcontextprotocol/protocolVersion`` field carried in the request body's ``_meta``. If the values do not
    match, the server MUST reject the request with ``400 Bad Request`` and a ``HeaderMismatch`` JSON-RPC error", so
    a legacy header over a modern body is refused, never served by the session it names."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    if version is not None and version.strip() not in LEGACY_VERSIONS:
        if not in_session or version.strip() in MODERN_VERSIONS:
            return True
    if not isinstance(decoded, Request | Notification) or decoded.method == "initialize":
        return False
    meta = _meta(decoded)
    return meta is not None and PROTOCOL_VERSION_META in meta


def decode_header_value(value: str) -> str | None:
    """A header value as the client meant it: ``=?base64?...?=`` decoded (spec "Value Encoding"), others as they
    are; None for a malformed sentinel (bad or non-canonical base64, bad UTF-8), so that it matches nothing."""
    match = _BASE64_SENTINEL.fullmatch(value) if value.startswith("=?") else None  # (most values: no regex)
    if match is None:
        return value
    payload = match.group(1)
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            return None
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def header_problem(raw_headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """What is wrong with the request's ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and
    ``Mcp-Param-*`` headers as headers, whatever the body says: one of them twice, or a value with a character that
    is not visible ASCII, space or tab; None if nothing is.

    Read from the raw headers: a folded mapping hides duplicates (which two readers, a gateway and this server,
    would read differently), and its latin-1 reading of a raw UTF-8 or latin-1 value would match the body. The
    spec (basic/transports/streamable-http, "Value Encoding"): header values "must consist of visible ASCII
    characters (0x21-0x7E), space (0x20), and horizontal tab (0x09)", anything else travels as
    ``=?base64?...?=``; "Server Validation" lists "A header value contains invalid characters" as a failure
    (-32020), and "Server Behavior for Custom Headers": "Servers MUST reject requests with a recognized
    ``Mcp-Param-{Name}`` header that contains invalid characters". Every ``Mcp-Param-*`` header is checked here,
    recognized or not (the tool is not known yet): a conforming client encodes every value it sends and sends one
    header per parameter, so this refuses nothing it sends."""
    seen: set[bytes] | None = None  # made at the second header checked (nearly every request has three)
    first = b""
    for name, value in raw_headers:
        if name[:4] not in _MCP_PREFIXES:  # every header checked here starts so; most of a request's do not
            continue
        key = name if name in _ROUTING_HEADER_NAMES else name.lower()
        if key not in _ROUTING_HEADER_NAMES and not key.startswith(_PARAM_PREFIX):
            continue
        if key == first or (seen is not None and key in seen):
            return f"Header mismatch: {key.decode('latin-1')} appears more than once"
        if not first:
            first = key
        else:
            if seen is None:
                seen = {first}
            seen.add(key)
        if value.translate(None, _HEADER_VALUE_BYTES):
            return (
                f"Header mismatch: {key.decode('latin-1')} contains invalid characters (a header value is visible"
                " ASCII, space and tab; send any other value as =?base64?...?=)"
            )
    return None


def routing_problem(scope: Scope, request: HTTPRequest, decoded: Request) -> tuple[int, str] | None:
    """The JSON-RPC error (code, message) for a modern request whose ``_meta`` or routing headers are wrong; None
    if they are right. Header values are compared without surrounding whitespace (RFC 9110 field values)."""
    meta = _meta(decoded)
    if meta is None or PROTOCOL_VERSION_META not in meta or CLIENT_CAPABILITIES_META not in meta:
        missing = [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if meta is None or key not in meta]
        return ErrorCode.INVALID_PARAMS, f"Invalid params: params._meta must carry {' and '.join(missing)}"
    headers = request.headers
    version, method, name = headers.get(PROTOCOL_VERSION_HEADER), headers.get(METHOD_HEADER), headers.get(NAME_HEADER)
    # What header_problem would find nothing in, told without walking the raw headers: no header name twice (ASGI
    # names are lower-case, so the mapping holds as many as the raw list), no Mcp-Param-* header at all, routing
    # values of visible ASCII and space. Otherwise header_problem decides, and names what is wrong.
    raw = scope["headers"]
    names = "\n".join(headers)
    if (
        len(headers) != len(raw)
        or names.startswith("mcp-param-")
        or "\nmcp-param-" in names
        or not (version is None or (version.isascii() and version.isprintable()))
        or not (method is None or (method.isascii() and method.isprintable()))
        or not (name is None or (name.isascii() and name.isprintable()))
    ):
        problem = header_problem(raw)
        if problem is not None:
            return HEADER_MISMATCH, problem
    if version is None or version.strip() != meta[PROTOCOL_VERSION_META]:
        what = "is missing" if version is None else f"{version.strip()!r} does not match the body's _meta version"
        return HEADER_MISMATCH, f"Header mismatch: MCP-Protocol-Version {what}"
    if method is None or method.strip() != decoded.method:
        what = "is missing" if method is None else f"{method.strip()!r} does not match the body's {decoded.method!r}"
        return HEADER_MISMATCH, f"Header mismatch: Mcp-Method {what}"
    param = NAME_PARAMS.get(decoded.method)
    body_value = decoded.params.get(param) if param is not None and isinstance(decoded.params, dict) else None
    if body_value is not None:
        if name is None:
            return HEADER_MISMATCH, f"Header mismatch: Mcp-Name is missing (the body's {param} is {body_value!r})"
        if decode_header_value(name.strip()) != body_value:
            return HEADER_MISMATCH, f"Header mismatch: Mcp-Name {name.strip()!r} does not match the body's {param}"
    return None
