"""The Weather server as its clients see it: started as a real process and driven with the typed mcpgen
client speaking MCP 2025-06-18, over stdio and over streamable HTTP.

Run with `pytest`. Every wait is bounded, and nothing leaves this machine (HTTP binds 127.0.0.1).
"""

from __future__ import annotations

import functools
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest
from mcp_bindings import v2025_06_18 as mcp
from mcp_bindings.v2025_06_18.client import ClientHandlers, ClientStub
from mcpgen_runtime import Client
from mcpgen_runtime.client import ClientContext
from mcpgen_runtime.testing import connect_in_memory

from weather.server import server

pytestmark = pytest.mark.anyio

PROTOCOL_VERSION = "2025-06-18"
SERVER_COMMAND = [sys.executable, "-m", "weather.server"]
TIMEOUT = 30  # seconds: the bound of every wait below

Connect = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_listening(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with code {process.returncode} before it listened")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"the server did not listen on port {port} within {TIMEOUT} s")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """`python -m weather.server --transport http` on a free port, shared by the module's HTTP tests."""
    port = free_port()
    process = subprocess.Popen([*SERVER_COMMAND, "--transport", "http", "--port", str(port)])
    try:
        wait_until_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest) -> Connect:
    """Opens a client session: over stdio, each with its own server process; over HTTP, to the shared one."""
    if request.param == "http":
        url = request.getfixturevalue("http_url")
        return functools.partial(Client.connect_http, url, version=PROTOCOL_VERSION, request_timeout=TIMEOUT)
    return functools.partial(Client.connect_stdio, SERVER_COMMAND, version=PROTOCOL_VERSION, request_timeout=TIMEOUT)


def text_of(result: mcp.CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, mcp.TextContent)
    text: str = block.text
    return text


async def call(api: ClientStub, tool: str, **arguments: Any) -> mcp.CallToolResult:
    return await api.call_tool(mcp.CallToolRequestParams(name=tool, arguments=arguments))


class DesktopClient(ClientHandlers[ClientContext]):
    """What a desktop client does for the server: keeps its log messages, and asks the user (who says yes)."""

    def __init__(self) -> None:
        self.logs: list[str] = []

    async def on_logging_message(self, params: mcp.LoggingMessageNotificationParams, context: ClientContext) -> None:
        self.logs.append(str(params.data))

    async def elicit(self, params: mcp.ElicitRequestParams, context: ClientContext) -> mcp.ElicitResult:
        return mcp.ElicitResult(action="accept", content={"confirm": True})


async def test_in_memory_without_a_process() -> None:
    # The server object itself, connected over memory streams: the whole protocol, its lifespan and middleware, no
    # process to start. Quick to write and to debug; the tests below use the real transports.
    with anyio.fail_after(TIMEOUT):
        async with connect_in_memory(server, version=PROTOCOL_VERSION) as client:
            api = client.stub(ClientStub)
            assert text_of(await call(api, "get_forecast", city="Rome")).startswith("Day 1: ")


async def test_a_booking_lands_in_the_lifespan_state() -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect_in_memory(server, version=PROTOCOL_VERSION, handlers=DesktopClient()) as client:
            api = client.stub(ClientStub)
            assert text_of(await call(api, "book_trip", city="Oslo")) == "Booked a trip to Oslo."
            assert server.lifespan_state.cities == ["Oslo"]  # what the lifespan yields, shared by every handler


async def test_lists_every_example(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            api = client.stub(ClientStub)
            assert client.protocol_version == PROTOCOL_VERSION
            assert sorted(tool.name for tool in await api.list_all_tools()) == [
                "book_trip",
                "count_down",
                "get_forecast",
            ]
            assert [resource.uri for resource in await api.list_all_resources()] == ["weather://cities"]
            templates = await api.list_all_resource_templates()
            assert [template.uri_template for template in templates] == ["weather://{city}/current"]
            assert [prompt.name for prompt in await api.list_all_prompts()] == ["plan_trip"]


async def test_get_forecast(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            api = client.stub(ClientStub)
            result = await call(api, "get_forecast", city="Oslo", days=2)
            assert not result.is_error
            lines = text_of(result).splitlines()
            assert [line.split(":")[0] for line in lines] == ["Day 1", "Day 2"]
            assert all(line.endswith(" in Oslo") for line in lines)
            # A tool's error is a result the model can read, not a protocol error.
            result = await call(api, "get_forecast", city="Oslo", days=0)
            assert result.is_error
            assert "between 1 and 7" in text_of(result)


async def test_resources(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            api = client.stub(ClientStub)
            cities = await api.read_resource(mcp.ReadResourceRequestParams(uri="weather://cities"))
            assert isinstance(cities.contents[0], mcp.TextResourceContents)
            assert "Oslo" in cities.contents[0].text.splitlines()
            current = await api.read_resource(mcp.ReadResourceRequestParams(uri="weather://Oslo/current"))
            assert isinstance(current.contents[0], mcp.TextResourceContents)
            assert current.contents[0].text.endswith(" in Oslo")


async def test_prompt_and_its_completion(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            api = client.stub(ClientStub)
            prompt = await api.get_prompt(
                mcp.GetPromptRequestParams(name="plan_trip", arguments={"city": "Rome", "days": "2"})
            )
            content = prompt.messages[0].content
            assert isinstance(content, mcp.TextContent)
            assert "2-day trip to Rome" in content.text
            completed = await api.complete(
                mcp.CompleteRequestParams(
                    ref=mcp.PromptReference(name="plan_trip"),
                    argument=mcp.CompleteRequestParamsArgument(name="city", value="li"),
                )
            )
            assert completed.completion.values == ["Lisbon"]


async def test_count_down_reports_progress_and_logs(connect: Connect) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    desktop = DesktopClient()
    with anyio.fail_after(TIMEOUT):
        async with connect(handlers=desktop) as client:
            api = client.stub(ClientStub, progress_callback=on_progress)
            assert text_of(await call(api, "count_down", n=3)) == "Lift-off!"
            while len(desktop.logs) < 3:  # log messages are not tied to the request: they may trail its result
                await anyio.sleep(0.01)
    assert progress == [1, 2, 3]
    assert desktop.logs == ["2...", "1...", "0..."]


async def test_book_trip_asks_the_user(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(handlers=DesktopClient()) as client:
            api = client.stub(ClientStub)
            assert text_of(await call(api, "book_trip", city="Lisbon")) == "Booked a trip to Lisbon."


async def test_book_trip_without_elicitation_books_nothing(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            api = client.stub(ClientStub)
            assert "does not support elicitation" in text_of(await call(api, "book_trip", city="Lisbon"))
