"""mcpgen_runtime.testing.connect_in_memory: a real ``Client`` against a real ``Server`` in one process, over memory
streams: the whole protocol (negotiation in either era, capabilities, server -> client requests), no subprocess.
The tests that call through the 2025-11-25 stubs pin that version; the default (auto) mode speaks 2026-07-28.

Typed: tests/test_typing.py runs mypy --strict on this file."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support.content import text_of

from mcp_bindings import v2024_11_05 as v1
from mcp_bindings import v2025_11_25 as v4
from mcp_bindings import v2026_07_28 as v5
from mcpgen_runtime import Client, Context, JSONRPCError, Server, connect_in_memory
from mcpgen_runtime.client import ClientContext

pytestmark = pytest.mark.anyio

WAIT = 10.0


def adder() -> Server:
    server = Server("adder", version="2.0.0", instructions="Adds.")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def ask(question: str, context: Context) -> str:
        result = await context.sample(question, max_tokens=5)
        assert result.content is not None and not isinstance(result.content, list)
        return result.content.text if result.content.type == "text" else "?"

    @server.tool()
    async def sleepy() -> str:
        await anyio.sleep_forever()
        return "never"

    return server


class Sampler(v4.client.ClientHandlers[ClientContext]):
    async def create_message(
        self, params: v4.CreateMessageRequestParams, context: ClientContext
    ) -> v4.CreateMessageResult:
        return v4.CreateMessageResult(role="assistant", model="m", content=v4.TextContent(text="forty-two"))


async def test_the_whole_protocol_runs_in_memory() -> None:
    server = adder()
    with anyio.fail_after(WAIT):
        async with connect_in_memory(server) as client:
            assert client.protocol_version == "2026-07-28"  # the default auto mode: the newest both speak
            assert client.instructions == "Adds."
            assert "tools" in client.server_capabilities
            assert sorted(tool.name for tool in await client.tools()) == ["add", "ask", "sleepy"]
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert isinstance(result, v5.CallToolResult)  # typed as the union over versions: narrowed here
            assert result.structured_content is None and text_of(result) == "5"
            info = client.server_info  # in 2026-07-28: from the _meta of the latest result
            assert info is not None and info.name == "adder" and info.version == "2.0.0"
            assert len(server.connections) == 1
        assert not server.connections  # the server side has ended too


async def test_the_legacy_era_runs_in_memory() -> None:
    server = adder()
    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            assert client.protocol_version == "2025-11-25"
            info = client.server_info
            assert info is not None and info.name == "adder" and info.version == "2.0.0"
            assert client.instructions == "Adds."
            api = client.stub(v4.client.ClientStub)
            assert sorted(tool.name for tool in await api.list_all_tools()) == ["add", "ask", "sleepy"]
            result = await api.call_tool(v4.CallToolRequestParams(name="add", arguments={"a": 2, "b": 3}))
            assert result.structured_content is None and text_of(result) == "5"
        assert not server.connections


async def test_a_pinned_version_is_negotiated() -> None:
    with anyio.fail_after(WAIT):
        async with connect_in_memory(adder(), version="2024-11-05") as client:
            assert client.protocol_version == "2024-11-05"
            api = client.stub(v1.client.ClientStub)
            result = await api.call_tool(v1.CallToolRequestParams(name="add", arguments={"a": 1, "b": 1}))
            assert text_of(result) == "2"


async def test_server_to_client_requests_reach_the_client_handlers() -> None:
    with anyio.fail_after(WAIT):
        async with connect_in_memory(adder(), handlers=Sampler(), version="2025-11-25") as client:
            assert "sampling" in client.client_capabilities
            api = client.stub(v4.client.ClientStub)
            result = await api.call_tool(v4.CallToolRequestParams(name="ask", arguments={"question": "6*7?"}))
            assert text_of(result) == "forty-two"


async def test_several_clients_of_one_server_at_once() -> None:
    server = adder()
    with anyio.fail_after(WAIT):
        async with (
            connect_in_memory(server, version="2025-11-25") as first,
            connect_in_memory(server, version="2025-11-25") as second,
        ):
            assert len(server.connections) == 2
            for client, n in ((first, 1), (second, 2)):
                api = client.stub(v4.client.ClientStub)
                result = await api.call_tool(v4.CallToolRequestParams(name="add", arguments={"a": n, "b": n}))
                assert text_of(result) == str(2 * n)
        assert not server.connections


async def test_an_exception_in_the_body_comes_out_as_itself() -> None:
    with anyio.fail_after(WAIT), pytest.raises(KeyError, match="mine"):
        async with connect_in_memory(adder()):
            raise KeyError("mine")


async def test_a_server_error_reaches_the_client_as_an_error() -> None:
    with anyio.fail_after(WAIT):
        async with connect_in_memory(adder()) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.session.request("no/such/method", {}, timeout=WAIT)
            assert info.value.code == -32601


async def test_leaving_with_a_request_in_flight_does_not_hang() -> None:
    # The client's exit cancels its own call; the server's handler is cancelled after the session's grace.
    async def call_sleepy(client: Client) -> Any:
        api = client.stub(v4.client.ClientStub)
        return await api.call_tool(v4.CallToolRequestParams(name="sleepy"))

    server = adder()
    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client, anyio.create_task_group() as tg:
            tg.start_soon(call_sleepy, client)
            await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
    assert not server.connections
