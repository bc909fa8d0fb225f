"""What the modern era's request path derives once instead of per request (issue 22), and that it stays right: what a
server serves in a version (capabilities, methods, ``serverInfo``) is cached until what is registered changes; a
request joins the server's run without entering ``Server.running()``; an ``InputExchange`` is made only when a
request asks for input (or brings answers or a state to check); a tool's plain text is answered without
re-validation, as valid as a validated result. Counted, not timed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import raw_session

from mcpgen_runtime import JSONRPCError, Session
from mcpgen_runtime.jsonrpc.envelopes import Request
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.dispatch import input_rounds, modern
from mcpgen_runtime.server.dispatch.generated import bindings_for
from mcpgen_runtime.server.dispatch.validation import validated_result

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def build_server() -> Server:
    server = Server("hot-path", version="1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


connect = raw_session  # the server over an in-memory stream, a bare Session as its client


async def call(session: Session, method: str, params: dict[str, Any] | None = None) -> Any:
    return await session.request(method, {**(params or {}), "_meta": dict(META)})


@contextmanager
def counting_exchanges(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    made: list[str] = []
    original = input_rounds.InputExchange

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(modern, "InputExchange", counted)
    yield made


async def test_a_tool_added_after_the_first_request_is_listed_and_served() -> None:
    server = Server("late", version="1.0.0")

    @server.prompt()
    def hello() -> str:
        return "hello"

    async with connect(server) as session:
        discovered = await call(session, "server/discover")
        assert "tools" not in discovered["capabilities"]
        with pytest.raises(JSONRPCError) as refused:
            await call(session, "tools/list")
        assert refused.value.code == -32601

        @server.tool()
        async def late(text: str) -> str:
            return text.upper()

        assert "tools" in (await call(session, "server/discover"))["capabilities"]
        assert [tool["name"] for tool in (await call(session, "tools/list"))["tools"]] == ["late"]
        result = await call(session, "tools/call", {"name": "late", "arguments": {"text": "hi"}})
        assert result["content"][0]["text"] == "HI"

        server.remove_tool("late")
        with pytest.raises(JSONRPCError) as refused:
            await call(session, "tools/call", {"name": "late", "arguments": {"text": "hi"}})
        assert refused.value.code == -32601


async def test_a_tool_added_at_run_time_is_served_over_http() -> None:
    server = build_server()
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/list",
    }
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0, json_response=True))
            async with httpx2.AsyncClient(timeout=5) as client:
                first = (await client.post(f"{base}/mcp", json=listing, headers=headers)).json()
                assert [tool["name"] for tool in first["result"]["tools"]] == ["echo"]

                @server.tool()
                async def later() -> str:
                    return "later"

                second = (await client.post(f"{base}/mcp", json=listing, headers=headers)).json()
                assert [tool["name"] for tool in second["result"]["tools"]] == ["echo", "later"]
            tg.cancel_scope.cancel()


async def test_the_server_info_follows_the_servers_identity() -> None:
    server = build_server()
    async with connect(server) as session:
        first = await call(session, "tools/list")
        assert first["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "hot-path", "version": "1.0.0"}
        server.version, server.title = "2.0.0", "Hot path"
        second = await call(session, "tools/list")
    info = {"name": "hot-path", "version": "2.0.0", "title": "Hot path"}
    assert second["_meta"]["io.modelcontextprotocol/serverInfo"] == info


class _Call:
    """A stand-in for the transport's ``ModernCall``: the POST's scope, and notifications (none here)."""

    scope: Mapping[str, Any] = {"type": "http", "headers": []}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        raise AssertionError("no notification expected")


async def test_a_modern_request_joins_the_run_in_progress_without_entering_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = build_server()
    request = Request(1, "tools/call", {"name": "echo", "arguments": {"text": "a"}, "_meta": META})
    # No run in progress: the request is a run of its own, as before.
    message, _ = await server.serve_modern(request, _Call())
    assert message["result"]["content"][0]["text"] == "a"
    entered: list[int] = []
    running = Server.running

    def counted(self: Server) -> Any:
        entered.append(1)
        return running(self)

    async with server.running():
        monkeypatch.setattr(Server, "running", counted)
        for _ in range(3):
            message, _ = await server.serve_modern(request, _Call())
            assert message["result"]["content"][0]["text"] == "a"
    assert entered == []


async def test_an_input_exchange_is_made_only_when_input_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_server()

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return str(answer)

    async with connect(server) as session:
        with counting_exchanges(monkeypatch) as made:
            for _ in range(3):
                await call(session, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
            assert made == []
            meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
            asked = await session.request("tools/call", {"name": "ask", "arguments": {}, "_meta": meta})
            assert asked["resultType"] == "input_required" and made == ["tools/call"]
            # A state that is not valid is refused even by a tool that asks nothing (it is checked on arrival).
            with pytest.raises(JSONRPCError) as refused:
                await call(session, "tools/call", {"name": "echo", "arguments": {"text": "x"}, "requestState": "bad"})
            assert refused.value.code == -32602


async def test_a_plain_text_answer_is_what_validation_would_make() -> None:
    server = build_server()
    async with connect(server) as session:
        result = await call(session, "tools/call", {"name": "echo", "arguments": {"text": "héllo"}})
    model = bindings_for(MODERN).CallToolResult
    assert validated_result(model, dict(result), "the test", MODERN) == result
    assert result["resultType"] == "complete"
    assert result["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "hot-path", "version": "1.0.0"}}
