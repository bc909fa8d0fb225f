"""The generated client and server stubs, wired back to back through JSON bytes.

LoopbackPeer is the smallest honest Peer: it frames each call as JSON-RPC text, dispatches it
through the generated SERVER_ROUTES to a ServerHandlers subclass exactly as a runtime would
(params validated into the route's model, the handler's result dumped by wire name), and parses
the answer with the generated parse_result. No transport is involved; the runtime tests cover those.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_bindings import base
from mcp_bindings import v2025_06_18 as v6
from mcp_bindings import v2025_11_25 as v11
from mcp_bindings.v2025_06_18 import client as client6
from mcp_bindings.v2025_06_18 import server as server6


class LoopbackPeer:
    def __init__(self, handlers: server6.ServerHandlers[dict[str, Any]], routes: Any, parse_result: Any) -> None:
        self.handlers, self.routes, self.parse_result = handlers, routes, parse_result
        self.sent: list[dict[str, Any]] = []
        self.next_id = 0

    async def send_request(self, request_type: Any, params: Any, /) -> Any:
        self.next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": request_type.METHOD}
        if params is not None:
            frame["params"] = params.model_dump(mode="json")
        wire = json.loads(json.dumps(frame))
        self.sent.append(wire)
        route = self.routes[wire["method"]]
        typed = route.params_type.model_validate(wire["params"]) if "params" in wire else None
        result = await getattr(self.handlers, route.handler)(typed, {"request_id": wire["id"]})
        answer = json.dumps({"jsonrpc": "2.0", "id": wire["id"], "result": result.model_dump(mode="json")})
        return self.parse_result(wire["method"], json.dumps(json.loads(answer)["result"]))

    async def send_notification(self, notification_type: Any, params: Any, /) -> None:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": notification_type.METHOD}
        if params is not None:
            frame["params"] = params.model_dump(mode="json")
        self.sent.append(frame)


TOOLS = [v6.Tool(name=f"tool-{n}", input_schema=v6.ToolInputSchema(type="object")) for n in range(7)]


class WeatherHandlers(server6.ServerHandlers[dict[str, Any]]):
    async def call_tool(self, params: v6.CallToolRequestParams, context: dict[str, Any]) -> v6.CallToolResult:
        city = (params.arguments or {}).get("city", "?")
        return v6.CallToolResult(content=[v6.TextContent(text=f"sunny in {city} (request {context['request_id']})")])

    async def list_tools(self, params: v6.ListToolsRequestParams | None, context: dict[str, Any]) -> v6.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = TOOLS[start : start + 3]
        if start + 3 < len(TOOLS):
            return v6.ListToolsResult(tools=page, next_cursor=str(start + 3))
        return v6.ListToolsResult(tools=page)


@pytest.fixture
def stub() -> tuple[client6.ClientStub, LoopbackPeer]:
    peer = LoopbackPeer(WeatherHandlers(), server6.SERVER_ROUTES, v6.parse_result)
    return client6.ClientStub(peer), peer


@pytest.mark.anyio
async def test_typed_call_round_trips_through_json(stub: tuple[client6.ClientStub, LoopbackPeer]) -> None:
    client, peer = stub
    result = await client.call_tool(v6.CallToolRequestParams(name="forecast", arguments={"city": "Oslo"}))
    assert isinstance(result, v6.CallToolResult)
    assert isinstance(result.content[0], v6.TextContent) and result.content[0].text == "sunny in Oslo (request 1)"
    assert peer.sent == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "forecast", "arguments": {"city": "Oslo"}},
        }
    ]


@pytest.mark.anyio
async def test_pagination_walks_next_cursor_to_the_end(stub: tuple[client6.ClientStub, LoopbackPeer]) -> None:
    client, peer = stub
    tools = await client.list_all_tools()
    assert [tool.name for tool in tools] == [f"tool-{n}" for n in range(7)]
    assert [frame.get("params") for frame in peer.sent] == [None, {"cursor": "3"}, {"cursor": "6"}]


@pytest.mark.anyio
async def test_optional_params_are_left_out_not_sent_as_null(stub: tuple[client6.ClientStub, LoopbackPeer]) -> None:
    client, peer = stub
    await client.list_tools()
    await client.notify_initialized()
    assert "params" not in peer.sent[0] and "params" not in peer.sent[1]
    assert peer.sent[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.anyio
async def test_a_request_the_handlers_do_not_override_raises(stub: tuple[client6.ClientStub, LoopbackPeer]) -> None:
    client, _ = stub
    with pytest.raises(NotImplementedError, match="prompts/list"):
        await client.list_prompts()


def test_implemented_and_routes_carry_capabilities() -> None:
    assert server6.implemented(WeatherHandlers()) == {"tools/call", "tools/list"}
    assert server6.implemented(server6.ServerHandlers()) == frozenset()
    route = server6.SERVER_ROUTES["tools/call"]
    assert route == base.Route("tools/call", "call_tool", v6.CallToolRequestParams, True, v6.CallToolResult, "tools")
    assert server6.SERVER_ROUTES["resources/subscribe"].capability == "resources.subscribe"
    assert set(server6.SERVER_ROUTES) == set(v6.CLIENT_REQUESTS)
    assert set(client6.CLIENT_ROUTES) == set(v6.SERVER_REQUESTS)
    assert client6.CLIENT_ROUTES["sampling/createMessage"].handler == "create_message"
    assert client6.CLIENT_NOTIFICATION_ROUTES["notifications/tools/list_changed"].handler == "on_tool_list_changed"


def test_stubs_exist_for_handshake_versions_only() -> None:
    from mcp_bindings.v2025_11_25 import client as client11

    assert hasattr(client11.ClientStub, "list_all_tasks") and hasattr(client11.ClientStub, "get_task_payload")
    assert v11.Method.TASKS_GET in client11.CLIENT_ROUTES
    with pytest.raises(ModuleNotFoundError):
        __import__("mcp_bindings.v2026_07_28.server")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
