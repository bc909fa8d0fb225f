"""Our client with no ``mode`` (the default, ``auto``) against every kind of server, each a real peer: a mcpgen server
(stdio, HTTP and in process: 2026-07-28), the official SDK's server in each of its configurations (stdio; HTTP
stateful, JSON responses, stateless, stateless with JSON responses: 2026-07-28), a server that speaks only the
legacy era (``server/discover`` is method-not-found: the client falls back to ``initialize``) and one that speaks
only 2026-07-28 (``initialize`` is method-not-found). In every cell the era-independent calls work and come back
as the negotiated version's models. Also: a legacy ``version=`` with no mode means the legacy mode.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from server_fixture import server as weather_server
from support.content import text_of
from support.servers import serving_server

import mcp_bindings.v2025_11_25 as v4
import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.client import Client, ClientContext
from mcpgen_runtime.client.settings import DEFAULT_CLIENT_INFO, ClientSettings

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
WEATHER = [sys.executable, str(HERE / "server_fixture.py")]
SDK_SERVER = [sys.executable, str(HERE / "sdk_dual_server.py")]
ONE_ERA = [sys.executable, str(HERE.parent / "support" / "one_era_servers.py")]
WAIT = 30.0
# The SDK server's HTTP configurations: its flags (see sdk_dual_server.HTTP_FLAGS).
SDK_HTTP = {
    "http": [],
    "http-json": ["--json-response"],
    "http-stateless": ["--stateless"],
    "http-stateless-json": ["--stateless", "--json-response"],
}


@contextmanager
def sdk_http_server(flags: list[str], timeout: float = WAIT) -> Iterator[str]:
    """The SDK server over streamable HTTP with ``flags``; its URL (the first line it prints, waited for bounded)."""
    process = subprocess.Popen([*SDK_SERVER, "http", *flags], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(timeout), f"the SDK server printed no URL within {timeout} s"
        url = process.stdout.readline().decode().strip()
        assert url.startswith("http://"), url
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class Elicitor(v4.client.ClientHandlers[ClientContext]):
    """Answers the SDK server's ``greet``: an ``elicitation/create`` request (legacy) or an input round (2026)."""

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        return v4.ElicitResult(action="accept", content={"name": "Ada"})


# -- a mcpgen server ------------------------------------------------------------------------------------------------


@asynccontextmanager
async def weather_client(transport: str) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with Client.connect(WEATHER) as client:
            yield client
    elif transport == "http":
        async with serving_server(weather_server) as url, Client.connect(url) as client:
            yield client
    else:
        async with Client.connect(weather_server) as client:
            yield client


@pytest.mark.parametrize("transport", ["stdio", "http", "in-process"])
async def test_the_default_mode_speaks_2026_07_28_to_a_mcpgen_server(transport: str) -> None:
    with anyio.fail_after(WAIT):
        async with weather_client(transport) as client:
            assert client.settings.mode == "auto"
            assert client.protocol_version == "2026-07-28" and client.is_modern
            assert client.discover_result is not None and client.instructions == "Ask about the weather."
            result = await client.call_tool("forecast", {"city": "Paris"})
            assert isinstance(result, v5.CallToolResult)
            assert result.structured_content == {"city": "Paris", "celsius": 21.5}
            prompt = await client.get_prompt("plan_trip", {"city": "Lisbon"})
            assert isinstance(prompt, v5.GetPromptResult)
            assert prompt.messages[0].content.type == "text"
            assert prompt.messages[0].content.text == "Plan a 3-day trip to Lisbon."
            resource = await client.read_resource("weather://cities")
            assert isinstance(resource, v5.ReadResourceResult)
            assert getattr(resource.contents[0], "text", None) == "Berlin\nLisbon\nLondon\nParis"
            # The generated 2026-07-28 stub works on the same connection (the client fills in each `_meta`).
            api = client.stub(v5.client.ClientStub)
            tools = await api.list_all_tools()
            assert {"forecast", "get_forecast", "fail"} <= {tool.name for tool in tools}


# -- the official SDK's server ---------------------------------------------------------------------------------------


@asynccontextmanager
async def sdk_client(configuration: str) -> AsyncIterator[Client]:
    options: dict[str, Any] = {"handlers": Elicitor(), "request_timeout": WAIT}
    if configuration == "stdio":
        async with Client.connect(SDK_SERVER, **options) as client:
            yield client
    else:
        with sdk_http_server(SDK_HTTP[configuration]) as url:
            async with Client.connect(url, **options) as client:
                yield client


@pytest.mark.parametrize("configuration", ["stdio", *SDK_HTTP])
async def test_the_default_mode_speaks_2026_07_28_to_the_sdk_server(configuration: str) -> None:
    with anyio.fail_after(2 * WAIT):
        async with sdk_client(configuration) as client:
            assert client.protocol_version == "2026-07-28" and client.is_modern
            assert client.instructions == "an SDK server serving both eras"
            added = await client.call_tool("add", {"a": 2, "b": 40})
            assert isinstance(added, v5.CallToolResult) and text_of(added) == "42"
            # The SDK asks for the name with an input round, which the client answers through its handlers.
            assert text_of(await client.call_tool("greet", {})) == "Hello, Ada!"
            resource = await client.read_resource("config://app")
            assert getattr(resource.contents[0], "text", None) == "debug=true"
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            assert "Please review: x = 1" in str(prompt.messages[0].content)


# -- servers of one era -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("era", "version", "models"), [("legacy", "2025-11-25", v4), ("modern", "2026-07-28", v5)])
async def test_the_default_mode_finds_the_era_of_a_one_era_server(era: str, version: str, models: Any) -> None:
    with anyio.fail_after(WAIT):
        async with Client.connect([*ONE_ERA, "--era", era]) as client:
            assert client.protocol_version == version and client.is_modern == (era == "modern")
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert isinstance(result, models.CallToolResult) and result.structured_content == {"sum": 3}
            assert isinstance(await client.get_prompt("welcome", {"who": "Ada"}), models.GetPromptResult)
            resource = await client.read_resource("memo://motto")
            assert isinstance(resource, models.ReadResourceResult) and len(resource.contents) == 1
            assert [tool.name for tool in await client.tools()] == ["add", "greet", "describe_point"]


async def test_the_legacy_mode_still_fails_against_a_modern_only_server() -> None:
    """No silent fallback the other way: ``mode="legacy"`` means the handshake, which a modern-only server refuses."""
    with anyio.fail_after(WAIT):
        with pytest.raises(JSONRPCError) as info:
            async with Client.connect([*ONE_ERA, "--era", "modern"], mode="legacy"):
                pass
        assert info.value.code == -32601 and "initialize" in info.value.message


# -- the defaults and a legacy version ---------------------------------------------------------------------------


def test_the_default_mode_is_auto() -> None:
    assert Client().mode == "auto"
    assert ClientSettings(dict(DEFAULT_CLIENT_INFO), {}).mode == "auto"


async def test_a_legacy_version_without_a_mode_means_the_legacy_mode() -> None:
    with anyio.fail_after(WAIT):
        async with Client.connect(weather_server, version="2025-11-25") as client:
            assert client.mode == "legacy" and client.protocol_version == "2025-11-25"
            assert isinstance(
                await client.call_tool("get_forecast", {"latitude": 1, "longitude": 2}), v4.CallToolResult
            )
        # A modern version is the mode itself.
        async with Client.connect(weather_server, version="2026-07-28") as client:
            assert client.mode == "2026-07-28" and client.protocol_version == "2026-07-28"


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
async def test_a_legacy_version_with_another_mode_is_refused(mode: str) -> None:
    with pytest.raises(
        ValueError, match=f"version='2025-11-25' is a legacy version: it needs mode='legacy', not '{mode}'"
    ):
        async with Client.connect(weather_server, version="2025-11-25", mode=mode):
            pass
