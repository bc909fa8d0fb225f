"""The official MCP Python SDK's client (``mcp==2.3.0``, ``mcp.client.client.Client``) against a mcpgen server in a
process of its own, over streamable HTTP on 127.0.0.1, in each of the SDK's modes: ``"2026-07-28"`` (stateless
requests, no handshake), ``"legacy"`` (the ``initialize`` handshake and a session) and ``"auto"`` (``server/discover``
first, which a mcpgen server answers, so it stays on 2026-07-28). The server is tests/runtime/server_fixture.py's,
served with ``Server.run_http`` (uvicorn, port 0: the URL is read from its first line on stderr)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

HERE = Path(__file__).parent
LAUNCH = f"import sys; sys.path.insert(0, {str(HERE)!r}); from server_fixture import server; server.run_http(port=0)"
ANNOUNCEMENT = "mcpgen: serving MCP on "


@contextmanager
def server_process(start_timeout: float = 30.0) -> Iterator[str]:
    """The fixture server as a subprocess serving HTTP; yields its MCP URL, and stops it (bounded) afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        url = _announced_url(process, start_timeout)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        assert process.stderr is not None
        process.stderr.close()


def _announced_url(process: subprocess.Popen[str], timeout: float) -> str:
    """The URL the server prints on stderr; its earlier lines (warnings) are skipped."""
    import threading

    found: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith(ANNOUNCEMENT):
                found.append(line[len(ANNOUNCEMENT) :].strip())
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not found:
        raise RuntimeError(f"the server did not announce its URL within {timeout} s (exit code {process.poll()})")
    return found[0]


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with server_process() as url:
        yield url


async def exercise(client: Client) -> None:
    """Lists, tools/call (with progress), resources/read, prompts/get: what both eras share."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"get_forecast", "forecast", "fail"}
    assert tools["get_forecast"].input_schema["required"] == ["latitude", "longitude"]

    called = await client.call_tool("get_forecast", {"latitude": 52.5, "longitude": 13.4})
    assert not called.is_error and called.content[0].text == "Sunny at 52.5,13.4"  # type: ignore[union-attr]
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    structured = await client.call_tool("forecast", {"city": "Paris"}, progress_callback=on_progress)
    assert structured.structured_content == {"city": "Paris", "celsius": 21.5}
    assert progress == [(1, 2, "looking up"), (2, 2, "done")]
    failed = await client.call_tool("fail", {"reason": "boom"})
    assert failed.is_error and failed.content[0].text == "boom"  # type: ignore[union-attr]

    resources = (await client.list_resources()).resources
    assert [(r.uri, r.name) for r in resources] == [("weather://cities", "cities")]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["weather://{city}/current"]
    static = await client.read_resource("weather://cities")
    assert static.contents[0].text == "Berlin\nLisbon\nLondon\nParis"  # type: ignore[union-attr]
    templated = await client.read_resource("weather://Oslo/current")
    assert json.loads(templated.contents[0].text) == {"city": "Oslo", "celsius": 20}  # type: ignore[union-attr]

    (prompt,) = (await client.list_prompts()).prompts
    assert prompt.name == "plan_trip"
    rendered = await client.get_prompt("plan_trip", {"city": "Lisbon", "days": "5"})
    assert rendered.messages[0].content.text == "Plan a 5-day trip to Lisbon."  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mode", "negotiated"), [("2026-07-28", "2026-07-28"), ("auto", "2026-07-28"), ("legacy", "2025-11-25")]
)
async def test_official_client_in_each_mode(server_url: str, mode: str, negotiated: str) -> None:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append((params.level, params.data))

    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with Client(server_url, mode=mode, logging_callback=on_log, read_timeout_seconds=10) as client:
            assert client.protocol_version == negotiated
            if mode != "2026-07-28":  # a pinned version skips server/discover: the SDK then knows no serverInfo
                assert client.server_info is not None and client.server_info.name == "weather"
            await exercise(client)
            with pytest.raises(MCPError) as missing:
                await client.read_resource("weather://nowhere")
            # Resource not found: -32602 in the modern era, -32002 before it (spec 2026-07-28 changelog).
            assert missing.value.error.code == (-32602 if negotiated == "2026-07-28" else -32002)
            # Log messages travel on the request's own SSE stream. The modern era has no logging/setLevel: a
            # request asks for them with _meta logLevel, and gets none without it (the calls in exercise()).
            if negotiated == "2026-07-28":
                assert logs == []
            logs.clear()
            if negotiated == "2026-07-28":
                await client.call_tool("forecast", {"city": "Oslo"}, meta={"io.modelcontextprotocol/logLevel": "info"})
            else:
                await client.set_logging_level("info")
                await client.call_tool("forecast", {"city": "Oslo"})
            assert logs == [("info", "forecast for Oslo")]


async def test_modern_and_legacy_clients_at_once(server_url: str) -> None:
    """Both eras on the one endpoint of one server process, interleaved."""
    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with (
            Client(server_url, mode="2026-07-28", read_timeout_seconds=10) as modern,
            Client(server_url, mode="legacy", read_timeout_seconds=10) as legacy,
        ):
            results: list[Any] = []

            async def use(client: Client, n: int) -> None:
                result = await client.call_tool("get_forecast", {"latitude": n, "longitude": 0})
                results.append((client.protocol_version, result.content[0].text))  # type: ignore[union-attr]

            async with anyio.create_task_group() as tg:
                for n in range(5):
                    tg.start_soon(use, modern, n)
                    tg.start_soon(use, legacy, n)
            assert sorted(results) == sorted(
                (version, f"Sunny at {n:.1f},0.0") for version in ("2025-11-25", "2026-07-28") for n in range(5)
            )
