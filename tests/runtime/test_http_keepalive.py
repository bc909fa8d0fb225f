"""Keep-alive latency of the streamable HTTP server: sequential requests on ONE HTTP/1.1 connection must not each
wait for a delayed ACK (Nagle's algorithm on a socket without TCP_NODELAY costs ~40 ms per request on Linux).

A check for that pathology, not a speed target. The pathology is a fixed delay: every request waits for the
delayed-ACK timer (at least 40 ms on Linux), so even the fastest quarter of 50 requests takes 44 ms or more
(measured: 2.5 s for 50). Without it the fastest quarter takes a few milliseconds, even with both cores of the test
machine busy, where the total of 50 can exceed a second: so the fast quarter is what is asserted, not the total.
A real uvicorn server on 127.0.0.1, a real mcpgen ``Server`` with a tool, httpx2 limited to one connection."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Receive, Scope, Send

from mcpgen_runtime.server import Server
from mcpgen_runtime.transports.http.server.app import StreamableHTTPApp, serve_app

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}

server = Server("keepalive")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_sequential_requests_on_one_connection_do_not_wait_for_delayed_acks(json_response: bool) -> None:
    app = StreamableHTTPApp(server.serve_stream, json_response=json_response)
    client_ports: set[Any] = set()

    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client_ports.add(scope["client"])
        await app(scope, receive, send)

    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, recording, before_shutdown=app.close_sessions))
            url = f"{base}/mcp"
            async with httpx2.AsyncClient(timeout=10, limits=limits) as client:
                message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}
                response = await client.post(url, json=message, headers=HEADERS)
                assert response.status_code == 200, response.text
                headers = {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"]}
                headers["mcp-protocol-version"] = "2025-06-18"
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert (await client.post(url, json=note, headers=headers)).status_code == 202

                latencies = []
                for n in range(50):
                    call = {"jsonrpc": "2.0", "id": n + 1, "method": "tools/call"}
                    call["params"] = {"name": "add", "arguments": {"a": n, "b": 1}}
                    started = time.monotonic()
                    response = await client.post(url, json=call, headers=headers)
                    latencies.append(time.monotonic() - started)
                    assert response.status_code == 200 and f'"text":"{n + 1}"' in response.text, response.text
            tg.cancel_scope.cancel()
    assert len(client_ports) == 1, f"expected one keep-alive connection, saw {client_ports}"
    fast_quarter = sorted(latencies)[len(latencies) // 4]
    assert fast_quarter < 0.020, (
        f"a quarter of 50 keep-alive requests took {fast_quarter * 1000:.0f} ms or more each (total"
        f" {sum(latencies):.2f} s): a fixed per-request delay, Nagle meeting delayed ACKs?"
    )
