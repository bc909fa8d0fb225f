"""Our typed client against a server written with the official MCP Python SDK (``mcp`` 2.x, ``sdk_server.py``), run
as a real stdio subprocess: every client -> server method, the server -> client requests (sampling, roots,
elicitation), progress, logging, list_changed, timeouts, and the handshake at each of our four versions.

The SDK server negotiates every handshake version: it answers the offered version when it knows it (2024-11-05,
2025-03-26, 2025-06-18, 2025-11-25) and its newest handshake version (2025-11-25) otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from support.content import text_of

import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.client import LEGACY_VERSIONS, Client, ClientContext

pytestmark = pytest.mark.anyio

COMMAND = [sys.executable, str(Path(__file__).with_name("sdk_server.py"))]
# Versions whose schema has structured tool output (outputSchema / structuredContent) and elicitation.
STRUCTURED = {"2025-06-18", "2025-11-25"}


class Handlers(v4.client.ClientHandlers[ClientContext]):
    """Answers the SDK server's requests back to us, and records its log messages."""

    def __init__(self) -> None:
        self.logs: list[v4.LoggingMessageNotificationParams] = []

    async def create_message(
        self, params: v4.CreateMessageRequestParams, context: ClientContext
    ) -> v4.CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, v4.TextContent)
        return v4.CreateMessageResult(
            role="assistant", model="fake-llm", content=v4.TextContent(text=question.text.upper())
        )

    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> v4.ListRootsResult:
        return v4.ListRootsResult(roots=[v4.Root(uri="file:///work", name="work")])

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        return v4.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_logging_message(self, params: v4.LoggingMessageNotificationParams, context: ClientContext) -> None:
        self.logs.append(params)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_every_method_at_each_version(version: str) -> None:
    handlers = Handlers()
    async with Client.connect_stdio(COMMAND, version=version, handlers=handlers, request_timeout=20) as client:
        m, api = client.bindings, client.api  # the negotiated version's package and stub
        assert client.protocol_version == version
        assert (client.server_info.name, client.server_info.version) == ("sdk-interop", "1.2.3")
        assert client.instructions == "an SDK server for interop tests"
        assert {"tools", "resources", "prompts", "logging", "completions"} <= set(client.server_capabilities)
        # We advertise what our handlers answer, as far as the offered version defines it.
        expected = {"sampling", "roots", "elicitation"} if version in STRUCTURED else {"sampling", "roots"}
        assert set(client.client_capabilities) == expected

        # Tools: the full list (and the cached one), plain, structured and failing calls.
        tools = await api.list_all_tools()
        assert all(isinstance(tool, m.Tool) for tool in tools)
        names = {tool.name for tool in tools}
        assert {"add", "weather", "count", "broken", "sleep", "ask_llm", "client_roots", "ask_user"} <= names
        assert {tool.name for tool in await client.tools()} == names
        weather_tool = next(tool for tool in tools if tool.name == "weather")
        assert weather_tool.model_dump()["outputSchema"]["required"] == ["city", "celsius"]  # extension before 06-18

        added = await api.call_tool(m.CallToolRequestParams(name="add", arguments={"a": 2, "b": 3}))
        assert isinstance(added, m.CallToolResult) and text_of(added) == "5" and not added.is_error
        weather = await api.call_tool(m.CallToolRequestParams(name="weather", arguments={"city": "Oslo"}))
        assert weather.model_dump()["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
        if version in STRUCTURED:
            assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}  # type: ignore[union-attr]
        broken = await api.call_tool(m.CallToolRequestParams(name="broken", arguments={}))
        assert broken.is_error and "broken" in text_of(broken)  # the SDK hides the exception text

        # Logging level, then progress and a log message during a call.
        await api.set_level(m.SetLevelRequestParams(level="info"))
        level = await api.call_tool(m.CallToolRequestParams(name="last_level", arguments={}))
        assert text_of(level) == "info"
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        counted = await client.request(
            m.CallToolRequest, m.CallToolRequestParams(name="count", arguments={"n": 3}), progress_callback=on_progress
        )
        assert text_of(counted) == "counted 3"
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        with anyio.fail_after(5):
            while not handlers.logs:
                await anyio.sleep(0.01)
        assert handlers.logs[0].level == "info" and handlers.logs[0].data == "counted to 3"

        # Resources, templates, prompts, completions, ping.
        resources = await api.list_all_resources()
        assert [(r.uri, r.name) for r in resources] == [("config://app", "app-config")]
        assert [r.uri for r in await client.resources()] == ["config://app"]
        read = await api.read_resource(m.ReadResourceRequestParams(uri="config://app"))
        assert [c.text for c in read.contents] == ["debug=true"]  # type: ignore[union-attr]
        templates = await api.list_all_resource_templates()
        assert [t.uri_template for t in templates] == ["greeting://{name}"]
        assert [t.name for t in await client.resource_templates()] == ["greeting"]
        read = await api.read_resource(m.ReadResourceRequestParams(uri="greeting://ada"))
        assert [c.text for c in read.contents] == ["Hello, ada!"]  # type: ignore[union-attr]
        prompts = await api.list_all_prompts()
        assert [(p.name, [a.name for a in p.arguments or []]) for p in prompts] == [("review", ["code", "language"])]
        assert [p.name for p in await client.prompts()] == ["review"]
        prompt = await api.get_prompt(m.GetPromptRequestParams(name="review", arguments={"code": "x = 1"}))
        assert "Please review this python code" in prompt.messages[0].content.text  # type: ignore[union-attr]
        completion = await api.complete(
            m.CompleteRequestParams.model_validate(
                {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "language", "value": "p"}}
            )
        )
        assert completion.completion.values == ["python", "perl"]
        completion = await api.complete(
            m.CompleteRequestParams.model_validate(
                {"ref": {"type": "ref/resource", "uri": "greeting://{name}"}, "argument": {"name": "name", "value": ""}}
            )
        )
        assert completion.completion.values == ["alice", "bob"]
        assert isinstance(await api.ping(), m.EmptyResult)

        # The server asks us back during tool calls.
        asked = await api.call_tool(m.CallToolRequestParams(name="ask_llm", arguments={"question": "hello"}))
        assert text_of(asked) == "fake-llm: HELLO"
        roots = await api.call_tool(m.CallToolRequestParams(name="client_roots", arguments={}))
        assert roots.model_dump()["structuredContent"] == {"result": ["file:///work"]}
        if version in STRUCTURED:
            elicited = await api.call_tool(m.CallToolRequestParams(name="ask_user", arguments={}))
            assert text_of(elicited) == "accept: Ada"
        else:
            # elicitation/create is not an MCP method before 2025-06-18, and we did not advertise it, yet the SDK
            # server sends it anyway: we answer -32601, which the SDK passes back as the tool call's error.
            with pytest.raises(JSONRPCError) as info:
                await api.call_tool(m.CallToolRequestParams(name="ask_user", arguments={}))
            assert info.value.code == -32601 and "elicitation/create" in info.value.message


async def test_typed_end_to_end_on_2025_11_25() -> None:
    # Everything below is statically typed: the stub is v4's, so results are v4 models (mypy sees CallToolResult).
    async with Client.connect_stdio(COMMAND, handlers=Handlers(), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"  # the newest legacy version, offered by the legacy mode
        api = client.stub(v4.client.ClientStub)
        result: v4.CallToolResult = await api.call_tool(
            v4.CallToolRequestParams(name="weather", arguments={"city": "x"})
        )
        assert result.structured_content == {"city": "x", "celsius": 21.5}
        tools: list[v4.Tool] = await api.list_all_tools()
        assert any(tool.output_schema is not None for tool in tools)

        # Timeouts: the call fails, the server is told, and the connection keeps working.
        with pytest.raises(TimeoutError):
            await client.stub(v4.client.ClientStub, timeout=0.3).call_tool(
                v4.CallToolRequestParams(name="sleep", arguments={"seconds": 30})
            )
        assert isinstance(await api.ping(), v4.EmptyResult)

        # A server error for an unknown prompt comes back as a JSON-RPC error.
        with pytest.raises(JSONRPCError):
            await api.get_prompt(v4.GetPromptRequestParams(name="no-such-prompt"))

        # notifications/tools/list_changed from the SDK server: the cached list is fetched again.
        before = {tool.name for tool in await client.tools()}
        await api.call_tool(v4.CallToolRequestParams(name="add_tool", arguments={"name": "dynamic"}))
        with anyio.fail_after(5):
            while client.cache("tools").cached:
                await anyio.sleep(0.01)
        assert {tool.name for tool in await client.tools()} == before | {"dynamic"}
