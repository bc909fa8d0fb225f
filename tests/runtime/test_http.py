"""mcpgen_runtime streamable HTTP: http_server + http_client over real uvicorn on 127.0.0.1, and each against the
official MCP SDK (``mcp==2.3.0``) on the other end. No mocks; every wait is bounded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Message, Receive, Scope, Send
from support.servers import in_background

from mcpgen_runtime import JSONParams, JSONRPCError, MessageStream, MethodNotFound, RequestContext, Session
from mcpgen_runtime.transports.http.client.stream import open_http_stream
from mcpgen_runtime.transports.http.server.app import StreamableHTTPApp, run_http, serve_app

pytestmark = pytest.mark.anyio

ACCEPT_BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
CANCELLED: list[Any] = []  # ids of "hang" requests whose handler was cancelled
INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


async def server_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
    if method == "echo":
        return {"echo": params}
    if method == "slow":
        assert isinstance(params, dict)
        await anyio.sleep(params["delay"])
        return {"n": params["n"]}
    if method == "hang":
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            CANCELLED.append(context.request_id)
            raise
    if method == "chatty":
        # Related server->client traffic: a notification and a request, both before the response.
        await context.session.notify("notifications/message", {"level": "info", "data": "working"})
        answer = await context.session.request("sampling/createMessage", {"q": 1}, timeout=5)
        return {"client_said": answer}
    raise MethodNotFound(method)


async def connection(stream: MessageStream) -> None:
    await Session(stream, request_handler=server_handler, allow_batches=True).run()


@asynccontextmanager
async def http_server(
    handler: Callable[[MessageStream], Awaitable[None]] = connection, **options: Any
) -> AsyncIterator[str]:
    async with in_background(partial(run_http, handler, "127.0.0.1", 0, **options)) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def client_session(url: str, notes: list[tuple[str, Any]] | None = None) -> AsyncIterator[Session]:
    async def on_request(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "sampling/createMessage":
            return {"sampled": params}
        raise MethodNotFound(method)

    async def on_notification(method: str, params: JSONParams) -> None:
        if notes is not None:
            notes.append((method, params))

    async with open_http_stream(url) as stream:
        async with Session(stream, request_handler=on_request, notification_handler=on_notification) as session:
            result = await session.request("initialize", INIT_PARAMS, timeout=5)
            assert result["protocolVersion"] == "2025-06-18"
            assert stream.session_id and stream.protocol_version == "2025-06-18"
            await session.notify("notifications/initialized")
            yield session


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_round_trips_and_concurrency(json_response: bool) -> None:
    notes: list[tuple[str, Any]] = []
    with anyio.fail_after(15):
        async with http_server(json_response=json_response) as url, client_session(url, notes) as session:
            assert await session.request("echo", {"x": [1, "ü"]}, timeout=5) == {"echo": {"x": [1, "ü"]}}
            # In JSON mode the related messages travel on the GET stream; in SSE mode on the POST's own stream.
            assert await session.request("chatty", timeout=5) == {"client_said": {"sampled": {"q": 1}}}
            assert notes == [("notifications/message", {"level": "info", "data": "working"})]
            with pytest.raises(JSONRPCError) as info:
                await session.request("nope", timeout=5)
            assert info.value.code == -32601

            # Many requests in flight at once, answered out of order (the first sent is the slowest).
            results: dict[int, dict[str, Any]] = {}
            finished: list[int] = []

            async def call(n: int) -> None:
                results[n] = await session.request("slow", {"n": n, "delay": 0.3 - n * 0.01}, timeout=10)
                finished.append(n)

            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(call, n)
            assert results == {n: {"n": n} for n in range(20)}
            assert finished != sorted(finished)


async def test_cancellation_ends_the_post_and_the_handler() -> None:
    with anyio.fail_after(10):
        async with http_server() as url, client_session(url) as session:
            CANCELLED.clear()
            with pytest.raises(TimeoutError):
                await session.request("hang", timeout=0.3)
            assert await session.request("echo", {}, timeout=5) == {"echo": {}}
            while not CANCELLED:  # notifications/cancelled went over HTTP and reached the server's session
                await anyio.sleep(0.02)


async def raw_initialize(client: httpx2.AsyncClient, url: str, **headers: str) -> str:
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
    response = await client.post(url, json=message, headers={**ACCEPT_BOTH, **headers})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert '"protocolVersion":"2025-06-18"' in response.text
    return response.headers["mcp-session-id"]


def echo(request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "echo", "params": {"v": request_id}}


async def test_session_ids_and_delete() -> None:
    with anyio.fail_after(10):
        async with http_server() as url, httpx2.AsyncClient(timeout=5) as client:
            response = await client.post(url, json=echo(), headers=ACCEPT_BOTH)
            assert response.status_code == 400 and response.json()["error"]["code"] == -32600
            response = await client.post(url, json=echo(), headers={**ACCEPT_BOTH, "mcp-session-id": "nope"})
            assert response.status_code == 404

            sid = await raw_initialize(client, url)
            headers = {**ACCEPT_BOTH, "mcp-session-id": sid}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            response = await client.post(url, json=note, headers=headers)
            assert response.status_code == 202 and response.content == b""
            response = await client.post(url, json=echo(), headers=headers)
            assert response.status_code == 200 and '{"v":1}' in response.text
            # A batch (2025-03-26) comes back as one SSE event per response.
            response = await client.post(url, json=[echo(2), echo(3)], headers=headers)
            assert response.status_code == 200 and response.text.count("event: message") == 2

            assert (await client.delete(url, headers=headers)).status_code == 200
            assert (await client.post(url, json=echo(4), headers=headers)).status_code == 404
            assert (await client.delete(url, headers=headers)).status_code == 404


async def test_json_mode_answers_with_json_bodies() -> None:
    with anyio.fail_after(10):
        async with http_server(json_response=True) as url, httpx2.AsyncClient(timeout=5) as client:
            message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
            response = await client.post(url, json=message, headers=ACCEPT_BOTH)
            assert response.headers["content-type"] == "application/json"
            headers = {**ACCEPT_BOTH, "mcp-session-id": response.headers["mcp-session-id"]}
            response = await client.post(url, json=[echo(1), echo(2)], headers=headers)
            assert sorted(item["id"] for item in response.json()) == [1, 2]


async def test_protocol_version_header() -> None:
    """Spec 2025-11-25 basic/transports: 400 only for an invalid or unsupported MCP-Protocol-Version. Another
    supported version than the negotiated one is accepted, as both official SDKs do (the conformance suite's
    server-sse-multiple-streams sends 2025-03-26 on a session negotiated at 2025-11-25)."""
    with anyio.fail_after(10):
        async with http_server() as url, httpx2.AsyncClient(timeout=5) as client:
            sid = await raw_initialize(client, url)
            headers = {**ACCEPT_BOTH, "mcp-session-id": sid}
            cases = [(None, 200), ("2025-06-18", 200), ("2025-03-26", 200), ("2025-11-25", 200), ("2024-11-05", 200)]
            cases += [("1999-01-01", 400), ("", 400), ("2025-06-18, 2025-03-26", 400), ("latest", 400)]
            for n, (version, status) in enumerate(cases):
                extra = {} if version is None else {"mcp-protocol-version": version}
                response = await client.post(url, json=echo(n), headers={**headers, **extra})
                assert response.status_code == status, (version, response.text)
                if status == 400:
                    assert response.json()["error"]["code"] == -32600
            # A GET and a DELETE follow the same rule.
            get_headers = {**headers, "accept": "text/event-stream", "mcp-protocol-version": "1999-01-01"}
            assert (await client.get(url, headers=get_headers)).status_code == 400
            # 2026-07-28 is another wire altogether (stateless): refused here.
            response = await client.post(url, json=echo(), headers={**headers, "mcp-protocol-version": "2026-07-28"})
            assert response.status_code == 400


async def test_security_and_limits() -> None:
    with anyio.fail_after(10):
        async with http_server(max_body_size=1024) as url, httpx2.AsyncClient(timeout=5) as client:
            message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
            for bad in [{"origin": "http://evil.example"}, {"host": "evil.example:80"}, {"origin": "null"}]:
                response = await client.post(url, json=message, headers={**ACCEPT_BOTH, **bad})
                assert response.status_code == 403, bad
            port = url.split(":")[-1].split("/")[0]
            sid = await raw_initialize(client, url, origin=f"http://localhost:{port}")
            headers = {**ACCEPT_BOTH, "mcp-session-id": sid}

            response = await client.post(url, json=echo(), headers={**headers, "accept": "application/json"})
            assert response.status_code == 406
            response = await client.get(url, headers={**headers, "accept": "application/json"})
            assert response.status_code == 406
            response = await client.put(url, json=echo(), headers=headers)
            assert response.status_code == 405

            big = {"jsonrpc": "2.0", "id": 9, "method": "echo", "params": {"pad": "x" * 2000}}
            assert (await client.post(url, json=big, headers=headers)).status_code == 413
            response = await client.post(url, content=b'{"jsonrpc": "2.0", "id": 1, "meth', headers=headers)
            assert response.status_code == 400
            assert response.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Parse error"},
            }
            response = await client.post(url, json={"jsonrpc": "1.0", "id": 5}, headers=headers)
            assert response.status_code == 400 and response.json()["error"]["code"] == -32600
            # ...and the session still serves.
            response = await client.post(url, json=echo(7), headers=headers)
            assert response.status_code == 200 and '{"v":7}' in response.text

        async with http_server(allowed_origins=["https://app.example"]) as url, httpx2.AsyncClient(timeout=5) as client:
            await raw_initialize(client, url, origin="https://app.example")
            response = await client.post(url, json=message, headers={**ACCEPT_BOTH, "origin": "http://localhost"})
            assert response.status_code == 403


async def test_standalone_get_stream_carries_unrelated_messages() -> None:
    sessions: list[Session] = []

    async def handler(stream: MessageStream) -> None:
        async with Session(stream, request_handler=server_handler) as session:
            sessions.append(session)
            await session.wait_closed()

    notes: list[tuple[str, Any]] = []
    with anyio.fail_after(10):
        async with http_server(handler) as url, client_session(url, notes) as session:
            await session.request("echo", {}, timeout=5)  # the GET stream is being opened meanwhile
            await sessions[0].notify("notifications/tools/list_changed")
            while not notes:
                await anyio.sleep(0.02)
            assert notes == [("notifications/tools/list_changed", None)]


# -- the official SDK (mcp==2.3.0) on the other end ----------------------------------------------------------------

TOOL = {"name": "add", "description": "Add two integers", "inputSchema": {"type": "object"}}


async def handshake_era_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    """A minimal 2025-06-18 MCP server written against the raw session."""
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "mcpgen-raw", "version": "0.1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        assert isinstance(params, dict)
        args = params["arguments"]
        await context.session.notify("notifications/message", {"level": "info", "data": "adding"})
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
    raise MethodNotFound(method)  # e.g. the SDK's server/discover probe, if it ever got this far


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # logging/ping are deprecated as of 2026-07-28
@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_official_sdk_client_against_our_server() -> None:
    from mcp import Client

    async def handler(stream: MessageStream) -> None:
        await Session(stream, request_handler=handshake_era_handler).run()

    app = StreamableHTTPApp(handler)
    wire: list[tuple[str, str | None, int]] = []

    async def recording_app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                method_header = headers.get(b"mcp-method")
                wire.append((scope["method"], method_header.decode() if method_header else None, message["status"]))
            await send(message)

        await app(scope, receive, recording_send if scope["type"] == "http" else send)

    logs: list[Any] = []

    async def logging_callback(params: Any) -> None:
        logs.append(params)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, recording_app, before_shutdown=app.close_sessions))
            for mode in ("auto", "legacy"):
                async with Client(f"{base}/mcp", mode=mode, logging_callback=logging_callback) as client:
                    assert client.protocol_version == "2025-06-18"
                    assert client.server_capabilities.tools is not None
                    tools = await client.list_tools()
                    assert [tool.name for tool in tools.tools] == ["add"]
                    result = await client.call_tool("add", {"a": 2, "b": 3})
                    assert result.content[0].text == "5"  # type: ignore[union-attr]
                    await client.send_ping()
                if mode == "auto":
                    # How 2.3.0 negotiates: a server/discover probe at 2026-07-28 (no session), which the app
                    # serves statelessly; this legacy-era-only handler answers -32601, hence HTTP 404 (spec), and
                    # the SDK takes that as "legacy server" and falls back to initialize (offering 2025-11-25).
                    assert wire[0] == ("POST", "server/discover", 404)
                    assert wire[1][2] == 200
                assert wire[-1] == ("DELETE", None, 200)
            tg.cancel_scope.cancel()
    assert len(logs) == 2
    assert ("GET", None, 200) in wire  # the SDK opened our standalone stream after initialization


async def test_our_client_against_official_sdk_server() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sdk-http")

    @server.tool(description="Add two integers")
    def add(a: int, b: int) -> int:
        return a + b

    app = server.streamable_http_app()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, app, "127.0.0.1", 0))
            async with open_http_stream(f"{base}/mcp") as stream, Session(stream) as session:
                result = await session.request("initialize", INIT_PARAMS, timeout=5)
                assert result["protocolVersion"] == "2025-06-18"
                assert stream.session_id is not None and stream.protocol_version == "2025-06-18"
                await session.notify("notifications/initialized")
                tools = await session.request("tools/list", {}, timeout=5)
                assert [tool["name"] for tool in tools["tools"]] == ["add"]
                called = await session.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}}, timeout=5)
                assert called["content"][0]["text"] == "42"
                assert await session.request("ping", timeout=5) == {}
                with pytest.raises(JSONRPCError):
                    await session.request("no/such/method", {}, timeout=5)
            tg.cancel_scope.cancel()


def test_sse_event_framing() -> None:
    from mcpgen_runtime.transports.http.server.session import Event
    from mcpgen_runtime.transports.http.server.sse import sse_bytes, sse_event

    assert sse_event(b'{"a":1}') == b'event: message\ndata: {"a":1}\n\n'
    assert sse_event(b"{\n}") == b"event: message\ndata: {\ndata: }\n\n"
    assert json.loads(b"{\n}") == {}
    assert sse_event(b"{}", "s.1/7") == b"event: message\nid: s.1/7\ndata: {}\n\n"
    # A priming event: an id and empty data (dispatched by clients with data ""), with the retry hint.
    assert sse_bytes(Event(None, "s.1/1", 1000)) == b"id: s.1/1\nretry: 1000\ndata: \n\n"
    # Only a retry hint: no data line, so clients dispatch no event.
    assert sse_bytes(Event(None, retry_ms=500)) == b"retry: 500\n\n"
