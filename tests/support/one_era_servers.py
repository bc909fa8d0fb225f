"""MCP servers that speak exactly one era, written by hand from the schemas so that they are peers, not our code.

    python tests/support/one_era_servers.py --era modern|legacy [--transport stdio] [--tools-per-page N]

``modern`` speaks only MCP 2026-07-28: it answers ``server/discover``, ``tools/list``, ``tools/call``,
``prompts/list``, ``prompts/get``, ``resources/list`` and ``resources/read``; every request must carry ``_meta``
with ``io.modelcontextprotocol/protocolVersion`` and ``io.modelcontextprotocol/clientCapabilities`` (else -32602), a
version other than 2026-07-28 gets -32022 naming the one it speaks, and ``initialize`` is -32601 (method not
found), as a server without the handshake answers it. ``legacy`` speaks only MCP 2025-11-25: ``initialize`` (and
``ping``) plus the same feature methods without any ``_meta`` rule, and ``server/discover`` is -32601, which is
what makes a client in ``auto`` mode fall back to the handshake.

Both offer the same tools, prompt and resource (``TOOLS``, ``PROMPTS``, ``RESOURCES``), so a test can call the same
thing in either era: ``add`` (integer inputs, an ``outputSchema`` and ``structuredContent``), ``greet`` (a string and
an optional boolean, text only) and ``describe_point`` (a nested object and an enum in, an output schema with an
array out). Stdio is newline-delimited JSON-RPC on stdin/stdout; nothing is written to stderr unless a line is not
JSON. Plain ``json`` only: importing mcpgen here would make it our server talking to our client.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
UNSUPPORTED_PROTOCOL_VERSION = -32022

SERVER_INFO = {"name": "one-era-server", "version": "1.0.0"}
CAPABILITIES = {"tools": {"listChanged": False}, "prompts": {"listChanged": False}, "resources": {}}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
        },
    },
    {
        "name": "greet",
        "description": "Say hello to someone.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "excited": {"type": "boolean"}},
            "required": ["name"],
        },
    },
    {
        "name": "describe_point",
        "description": "Describe a point in a unit system.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                },
                "unit": {"type": "string", "enum": ["cm", "in"]},
            },
            "required": ["point", "unit"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "coordinates": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["label", "coordinates"],
        },
    },
]
PROMPTS: list[dict[str, Any]] = [
    {"name": "welcome", "description": "A welcome line.", "arguments": [{"name": "who", "required": True}]}
]
RESOURCES: list[dict[str, Any]] = [{"uri": "memo://motto", "name": "motto", "mimeType": "text/plain"}]
MOTTO = "one era at a time"


class ProtocolError(Exception):
    """A JSON-RPC error answer: code, message and optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def call_tool(name: Any, arguments: Any) -> dict[str, Any]:
    """The ``tools/call`` result (without the era's extras); bad arguments are a tool error the model can read,
    an unknown tool is a protocol error, as the spec's tools page says."""
    if not isinstance(arguments, dict):
        arguments = {}
    try:
        if name == "add":
            a, b = arguments["a"], arguments["b"]
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in (a, b)):
                raise TypeError("a and b must be integers")
            return {"content": _text(str(a + b)), "structuredContent": {"sum": a + b}}
        if name == "greet":
            greeting = f"Hello, {arguments['name']}" + ("!" if arguments.get("excited") else ".")
            return {"content": _text(greeting)}
        if name == "describe_point":
            point, unit = arguments["point"], arguments["unit"]
            structured = {"label": f"({point['x']}, {point['y']}) {unit}", "coordinates": [point["x"], point["y"]]}
            return {"content": _text(json.dumps(structured)), "structuredContent": structured}
    except (KeyError, TypeError) as exc:
        return {"content": _text(f"bad arguments for {name}: {exc}"), "isError": True}
    raise ProtocolError(INVALID_PARAMS, f"unknown tool: {name}")


def get_prompt(name: Any, arguments: Any) -> dict[str, Any]:
    if name != "welcome":
        raise ProtocolError(INVALID_PARAMS, f"unknown prompt: {name}")
    who = (arguments or {}).get("who", "stranger") if isinstance(arguments, dict) else "stranger"
    return {"description": "A welcome line.", "messages": [{"role": "user", "content": _text(f"Welcome, {who}.")[0]}]}


def read_resource(uri: Any) -> dict[str, Any]:
    if uri != RESOURCES[0]["uri"]:
        raise ProtocolError(-32002, f"resource not found: {uri}", {"uri": uri})
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": MOTTO}]}


def tools_page(cursor: Any, per_page: int | None) -> dict[str, Any]:
    """``tools/list``: one page of every tool, or ``per_page`` at a time (the cursor is the next index)."""
    if per_page is None:
        return {"tools": TOOLS}
    start = int(cursor) if isinstance(cursor, str) and cursor.isdigit() else 0
    page: dict[str, Any] = {"tools": TOOLS[start : start + per_page]}
    if start + per_page < len(TOOLS):
        page["nextCursor"] = str(start + per_page)
    return page


def feature_result(method: str, params: dict[str, Any], per_page: int | None) -> dict[str, Any]:
    """What both eras answer alike."""
    if method == "tools/list":
        return tools_page(params.get("cursor"), per_page)
    if method == "tools/call":
        return call_tool(params.get("name"), params.get("arguments"))
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "prompts/get":
        return get_prompt(params.get("name"), params.get("arguments"))
    if method == "resources/list":
        return {"resources": RESOURCES}
    if method == "resources/read":
        return read_resource(params.get("uri"))
    raise ProtocolError(METHOD_NOT_FOUND, f"method not found: {method}")


MODERN_METHODS = frozenset(
    {"server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list", "resources/read"}
)
# Results that carry the cache hints 2026-07-28 requires (basic/utilities/caching).
CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list", "resources/read"})


def modern_result(method: str, params: dict[str, Any], per_page: int | None) -> dict[str, Any]:
    """A 2026-07-28 answer: a method this era lacks (``initialize``, ``ping``) is -32601 whatever its params, then
    the request's ``_meta`` is checked, then ``resultType``, the cache hints and our identity go on the result."""
    if method not in MODERN_METHODS:
        raise ProtocolError(METHOD_NOT_FOUND, f"method not found: {method}")
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not isinstance(meta.get(PROTOCOL_VERSION_META), str):
        raise ProtocolError(INVALID_PARAMS, f"_meta.{PROTOCOL_VERSION_META} is required")
    if meta[PROTOCOL_VERSION_META] != MODERN_VERSION:
        data = {"requested": meta[PROTOCOL_VERSION_META], "supported": [MODERN_VERSION]}
        raise ProtocolError(UNSUPPORTED_PROTOCOL_VERSION, "unsupported protocol version", data)
    if not isinstance(meta.get(CLIENT_CAPABILITIES_META), dict):
        raise ProtocolError(INVALID_PARAMS, f"_meta.{CLIENT_CAPABILITIES_META} is required")
    if method == "server/discover":
        result: dict[str, Any] = {"supportedVersions": [MODERN_VERSION], "capabilities": CAPABILITIES}
    else:
        result = feature_result(method, params, per_page)
    result["resultType"] = "complete"
    result["_meta"] = {SERVER_INFO_META: SERVER_INFO}
    if method in CACHEABLE:
        result.update(ttlMs=0, cacheScope="public")
    return result


def legacy_result(method: str, params: dict[str, Any], per_page: int | None) -> dict[str, Any]:
    """A 2025-11-25 answer: the handshake at our one version whatever the client asked for (the client decides
    whether it can go on), ``ping``, and the feature methods."""
    if method == "initialize":
        return {"protocolVersion": LEGACY_VERSION, "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}
    if method == "ping":
        return {}
    return feature_result(method, params, per_page)


def answer(era: str, message: Any, per_page: int | None = None) -> dict[str, Any] | None:
    """The response to one incoming message, or None for what gets none (notifications, responses)."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    try:
        result = (modern_result if era == "modern" else legacy_result)(str(message["method"]), params, per_page)
    except ProtocolError as exc:
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def serve_stdio(era: str, per_page: int | None) -> None:
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            print(f"one_era_servers: not JSON: {line[:80]!r}", file=sys.stderr)
            continue
        response = answer(era, message, per_page)
        if response is not None:
            sys.stdout.buffer.write(json.dumps(response).encode() + b"\n")
            sys.stdout.buffer.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description="An MCP server that speaks one era only (a test peer).")
    parser.add_argument("--era", choices=("modern", "legacy"), required=True)
    parser.add_argument("--transport", choices=("stdio",), default="stdio")
    parser.add_argument("--tools-per-page", type=int, metavar="N", help="page tools/list (default: one page)")
    args = parser.parse_args()
    if args.tools_per_page is not None and args.tools_per_page < 1:
        parser.error("--tools-per-page must be at least 1")
    serve_stdio(args.era, args.tools_per_page)


if __name__ == "__main__":
    main()
