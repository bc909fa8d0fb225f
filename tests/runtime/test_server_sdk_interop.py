"""The official MCP Python SDK (``mcp==2.3.0``) as a real client of our ``Server``, over stdio, in a subprocess.

The 2.x SDK defaults to ``mode="auto"``: it first probes ``server/discover``, which our server answers, so it
speaks 2026-07-28 (test_interop_sdk_client_stdio.py). These tests pin ``mode="legacy"``: the ``initialize``
handshake at 2025-11-25, where every call below goes over the legacy era (ping, logging/setLevel ...)."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

FIXTURE = Path(__file__).with_name("server_fixture.py")
REPO = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def sdk_client(tmp_path: Path, **kwargs: Any) -> AsyncIterator[tuple[Client, Path, list[Any]]]:
    trace = tmp_path / "trace.jsonl"
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    params = StdioServerParameters(
        command=sys.executable, args=[str(FIXTURE)], env={"MCPGEN_TRACE": str(trace)}, cwd=REPO
    )
    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with Client(params, logging_callback=on_log, read_timeout_seconds=10, **kwargs) as client:
            yield client, trace, logs


async def exercise_every_method(client: Client, logs: list[Any]) -> None:
    """Every legacy-era method the fixture server implements, through the SDK client."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"get_forecast", "forecast", "fail"}
    assert tools["get_forecast"].description == "Get weather forecast for a location."
    assert tools["get_forecast"].input_schema["required"] == ["latitude", "longitude"]
    assert tools["forecast"].output_schema is not None

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
    assert [(r.uri, r.name, r.mime_type) for r in resources] == [("weather://cities", "cities", "text/plain")]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["weather://{city}/current"]
    static = await client.read_resource("weather://cities")
    assert static.contents[0].text == "Berlin\nLisbon\nLondon\nParis"  # type: ignore[union-attr]
    templated = await client.read_resource("weather://Oslo/current")
    assert json.loads(templated.contents[0].text) == {"city": "Oslo", "celsius": 20}  # type: ignore[union-attr]
    with pytest.raises(MCPError) as missing:
        await client.read_resource("weather://nowhere")
    assert missing.value.error.code == -32002

    (prompt,) = (await client.list_prompts()).prompts
    assert prompt.name == "plan_trip" and prompt.title == "Plan a trip"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [("city", True), ("days", False)]
    rendered = await client.get_prompt("plan_trip", {"city": "Lisbon", "days": "5"})
    assert rendered.messages[0].role == "user"
    assert rendered.messages[0].content.text == "Plan a 5-day trip to Lisbon."  # type: ignore[union-attr]

    by_prompt = await client.complete(
        types.PromptReference(type="ref/prompt", name="plan_trip"), {"name": "city", "value": "l"}
    )
    assert by_prompt.completion.values == ["Lisbon", "London"]
    template_ref = types.ResourceTemplateReference(type="ref/resource", uri="weather://{city}/current")
    by_template = await client.complete(template_ref, {"name": "city", "value": "B"})
    assert by_template.completion.values == ["Berlin"]

    await client.set_logging_level("info")
    await client.call_tool("forecast", {"city": "Oslo"})
    await client.send_ping()
    # Two log messages from the first forecast call (no level set yet), one from the second (debug filtered).
    assert [(log.level, log.data) for log in logs] == [
        ("info", "forecast for Paris"),
        ("debug", "only sent when the level allows"),
        ("info", "forecast for Oslo"),
    ]


def received(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


async def test_sdk_client_legacy_mode_uses_everything(tmp_path: Path) -> None:
    async with sdk_client(tmp_path, mode="legacy") as (client, trace, logs):
        first = received(trace)[0]
        assert first["method"] == "initialize" and first["params"]["protocolVersion"] == "2025-11-25"
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None and (client.server_info.name, client.server_info.title) == (
            "weather",
            "Weather",
        )
        assert client.instructions == "Ask about the weather."
        caps = client.server_capabilities
        assert caps.tools is not None and caps.resources is not None and caps.prompts is not None
        assert caps.logging is not None and caps.completions is not None

        await exercise_every_method(client, logs)
        methods = [frame.get("method") for frame in received(trace)]
        for method in ("logging/setLevel", "ping", "completion/complete", "resources/templates/list", "prompts/get"):
            assert method in methods


async def test_sdk_client_legacy_mode(tmp_path: Path) -> None:
    async with sdk_client(tmp_path, mode="legacy") as (client, trace, _):
        assert received(trace)[0]["method"] == "initialize"
        assert client.protocol_version == "2025-11-25"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["get_forecast", "forecast", "fail"]


async def test_sdk_client_over_streamable_http_uses_everything() -> None:
    """The same server object, served over streamable HTTP in this process, with the SDK's HTTP client."""
    sys.path.insert(0, str(FIXTURE.parent))
    try:
        from server_fixture import server
    finally:
        sys.path.remove(str(FIXTURE.parent))
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            async with Client(f"{base}/mcp", mode="legacy", logging_callback=on_log, read_timeout_seconds=10) as client:
                assert client.protocol_version == "2025-11-25"
                await exercise_every_method(client, logs)
            tg.cancel_scope.cancel()
