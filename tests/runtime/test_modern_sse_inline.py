"""A modern request's SSE answer (issue 22): the first notification turns the answer into a stream at the loop's
next turn, not at once, since no writer could run before the handler suspends anyway. A handler that answers
before then gets its events and result in one SSE body written by its own exchange, with no writer task; one that
suspends gets its notifications streamed as before, ahead of its result. Counted and ordered, not timed."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import serving_server
from support.tool_zoo import MODERN, MODERN_META

from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.transports.http.server.modern import ModernExchange

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN}


def build_server(released: anyio.Event) -> Server:
    server = Server("sse-inline", version="1")

    @server.tool()
    async def at_once(a: int, ctx: Context) -> str:
        """Reports progress, then answers without suspending."""
        await ctx.report_progress(1, 2)
        return str(a)

    @server.tool()
    async def later(a: int, ctx: Context) -> str:
        """Reports progress, then waits to be released."""
        await ctx.report_progress(1, 2)
        await released.wait()
        return str(a)

    return server


def body(request_id: int, name: str) -> dict[str, Any]:
    meta = {**MODERN_META, "progressToken": f"p{request_id}"}
    params = {"name": name, "arguments": {"a": request_id}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: {")]


async def test_an_answer_before_the_stream_goes_live_is_one_body(monkeypatch: pytest.MonkeyPatch) -> None:
    live: list[object] = []
    original = ModernExchange._go_live

    def counted(self: ModernExchange) -> None:
        live.append(self)
        original(self)

    monkeypatch.setattr(ModernExchange, "_go_live", counted)
    with anyio.fail_after(15):
        async with serving_server(build_server(anyio.Event())) as url, httpx2.AsyncClient(timeout=5) as client:
            for request_id in range(1, 4):
                sent = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "at_once"}
                response = await client.post(url, json=body(request_id, "at_once"), headers=sent)
                assert response.headers["content-type"].startswith("text/event-stream")
                progress, result = messages(response.text)
                assert progress["method"] == "notifications/progress"
                assert progress["params"]["progressToken"] == f"p{request_id}"
                assert result["id"] == request_id and result["result"]["content"][0]["text"] == str(request_id)
    assert live == []  # never went live: no writer task


async def test_a_handler_that_suspends_streams_its_notifications_first() -> None:
    released = anyio.Event()
    with anyio.fail_after(15):
        async with serving_server(build_server(released)) as url, httpx2.AsyncClient(timeout=5) as client:
            sent = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "later"}
            async with client.stream("POST", url, json=body(7, "later"), headers=sent) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                lines = response.aiter_lines()
                async for line in lines:
                    if line.startswith("data: {"):
                        first = json.loads(line[len("data: ") :])
                        break
                assert first["method"] == "notifications/progress"  # while the tool still waits
                assert not released.is_set()
                released.set()
                rest = [json.loads(line[len("data: ") :]) async for line in lines if line.startswith("data: {")]
    assert [message.get("id") for message in rest] == [7]
    assert rest[0]["result"]["content"][0]["text"] == "7"
