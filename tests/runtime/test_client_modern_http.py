"""The client in the modern era over streamable HTTP, against a raw HTTP server (``raw_servers``) that records
every request: the required headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), no
session (even when a server sends an id), cancellation by closing the POST, the auto mode's fallback on a legacy
server's 4xx, the data of a -32022 at HTTP 400, and the re-list-and-retry on ``HeaderMismatch``.

Pure functions (the header value encoding, the ``x-mcp-header`` rules) are tested at the end.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from raw_servers import Exchange, mcp_handler, raw_http_server, result

from mcpgen_runtime.client import Client
from mcpgen_runtime.client.tool_headers import header_map, invalid_x_mcp_header, param_headers
from mcpgen_runtime.transports.http.client.headers import encode_header_value

pytestmark = pytest.mark.anyio

DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}, "resources": {}},
    "ttlMs": 0,
    "cacheScope": "public",
}
REGION_TOOL = {
    "name": "wetter-für-heute",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "options": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
            "score": {"type": "number"},
        },
    },
}


def modern(on_request: Any) -> Any:
    """A modern endpoint: server/discover answered, everything else to ``on_request``; every answer carries an
    Mcp-Session-Id header, which a modern client must ignore."""

    async def handle(exchange: Exchange) -> None:
        message = exchange.request.json()
        if message.get("method") == "server/discover":
            await exchange.send_json(result(message, DISCOVER))
        else:
            await on_request(exchange, message)

    return handle


async def tools_and_calls(exchange: Exchange, message: dict[str, Any]) -> None:
    if message["method"] == "tools/list":
        await exchange.send_json(result(message, {**DISCOVER, "tools": [REGION_TOOL]}))
    elif message["method"] == "tools/call":
        await exchange.send_json(result(message, {"resultType": "complete", "content": []}))
    elif message["method"] == "resources/read":
        contents = [{"uri": message["params"]["uri"], "text": "x"}]
        await exchange.send_json(result(message, {**DISCOVER, "contents": contents}))
    else:
        await exchange.respond(
            404, json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601}}).encode()
        )


async def test_every_post_carries_the_request_metadata_headers_and_no_session() -> None:
    async with raw_http_server(modern(tools_and_calls)) as server:
        async with Client.connect_http(server.url, mode="auto", request_timeout=10) as client:
            assert client.protocol_version == "2026-07-28"
            await client.call_tool("wetter-für-heute", {"region": " us-west1", "options": {"dry": True}, "score": 1.5})
            await client.read_resource("file:///a b")
    posts = [r for r in server.requests if r.method == "POST"]
    assert [r.json()["method"] for r in posts] == ["server/discover", "tools/list", "tools/call", "resources/read"]
    assert [r.method for r in server.requests] == ["POST"] * 4  # no GET stream, no DELETE: there is no session
    for request in posts:
        body = request.json()
        assert request.headers["mcp-protocol-version"] == "2026-07-28"
        assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert request.headers["mcp-method"] == body["method"]
        assert "mcp-session-id" not in request.headers  # although every answer named one
    call, read = posts[2].headers, posts[3].headers
    assert call["mcp-name"] == "=?base64?d2V0dGVyLWbDvHItaGV1dGU=?="  # not plain ASCII: Base64 of the UTF-8
    assert call["mcp-param-region"] == "=?base64?IHVzLXdlc3Qx?="  # a leading space: Base64
    assert call["mcp-param-dry"] == "true"  # a nested property, reached through `properties` only
    assert sorted(name for name in call if name.startswith("mcp-param-")) == ["mcp-param-dry", "mcp-param-region"]
    assert read["mcp-name"] == "file:///a b"
    assert not any(name.startswith("mcp-param-") for name in read)


async def test_a_legacy_servers_4xx_to_discover_means_initialize() -> None:
    async def legacy(exchange: Exchange) -> None:
        message = exchange.request.json() if exchange.request.method == "POST" else {}
        if message.get("method") == "server/discover":
            # What legacy-era servers answer a request without a session: 400 and a non-modern error.
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: no session"}}
            await exchange.respond(400, json.dumps(body).encode(), {"content-type": "application/json"})
        else:
            await mcp_handler(tools_and_calls)(exchange)

    async with raw_http_server(legacy) as server:
        async with Client.connect_http(server.url, mode="auto", request_timeout=10) as client:
            assert client.protocol_version == "2025-11-25" and not client.is_modern
            await client.call_tool("any", {})
    methods = [r.json().get("method") for r in server.requests if r.method == "POST"]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    call = next(r for r in server.requests if r.method == "POST" and r.json().get("method") == "tools/call")
    assert call.headers["mcp-session-id"] == "raw-session-1" and "mcp-method" not in call.headers


async def test_unsupported_version_at_http_400_keeps_its_data_and_is_retried() -> None:
    probes = 0

    async def picky(exchange: Exchange) -> None:
        nonlocal probes
        message = exchange.request.json()
        if message["method"] == "server/discover" and probes == 0:
            probes += 1
            error = {"code": -32022, "message": "Unsupported", "data": {"supported": ["2026-07-28"], "requested": "x"}}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
            await exchange.respond(400, body, {"content-type": "application/json"})
        else:
            await modern(tools_and_calls)(exchange)

    async with raw_http_server(picky) as server:
        async with Client.connect_http(server.url, mode="auto", request_timeout=10) as client:
            assert client.protocol_version == "2026-07-28"
    assert len(server.posted("server/discover")) == 2 and server.posted("initialize") == []


async def test_header_mismatch_lists_the_tools_again_and_retries_once() -> None:
    calls = 0

    async def strict(exchange: Exchange, message: dict[str, Any]) -> None:
        nonlocal calls
        if message["method"] == "tools/call":
            calls += 1
            if "mcp-param-region" not in exchange.request.headers:
                error = {"code": -32020, "message": "Header mismatch: Mcp-Param-Region missing"}
                body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
                await exchange.respond(400, body, {"content-type": "application/json"})
                return
        await tools_and_calls(exchange, message)

    async with raw_http_server(modern(strict)) as server:
        async with Client.connect_http(server.url, mode="2026-07-28", request_timeout=10) as client:
            # Pinned: the tools were never listed, so the client lists them before the call to learn the headers.
            await client.call_tool("wetter-für-heute", {"region": "eu"})
    assert calls == 1 and len(server.posted("tools/list")) == 1


async def test_a_timed_out_modern_request_closes_its_post_and_posts_no_cancellation() -> None:
    async def slow(exchange: Exchange, message: dict[str, Any]) -> None:
        if message["method"] == "tools/call":
            await exchange.start_sse()
            await exchange.hold()  # never answers; returns when the client closes the stream
        else:
            await tools_and_calls(exchange, message)

    async with raw_http_server(modern(slow)) as server:
        async with Client.connect_http(server.url, mode="2026-07-28", request_timeout=10) as client:
            with pytest.raises(TimeoutError):
                await client.call_tool("hang", {}, timeout=0.3)
            await anyio.sleep(0.2)
    assert server.posted("notifications/cancelled") == []  # closing the stream is the cancellation in 2026-07-28


# -- the pure parts -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [  # the spec's examples (basic/transports/streamable-http.mdx, "Value Encoding")
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("us west 1", "us west 1"),
        ("\tindented", "=?base64?CWluZGVudGVk?="),
    ],
)
def test_header_values_are_encoded_as_the_spec_says(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


def prop(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"p": schema}}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (prop({"type": "string", "x-mcp-header": "Region"}), None),
        ({"type": "object", "properties": {"a": prop({"type": "integer", "x-mcp-header": "Deep"})}}, None),
        (prop({"type": "string", "x-mcp-header": ""}), "not a non-empty HTTP token"),
        (prop({"type": "string", "x-mcp-header": "My Region"}), "not a non-empty HTTP token"),
        (prop({"type": "string", "x-mcp-header": "Région"}), "not a non-empty HTTP token"),
        (prop({"type": "string", "x-mcp-header": "Region:1"}), "not a non-empty HTTP token"),
        (prop({"type": "number", "x-mcp-header": "Score"}), "only integer, string or boolean"),
        (prop({"type": "object", "x-mcp-header": "Data"}), "only integer, string or boolean"),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "MyField"},
                    "b": {"type": "string", "x-mcp-header": "myfield"},
                },
            },
            "repeats",
        ),
        (
            {
                "type": "object",
                "properties": {"l": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}},
            },
            "outside a chain",
        ),
        ({"type": "object", "anyOf": [prop({"type": "string", "x-mcp-header": "A"})]}, "outside a chain"),
        ({"type": "string", "x-mcp-header": "Root"}, "outside a chain"),
    ],
)
def test_x_mcp_header_annotations_are_judged(schema: dict[str, Any], reason: str | None) -> None:
    found = invalid_x_mcp_header(schema)
    assert found is None if reason is None else (found is not None and reason in found)


def test_param_headers_render_present_values_only() -> None:
    headers = header_map(REGION_TOOL["inputSchema"])
    assert headers == {("region",): "Region", ("options", "dry"): "Dry"}
    assert param_headers(headers, {"region": "eu", "options": {"dry": False}}) == {
        "Mcp-Param-Region": "eu",
        "Mcp-Param-Dry": "false",
    }
    assert param_headers(headers, {"region": None, "options": "not an object"}) == {}
    count = {("n",): "N"}
    assert param_headers(count, {"n": 42}) == {"Mcp-Param-N": "42"}
    assert param_headers(count, {"n": 42.0}) == {"Mcp-Param-N": "42"}
    assert param_headers(count, {"n": 2**60}) == {}  # beyond JavaScript's safe integers: not mirrored
