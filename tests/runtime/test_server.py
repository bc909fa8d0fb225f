"""mcpgen_runtime.server: a real ``Server`` against our own raw ``Session`` (or raw frames) over in-memory streams.

Lifecycle and gating, every error code, version negotiation, progress, logging levels, sampling / elicitation round
trips (the test side answers the server's requests), list_changed only when declared, batches, and authoring."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from mcpgen_runtime import ErrorCode, JSONParams, JSONRPCError, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.jsonrpc import encode_frame
from mcpgen_runtime.server import LATEST_LEGACY_VERSION, LEGACY_VERSIONS, Context, Server

pytestmark = pytest.mark.anyio

WAIT = 5.0


class Weather(TypedDict):
    city: str
    celsius: float


class Answer(BaseModel):
    name: str = Field(description="your name")


def build_server(*, logging: bool = True) -> Server:
    server = Server("weather", version="1.0.0", title="Weather", instructions="be nice", logging=logging)

    @server.tool(title="Forecast")
    async def get_forecast(latitude: float, longitude: float, days: int = 1) -> str:
        """Get weather forecast for a location."""
        return f"{latitude},{longitude},{days}"

    @server.tool()
    def weather(city: str) -> Weather:
        """Structured output from a TypedDict (sync: runs in a thread)."""
        return {"city": city, "celsius": 21.5}

    @server.tool()
    async def explode(message: str) -> str:
        raise ValueError(message)

    @server.tool()
    async def chatty(ctx: Context) -> list[Any]:
        await ctx.report_progress(1, 2, "half")
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"{level} message", logger="test")
        await ctx.report_progress(2, 2)
        return ["one", {"type": "text", "text": "two"}]

    @server.tool()
    async def ask_llm(question: str, ctx: Context) -> str:
        result = await ctx.sample(question, max_tokens=10, system_prompt="short")
        return f"{result.model}: {result.content.text}"

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        result = await ctx.elicit("Who are you?", Answer)
        return f"{result.action}: {(result.content or {}).get('name')}"

    @server.resource("weather://cities", mime_type="text/plain")
    def cities() -> str:
        """The cities."""
        return "Paris\nOslo"

    @server.resource("weather://logo")
    def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("weather://broken")
    def broken() -> str:
        raise RuntimeError("secret internal detail")

    @server.resource("weather://{city}/day/{day}")
    def daily(city: str, day: int) -> dict[str, Any]:
        return {"city": city, "day": day}

    @server.prompt()
    def plan(city: str, days: int = 2) -> str:
        """Plan a trip."""
        return f"Plan {days} days in {city}."

    @server.completion(prompt="plan", argument="city")
    def complete_city(value: str, arguments: dict[str, str]) -> list[str]:
        return [c for c in ["Paris", "Prague", "Oslo", *[f"P{i}" for i in range(200)]] if c.startswith(value)]

    return server


@dataclass
class Peer:
    session: Session
    server: Server
    notifications: list[tuple[str, Any]] = field(default_factory=list)
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def call(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        return await self.session.request(method, params, timeout=WAIT, **kwargs)

    async def error(self, method: str, params: dict[str, Any] | None = None) -> JSONRPCError:
        with pytest.raises(JSONRPCError) as info:
            await self.call(method, params)
        return info.value

    async def wait_for(self, method: str) -> list[Any]:
        with anyio.fail_after(WAIT):
            while not any(m == method for m, _ in self.notifications):
                self.arrived = anyio.Event()
                await self.arrived.wait()
        return [p for m, p in self.notifications if m == method]

    async def tool(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        return await self.call("tools/call", {"name": name, "arguments": arguments or {}}, **kwargs)


def init_params(version: str = LATEST_LEGACY_VERSION, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": {"name": "t", "version": "0"}}


@asynccontextmanager
async def connect(
    server: Server | None = None,
    *,
    version: str | None = LATEST_LEGACY_VERSION,
    capabilities: dict[str, Any] | None = None,
    answers: dict[str, Any] | None = None,
) -> AsyncIterator[Peer]:
    """Our server and a raw client session; ``version`` None leaves initialization to the test. ``answers`` maps
    a server->client method to the result the client sends back (requests the client gets are recorded too)."""
    server = server or build_server()
    server_end, client_end = memory_stream_pair()
    peer: Peer

    async def on_notification(method: str, params: JSONParams) -> None:
        peer.notifications.append((method, params))
        peer.arrived.set()

    async def on_request(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        peer.notifications.append((f"request:{method}", params))
        if answers and method in answers:
            return dict(answers[method])
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, "no")

    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Session(client_end, notification_handler=on_notification, request_handler=on_request) as session:
            peer = Peer(session, server)
            if version is not None:
                await peer.call("initialize", init_params(version, capabilities))
                await session.notify("notifications/initialized")
            yield peer
        # Closing the client session closes its stream end: the server sees end-of-stream and finishes by itself.
        with anyio.fail_after(WAIT):
            while server.connections:
                await anyio.sleep(0.01)


# -- lifecycle ---------------------------------------------------------------------------------------------------


async def test_initialize_result_and_lifecycle() -> None:
    async with connect(version=None) as peer:
        assert await peer.call("ping") == {}  # always answered
        error = await peer.error("tools/list")
        assert error.code == ErrorCode.INVALID_REQUEST and "not initialized" in error.message
        result = await peer.call("initialize", init_params("2025-06-18"))
        assert result == {
            "protocolVersion": "2025-06-18",
            "capabilities": {
                "tools": {"listChanged": True},
                "resources": {"listChanged": True},
                "prompts": {"listChanged": True},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {"name": "weather", "version": "1.0.0", "title": "Weather"},
            "instructions": "be nice",
        }
        # Served from the initialize answer on (notifications/initialized races requests over one stdio pipe).
        assert len((await peer.call("tools/list"))["tools"]) == 6
        (connection,) = peer.server.connections
        await peer.session.notify("notifications/initialized")
        with anyio.fail_after(WAIT):
            while not connection.initialized:
                await anyio.sleep(0.01)
        assert (await peer.error("initialize", init_params())).code == ErrorCode.INVALID_REQUEST


async def test_bad_initialize_can_be_retried() -> None:
    async with connect(version=None) as peer:
        error = await peer.error("initialize", {"protocolVersion": "2025-06-18"})
        assert error.code == ErrorCode.INVALID_PARAMS
        assert {tuple(d["loc"]) for d in error.data} == {("capabilities",), ("clientInfo",)}
        assert (await peer.error("tools/list")).code == ErrorCode.INVALID_REQUEST
        assert (await peer.call("initialize", init_params()))["protocolVersion"] == LATEST_LEGACY_VERSION


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_negotiates_each_supported_version(version: str) -> None:
    async with connect(version=None) as peer:
        result = await peer.call("initialize", init_params(version))
        assert result["protocolVersion"] == version
        assert ("completions" in result["capabilities"]) == (version != "2024-11-05")
        assert ("title" in result["serverInfo"]) == (version >= "2025-06-18")
        tools = {t["name"]: t for t in (await peer.call("tools/list"))["tools"]}
        structured = version >= "2025-06-18"
        assert ("outputSchema" in tools["weather"]) == structured
        assert ("title" in tools["get_forecast"]) == structured
        called = await peer.tool("weather", {"city": "Oslo"})
        assert json.loads(called["content"][0]["text"]) == {"city": "Oslo", "celsius": 21.5}
        assert ("structuredContent" in called) == structured
        # Completion is served in every version (2024-11-05 had no capability for it).
        ref = {"type": "ref/prompt", "name": "plan"}
        completed = await peer.call("completion/complete", {"ref": ref, "argument": {"name": "city", "value": "Os"}})
        assert completed["completion"]["values"] == ["Oslo"]


async def test_unsupported_version_gets_the_newest() -> None:
    async with connect(version=None) as peer:
        result = await peer.call("initialize", init_params("2026-07-28"))
        assert result["protocolVersion"] == LATEST_LEGACY_VERSION


# -- errors ------------------------------------------------------------------------------------------------------


async def test_error_codes() -> None:
    async with connect() as peer:
        for method in ("nope/nothing", "tasks/get", "tasks/list", "resources/subscribe"):
            assert (await peer.error(method, {"taskId": "x", "uri": "x"})).code == ErrorCode.METHOD_NOT_FOUND, method
        # server/discover is a request of the modern era (test_modern_server.py): without its _meta, -32602.
        assert (await peer.error("server/discover", {})).code == ErrorCode.INVALID_PARAMS
        error = await peer.error("tools/call", {"name": 5})
        assert error.code == ErrorCode.INVALID_PARAMS
        assert error.data == [{"loc": ["name"], "msg": "Input should be a valid string", "type": "string_type"}]
        assert (await peer.error("tools/call")).code == ErrorCode.INVALID_PARAMS  # params required
        assert (await peer.error("tools/call", {"name": "missing"})).code == ErrorCode.INVALID_PARAMS
        assert (await peer.error("prompts/get", {"name": "plan"})).code == ErrorCode.INVALID_PARAMS
        assert (await peer.error("prompts/get", {"name": "nope"})).code == ErrorCode.INVALID_PARAMS
        error = await peer.error("resources/read", {"uri": "weather://nowhere"})
        assert (error.code, error.data) == (-32002, {"uri": "weather://nowhere"})
        error = await peer.error("resources/read", {"uri": "weather://Oslo/day/monday"})
        assert error.code == ErrorCode.INVALID_PARAMS and error.data[0]["loc"] == ["day"]
        error = await peer.error("resources/read", {"uri": "weather://broken"})
        assert (error.code, error.message, error.data) == (ErrorCode.INTERNAL_ERROR, "Internal error", None)
        levels = await peer.error("logging/setLevel", {"level": "loud"})
        assert levels.code == ErrorCode.INVALID_PARAMS


async def test_tool_errors_are_results() -> None:
    async with connect() as peer:
        raised = await peer.tool("explode", {"message": "kaboom"})
        assert raised == {"content": [{"type": "text", "text": "kaboom"}], "isError": True}
        invalid = await peer.tool("get_forecast", {"latitude": "north"})
        assert invalid["isError"] is True
        text = invalid["content"][0]["text"]
        assert "latitude: Input should be a valid number" in text and "longitude: Field required" in text
        extra = await peer.tool("get_forecast", {"latitude": 1, "longitude": 2, "bogus": 1})
        assert extra["isError"] is True and "bogus" in extra["content"][0]["text"]


async def test_batches_only_in_2025_03_26() -> None:
    for version, allowed in (("2025-03-26", True), ("2025-06-18", False), (None, False)):
        server_end, client_end = memory_stream_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(build_server().serve_stream, server_end)  # ends when client_end closes
            if version is not None:
                await client_end.send(
                    encode_frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params(version)})
                )
                await client_end.receive()
            batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
            await client_end.send(encode_frame(batch))
            with anyio.fail_after(WAIT):
                answer = json.loads(await client_end.receive())
            if allowed:
                assert sorted(item["id"] for item in answer) == [1, 2]
            else:
                assert answer["id"] is None and answer["error"]["code"] == ErrorCode.INVALID_REQUEST
            await client_end.aclose()


# -- context: progress, logging, sampling, elicitation -----------------------------------------------------------


async def test_progress_and_content() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect() as peer:
        result = await peer.tool("chatty", progress_callback=on_progress)
        assert result["content"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
        assert seen == [(1, 2, "half"), (2, 2, None)]


async def test_logging_respects_set_level() -> None:
    async with connect() as peer:
        await peer.tool("chatty")
        assert [p["level"] for p in await peer.wait_for("notifications/message")] == [
            "debug",
            "info",
            "warning",
            "error",
        ]
        peer.notifications.clear()
        assert await peer.call("logging/setLevel", {"level": "warning"}) == {}
        await peer.tool("chatty")
        await peer.wait_for("notifications/message")
        await peer.call("ping")
        logged = [p for m, p in peer.notifications if m == "notifications/message"]
        assert logged[0] == {"level": "warning", "data": "warning message", "logger": "test"}
        assert [p["level"] for p in logged] == ["warning", "error"]


async def test_no_logging_when_not_declared() -> None:
    async with connect(build_server(logging=False)) as peer:
        assert (await peer.error("logging/setLevel", {"level": "debug"})).code == ErrorCode.METHOD_NOT_FOUND
        await peer.tool("chatty")
        await peer.server.notify_tools_changed()  # a later notification: everything before it has arrived
        await peer.wait_for("notifications/tools/list_changed")
        assert not [m for m, _ in peer.notifications if m == "notifications/message"]


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "tiny"}


async def test_sampling_round_trip() -> None:
    async with connect(capabilities={"sampling": {}}, answers={"sampling/createMessage": SAMPLED}) as peer:
        result = await peer.tool("ask_llm", {"question": "meaning?"})
        assert result == {"content": [{"type": "text", "text": "tiny: 42"}], "isError": False}
        ((method, params),) = [(m, p) for m, p in peer.notifications if m.startswith("request:")]
        assert method == "request:sampling/createMessage"
        assert params == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "meaning?"}}],
            "maxTokens": 10,
            "systemPrompt": "short",
        }


async def test_sampling_needs_the_client_capability() -> None:
    async with connect(answers={"sampling/createMessage": SAMPLED}) as peer:
        result = await peer.tool("ask_llm", {"question": "meaning?"})
        assert result["isError"] is True and "did not declare the 'sampling' capability" in result["content"][0]["text"]
        assert not [m for m, _ in peer.notifications if m.startswith("request:")]


async def test_elicitation_round_trip_and_gating() -> None:
    answers = {"elicitation/create": {"action": "accept", "content": {"name": "Ada"}}}
    async with connect(version="2025-06-18", capabilities={"elicitation": {}}, answers=answers) as peer:
        assert (await peer.tool("ask_user"))["content"][0]["text"] == "accept: Ada"
        ((_, params),) = [(m, p) for m, p in peer.notifications if m == "request:elicitation/create"]
        assert params["message"] == "Who are you?"
        assert params["requestedSchema"]["properties"]["name"]["type"] == "string"
    async with connect(version="2025-06-18", answers=answers) as peer:
        assert "did not declare the 'elicitation'" in (await peer.tool("ask_user"))["content"][0]["text"]
    async with connect(version="2025-03-26", capabilities={"elicitation": {}}, answers=answers) as peer:
        assert "does not exist in MCP 2025-03-26" in (await peer.tool("ask_user"))["content"][0]["text"]


# -- change notifications and subscriptions ----------------------------------------------------------------------


async def test_list_changed_only_when_declared() -> None:
    server = Server("tools-only")

    @server.tool()
    def noop() -> str:
        return ""

    async with connect(server) as peer:
        await server.notify_prompts_changed()  # no prompts: not declared, not sent
        await server.notify_resources_changed()
        await server.notify_resource_updated("x://y")
        await server.notify_tools_changed()
        await peer.wait_for("notifications/tools/list_changed")
        assert [m for m, _ in peer.notifications] == ["notifications/tools/list_changed"]


async def test_subscriptions() -> None:
    server = build_server()
    subscribed: list[str] = []
    server.on_subscribe(subscribed.append)
    async with connect(server) as peer:
        (connection,) = server.connections
        assert connection.capabilities["resources"] == {"listChanged": True, "subscribe": True}
        assert await peer.call("resources/subscribe", {"uri": "weather://cities"}) == {}
        assert subscribed == ["weather://cities"]
        await server.notify_resource_updated("weather://other")
        await server.notify_resource_updated("weather://cities")
        assert await peer.wait_for("notifications/resources/updated") == [{"uri": "weather://cities"}]
        await peer.call("resources/unsubscribe", {"uri": "weather://cities"})
        assert connection.subscriptions == set()


# -- authoring ---------------------------------------------------------------------------------------------------


async def test_schemas_and_listings() -> None:
    async with connect() as peer:
        tools = {t["name"]: t for t in (await peer.call("tools/list"))["tools"]}
        forecast = tools["get_forecast"]
        assert forecast["description"] == "Get weather forecast for a location."
        assert forecast["inputSchema"]["required"] == ["latitude", "longitude"]
        assert forecast["inputSchema"]["properties"]["days"] == {"default": 1, "title": "Days", "type": "integer"}
        assert tools["weather"]["outputSchema"]["required"] == ["city", "celsius"]
        assert "ctx" not in tools["chatty"]["inputSchema"].get("properties", {})
        resources = (await peer.call("resources/list"))["resources"]
        assert resources[0] == {
            "uri": "weather://cities",
            "name": "cities",
            "description": "The cities.",
            "mimeType": "text/plain",
        }
        templates = (await peer.call("resources/templates/list"))["resourceTemplates"]
        assert templates == [{"uriTemplate": "weather://{city}/day/{day}", "name": "daily"}]
        (prompt,) = (await peer.call("prompts/list"))["prompts"]
        assert prompt["arguments"] == [{"name": "city", "required": True}, {"name": "days", "required": False}]


async def test_reading_and_rendering() -> None:
    async with connect() as peer:
        read = await peer.call("resources/read", {"uri": "weather://Oslo/day/3"})
        (content,) = read["contents"]
        assert json.loads(content["text"]) == {"city": "Oslo", "day": 3}
        logo = (await peer.call("resources/read", {"uri": "weather://logo"}))["contents"][0]
        assert logo == {"uri": "weather://logo", "mimeType": "application/octet-stream", "blob": "iVBORw=="}
        rendered = await peer.call("prompts/get", {"name": "plan", "arguments": {"city": "Oslo", "days": "4"}})
        assert rendered["messages"] == [{"role": "user", "content": {"type": "text", "text": "Plan 4 days in Oslo."}}]
        ref = {"type": "ref/prompt", "name": "plan"}
        completed = await peer.call("completion/complete", {"ref": ref, "argument": {"name": "city", "value": "P"}})
        assert completed["completion"]["values"][:3] == ["Paris", "Prague", "P0"]
        assert len(completed["completion"]["values"]) == 100 and completed["completion"]["hasMore"] is True
        unknown = {"ref": {"type": "ref/prompt", "name": "plan"}, "argument": {"name": "days", "value": ""}}
        assert (await peer.call("completion/complete", unknown))["completion"]["values"] == []


def test_registration_errors() -> None:
    server = Server("bad")
    with pytest.raises(TypeError, match="must match the variables"):
        server.resource("x://{a}")(lambda b: b)
    with pytest.raises(TypeError, match="takes no arguments"):
        server.resource("x://static")(lambda a: a)
    with pytest.raises(TypeError, match="exactly one"):
        server.completion(argument="a")
    with pytest.raises(TypeError, match=r"\*args"):
        server.tool()(lambda *args: args)
