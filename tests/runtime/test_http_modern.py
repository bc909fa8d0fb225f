"""The streamable HTTP server's modern era (MCP 2026-07-28) beside its legacy era, on one endpoint: raw HTTP
requests (httpx2) against ``StreamableHTTPApp`` served by uvicorn on 127.0.0.1. The handlers are plain JSON-RPC: a
``Session`` per legacy session, and for each modern request one call of a ``ModernHandler`` that runs the same
request handler, which speaks just enough of both eras, so that what is tested is the transport: routing, header
checks, status codes, JSON or SSE answers, listen streams, limits, and that nothing is kept between requests."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import serving_streamable

from mcpgen_runtime import JSONParams, JSONRPCError, MessageStream, MethodNotFound, RequestContext, Session
from mcpgen_runtime.jsonrpc.answers import call_handler
from mcpgen_runtime.jsonrpc.context import SessionClosedError
from mcpgen_runtime.jsonrpc.envelopes import Request
from mcpgen_runtime.transports.http.server.app import StreamableHTTPApp
from mcpgen_runtime.transports.http.server.modern import ModernAnswer, ModernCall

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
META = {VERSION_META: MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT_BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


class World:
    """What the handler shares between connections: live connections, listen streams, cancelled requests."""

    def __init__(self) -> None:
        self.connections = 0
        self.listeners: set[Any] = set()  # the listening connections' sessions
        self.cancelled: list[Any] = []
        self.seen_headers: list[str | None] = []


async def handle(world: World, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    params = params if isinstance(params, dict) else {}
    version = params.get("_meta", {}).get(VERSION_META)
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
    if method == "echo":  # a legacy-era method
        return {"echo": params}
    if version != MODERN:  # what the server layer answers (the transport does not know the supported versions)
        raise JSONRPCError(-32022, "Unsupported protocol version", {"supported": [MODERN], "requested": version})
    if method == "server/discover":
        return {"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": True}}}
    if method == "tools/call":
        scope = getattr(context.session, "scope", None)  # a modern request's: its ModernCall's
        headers = dict(scope["headers"]) if scope is not None else {}
        world.seen_headers.append(headers.get(b"mcp-param-region", b"").decode() or None)
        name = params["name"]
        if name == "progress":
            token = params["_meta"].get("progressToken", 0)
            await context.session.notify("notifications/progress", {"progressToken": token, "progress": 1})
            await context.session.notify("notifications/tools/list_changed")  # unrelated: must not go out here
        elif name == "trigger":
            for listener in list(world.listeners):
                await listener.notify("notifications/tools/list_changed", {"_meta": {"subscriptionId": "s"}})
        elif name == "hang":
            try:
                await anyio.sleep(30)
            except anyio.get_cancelled_exc_class():
                world.cancelled.append(context.request_id)
                raise
        elif name == "ask":  # a server->client request: there is no way back in this era
            await context.session.request("elicitation/create", {}, timeout=5)
        return {"content": [{"type": "text", "text": name}], "resultType": "complete"}
    if method == "subscriptions/listen":
        await context.session.notify("notifications/subscriptions/acknowledged", {"_meta": {"subscriptionId": "s"}})
        world.listeners.add(context.session)
        try:
            await anyio.sleep_forever()
        finally:
            world.listeners.discard(context.session)
            world.cancelled.append(context.request_id)
    raise MethodNotFound(method)


class ExchangeSession:
    """What a request handler talks back through (``jsonrpc.context.OutgoingSession``), over one modern exchange."""

    def __init__(self, call: ModernCall) -> None:
        self.call, self.scope = call, call.scope

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.call.notify(method, params)

    async def request(self, method: str, params: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        raise SessionClosedError(f"no server->client requests in a modern exchange ({method})")


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[tuple[str, StreamableHTTPApp, World]]:
    world = World()

    async def connection(stream: MessageStream) -> None:
        world.connections += 1
        try:
            await Session(stream, request_handler=partial(handle, world)).run()
        finally:
            world.connections -= 1

    async def modern_request(request: Request, call: ModernCall) -> ModernAnswer:
        world.connections += 1
        try:
            context = RequestContext(ExchangeSession(call), request.id, request.method, request.params)
            return await call_handler(partial(handle, world), request, context, answer_pings=False)
        finally:
            world.connections -= 1

    async with serving_streamable(connection, modern_handler=modern_request, **options) as (url, app):
        yield url, app, world


def modern(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": dict(META)}}


def headers_for(message: dict[str, Any], **extra: str) -> dict[str, str]:
    """The headers a conforming client sends with ``message``."""
    headers = {**ACCEPT_BOTH, "mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    params = message.get("params", {})
    name = params.get("uri", params.get("name"))
    if name is not None:
        headers["mcp-name"] = name
    return {**headers, **extra}


def call(name: str, request_id: int = 1) -> dict[str, Any]:
    return modern("tools/call", {"name": name, "arguments": {}}, request_id)


async def settle(app: StreamableHTTPApp, world: World) -> None:
    """Wait (bounded by the caller) until no request is in flight and no connection handler runs."""
    while app.modern.exchanges or world.connections or app.requests_in_flight:
        await anyio.sleep(0.01)


async def test_a_stateless_request_is_answered_and_nothing_is_kept() -> None:
    with anyio.fail_after(15):
        async with serving() as (url, app, world), httpx2.AsyncClient(timeout=5) as client:
            for n in range(3):
                message = call("plain", n)
                response = await client.post(url, json=message, headers=headers_for(message))
                assert response.status_code == 200, response.text
                assert response.headers["content-type"] == "application/json"
                assert "mcp-session-id" not in response.headers
                assert response.json() == {
                    "jsonrpc": "2.0",
                    "id": n,
                    "result": {"content": [{"type": "text", "text": "plain"}], "resultType": "complete"},
                }
                await settle(app, world)
                assert app.sessions == {} and world.connections == 0 and app.requests_in_flight == 0
            # The handler saw the POST's headers (current_http_scope), as a session's handler does.
            message = call("plain")
            await client.post(url, json=message, headers=headers_for(message, **{"mcp-param-region": "eu"}))
            assert world.seen_headers[-1] == "eu"
            # Without a body version but with a modern header: still the modern era (here: its -32602).
            message = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}
            response = await client.post(url, json=message, headers=headers_for(message))
            assert response.status_code == 400 and response.json()["error"]["code"] == -32602
            assert response.json()["id"] == 7
            # A notification is accepted and dropped; a batch is no request of this era.
            note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": META}}
            response = await client.post(url, json=note, headers=headers_for(note))
            assert response.status_code == 202 and response.content == b""
            response = await client.post(url, json=[call("a", 1), call("b", 2)], headers=headers_for(call("a")))
            assert response.status_code == 400 and response.json()["error"]["code"] == -32600
            # GET and DELETE have no place in this era.
            for method in ("GET", "DELETE"):
                response = await client.request(method, url, headers=headers_for(call("a")))
                assert response.status_code == 405 and response.headers["allow"] == "POST", method
            await settle(app, world)
            assert app.sessions == {}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"mcp-method": "tools/list"}, "Mcp-Method"),
        ({"mcp-method": None}, "Mcp-Method is missing"),
        ({"mcp-method": "TOOLS/CALL"}, "Mcp-Method"),
        ({"mcp-name": "other"}, "Mcp-Name"),
        ({"mcp-name": None}, "Mcp-Name is missing"),
        ({"mcp-name": "=?base64?bm90IHRoaXM=?="}, "Mcp-Name"),  # "not this"
        ({"mcp-name": "=?base64?cGxhaW4?="}, "Mcp-Name"),  # "plain" without its padding: not canonical
        ({"mcp-protocol-version": "2099-01-01"}, "MCP-Protocol-Version"),
        ({"mcp-protocol-version": None}, "MCP-Protocol-Version is missing"),
        ({"mcp-protocol-version": "2025-11-25"}, "MCP-Protocol-Version"),  # a legacy-era header, modern body
    ],
)
async def test_routing_headers_must_match_the_body(change: dict[str, str | None], expected: str) -> None:
    message = call("plain", 41)
    headers = {key: value for key, value in {**headers_for(message), **change}.items() if value is not None}
    with anyio.fail_after(10):
        async with serving() as (url, _app, world), httpx2.AsyncClient(timeout=5) as client:
            response = await client.post(url, json=message, headers=headers)
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert error["code"] == -32020 and expected in error["message"]
            assert response.json()["id"] == 41
            assert world.connections == 0  # refused before any handler ran


async def test_header_values_are_decoded_trimmed_and_case_insensitive_by_name() -> None:
    with anyio.fail_after(10):
        async with serving() as (url, _app, _world), httpx2.AsyncClient(timeout=5) as client:
            message = call("plain")
            encoded = "=?base64?" + base64.b64encode(b"plain").decode() + "?="
            for extra in ({"mcp-name": encoded}, {"MCP-METHOD": "tools/call"}):
                headers = {k: v for k, v in headers_for(message).items() if k.lower() not in map(str.lower, extra)}
                response = await client.post(url, json=message, headers={**headers, **extra})
                assert response.status_code == 200, (extra, response.text)
            # Whitespace around a value is no part of it (RFC 9110; the suite checks it; httpx2 will not send it).
            headers = {k: v for k, v in headers_for(message).items() if k != "mcp-name"}
            status, _ = await raw_post(url, json.dumps(message).encode(), {**headers, "mcp-name": "  plain\t"})
            assert status == 200
            # The same routing header twice: refused, whatever the copies say.
            raw = [*headers_for(message).items(), ("mcp-method", "tools/call")]
            response = await client.post(url, json=message, headers=raw)
            assert response.status_code == 400 and response.json()["error"]["code"] == -32020


async def raw_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """A POST written by hand on a TCP connection (for header values an HTTP client refuses to send)."""
    host_port, path = url.removeprefix("http://").split("/", 1)
    host, port = host_port.rsplit(":", 1)
    lines = [f"POST /{path} HTTP/1.1", f"host: {host_port}", f"content-length: {len(body)}", "connection: close"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    async with await anyio.connect_tcp(host, int(port)) as tcp:
        await tcp.send("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        received = b""
        try:
            while True:
                received += await tcp.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    return int(received.split(b" ", 2)[1]), received


async def test_error_codes_map_to_http_statuses() -> None:
    with anyio.fail_after(10):
        async with serving() as (url, _app, _world), httpx2.AsyncClient(timeout=5) as client:
            message = modern("no/such/method", request_id=5)
            response = await client.post(url, json=message, headers=headers_for(message))
            assert response.status_code == 404 and response.json()["error"]["code"] == -32601
            assert response.json()["id"] == 5
            # An unsupported version, header and body agreeing: the server layer's -32022, with its data.
            message = modern("server/discover", request_id=6)
            message["params"]["_meta"][VERSION_META] = "2099-01-01"
            response = await client.post(
                url, json=message, headers=headers_for(message, **{"mcp-protocol-version": "2099-01-01"})
            )
            assert response.status_code == 400
            assert response.json()["error"]["code"] == -32022
            assert response.json()["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
            # A server->client request has no way back in this era: the handler's request fails, and so its call.
            message = call("ask")
            response = await client.post(url, json=message, headers=headers_for(message))
            assert response.json()["error"]["code"] == -32603


async def test_notifications_turn_the_answer_into_an_sse_stream() -> None:
    with anyio.fail_after(10):
        async with serving() as (url, _app, _world), httpx2.AsyncClient(timeout=5) as client:
            message = call("progress")
            message["params"]["_meta"]["progressToken"] = "p"
            response = await client.post(url, json=message, headers=headers_for(message))
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["x-accel-buffering"] == "no" and "mcp-session-id" not in response.headers
            events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
            # The progress notification, then the answer; the unrelated list_changed stayed off this stream, and
            # no event has an id (nothing is resumable in this era).
            assert [event.get("method") for event in events] == ["notifications/progress", None]
            assert events[1]["result"]["content"][0]["text"] == "progress"
            assert "\nid:" not in response.text and not response.text.startswith("id:")
        async with serving(json_response=True) as (url, _app, _world), httpx2.AsyncClient(timeout=5) as client:
            response = await client.post(url, json=message, headers=headers_for(message))
            assert response.headers["content-type"] == "application/json"  # notifications dropped in JSON mode
            assert response.json()["result"]["content"][0]["text"] == "progress"


async def test_both_eras_on_one_endpoint_at_once() -> None:
    with anyio.fail_after(15):
        async with serving() as (url, app, _world), httpx2.AsyncClient(timeout=5) as client:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
            response = await client.post(url, json=init, headers=ACCEPT_BOTH)
            session_headers = {**ACCEPT_BOTH, "mcp-session-id": response.headers["mcp-session-id"]}
            session_headers["mcp-protocol-version"] = "2025-06-18"
            outcomes: dict[str, int] = {}

            async def old(n: int) -> None:
                message = {"jsonrpc": "2.0", "id": n, "method": "echo", "params": {"n": n}}
                response = await client.post(url, json=message, headers=session_headers)
                assert response.status_code == 200 and f'"n":{n}' in response.text
                outcomes[f"old{n}"] = response.status_code

            async def new(n: int) -> None:
                message = call("plain", n)
                response = await client.post(url, json=message, headers=headers_for(message))
                assert response.status_code == 200 and "mcp-session-id" not in response.headers
                outcomes[f"new{n}"] = response.status_code

            async with anyio.create_task_group() as tg:
                for n in range(1, 11):
                    tg.start_soon(old, n)
                    tg.start_soon(new, n)
            assert len(outcomes) == 20
            # One session, however many stateless requests were served.
            assert list(app.sessions) == [session_headers["mcp-session-id"]]
            # A modern request carrying a stale session id is served statelessly (the id is ignored, per spec).
            message = call("plain", 99)
            response = await client.post(url, json=message, headers=headers_for(message, **{"mcp-session-id": "gone"}))
            assert response.status_code == 200 and "mcp-session-id" not in response.headers
            # A modern request carrying a live session's id is modern too (the id is ignored, per spec: issue 27).
            response = await client.post(
                url, json=message, headers=headers_for(message, **{"mcp-session-id": session_headers["mcp-session-id"]})
            )
            assert response.status_code == 200 and "mcp-session-id" not in response.headers


async def read_events(lines: AsyncIterator[str], count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async for line in lines:
        if line.startswith("data: "):
            events.append(json.loads(line[6:]))
            if len(events) == count:
                break
    return events


async def test_a_listen_stream_carries_change_notifications_until_the_client_leaves() -> None:
    with anyio.fail_after(15):
        async with serving() as (url, app, world), httpx2.AsyncClient(timeout=5) as client:
            listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 3)
            async with client.stream("POST", url, json=listen, headers=headers_for(listen)) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                lines = response.aiter_lines()
                [ack] = await read_events(lines, 1)
                assert ack["method"] == "notifications/subscriptions/acknowledged"
                assert app.modern.listening == 1 and app.requests_in_flight == 0  # not counted as in flight
                trigger = call("trigger", 4)
                answer = await client.post(url, json=trigger, headers=headers_for(trigger))
                assert answer.status_code == 200
                [changed] = await read_events(lines, 1)
                assert changed["method"] == "notifications/tools/list_changed"
            # The client closed the stream: the listen handler was cancelled, nothing is left.
            while 3 not in world.cancelled:
                await anyio.sleep(0.01)
            await settle(app, world)
            assert app.modern.listening == 0 and not world.listeners


async def test_listen_streams_are_bounded_and_end_at_shutdown() -> None:
    with anyio.fail_after(15):
        async with serving(max_listen_streams=1, json_response=True) as (url, app, world):
            async with httpx2.AsyncClient(timeout=5) as client:
                listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 3)
                async with client.stream("POST", url, json=listen, headers=headers_for(listen)) as response:
                    # Always a stream, even when the app answers other requests with JSON.
                    assert response.headers["content-type"].startswith("text/event-stream")
                    lines = response.aiter_lines()
                    await read_events(lines, 1)
                    second = await client.post(url, json=listen, headers=headers_for(listen))
                    assert second.status_code == 503 and second.headers["retry-after"] == "1"
                    assert second.json()["error"]["code"] == -32810
                    # A listen stream needs a client that reads SSE.
                    only_json = headers_for(listen, accept="application/json")
                    assert (await client.post(url, json=listen, headers=only_json)).status_code == 406
                    app.close_sessions()  # what serve_app calls before shutting down
                    remaining = [line async for line in lines]  # the stream ends
                    assert not any(line.startswith("data: ") for line in remaining)
            await settle(app, world)
            assert not world.listeners and 3 in world.cancelled


async def test_stateless_requests_share_the_servers_in_flight_limit_and_are_cancelled_on_disconnect() -> None:
    with anyio.fail_after(15):
        async with serving(max_requests_in_flight_total=1) as (url, app, world):
            async with httpx2.AsyncClient(timeout=5) as client, anyio.create_task_group() as tg:
                hang = call("hang", 8)

                async def hang_then_leave() -> None:
                    with anyio.move_on_after(1):
                        await client.post(url, json=hang, headers=headers_for(hang))

                tg.start_soon(hang_then_leave)
                while app.requests_in_flight < 1:
                    await anyio.sleep(0.01)
                message = call("plain", 9)
                refused = await client.post(url, json=message, headers=headers_for(message))
                assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
                assert refused.json() == {
                    "jsonrpc": "2.0",
                    "id": 9,
                    "error": {"code": -32810, "message": refused.json()["error"]["message"]},
                }
            # The client gave up on the hanging request: closing its response stream cancelled it (spec).
            while 8 not in world.cancelled:
                await anyio.sleep(0.01)
            await settle(app, world)
            async with httpx2.AsyncClient(timeout=5) as client:
                response = await client.post(url, json=message, headers=headers_for(message))
                assert response.status_code == 200


async def test_a_real_servers_listen_stream_gets_its_list_changed_notification() -> None:
    """The same through ``Server.serve_http``: the server layer answers ``subscriptions/listen`` as one call of
    its ``serve_modern``, and ``notify_tools_changed`` (from a tool called on another POST) reaches that stream."""
    from mcpgen_runtime.server import Server

    server = Server("listening", version="1.0.0")

    @server.tool()
    async def change() -> str:
        """Change the tool list."""
        await server.notify_tools_changed()
        return "changed"

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            url = f"{base}/mcp"
            async with httpx2.AsyncClient(timeout=5) as client:
                listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 3)
                async with client.stream("POST", url, json=listen, headers=headers_for(listen)) as response:
                    assert response.status_code == 200 and "mcp-session-id" not in response.headers
                    lines = response.aiter_lines()
                    [ack] = await read_events(lines, 1)
                    assert ack["method"] == "notifications/subscriptions/acknowledged"
                    message = call("change", 4)
                    answer = await client.post(url, json=message, headers=headers_for(message))
                    assert answer.status_code == 200 and "mcp-session-id" not in answer.headers
                    assert answer.json()["result"]["content"][0]["text"] == "changed"
                    [changed] = await read_events(lines, 1)
                    assert changed["method"] == "notifications/tools/list_changed"
                    key = "io.modelcontextprotocol/subscriptionId"
                    assert changed["params"]["_meta"][key] == ack["params"]["_meta"][key]
            tg.cancel_scope.cancel()


async def test_the_server_layers_header_mismatch_becomes_http_400() -> None:
    """An ``x-mcp-header`` parameter's ``Mcp-Param-*`` header is checked by the server layer (it sees the request's
    headers); its -32020 answer goes out as HTTP 400, as the transport's own header checks do."""
    from pydantic import Field

    from mcpgen_runtime.server import Server

    server = Server("headers", version="1.0.0")

    @server.tool()
    async def where(region: str = Field(json_schema_extra={"x-mcp-header": "Region"})) -> str:
        """Where the query runs."""
        return region

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            url = f"{base}/mcp"
            async with httpx2.AsyncClient(timeout=5) as client:
                message = modern("tools/call", {"name": "where", "arguments": {"region": "eu"}}, 12)
                matching = await client.post(
                    url, json=message, headers=headers_for(message, **{"mcp-param-region": "eu"})
                )
                assert matching.status_code == 200 and matching.json()["result"]["content"][0]["text"] == "eu"
                for wrong in ({"mcp-param-region": "us"}, {}):
                    refused = await client.post(url, json=message, headers=headers_for(message, **wrong))
                    assert refused.status_code == 400, (wrong, refused.text)
                    assert refused.json()["error"]["code"] == -32020 and refused.json()["id"] == 12
            tg.cancel_scope.cancel()
