"""``Mcp-Param-{Name}`` headers (MCP 2026-07-28 basic/transports/streamable-http, "Custom Headers from Tool
Parameters"): a tool parameter annotated ``x-mcp-header`` in its ``inputSchema`` is mirrored by the client into an
HTTP header, and the server must check that header against the body.

Where it sits: in the ``server`` layer, used by ``handlers.Handlers.call_tool`` for modern requests that came over
HTTP (``Context.headers`` is not None); below it only the standard library. An author annotates a parameter with
pydantic, ``region: str = Field(json_schema_extra={"x-mcp-header": "Region"})`` (a plain ``str``, ``int`` or
``bool``: the spec allows the annotation on primitive types only, and clients drop a tool that breaks the rule, so
not ``str | None``, whose schema is an ``anyOf``), or in a hand-written ``input_schema``.

The rules checked (the spec's "Server Behavior for Custom Headers" and "Server Validation"): an annotated property
is one reached from the schema root through ``properties`` keys only; when the arguments hold a value there (not
null) the header must be present and, once decoded (``=?base64?...?=`` is strict Base64 of UTF-8; anything else is
the literal value), equal the value: strings exactly, booleans as ``true`` / ``false``, numbers numerically; when
they hold none, the header must be absent; a value with a character that is not visible ASCII, space or tab is
refused ("Server Behavior for Custom Headers": servers "MUST reject requests with a recognized ``Mcp-Param-{Name}``
header that contains invalid characters"). Any failure is ``HeaderMismatchError`` (-32020; the HTTP transport
answers it with 400 Bad Request).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from ..authoring.errors import HeaderMismatchError

__all__ = ["annotated_parameters", "check_param_headers", "header_parameters"]

_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# A header value as the spec's "Value Encoding" allows it (visible ASCII, space, tab; the rest as =?base64?...?=).
# The HTTP transport refuses any other before this runs (``transports.http.server.modern.header_problem``, which
# also refuses a header sent twice); checked again here for a ``headers`` mapping from elsewhere.
_HEADER_VALUE: Final = re.compile(r"[\t\x20-\x7e]*")
_MISSING: Final = object()


def header_parameters(schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """(property path, header name) of every ``x-mcp-header`` annotation reachable through ``properties`` only."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, definition in properties.items():
        if not isinstance(definition, Mapping):
            continue
        header = definition.get("x-mcp-header")
        if isinstance(header, str) and header:
            yield (*path, name), header
        yield from header_parameters(definition, (*path, name))


def decode_param_header(value: str) -> str | None:
    """The header's value, Base64-decoded when it has the sentinel form; None when that form is invalid Base64 (bad
    padding or characters) or not UTF-8."""
    if not (value.startswith(_PREFIX) and value.endswith(_SUFFIX) and len(value) >= len(_PREFIX) + len(_SUFFIX)):
        return value
    encoded = value[len(_PREFIX) : -len(_SUFFIX)]
    if len(encoded) % 4 or not _BASE64.fullmatch(encoded):
        return None
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _value_at(arguments: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return _MISSING
        node = node[key]
    return _MISSING if node is None else node


def _matches(header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(header) == float(value)  # numerically: "42.0" is 42
        except ValueError:
            return False
    return isinstance(value, str) and header == value


def annotated_parameters(schema: Mapping[str, Any]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """``header_parameters(schema)``, walked once per schema (a tool's input schema is fixed once it is registered):
    most tools have none, and then a call needs neither the walk nor the HTTP request's headers."""
    key = id(schema)
    cached = _ANNOTATED.get(key)
    if cached is None or cached[0] is not schema:
        if len(_ANNOTATED) >= _ANNOTATED_MAX:  # schemas of replaced tools: bounded, not tracked
            _ANNOTATED.clear()
        cached = _ANNOTATED[key] = (schema, tuple(header_parameters(schema)))
    return cached[1]


_ANNOTATED: dict[int, tuple[Mapping[str, Any], tuple[tuple[tuple[str, ...], str], ...]]] = {}
"""id(schema) -> (the schema, kept so that its id is not reused while cached; its annotated parameters)."""
_ANNOTATED_MAX: Final = 4096


def check_param_headers(
    tool_name: str, schema: Mapping[str, Any], arguments: Mapping[str, Any] | None, headers: Mapping[str, str]
) -> None:
    """Raise ``HeaderMismatchError`` unless every ``Mcp-Param-*`` header of the tool's annotated parameters agrees
    with ``arguments`` (``headers``: the HTTP request's, looked up case-insensitively)."""
    for path, name in annotated_parameters(schema):
        header_name = f"Mcp-Param-{name}"
        raw = headers.get(header_name)
        value = _value_at(arguments, path)
        where = f"{header_name} (tool {tool_name!r}, argument {'.'.join(path)})"
        if value is _MISSING:
            if raw is not None:
                raise HeaderMismatchError(f"Header mismatch: {where} is set, but the arguments have no value for it")
            continue
        if raw is None:
            raise HeaderMismatchError(f"Header mismatch: {where} is missing; the arguments have a value for it")
        if not _HEADER_VALUE.fullmatch(raw):
            raise HeaderMismatchError(f"Header mismatch: {where} contains invalid characters")
        decoded = decode_param_header(raw)
        if decoded is None:
            raise HeaderMismatchError(f"Header mismatch: {where} is not valid Base64 of UTF-8 text")
        if not _matches(decoded, value):
            raise HeaderMismatchError(f"Header mismatch: {where} does not match the value in the arguments")
