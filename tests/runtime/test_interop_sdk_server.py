"""Our client in each mode against a server written with the official Python SDK (``mcp`` 2.3.0 ``MCPServer``, which
serves both eras), run as a real subprocess over stdio and over streamable HTTP (``sdk_dual_server.py``).

The matrix: modes ``legacy`` (the ``initialize`` handshake, 2025-11-25), ``auto`` (``server/discover``, which the
SDK server answers: 2026-07-28) and ``2026-07-28`` (pinned, no probe), each over stdio and HTTP. In every cell: the
negotiated version, the server's identity, a plain ``tools/call``, a tool that asks the user for input (an
``elicitation/create`` request in the legacy era, a multi round-trip request in 2026-07-28, both answered by
the same ``ClientHandlers.elicit``), a tool whose parameter travels as ``Mcp-Param-Region`` over HTTP, a resource
and a prompt; in the modern era also the generated 2026-07-28 stub, with the ``_meta`` the client hands out.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from support.content import text_of

import mcp_bindings.v2025_11_25 as v4
import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime.client import Client, ClientContext

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("sdk_dual_server.py"))]
MODES = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}


class Handlers(v4.client.ClientHandlers[ClientContext]):
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        self.asked.append(params.message)
        return v4.ElicitResult(action="accept", content={"name": "Ada"})


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process = subprocess.Popen([*SERVER, "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://"), url
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def connect(transport: str, url: str, mode: str, handlers: Handlers) -> AbstractAsyncContextManager[Client]:
    options: dict[str, Any] = {"mode": mode, "handlers": handlers, "request_timeout": 20}
    if transport == "stdio":
        return Client.connect_stdio(SERVER, **options)
    return Client.connect_http(url, **options)


@pytest.fixture
def url(request: pytest.FixtureRequest, transport: str) -> str:
    """The HTTP server's URL (started once for the module) for the HTTP cells; nothing for stdio."""
    return str(request.getfixturevalue("http_url")) if transport == "http" else ""


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", list(MODES))
async def test_mode_against_the_sdk_server(transport: str, mode: str, url: str) -> None:
    handlers = Handlers()
    with anyio.fail_after(60):
        async with connect(transport, url, mode, handlers) as client:
            assert client.protocol_version == MODES[mode]
            assert client.is_modern == (mode != "legacy")
            assert client.bindings is (v4 if mode == "legacy" else v5)
            if mode != "2026-07-28":  # a pinned mode asks nothing before its first call
                assert client.server_info is not None and client.server_info.name == "sdk-dual"
            assert {tool.name for tool in await client.tools()} == {"add", "greet", "region", "touch"}
            assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
            # Elicitation: a server -> client request (legacy) or an InputRequiredResult round (modern).
            assert text_of(await client.call_tool("greet", {})) == "Hello, Ada!"
            assert handlers.asked == ["What is your name?"]
            assert text_of(await client.call_tool("region", {"region": "eu-west"})) == "region eu-west"
            resource = await client.read_resource("config://app")
            assert resource.contents[0].text == "debug=true"
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            assert "x = 1" in prompt.messages[0].content.text
            assert client.server_info is not None and client.server_info.version == "2.3.0"
            if client.is_modern:
                # The generated 2026-07-28 stub: the connection fills in the request _meta its params require.
                result = await client.api.call_tool(
                    v5.CallToolRequestParams(
                        name="add",
                        arguments={"a": 40, "b": 2},
                    )
                )
                assert isinstance(result, v5.CallToolResult) and text_of(result) == "42"


async def test_the_sdk_server_checks_the_param_header_we_send(http_url: str) -> None:
    """What ``region`` proves over HTTP: the SDK server refuses a modern tools/call whose Mcp-Param-Region header is
    missing (400, HeaderMismatch), so the call above succeeded because our client mirrored the argument."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "region", "arguments": {"region": "eu-west"}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "region",
    }
    async with httpx2.AsyncClient(timeout=20) as http:
        refused = await http.post(http_url, json=body, headers=headers)
        accepted = await http.post(http_url, json=body, headers={**headers, "Mcp-Param-Region": "eu-west"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
    assert accepted.status_code == 200


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_subscriptions_listen_against_the_sdk_server(transport: str, url: str) -> None:
    with anyio.fail_after(30):
        async with connect(transport, url, "auto", Handlers()) as client:
            await client.tools()
            async with client.listen(tools=True, resource_uris=["config://app"]) as subscription:
                assert subscription.acknowledged.tools_list_changed is True
                assert subscription.acknowledged.resource_subscriptions == ["config://app"]
                assert text_of(await client.call_tool("touch", {"uri": "config://app"})) == "touched"
                changed, updated = await subscription.next(), await subscription.next()
            assert isinstance(changed, v5.ToolListChangedNotification)
            assert isinstance(updated, v5.ResourceUpdatedNotification) and updated.params.uri == "config://app"
            assert not client.cache("tools").cached  # the change on the stream invalidated the cached list
            # The stream is closed: the server still serves the connection.
            assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
