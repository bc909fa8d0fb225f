"""``Mcp-Param-*`` headers of ``x-mcp-header`` tool parameters (MCP 2026-07-28): checked by the server layer against
the arguments, over real streamable HTTP (a uvicorn server on 127.0.0.1, port 0); a mismatch is -32020, HTTP 400.
Also the header walk and decoding on their own."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import httpx2
import pytest
from pydantic import Field
from support.servers import serving_server

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.dispatch.tool_headers import decode_param_header, header_parameters

pytestmark = pytest.mark.anyio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
REGION = {"x-mcp-header": "Region"}


def build_server() -> Server:
    server = Server("headers")

    @server.tool()
    async def run_query(query: str, region: str = Field(default="-", json_schema_extra=REGION), limit: int = 10) -> str:
        return f"{region}:{query}:{limit}"

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            },
        }
    )
    async def typed(**arguments: Any) -> str:
        return "ok"

    return server


async def post_call(url: str, name: str, arguments: dict[str, Any], **params: str) -> httpx2.Response:
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
        **{f"mcp-param-{key}": value for key, value in params.items()},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"_meta": META, "name": name, "arguments": arguments},
    }
    async with httpx2.AsyncClient(timeout=5) as client:
        return await client.post(url, json=body, headers=headers)


def encoded(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


async def test_matching_headers_are_accepted_and_mismatches_refused() -> None:
    with anyio.fail_after(20):
        async with serving_server(build_server()) as url:
            ok = await post_call(url, "run_query", {"query": "q", "region": "eu"}, region="eu")
            assert ok.status_code == 200 and ok.json()["result"]["content"][0]["text"] == "eu:q:10"
            ok = await post_call(
                url, "run_query", {"query": "q", "region": "Hello, 世界"}, region=encoded("Hello, 世界")
            )
            assert ok.status_code == 200, ok.text
            absent = await post_call(url, "run_query", {"query": "q"})  # no value, no header
            assert absent.status_code == 200 and absent.json()["result"]["content"][0]["text"] == "-:q:10"
            typed = await post_call(
                url, "typed", {"count": 42, "flag": True, "nested": {"zone": "z"}}, count="42.0", flag="true", zone="z"
            )
            assert typed.status_code == 200, typed.text
            for arguments, headers in (
                ({"query": "q", "region": "eu"}, {"region": "us"}),  # differs
                ({"query": "q", "region": "eu"}, {}),  # missing
                ({"query": "q"}, {"region": "eu"}),  # no value in the body
                ({"query": "q", "region": "Hello"}, {"region": "=?base64?SGVsbG8?="}),  # bad padding
                ({"query": "q", "region": "Hello"}, {"region": "=?base64?SGVs!!!bG8=?="}),  # bad characters
            ):
                refused = await post_call(url, "run_query", arguments, **headers)
                assert refused.status_code == 400, (arguments, headers, refused.text)
                assert refused.json()["error"]["code"] == -32020
            refused = await post_call(url, "typed", {"count": 42, "flag": False}, count="41", flag="false")
            assert refused.json()["error"]["code"] == -32020


def test_annotations_are_found_only_through_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "C"}}},
            "d": {"type": "array", "items": {"type": "string", "x-mcp-header": "D"}},
        },
        "anyOf": [{"properties": {"e": {"x-mcp-header": "E"}}}],
    }
    assert list(header_parameters(schema)) == [(("a",), "A"), (("b", "c"), "C")]


def test_base64_values_are_decoded_strictly() -> None:
    assert decode_param_header(encoded(" padded ")) == " padded "
    assert decode_param_header("plain") == "plain"
    assert decode_param_header("=?base64?SGVsbG8") == "=?base64?SGVsbG8"  # no suffix: literal
    assert decode_param_header("=?base64?SGVsbG8?=") is None
    assert decode_param_header("=?base64?//79?=") is None  # not UTF-8
