"""The generated client and server stubs, wired back to back through JSON bytes.

LoopbackPeer is the smallest honest Peer: it frames each call as JSON-RPC text, dispatches it
through the generated SERVER_ROUTES to a ServerHandlers subclass exactly as a runtime would
(params validated into the route's model, the handler's result dumped by wire name), and parses
the answer with the generated parse_result. No transport is involved; the runtime tests cover those.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from mcp_bindings import base
from mcp_bindings import v2025_06_18 as v6
from mcp_bindings import v2025_11_25 as v11
from mcp_bindings import v2026_07_28 as v28
from mcp_bindings.v2025_06_18 import client as client6
from mcp_bindings.v2025_06_18 import server as server6
from mcp_bindings.v2026_07_28 import client as client28
from mcp_bindings.v2026_07_28 import server as server28

ROOT = Path(__file__).resolve().parents[1]


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


def test_handshake_era_stubs_keep_their_tasks_routes() -> None:
    from mcp_bindings.v2025_11_25 import client as client11

    assert hasattr(client11.ClientStub, "list_all_tasks") and hasattr(client11.ClientStub, "get_task_payload")
    assert v11.Method.TASKS_GET in client11.CLIENT_ROUTES
    # Nothing before 2026-07-28 may answer InputRequiredResult: the new Route field keeps its default there.
    for version in ("v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25"):
        server = importlib.import_module(f"mcp_bindings.{version}.server")
        client = importlib.import_module(f"mcp_bindings.{version}.client")
        assert "initialize" in server.SERVER_ROUTES, version
        routes = [*server.SERVER_ROUTES.values(), *client.CLIENT_ROUTES.values()]
        assert all(route.input_required_result is None for route in routes), version


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- 2026-07-28 and draft: no handshake, InputRequiredResult (MRTR) -------------------------------------------------

STATELESS_VERSIONS = ("v2026_07_28", "draft")
HANDSHAKE_ONLY_METHODS = {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}


def _input_required_methods_in_schema(schema_path: Path) -> set[str]:
    """What the schema itself says, read without the generator: the methods whose `*ResultResponse` definition
    allows an InputRequiredResult, named by the `method` constant of the matching `*Request` definition."""
    definitions = json.loads(schema_path.read_text(encoding="utf-8"))["$defs"]
    methods = set()
    for name, definition in definitions.items():
        if not name.endswith("ResultResponse") or name == "JSONRPCResultResponse":
            continue
        arms = definition["properties"]["result"].get("anyOf", [definition["properties"]["result"]])
        if {"$ref": "#/$defs/InputRequiredResult"} in arms:
            request = definitions[name.removesuffix("ResultResponse") + "Request"]
            methods.add(request["properties"]["method"]["const"])
    return methods


@pytest.mark.parametrize("version", STATELESS_VERSIONS)
def test_stateless_era_stubs_route_what_the_schema_says(version: str) -> None:
    package = importlib.import_module(f"mcp_bindings.{version}")
    server = importlib.import_module(f"mcp_bindings.{version}.server")
    client = importlib.import_module(f"mcp_bindings.{version}.client")
    schema = ROOT / "spec" / ("draft" if version == "draft" else package.PROTOCOL_VERSION) / "schema.json"

    assert set(server.SERVER_ROUTES) == set(package.CLIENT_REQUESTS)
    assert {"server/discover", "subscriptions/listen", "tools/call"} <= set(server.SERVER_ROUTES)
    assert not HANDSHAKE_ONLY_METHODS & set(server.SERVER_ROUTES)
    assert set(server.SERVER_NOTIFICATION_ROUTES) == set(package.CLIENT_NOTIFICATIONS)
    assert server.SERVER_ROUTES["server/discover"] == base.Route(
        "server/discover", "discover", package.RequestParams, True, package.DiscoverResult, None
    )
    assert server.SERVER_ROUTES["subscriptions/listen"].handler == "subscriptions_listen"

    expected = _input_required_methods_in_schema(schema)
    assert expected == {"tools/call", "prompts/get", "resources/read"}
    marked = {m for m, route in server.SERVER_ROUTES.items() if route.input_required_result is not None}
    assert marked == expected
    assert all(server.SERVER_ROUTES[m].input_required_result is package.InputRequiredResult for m in marked)
    call_tool = server.SERVER_ROUTES["tools/call"]
    assert call_tool.result_type is package.CallToolResult  # the route's result stays the complete one

    # The server -> client requests travel inside InputRequiredResult; the client still answers them by route.
    assert not package.SERVER_REQUESTS
    assert (
        set(client.CLIENT_ROUTES)
        == set(package.INPUT_REQUESTS)
        == {
            "elicitation/create",
            "sampling/createMessage",
            "roots/list",
        }
    )
    assert client.CLIENT_ROUTES["elicitation/create"].handler == "elicit"
    assert set(client.CLIENT_NOTIFICATION_ROUTES) == set(package.SERVER_NOTIFICATIONS)
    assert not hasattr(client.ClientStub, "initialize") and not hasattr(client.ClientStub, "ping")
    assert hasattr(client.ClientStub, "discover") and hasattr(client.ClientStub, "list_all_tools")


def _meta() -> v28.RequestMetaObject:
    return v28.RequestMetaObject(protocol_version="2026-07-28", client_capabilities=v28.ClientCapabilities())


class BookingHandlers(server28.ServerHandlers[dict[str, Any]]):
    """Asks for the guest count with an InputRequiredResult, and books once the retry carries the answer."""

    async def call_tool(
        self, params: v28.CallToolRequestParams, context: dict[str, Any]
    ) -> v28.CallToolResult | v28.InputRequiredResult:
        answer = (params.input_responses or {}).get("guests")
        if answer is None or params.request_state != "state-1":
            ask = v28.ElicitRequest(
                params=v28.ElicitRequestFormParams(
                    message="How many guests?",
                    requested_schema=v28.ElicitRequestFormParamsRequestedSchema(
                        properties={"n": v28.NumberSchema(type="integer")}
                    ),
                )
            )
            return v28.InputRequiredResult(
                result_type="input_required", input_requests={"guests": ask}, request_state="state-1"
            )
        assert isinstance(answer, v28.ElicitResult) and answer.content is not None
        text = f"booked for {answer.content['n']}"
        return v28.CallToolResult(result_type="complete", content=[v28.TextContent(text=text)])

    async def list_tools(self, params: v28.PaginatedRequestParams, context: dict[str, Any]) -> v28.ListToolsResult:
        start = int(params.cursor) if params.cursor else 0
        page = [v28.Tool(name=f"tool-{n}", input_schema=v28.ToolInputSchema(type="object")) for n in range(start, 7)]
        more = {"next_cursor": str(start + 3)} if start + 3 < 7 else {}
        return v28.ListToolsResult(result_type="complete", tools=page[:3], ttl_ms=0, cache_scope="private", **more)


class GuestsHandlers(client28.ClientHandlers[dict[str, Any]]):
    async def elicit(self, params: v28.ElicitRequestParams, context: dict[str, Any]) -> v28.ElicitResult:
        return v28.ElicitResult(action="accept", content={"n": 4})


class InputResolvingPeer(LoopbackPeer):
    """A Peer as base.Peer describes it for 2026-07-28: an InputRequiredResult is answered through the generated
    CLIENT_ROUTES and ClientHandlers, and the request retried with inputResponses and the echoed requestState."""

    MAX_ROUNDS = 3

    def __init__(self, handlers: Any, client_handlers: client28.ClientHandlers[dict[str, Any]]) -> None:
        super().__init__(handlers, server28.SERVER_ROUTES, v28.parse_result)
        self.client_handlers = client_handlers

    async def send_request(self, request_type: Any, params: Any, /) -> Any:
        route = self.routes[request_type.METHOD]
        # As a connection does: every 2026-07-28 request's `_meta` is the sender's to fill in (base.filled_by_sender).
        params = (params if params is not None else route.params_type()).model_copy(update={"meta": _meta()})
        for _ in range(self.MAX_ROUNDS):
            result = await super().send_request(request_type, params)
            if not isinstance(result, v28.InputRequiredResult):
                return result
            assert route.input_required_result is v28.InputRequiredResult
            responses = {}
            for key, request in (result.input_requests or {}).items():
                answering = client28.CLIENT_ROUTES[request.method]
                wire = request.params.model_dump(mode="json")  # as a runtime would: JSON in, the route's model out
                typed = TypeAdapter(answering.params_type).validate_python(wire)
                responses[key] = await getattr(self.client_handlers, answering.handler)(typed, {})
            params = params.model_copy(update={"input_responses": responses, "request_state": result.request_state})
        raise AssertionError("still input_required after MAX_ROUNDS")


@pytest.mark.anyio
async def test_input_required_round_trips_through_the_generated_routes() -> None:
    peer = InputResolvingPeer(BookingHandlers(), GuestsHandlers())
    api = client28.ClientStub(peer)
    result = await api.call_tool(v28.CallToolRequestParams(meta=_meta(), name="book"))
    assert isinstance(result, v28.CallToolResult)
    assert isinstance(result.content[0], v28.TextContent) and result.content[0].text == "booked for 4"
    first, retry = peer.sent
    assert "inputResponses" not in first["params"] and first["id"] != retry["id"]
    assert retry["params"]["requestState"] == "state-1"
    assert retry["params"]["inputResponses"] == {"guests": {"action": "accept", "content": {"n": 4}}}
    assert server28.implemented(BookingHandlers()) == {"tools/call", "tools/list"}
    assert client28.implemented(GuestsHandlers()) == {"elicitation/create"}


@pytest.mark.anyio
async def test_stateless_era_pagination_leaves_the_meta_to_the_peer() -> None:
    # The stub builds only the cursor, and the walk starts from no params, as in the handshake era: each request's
    # `_meta` is the sending peer's (base.filled_by_sender), which this one stamps as a connection does.
    peer = InputResolvingPeer(BookingHandlers(), GuestsHandlers())
    tools = await client28.ClientStub(peer).list_all_tools()
    assert [tool.name for tool in tools] == [f"tool-{n}" for n in range(7)]
    assert [frame["params"].get("cursor") for frame in peer.sent] == [None, "3", "6"]
    assert all(
        frame["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28" for frame in peer.sent
    )


def test_mypy_sees_the_stateless_era_stub_types(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import Any\n"
        "from mcp_bindings.v2026_07_28 import models as m, server, client\n"
        "class Handlers(server.ServerHandlers[None]):\n"
        "    async def call_tool(self, params: m.CallToolRequestParams, context: None) -> m.InputRequiredResult:\n"
        "        return m.InputRequiredResult(result_type='input_required', request_state='s')\n"
        "    async def list_tools(self, params: m.PaginatedRequestParams, context: None) -> m.InputRequiredResult:\n"
        "        return m.InputRequiredResult(result_type='input_required', request_state='s')\n"
        "async def main(api: client.ClientStub, params: m.CallToolRequestParams) -> None:\n"
        "    reveal_type(await api.call_tool(params))\n"
        "    reveal_type(server.ServerHandlers.read_resource)\n"
        "    reveal_type(client.ClientHandlers.list_roots)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", str(sample)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    output = completed.stdout
    # call_tool may answer InputRequiredResult; list_tools may not.
    assert "sample.py:6: error: Return type" in output and output.count("error:") == 1, output
    assert 'sample.py:9: note: Revealed type is "mcp_bindings.v2026_07_28.models.CallToolResult"' in output, output
    assert (
        "mcp_bindings.v2026_07_28.models.ReadResourceResult | mcp_bindings.v2026_07_28.models.InputRequiredResult]"
        in output
    ), output
    assert "params: mcp_bindings.v2026_07_28.models.ListRootsRequestParams | None" in output, output


def _modern_server() -> Any:
    from mcpgen_runtime import Server

    server = Server("modern-stub")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.prompt()
    async def greet(name: str) -> str:
        return f"hello {name}"

    @server.resource("memo://one")
    async def memo() -> str:
        return "one"

    return server


@pytest.mark.anyio
async def test_a_modern_stub_call_through_the_client_needs_no_hand_built_meta() -> None:
    """Params built without `_meta` go through our Client to a real server, which validates the `_meta` the
    connection stamped (a request without it is rejected there, as test_models shows)."""
    import anyio

    from mcpgen_runtime.testing import connect_in_memory

    with anyio.fail_after(10):
        async with connect_in_memory(_modern_server(), mode="2026-07-28") as client:
            api = client.stub(client28.ClientStub)
            assert client.protocol_version == "2026-07-28"
            called = await api.call_tool(v28.CallToolRequestParams(name="add", arguments={"a": 2, "b": 3}))
            assert isinstance(called.content[0], v28.TextContent) and called.content[0].text == "5"
            tools = await api.list_all_tools()
            assert [tool.name for tool in tools] == ["add"]
            prompt = await api.get_prompt(v28.GetPromptRequestParams(name="greet", arguments={"name": "ada"}))
            assert isinstance(prompt.messages[0].content, v28.TextContent)
            assert prompt.messages[0].content.text == "hello ada"
            read = await api.read_resource(v28.ReadResourceRequestParams(uri="memo://one"))
            assert isinstance(read.contents[0], v28.TextResourceContents) and read.contents[0].text == "one"
            again = v28.CallToolRequestParams(name="add", arguments={"a": 1, "b": 1})
            typed = await client.request(v28.CallToolRequest, again)
            assert isinstance(typed.content[0], v28.TextContent) and typed.content[0].text == "2"
