"""What our ``Server`` accepts where a result model is expected, against real peers: a tool's own ``CallToolResult``
(a generated model of any version, or a dict from a tool annotated ``-> CallToolResult``) validated against the
negotiated version, -32603 with the field paths for an invalid one, ``-> dict[str, Any]`` still structured output,
and ``Context.elicit()`` receiving a non-integer number (the 2025-06-18+ patch ``*-elicitresult-content-number``).

Peers: the official SDK client (``mcp`` 2.3.0) over streamable HTTP to a server in this process, and a raw
``Session`` over in-memory streams, which shows the exact JSON-RPC traffic."""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client as SDKClient
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel
from support.content import text_of

import mcp_bindings.v2025_06_18 as v3
import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.server import Context, Server

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

WAIT = 10.0


class Score(BaseModel):
    score: float


def build_server() -> Server:
    server = Server("results", version="1.0.0")

    @server.tool()
    async def ask_score(ctx: Context) -> str:
        """Elicits a number and reports exactly what arrived."""
        result = await ctx.elicit("Your score?", Score)
        return f"{result.action}: {(result.content or {}).get('score')!r}"

    @server.tool()
    def own_model(version: str) -> v4.CallToolResult:
        """Its whole result as a generated model (of the version the caller names)."""
        models = {"2025-06-18": v3, "2025-11-25": v4}
        m: Any = models[version]
        return m.CallToolResult(content=[m.TextContent(text="own")], structured_content={"n": 1}, is_error=False)

    @server.tool()
    def own_dict(valid: bool = True) -> v4.CallToolResult | dict[str, Any]:
        """Its whole result as a dict: the annotation says so."""
        if not valid:
            return {"content": [{"type": "text"}], "isError": "no"}
        return {"content": [{"type": "text", "text": "own dict"}], "isError": True, "_meta": {"x": 1}}

    @server.tool()
    def plain_dict() -> dict[str, Any]:
        """Structured output that happens to look like a result: it stays structured output."""
        return {"content": [{"type": "text", "text": "not a result"}]}

    return server


# -- the official SDK client -------------------------------------------------------------------------------------


@asynccontextmanager
async def sdk_client(server: Server, **options: Any) -> AsyncIterator[SDKClient]:
    with anyio.fail_after(30), warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            # The legacy era, where these results reach the client as the tools built them (the modern era adds
            # resultType and serverInfo; test_interop_sdk_client_stdio.py covers it).
            options.setdefault("mode", "legacy")
            async with SDKClient(f"{base}/mcp", read_timeout_seconds=WAIT, **options) as client:
                yield client
            tg.cancel_scope.cancel()


async def test_elicit_receives_a_float_from_the_official_sdk_client() -> None:
    asked: list[Any] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"score": 95.5})

    async with sdk_client(build_server(), elicitation_callback=on_elicit) as client:
        assert client.protocol_version == "2025-11-25"
        result = await client.call_tool("ask_score", {})
    assert not result.is_error and text_of(result) == "accept: 95.5"
    (params,) = asked
    assert params.requested_schema["properties"]["score"]["type"] == "number"


async def test_own_results_reach_the_official_sdk_client() -> None:
    async with sdk_client(build_server()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        # A tool that builds its own CallToolResult declares no outputSchema; a dict-typed one does.
        assert tools["own_model"].output_schema is None and tools["own_dict"].output_schema is None
        assert tools["plain_dict"].output_schema is not None

        model = await client.call_tool("own_model", {"version": "2025-11-25"})
        assert text_of(model) == "own" and model.structured_content == {"n": 1} and not model.is_error
        as_dict = await client.call_tool("own_dict", {})
        assert text_of(as_dict) == "own dict" and as_dict.is_error and as_dict.meta == {"x": 1}
        plain = await client.call_tool("plain_dict", {})
        assert plain.structured_content == {"content": [{"type": "text", "text": "not a result"}]}

        with pytest.raises(MCPError) as invalid:
            await client.call_tool("own_dict", {"valid": False})
    assert invalid.value.error.code == -32603
    assert "'call_tool' for 'own_dict' is not a valid CallToolResult" in invalid.value.error.message


# -- a raw session -----------------------------------------------------------------------------------------------


@asynccontextmanager
async def raw_client(version: str, answers: dict[str, Any] | None = None) -> AsyncIterator[Session]:
    """Our server and a client that is only a JSON-RPC session, answering server -> client requests from
    ``answers`` (method -> result)."""
    server = build_server()

    async def handle(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if answers and method in answers:
            return dict(answers[method])
        raise MethodNotFound(method)

    async def ignore(method: str, params: JSONParams) -> None:
        return None

    server_end, client_end = memory_stream_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Session(client_end, request_handler=handle, notification_handler=ignore) as session:
            capabilities = {"elicitation": {}} if version >= "2025-06-18" else {}
            init = {
                "protocolVersion": version,
                "capabilities": capabilities,
                "clientInfo": {"name": "t", "version": "0"},
            }
            await session.request("initialize", init, timeout=WAIT)
            await session.notify("notifications/initialized")
            yield session


async def call_tool(session: Session, name: str, arguments: dict[str, Any] | None = None) -> Any:
    return await session.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout=WAIT)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_elicit_keeps_the_number_type(version: str) -> None:
    for score, shown in ((95.5, "95.5"), (95, "95"), (-0.25, "-0.25")):
        answers = {"elicitation/create": {"action": "accept", "content": {"score": score}}}
        async with raw_client(version, answers) as session:
            result = await call_tool(session, "ask_score")
        assert result == {"content": [{"type": "text", "text": f"accept: {shown}"}], "isError": False}


async def test_an_invalid_client_answer_names_the_fields(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpgen_runtime")
    answers = {"elicitation/create": {"action": "accept", "content": {"score": {"deep": 1}}}}
    async with raw_client("2025-11-25", answers) as session:
        result = await call_tool(session, "ask_score")
    # Context.elicit raised InvalidClientResultError inside the tool: a tool error the model can read.
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert message.startswith("the client's answer to elicitation/create is not a valid ElicitResult for MCP 2025-11")
    assert "content.score" in message and "deep" not in message  # field paths, never the values
    assert any("elicitation/create" in r.getMessage() and "content.score" in r.getMessage() for r in caplog.records)


async def test_own_results_are_validated_against_the_negotiated_version(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="mcpgen_runtime")
    async with raw_client("2025-03-26") as session:
        # A 2025-06-18 model on a 2025-03-26 connection: valid there too; structuredContent stays as an extension
        # (own results are not fitted: what the tool put in is deliberate).
        own = await call_tool(session, "own_model", {"version": "2025-06-18"})
        assert own == {"content": [{"type": "text", "text": "own"}], "structuredContent": {"n": 1}, "isError": False}
        as_dict = await call_tool(session, "own_dict")
        assert as_dict == {"content": [{"type": "text", "text": "own dict"}], "isError": True, "_meta": {"x": 1}}

        with pytest.raises(JSONRPCError) as info:
            await call_tool(session, "own_dict", {"valid": False})
        assert info.value.code == -32603
        assert info.value.message == (
            "Internal error: the result of 'call_tool' for 'own_dict' is not a valid CallToolResult for MCP 2025-03-26"
        )
        locs = {tuple(error["loc"]) for error in info.value.data["errors"]}
        assert ("isError",) in locs and any(loc[:2] == ("content", "0") for loc in locs)
        assert await session.request("ping", None, timeout=WAIT) == {}  # the connection lives on
    (record,) = [r for r in caplog.records if "own_dict" in r.getMessage()]
    assert (
        record.levelno == logging.ERROR and "isError" in record.getMessage() and "MCP 2025-03-26" in record.getMessage()
    )


def test_a_full_result_tool_cannot_ask_for_structured_output() -> None:
    server = Server("x")
    with pytest.raises(TypeError, match="own CallToolResult"):

        @server.tool(structured_output=True)
        def whole() -> v4.CallToolResult:
            return v4.CallToolResult(content=[])
