"""Limits and checks of the streamable HTTP server, against real uvicorn servers on 127.0.0.1 and httpx2:
idle sessions expire, only a successful initialize creates a session, requests in flight are bounded per session
and per server (refused with a JSON-RPC error), batches are bounded, a client that disconnects from a stream it
cannot resume cancels its handlers, and an Origin must match the server's scheme, host and port."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import serving_streamable

from mcpgen_runtime import InvalidParams, JSONParams, MessageStream, MethodNotFound, RequestContext, Session
from mcpgen_runtime.server import Server

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
WAIT = 10.0
# http_server.TOO_MANY_REQUESTS_IN_FLIGHT, spelled out: the wire value is the contract.
TOO_MANY_REQUESTS_IN_FLIGHT = -32810


class Gate:
    """What the raw test server's "hold" requests wait for, and what happened to them."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: list[Any] = []
        self.cancelled: list[Any] = []

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "initialize":
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            if version == "refuse-me":
                raise InvalidParams("Invalid params: no such version")
            return {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
        if method == "echo":
            return {"echo": params}
        if method == "hold":
            self.started.append(context.request_id)
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(context.request_id)
                raise
            return {"held": context.request_id}
        raise MethodNotFound(method)

    async def connection(self, stream: MessageStream) -> None:
        await Session(stream, request_handler=self.handle, allow_batches=True).run()

    async def until_started(self, count: int) -> None:
        with anyio.fail_after(WAIT):
            while len(self.started) < count:
                await anyio.sleep(0.01)


def message(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def init_params(version: str = "2025-06-18") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


async def initialize(client: httpx2.AsyncClient, url: str, version: str = "2025-06-18") -> dict[str, str]:
    """A new session; the headers for its requests."""
    response = await client.post(url, json=message(0, "initialize", init_params(version)), headers=HEADERS)
    assert response.status_code == 200, response.text
    return {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}


# -- sessions ----------------------------------------------------------------------------------------------------


async def test_idle_sessions_expire_and_free_their_place() -> None:
    """Clients that go away without DELETE no longer fill the server up for good."""
    gate = Gate()
    # 1 s: the second initialize below must come before the first session expires, even on a loaded machine.
    async with serving_streamable(gate.connection, session_idle_timeout=1.0, max_sessions=1) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                first = await initialize(client, url)
                response = await client.post(url, json=message(0, "initialize", init_params()), headers=HEADERS)
                assert response.status_code == 503  # the first session holds the only place...
                while True:  # ...until it has been idle for a second
                    await anyio.sleep(0.05)
                    response = await client.post(url, json=message(0, "initialize", init_params()), headers=HEADERS)
                    if response.status_code == 200:
                        break
                    assert response.status_code == 503
                assert (await client.post(url, json=message(1, "echo"), headers=first)).status_code == 404
                assert list(app.sessions) == [response.headers["mcp-session-id"]]


async def test_sessions_serving_a_request_or_a_get_stream_do_not_expire() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection, session_idle_timeout=0.5) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                held = await initialize(client, url)
                streaming = await initialize(client, url)
                async with anyio.create_task_group() as tg:
                    result: list[httpx2.Response] = []

                    async def hold() -> None:
                        result.append(await client.post(url, json=message(1, "hold"), headers=held))

                    tg.start_soon(hold)
                    get_headers = {**streaming, "accept": "text/event-stream"}
                    async with client.stream("GET", url, headers=get_headers) as stream:
                        assert stream.status_code == 200
                        await gate.until_started(1)
                        await anyio.sleep(1.5)  # three idle periods, but each session has an HTTP request open
                        assert len(app.sessions) == 2
                        gate.release.set()
                assert result[0].status_code == 200 and '"held":1' in result[0].text
                # Once nothing is open, they expire.
                while app.sessions:
                    await anyio.sleep(0.05)


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_refused_initialize_leaves_no_session(json_response: bool) -> None:
    server = Server("strict")

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    async with serving_streamable(server.serve_stream, max_sessions=1, json_response=json_response) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                for _ in range(3):
                    bad = message(0, "initialize", {"protocolVersion": "2025-06-18"})  # no clientInfo: -32602
                    response = await client.post(url, json=bad, headers=HEADERS)
                    assert response.status_code == 200 and '"code":-32602' in response.text, response.text
                    assert "mcp-session-id" not in response.headers
                    assert app.sessions == {}
                # The one place is still free.
                headers = await initialize(client, url)
                assert list(app.sessions) == [headers["mcp-session-id"]]
                tools = await client.post(url, json=message(1, "tools/list"), headers=headers)
                assert tools.status_code == 200 and '"name":"add"' in tools.text


async def test_a_refused_initialize_of_a_raw_handler_leaves_no_session() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                bad = message(0, "initialize", init_params("refuse-me"))
                response = await client.post(url, json=bad, headers=HEADERS)
                assert '"code":-32602' in response.text and "mcp-session-id" not in response.headers
                assert app.sessions == {}


# -- requests in flight ------------------------------------------------------------------------------------------


async def test_requests_in_flight_are_bounded_per_session() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection, max_requests_in_flight=2) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                other = await initialize(client, url)
                answers: list[httpx2.Response] = []

                async def hold(n: int) -> None:
                    answers.append(await client.post(url, json=message(n, "hold"), headers=headers))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(hold, 1)
                    tg.start_soon(hold, 2)
                    await gate.until_started(2)
                    assert app.requests_in_flight == 2
                    refused = await client.post(url, json=message(3, "echo"), headers=headers)
                    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
                    error = refused.json()
                    assert error["id"] == 3 and error["error"]["code"] == TOO_MANY_REQUESTS_IN_FLIGHT
                    assert "in flight" in error["error"]["message"]
                    # Notifications still go through, and other sessions have their own budget.
                    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    assert (await client.post(url, json=note, headers=headers)).status_code == 202
                    assert (await client.post(url, json=message(4, "echo"), headers=other)).status_code == 200
                    gate.release.set()
                assert sorted(answer.status_code for answer in answers) == [200, 200]
                assert (await client.post(url, json=message(5, "echo"), headers=headers)).status_code == 200
                assert app.requests_in_flight == 0


async def test_requests_in_flight_are_bounded_per_server() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection, max_requests_in_flight_total=2) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                first, second = await initialize(client, url), await initialize(client, url)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(partial(client.post, url, json=message(1, "hold"), headers=first))
                    tg.start_soon(partial(client.post, url, json=message(1, "hold"), headers=second))
                    await gate.until_started(2)
                    refused = await client.post(url, json=message(2, "echo"), headers=second)
                    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
                    assert refused.json()["error"]["code"] == TOO_MANY_REQUESTS_IN_FLIGHT
                    gate.release.set()
                assert (await client.post(url, json=message(3, "echo"), headers=second)).status_code == 200


async def test_batches_are_bounded_in_size_and_by_the_in_flight_limit() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection, max_batch_size=3, max_requests_in_flight=3) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url, "2025-03-26")
                response = await client.post(url, json=[message(n, "echo") for n in range(4)], headers=headers)
                assert response.status_code == 400 and response.json()["error"]["code"] == -32600
                assert "a batch of 4 messages (the limit is 3)" in response.json()["error"]["message"]
                response = await client.post(url, json=[message(n, "echo") for n in range(3)], headers=headers)
                assert response.status_code == 200 and response.text.count('"echo"') == 3
                async with anyio.create_task_group() as tg:
                    tg.start_soon(partial(client.post, url, json=message(9, "hold"), headers=headers))
                    await gate.until_started(1)
                    # Three more would make four in flight: the whole batch is refused, none of it runs.
                    response = await client.post(url, json=[message(n, "echo") for n in range(3)], headers=headers)
                    assert response.status_code == 429 and response.json()["id"] is None
                    gate.release.set()
                assert app.requests_in_flight == 0


async def test_huge_batches_start_no_handlers() -> None:
    """The measured problem: a 4 MiB batch started tens of thousands of handlers."""
    gate = Gate()
    async with serving_streamable(gate.connection) as (url, app):
        async with httpx2.AsyncClient(timeout=10) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url, "2025-03-26")
                batch = [message(n, "hold") for n in range(30_000)]
                response = await client.post(url, json=batch, headers=headers)
                assert response.status_code == 400 and response.json()["error"]["code"] == -32600
                assert gate.started == [] and app.requests_in_flight == 0


@pytest.mark.parametrize("json_response", [False, True], ids=["sse", "json"])
async def test_a_client_that_disconnects_cancels_its_handlers(json_response: bool) -> None:
    gate = Gate()
    async with serving_streamable(gate.connection, json_response=json_response) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                # 2025-06-18: no priming event, and "hold" sends nothing before its answer, so no event id reaches
                # the client: it could never resume this stream.
                headers = await initialize(client, url)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(partial(client.post, url, json=message(7, "hold"), headers=headers))
                    await gate.until_started(1)
                    tg.cancel_scope.cancel()  # the client gives up: its connection is closed mid-answer
                while not gate.cancelled:
                    await anyio.sleep(0.01)
                assert gate.cancelled == [7]
                assert app.requests_in_flight == 0
                # The session goes on, and the id is free again.
                response = await client.post(url, json=message(7, "echo"), headers=headers)
                assert response.status_code == 200 and '"echo"' in response.text


# -- header checks -----------------------------------------------------------------------------------------------


async def test_origin_must_have_the_servers_scheme_host_and_port() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection) as (url, _app):
        port = int(url.split(":")[-1].split("/")[0])
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                body = message(0, "initialize", init_params())
                for origin in [f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://LOCALHOST:{port}/"]:
                    response = await client.post(url, json=body, headers={**HEADERS, "origin": origin})
                    assert response.status_code == 200, origin
                refused = [
                    f"https://127.0.0.1:{port}",
                    f"https://localhost:{port}",
                    "https://localhost",
                    "http://localhost:9999",
                    "http://localhost",
                    f"http://evil.example:{port}",
                    f"http://localhost:{port}.evil.example",
                    f"ftp://localhost:{port}",
                    "null",
                    "",
                ]
                for origin in refused:
                    response = await client.post(url, json=body, headers={**HEADERS, "origin": origin})
                    assert response.status_code == 403, origin
                    assert response.json()["error"]["code"] == -32600
                # The brief's case: a server reached as http://localhost:8000 (the Host header says which).
                as_8000 = {**HEADERS, "host": "localhost:8000"}
                ok = await client.post(url, json=body, headers={**as_8000, "origin": "http://localhost:8000"})
                assert ok.status_code == 200
                for origin in ["https://localhost", "http://localhost:9999", "https://localhost:8000"]:
                    response = await client.post(url, json=body, headers={**as_8000, "origin": origin})
                    assert response.status_code == 403, origin

    async with serving_streamable(gate.connection, allowed_origins=["http://localhost:6274"]) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                ok = await client.post(url, json=body, headers={**HEADERS, "origin": "http://localhost:6274"})
                assert ok.status_code == 200
                port = int(url.split(":")[-1].split("/")[0])
                own = await client.post(url, json=body, headers={**HEADERS, "origin": f"http://localhost:{port}"})
                assert own.status_code == 403  # an explicit list is exact


async def test_invalid_json_starting_with_a_bracket_is_a_parse_error() -> None:
    gate = Gate()
    async with serving_streamable(gate.connection) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                for garbage in [b"[", b"[{", b'[{"jsonrpc": "2.0"', b"[1,]"]:
                    response = await client.post(url, content=garbage, headers=headers)
                    assert response.status_code == 400
                    assert response.json()["error"]["code"] == -32700, garbage
