"""The streamable HTTP server's per-request fast paths keep the behaviour of the slow ones: plain-ASGI routing
answers as starlette's did, a request handed to the session directly still sees its HTTP request
(``http_session.current_http_scope``), and an SSE handler that runs in the POST's own task still streams what it
sends before its answer while it runs. Real uvicorn on 127.0.0.1; every wait is bounded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import in_background

from mcpgen_runtime import JSONParams, MessageStream, MethodNotFound, RequestContext, Session
from mcpgen_runtime.transports.http.server import session as http_session
from mcpgen_runtime.transports.http.server.app import run_http

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


class Handler:
    def __init__(self) -> None:
        self.go_on = anyio.Event()

    async def __call__(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "initialize":
            return {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
        if method == "whoami":
            scope = http_session.current_http_scope()
            assert scope is not None
            headers = {key.decode(): value.decode() for key, value in scope["headers"]}
            return {"path": scope["path"], "x-test": headers.get("x-test")}
        if method == "slow_with_note":
            # Sent before the answer; the client must see it while this handler still waits.
            await context.session.notify("notifications/message", {"level": "info", "data": "working"})
            with anyio.fail_after(5):
                await self.go_on.wait()
            return {"done": True}
        raise MethodNotFound(method)


@asynccontextmanager
async def serving(handler: Handler, **options: Any) -> AsyncIterator[str]:
    async def connection(stream: MessageStream) -> None:
        await Session(stream, request_handler=handler).run()

    async with in_background(partial(run_http, connection, "127.0.0.1", 0, **options)) as base:
        yield f"{base}/mcp"


async def initialize(client: httpx2.AsyncClient, url: str) -> dict[str, str]:
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
    response = await client.post(url, json=message, headers=HEADERS)
    assert response.status_code == 200
    return {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}


def answer_of(response: httpx2.Response) -> Any:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return json.loads(data[-1])
    return response.json()


async def test_other_paths_and_methods_are_answered_as_before() -> None:
    with anyio.fail_after(10):
        async with serving(Handler()) as url, httpx2.AsyncClient(timeout=5) as client:
            response = await client.get(url.replace("/mcp", "/other"))
            assert response.status_code == 404 and response.text == "Not Found"
            assert response.headers["content-type"] == "text/plain; charset=utf-8"
            headers = await initialize(client, url)
            for method in ("PUT", "PATCH", "HEAD"):  # HEAD too: it must not end the session as a DELETE would
                response = await client.request(method, url, headers=headers)
                assert response.status_code == 405, method
                assert response.headers["allow"] == "GET, POST, DELETE"
            call = {"jsonrpc": "2.0", "id": 1, "method": "whoami"}
            assert (await client.post(url, json=call, headers=headers)).status_code == 200


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_request_handed_over_directly_sees_its_http_request(json_response: bool) -> None:
    with anyio.fail_after(10):
        async with serving(Handler(), json_response=json_response) as url, httpx2.AsyncClient(timeout=5) as client:
            headers = await initialize(client, url)
            for n in range(3):
                call = {"jsonrpc": "2.0", "id": n + 1, "method": "whoami"}
                response = await client.post(url, json=call, headers={**headers, "x-test": f"call {n}"})
                assert response.status_code == 200
                assert answer_of(response)["result"] == {"path": "/mcp", "x-test": f"call {n}"}
            assert http_session.current_http_scope() is None  # outside a request


async def test_an_sse_handler_running_in_the_post_task_streams_before_it_answers() -> None:
    handler = Handler()
    with anyio.fail_after(10):
        async with serving(handler) as url, httpx2.AsyncClient(timeout=5) as client:
            headers = await initialize(client, url)
            call = {"jsonrpc": "2.0", "id": 1, "method": "slow_with_note"}
            messages: list[Any] = []
            async with client.stream("POST", url, json=call, headers=headers) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        messages.append(json.loads(line[5:]))
                        handler.go_on.set()  # the note came while the handler waits: now it may answer
            assert [m.get("method") for m in messages] == ["notifications/message", None]
            assert messages[-1] == {"jsonrpc": "2.0", "id": 1, "result": {"done": True}}
