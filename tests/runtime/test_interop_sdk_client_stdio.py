"""The official MCP Python SDK client (``mcp==2.3.0``, ``mcp.Client``) against a mcpgen server over stdio, in a real
subprocess, in each of its modes: pinned "2026-07-28" (every request modern), "auto" (``server/discover`` first,
which our server answers, so modern too) and "legacy" (the ``initialize`` handshake at 2025-11-25). The same server
code serves all three: tools, a prompt, resources, cache hints, logging, an elicitation tool (a server->client
request in the legacy era, an input round in the modern one, both answered by the SDK's elicitation callback),
and ``subscriptions/listen`` (modern) with a tool that changes the tool list.

The server is this module run as a script (``python test_interop_sdk_client_stdio.py``)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpgen_runtime import Context, Server
from mcpgen_runtime.server import CacheHint

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build_server() -> Server:
    server = Server("interop", version="3.1.0", cache_hints={"tools/list": CacheHint(30_000)})

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def greet(context: Context) -> str:
        """Asks for the user's name, then greets them."""
        await context.info("asking for a name")
        answer = await context.elicit("Your name?", NAME)
        return f"Hello, {(answer.content or {}).get('name')} ({context.protocol_version})"

    @server.tool()
    async def grow() -> str:
        """Adds a tool (tools/list_changed)."""

        @server.tool(name="grown", replace=True)
        async def grown() -> str:
            return "grown"

        await server.notify_tools_changed()
        return "grown"

    @server.resource("note://today", mime_type="text/plain", cache=CacheHint(1_000, "private"))
    async def today() -> str:
        return "sunny"

    @server.prompt()
    async def ask(topic: str) -> str:
        return f"Tell me about {topic}"

    return server


@asynccontextmanager
async def sdk_client(mode: str, **options: Any) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[__file__])
    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(params, mode=mode, read_timeout_seconds=10, **options) as client:  # type: ignore[arg-type]
            yield client


async def on_elicit(context: Any, params: Any) -> Any:
    import mcp_types

    assert params.message == "Your name?"
    return mcp_types.ElicitResult(action="accept", content={"name": "Ada"})


async def exercise(client: Any, logs: list[Any]) -> None:
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"add", "greet", "grow"} <= tools
    assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"
    greeted = await client.call_tool("greet", {})
    assert greeted.content[0].text == f"Hello, Ada ({client.protocol_version})"
    read = await client.read_resource("note://today")
    assert read.contents[0].text == "sunny"
    prompt = await client.get_prompt("ask", {"topic": "rain"})
    assert prompt.messages[0].content.text == "Tell me about rain"


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_the_modern_sdk_client(mode: str) -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with sdk_client(mode, elicitation_callback=on_elicit, logging_callback=on_log) as client:
        assert client.protocol_version == "2026-07-28"
        if mode == "auto":  # learnt from server/discover (a pinned client never asks)
            assert client.server_info is not None and (client.server_info.name, client.server_info.version) == (
                "interop",
                "3.1.0",
            )
        await exercise(client, logs)
        async with client.listen(tools_list_changed=True) as subscription:
            assert await client.call_tool("grow", {}) is not None
            with anyio.fail_after(10):
                async for _event in subscription:
                    break
        assert "grown" in {tool.name for tool in (await client.list_tools()).tools}


async def test_the_legacy_sdk_client() -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with sdk_client("legacy", elicitation_callback=on_elicit, logging_callback=on_log) as client:
        assert client.protocol_version == "2025-11-25"
        await exercise(client, logs)
    assert [log.data for log in logs] == ["asking for a name"]


if __name__ == "__main__":
    build_server().run_stdio(log_level="WARNING")
