"""The Weather server as its clients see it, in both eras of MCP: 2026-07-28 (each request carries its version;
no handshake, no session) and 2025-11-25 (the `initialize` handshake older clients use). Each test runs in both,
over streamable HTTP (a real process), and in memory (the server object itself, no process).

The calls by name (`client.call_tool`, `get_prompt`, `read_resource`, `tools()`, ...) work in either era; the typed
stub and models are those of MCP 2026-07-28, the bindings this project was made with (`mcpgen new
--protocol-version`). Run with `pytest`. Every wait is bounded, and nothing leaves this machine (HTTP binds 127.0.0.1).
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
from mcp_bindings import v2026_07_28 as mcp
from mcp_bindings.v2026_07_28.client import ClientStub
from mcpgen_runtime import Client
from mcpgen_runtime.testing import connect_in_memory

from weather.server import server

pytestmark = pytest.mark.anyio

PROTOCOL_VERSION = "2026-07-28"  # the version of the bindings imported above
VERSIONS = ["2026-07-28", "2025-11-25"]  # one per era: the tests that take `connect` run in each
TRANSPORTS = ["http", "memory"]
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


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=TRANSPORTS)
def connect(request: pytest.FixtureRequest, version: str) -> Connect:
    """Opens a client session speaking `version` over one of TRANSPORTS (HTTP: the shared server process)."""
    # `version` pins the era: 2026-07-28 needs no handshake, 2025-11-25 starts with `initialize`. Without it the
    # client tries 2026-07-28 first and falls back to the handshake for a server that does not speak it.
    # log_level asks a 2026-07-28 server for log messages (the handshake era has logging/setLevel instead).
    options: dict[str, Any] = {"version": version, "request_timeout": TIMEOUT, "log_level": "info"}
    if request.param == "http":
        url = request.getfixturevalue("http_url")
        return functools.partial(Client.connect_http, url, **options)
    return functools.partial(connect_in_memory, server, **options)


def text_of(result: Any) -> str:
    """The text of a tool result's or a resource's first block (the examples answer text), in either era's models:
    an isinstance check against the 2026-07-28 bindings would refuse the other era's."""
    blocks = result.content if hasattr(result, "content") else result.contents
    text: str = blocks[0].text
    return text


async def test_typed_calls_in_memory() -> None:
    # The server object itself, connected over memory streams: the whole protocol, its lifespan and middleware, no
    # process to start. The typed stub of MCP 2026-07-28: its params and results are that version's models.
    with anyio.fail_after(TIMEOUT):
        async with connect_in_memory(server, version=PROTOCOL_VERSION) as client:
            api = client.stub(ClientStub)
            result = await api.call_tool(mcp.CallToolRequestParams(name="get_forecast", arguments={"city": "Rome"}))
            assert isinstance(result.content[0], mcp.TextContent)
            assert result.content[0].text.startswith("Day 1: ")
            completed = await api.complete(
                mcp.CompleteRequestParams(
                    ref=mcp.PromptReference(name="plan_trip"),
                    argument=mcp.CompleteRequestParamsArgument(name="city", value="li"),
                )
            )
            assert completed.completion.values == ["Lisbon"]


async def test_lists_every_example(connect: Connect, version: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            assert client.protocol_version == version
            assert sorted(tool.name for tool in await client.tools()) == ["get_forecast"]
            assert [resource.uri for resource in await client.resources()] == ["weather://cities"]
            templates = await client.resource_templates()
            assert [template.uri_template for template in templates] == ["weather://{city}/current"]
            assert [prompt.name for prompt in await client.prompts()] == ["plan_trip"]


async def test_get_forecast(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            result = await client.call_tool("get_forecast", {"city": "Oslo", "days": 2})
            assert not result.is_error
            lines = text_of(result).splitlines()
            assert [line.split(":")[0] for line in lines] == ["Day 1", "Day 2"]
            assert all(line.endswith(" in Oslo") for line in lines)
            # A tool's error is a result the model can read, not a protocol error.
            result = await client.call_tool("get_forecast", {"city": "Oslo", "days": 0})
            assert result.is_error
            assert "between 1 and 7" in text_of(result)


async def test_resources(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            assert "Oslo" in text_of(await client.read_resource("weather://cities")).splitlines()
            assert text_of(await client.read_resource("weather://Oslo/current")).endswith(" in Oslo")


async def test_prompt_and_its_completion(connect: Connect) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect() as client:
            prompt = await client.get_prompt("plan_trip", {"city": "Rome", "days": "2"})
            assert "2-day trip to Rome" in prompt.messages[0].content.text
            # Completion has no call by name: the negotiated version's stub and models (client.api, client.bindings).
            models = client.bindings
            completed = await client.api.complete(
                models.CompleteRequestParams(
                    ref=models.PromptReference(name="plan_trip"),
                    argument=models.CompleteRequestParamsArgument(name="city", value="li"),
                )
            )
            assert completed.completion.values == ["Lisbon"]
