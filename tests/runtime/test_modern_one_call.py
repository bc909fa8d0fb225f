"""A modern (2026-07-28) request is one call of the server's dispatch (issues 21, 22): over HTTP it makes no
``Session``, no ``ServerConnection`` and no task of the runtime's own; over stdio (any long-lived stream) it is served
by the connection's one ``Session``, not by a ``Session`` of its own, with no more tasks than a legacy request. In
either case it leaves no object of the runtime in a reference cycle (which only the cyclic GC frees: its pauses were
the modern era's p99). Counted, not timed."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from support.garbage import cyclic_garbage

import mcpgen_runtime
from mcpgen_runtime.jsonrpc.session import Session
from mcpgen_runtime.jsonrpc.streams import memory_stream_pair
from mcpgen_runtime.server import Server
from mcpgen_runtime.server.dispatch.connection import ServerConnection

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
RUNTIME = str(Path(mcpgen_runtime.__file__).parent)


def build_server() -> Server:
    server = Server("one-call", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return server


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts the ``Session`` and ``ServerConnection`` objects created in the block."""
    made = {"Session": 0, "ServerConnection": 0}
    for cls in (Session, ServerConnection):
        original = cls.__init__

        def counted(self: Any, *args: Any, __original: Any = original, __name: str = cls.__name__, **kw: Any) -> None:
            made[__name] += 1
            __original(self, *args, **kw)

        monkeypatch.setattr(cls, "__init__", counted)
    yield made


@contextmanager
def runtime_tasks() -> Iterator[list[str]]:
    """The tasks started in the block whose coroutine is the runtime's own code (uvicorn's per-request task and the
    HTTP client's are not), by name of their coroutine."""
    loop = asyncio.get_running_loop()
    started: list[str] = []
    previous = loop.get_task_factory()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        code = getattr(coro, "cr_code", None)
        if code is not None and code.co_filename.startswith(RUNTIME):
            started.append(code.co_qualname)
        if previous is not None:
            return previous(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        yield started
    finally:
        loop.set_task_factory(previous)


def call_add(request_id: int) -> tuple[dict[str, Any], dict[str, str]]:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": request_id, "b": 1}, "_meta": dict(META)},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "add",
    }
    return message, headers


async def test_a_modern_http_request_makes_no_session_connection_or_task(monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_server()
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            async with httpx2.AsyncClient(timeout=5) as client:
                warm, headers = call_add(0)  # the first request loads the version's models
                assert (await client.post(f"{base}/mcp", json=warm, headers=headers)).status_code == 200
                with counting(monkeypatch) as made, runtime_tasks() as tasks:
                    for n in range(1, 6):
                        message, headers = call_add(n)
                        response = await client.post(f"{base}/mcp", json=message, headers=headers)
                        assert response.status_code == 200, response.text
                        assert response.json()["result"]["content"][0]["text"] == str(n + 1)
            tg.cancel_scope.cancel()
    assert made == {"Session": 0, "ServerConnection": 0}
    assert tasks == []


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_modern_http_requests_leave_nothing_in_reference_cycles(json_response: bool) -> None:
    server = build_server()
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0, json_response=json_response))
            async with httpx2.AsyncClient(timeout=5) as client:
                warm, headers = call_add(0)
                assert (await client.post(f"{base}/mcp", json=warm, headers=headers)).status_code == 200
                with cyclic_garbage() as garbage:
                    for n in range(1, 51):
                        message, headers = call_add(n)
                        response = await client.post(f"{base}/mcp", json=message, headers=headers)
                        assert response.status_code == 200, response.text
                        assert response.json()["result"]["content"][0]["text"] == str(n + 1)
            tg.cancel_scope.cancel()
    # None of the runtime's, the server layer's (ModernRequest, Context, InputExchange, ModernServing) or the
    # transport's (the exchange and its call): each would be kept until a collection, and make one more likely.
    assert Counter(garbage) == Counter()


async def test_modern_requests_over_a_stream_leave_nothing_in_reference_cycles() -> None:
    server = build_server()
    server_end, client_end = memory_stream_pair()
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_stream, server_end)
            async with Session(client_end) as client:
                await client.request("tools/call", call_add(0)[0]["params"])
                with cyclic_garbage() as garbage:
                    for n in range(1, 51):
                        result = await client.request("tools/call", call_add(n)[0]["params"])
                        assert result["content"][0]["text"] == str(n + 1)
            tg.cancel_scope.cancel()
    assert Counter(garbage) == Counter()


async def test_a_modern_request_over_a_stream_starts_no_more_tasks_than_a_legacy_one() -> None:
    """Over a stream the connection's session runs each request in a task of its own, in either era; a modern
    request adds none to that."""
    server = build_server()
    server_end, client_end = memory_stream_pair()
    legacy_params = {"name": "add", "arguments": {"a": 1, "b": 2}}
    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_stream, server_end)
            async with Session(client_end) as client:
                initialize = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                }
                await client.request("initialize", initialize)
                await client.notify("notifications/initialized")

                async def tasks_of(call: Callable[[], Awaitable[Any]]) -> list[str]:
                    await call()  # warm: the version's models
                    with runtime_tasks() as started:
                        for _ in range(5):
                            await call()
                    return started

                modern = await tasks_of(lambda: client.request("tools/call", call_add(1)[0]["params"]))
                legacy = await tasks_of(lambda: client.request("tools/call", legacy_params))
            tg.cancel_scope.cancel()
    assert len(modern) <= len(legacy), (modern, legacy)


async def test_a_modern_request_over_a_stream_uses_the_connections_session(monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_server()
    server_end, client_end = memory_stream_pair()
    with counting(monkeypatch) as made, anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_stream, server_end)
            async with Session(client_end) as client:
                for n in range(5):
                    result = await client.request("tools/call", call_add(n)[0]["params"])
                    assert result["content"][0]["text"] == str(n + 1)
                    assert result["resultType"] == "complete"
            tg.cancel_scope.cancel()
    # The client's Session and the server's one connection: none per request.
    assert made == {"Session": 2, "ServerConnection": 1}
