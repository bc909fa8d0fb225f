"""``x-mcp-header``: tool parameters a streamable HTTP client mirrors into ``Mcp-Param-{Name}`` headers (MCP
2026-07-28, SEP-2243).

Where it sits: in the ``client`` layer. The pure functions over JSON check and read the annotations; ``ToolHeaders``
is the part of ``Client`` that remembers them: ``lists`` has it learn them when it lists the tools (a tool whose
annotations are invalid is left out of the list, as the spec requires of HTTP clients), and the transport asks it
for the headers of each modern ``tools/call`` (``HTTPClientStream.param_headers``).

The rules (server/tools.mdx, "x-mcp-header"; basic/transports/streamable-http.mdx, "Custom Headers"): the value is
a non-empty RFC 9110 token, case-insensitively unique in the schema, on a property of type integer, string or
boolean (not number), reachable from the root through ``properties`` only (not ``items``, a composition or
conditional keyword, or ``$ref``, which is never followed). A value present at the property's path is sent as
``Mcp-Param-{Name}``: strings as they are, integers in decimal, booleans as ``true``/``false``, Base64-wrapped when
not plain ASCII; a missing or null value sends no header.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ..transports.http.client.headers import PARAM_HEADER_PREFIX, encode_header_value

if TYPE_CHECKING:
    from .versions import AnyTool

__all__ = ["HeaderMap", "ToolHeaders", "header_map", "invalid_x_mcp_header", "param_headers"]

logger = logging.getLogger(__name__)

X_MCP_HEADER: Final = "x-mcp-header"
# A property path (the chain of `properties` keys from the root) -> its header name.
HeaderMap = dict[tuple[str, ...], str]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE_TYPES: Final = frozenset({"string", "integer", "boolean"})
# Keywords whose values are subschemas; crossing any of them leaves the `properties`-only chain.
_ONE_SCHEMA: Final = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAPS: Final = frozenset({"$defs", "definitions", "patternProperties", "dependentSchemas"})
# JavaScript's safe integers: the spec bounds x-mcp-header integers to them.
_SAFE_INTEGER: Final = 2**53 - 1


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema with its ``properties`` path (None once the path crossed another keyword). An explicit
    stack, so that a deeply nested schema cannot exhaust the recursion limit; ``$ref`` is never followed."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                stack.extend(((*path, name) if path is not None else None, sub) for name, sub in value.items())
            elif keyword in _ONE_SCHEMA:
                stack.append((None, value))
            elif keyword in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif keyword in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def invalid_x_mcp_header(input_schema: Any) -> str | None:
    """Why the ``x-mcp-header`` annotations of a tool's ``inputSchema`` are invalid, or None when they are valid
    (or there are none)."""
    seen: dict[str, str] = {}
    for path, schema in _positions(input_schema):
        if X_MCP_HEADER not in schema:
            continue
        if not path:
            return f"{X_MCP_HEADER} outside a chain of `properties` from the schema root"
        where = ".".join(path)
        name = schema[X_MCP_HEADER]
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            return f"property {where!r}: {X_MCP_HEADER} {name!r} is not a non-empty HTTP token"
        kind = schema.get("type")
        if kind not in _PRIMITIVE_TYPES:
            return f"property {where!r}: {X_MCP_HEADER} on type {kind!r} (only integer, string or boolean)"
        if name.lower() in seen:
            return f"property {where!r}: {X_MCP_HEADER} {name!r} repeats the one of {seen[name.lower()]!r}"
        seen[name.lower()] = where
    return None


def header_map(input_schema: Any) -> HeaderMap:
    """The annotated properties of a schema that ``invalid_x_mcp_header`` accepted."""
    return {
        path: schema[X_MCP_HEADER]
        for path, schema in _positions(input_schema)
        if path and isinstance(schema.get(X_MCP_HEADER), str)
    }


def _rendered(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) <= _SAFE_INTEGER:
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= _SAFE_INTEGER:
        return str(int(value))  # an integer that came through JSON as 42.0
    if isinstance(value, str):
        return value
    return None


def param_headers(headers: HeaderMap, arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` headers of one call: a header per annotated property whose value is present."""
    out: dict[str, str] = {}
    for path, name in headers.items():
        node: Any = arguments
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        rendered = _rendered(node) if node is not None else None
        if rendered is not None:
            out[f"{PARAM_HEADER_PREFIX}{name}"] = encode_header_value(rendered)
    return out


class ToolHeaders:
    """The ``x-mcp-header`` annotations of the tools a modern client listed, by tool name."""

    def __init__(self) -> None:
        self._by_tool: dict[str, HeaderMap] = {}

    def learn(self, tools: Sequence[AnyTool]) -> list[AnyTool]:
        """Remember the annotations of a fresh tool list; the tools with valid (or no) annotations, which are the
        ones the list keeps."""
        kept: list[AnyTool] = []
        headers: dict[str, HeaderMap] = {}
        for tool in tools:
            schema = tool.model_dump(mode="json").get("inputSchema")
            reason = invalid_x_mcp_header(schema)
            if reason is not None:
                # 2026-07-28 (server/tools.mdx): a client MUST exclude such a tool, and SHOULD say why.
                logger.warning("leaving out tool %r: invalid x-mcp-header (%s)", tool.name, reason)
                continue
            headers[tool.name] = header_map(schema)
            kept.append(tool)
        self._by_tool = headers
        return kept

    def knows(self, name: str) -> bool:
        return name in self._by_tool

    def for_call(self, method: str, params: Mapping[str, Any]) -> Mapping[str, str]:
        """``HTTPClientStream.param_headers``: the Mcp-Param-* headers of a modern ``tools/call``."""
        name = params.get("name")
        if method != "tools/call" or not isinstance(name, str):
            return {}
        headers = self._by_tool.get(name)
        arguments = params.get("arguments")
        return param_headers(headers, arguments if isinstance(arguments, Mapping) else {}) if headers else {}
