"""A 2025-11-25 session over a ``Server``'s real streamable HTTP endpoint, driven by hand (httpx2): the tests of the
legacy era's per-request path use it to send POSTs exactly as they choose.

``legacy_session`` starts ``server.serve_http`` (uvicorn, port 0) and initializes a session; ``answer_of`` reads
the JSON-RPC answer of a POST answered either as JSON or as an SSE stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx2

from mcpgen_runtime.server import Server

VERSION = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "legacy-http", "version": "1"}}


@asynccontextmanager
async def legacy_session(
    server: Server, **options: Any
) -> AsyncIterator[tuple[httpx2.AsyncClient, str, dict[str, str]]]:
    """An initialized 2025-11-25 session: the client, the endpoint and the headers of its requests."""
    async with anyio.create_task_group() as tg:
        base = await tg.start(partial(server.serve_http, "127.0.0.1", 0, **options))
        url = f"{base}/mcp"
        async with httpx2.AsyncClient(timeout=5) as client:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
            response = await client.post(url, json=init, headers=ACCEPT)
            assert response.status_code == 200, response.text
            headers = {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=note, headers=headers)).status_code == 202
            yield client, url, headers
        tg.cancel_scope.cancel()


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST, answered as JSON or as an SSE stream (its last message event)."""
    if response.headers["content-type"].startswith("application/json"):
        answer: dict[str, Any] = response.json()
        return answer
    data = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: {")]
    parsed: dict[str, Any] = json.loads(data[-1])
    return parsed
