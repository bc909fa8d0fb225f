"""The typed server and client over streamable HTTP, each against the official SDK (mcp==2.3.0) and each other.

Real uvicorn servers on 127.0.0.1 (port 0), every wait bounded; test_http.py covers the transport itself.
"""

from __future__ import annotations

from functools import partial

import anyio
import pytest
from pydantic import BaseModel

from mcp_bindings import v2025_06_18 as v6
from mcp_bindings.v2025_06_18.client import ClientStub
from mcpgen_runtime import Client, Context, Server
from mcpgen_runtime.transports.http.server.app import serve_app

pytestmark = pytest.mark.anyio


class Forecast(BaseModel):
    city: str
    celsius: float


def weather_server() -> Server:
    server = Server("weather", version="1.0.0")

    @server.tool()
    async def get_forecast(city: str, context: Context) -> Forecast:
        """Get the forecast for a city."""
        await context.report_progress(1, 1, "looked it up")
        return Forecast(city=city, celsius=21.5)

    @server.resource("weather://{city}/current")
    async def current(city: str) -> str:
        """Current conditions in a city."""
        return f"sunny in {city}"

    @server.prompt()
    async def plan_trip(city: str) -> str:
        """Plan a trip to a city."""
        return f"Plan a weekend in {city}."

    return server


async def test_our_client_against_our_server_over_http() -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(weather_server().serve_http, "127.0.0.1", 0))
            async with Client.connect_http(f"{base}/mcp", version="2025-06-18") as client:
                api = client.stub(ClientStub, progress_callback=on_progress)
                tools = await api.list_all_tools()
                assert [tool.name for tool in tools] == ["get_forecast"]
                assert tools[0].output_schema is not None
                result = await api.call_tool(v6.CallToolRequestParams(name="get_forecast", arguments={"city": "Oslo"}))
                assert result.structured_content == {"city": "Oslo", "celsius": 21.5}
                assert progress == [1]
                read = await api.read_resource(v6.ReadResourceRequestParams(uri="weather://Oslo/current"))
                assert isinstance(read.contents[0], v6.TextResourceContents)
                assert read.contents[0].text == "sunny in Oslo"
                prompt = await api.get_prompt(v6.GetPromptRequestParams(name="plan_trip", arguments={"city": "Rome"}))
                assert "Rome" in str(prompt.messages[0].content)
            tg.cancel_scope.cancel()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_official_sdk_client_against_our_typed_server_over_http() -> None:
    from mcp import Client as SDKClient

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(weather_server().serve_http, "127.0.0.1", 0))
            async with SDKClient(f"{base}/mcp", mode="legacy") as sdk:
                assert sdk.protocol_version == "2025-11-25"
                tools = await sdk.list_tools()
                assert [tool.name for tool in tools.tools] == ["get_forecast"]
                result = await sdk.call_tool("get_forecast", {"city": "Lima"})
                assert result.structured_content == {"city": "Lima", "celsius": 21.5}
                templates = await sdk.list_resource_templates()
                assert templates.resource_templates[0].uri_template == "weather://{city}/current"
                prompts = await sdk.list_prompts()
                assert prompts.prompts[0].name == "plan_trip"
            tg.cancel_scope.cancel()


async def test_our_typed_client_against_the_official_sdk_server_over_http() -> None:
    from mcp.server.mcpserver import MCPServer

    sdk_server = MCPServer("sdk-http")

    @sdk_server.tool(description="Add two integers")
    def add(a: int, b: int) -> int:
        return a + b

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, sdk_server.streamable_http_app(), "127.0.0.1", 0))
            async with Client.connect_http(f"{base}/mcp", version="2025-06-18") as client:
                api = client.stub(ClientStub)
                assert [tool.name for tool in await api.list_all_tools()] == ["add"]
                result = await api.call_tool(v6.CallToolRequestParams(name="add", arguments={"a": 2, "b": 40}))
                assert isinstance(result.content[0], v6.TextContent) and result.content[0].text == "42"
                await api.ping()
            tg.cancel_scope.cancel()
