"""A server with a tool for every kind of outcome a ``tools/call`` may have (plain text, sync, structured content,
content blocks, no content, ``ToolError``, an exception, a ``ProtocolError``, a resource not found, a result JSON
cannot carry), and the calls that reach each: what the fast lanes of both eras (``dispatch.direct_call``,
``ServerConnection._call_plain_tool``, the eager starts of ``jsonrpc.eager``) are compared against the general
dispatch with; ``MODERN_META``, the ``_meta`` of their 2026-07-28 calls."""

from __future__ import annotations

import math
from typing import Any

from mcpgen_runtime.server import Server, ToolError
from mcpgen_runtime.server.authoring.errors import InvalidParamsError, ResourceNotFoundError

MODERN = "2026-07-28"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "tool-zoo", "version": "1"},
}

# (tool, arguments; None: no arguments key)
TOOL_CALLS: list[tuple[str, dict[str, Any] | None]] = [
    ("add", {"a": 1, "b": 2}),
    ("add", {"a": "x", "b": 2}),  # invalid arguments: an isError result
    ("add", {"a": 1}),  # a missing argument
    ("blocking", {"a": 7}),
    ("pair", {"a": 3}),
    ("blocks", {"n": 3}),
    ("blocks", {"n": 0}),
    ("nothing", None),
    ("nothing", {}),
    ("refuses", {"reason": "no"}),
    ("breaks", {"reason": "boom"}),
    ("protocol", {"reason": "bad"}),
    ("missing", {"uri": "file:///gone"}),
    ("not_a_number", {}),
]


def tool_zoo(name: str) -> Server:
    """A server named ``name`` with the tools ``TOOL_CALLS`` call."""
    server = Server(name, version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> str:
        """Plain text."""
        return str(a + b)

    @server.tool()
    def blocking(a: int) -> str:
        """A sync tool (run in a thread)."""
        return str(a)

    @server.tool()
    async def pair(a: int) -> dict[str, int]:
        """Structured content (an output schema)."""
        return {"a": a, "double": 2 * a}

    @server.tool()
    async def blocks(n: int) -> list[str]:
        """Content blocks, not a ValidResult."""
        return [str(i) for i in range(n)]

    @server.tool()
    async def nothing() -> None:
        """No content."""

    @server.tool()
    async def refuses(reason: str) -> str:
        """A ToolError: an isError result."""
        raise ToolError(reason)

    @server.tool()
    async def breaks(reason: str) -> str:
        """An exception: an isError result, logged."""
        raise RuntimeError(reason)

    @server.tool()
    async def protocol(reason: str) -> str:
        """A ProtocolError: the request's JSON-RPC error."""
        raise InvalidParamsError(reason, {"why": reason})

    @server.tool()
    async def missing(uri: str) -> str:
        """A resource not found: the version's code."""
        raise ResourceNotFoundError(uri)

    @server.tool()
    async def not_a_number() -> dict[str, float]:
        """A result JSON cannot carry (NaN): -32603."""
        return {"x": math.nan}

    return server
