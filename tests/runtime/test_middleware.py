"""``@server.middleware``: functions around every request, in registration order (the first outermost), initialize
included and ping not; short-circuits by raising a JSON-RPC error or by returning a result (validated against the
negotiated version like a handler's); a changed request passed on; a middleware's own method. A real ``Server``
and a real ``Client`` over memory streams, plus our raw ``Session`` where the client would refuse to go.

Typed: tests/test_typing.py runs mypy --strict on this file."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from support.content import text_of

from mcp_bindings import v2025_11_25 as v4
from mcpgen_runtime import (
    CallNext,
    Client,
    Context,
    IncomingRequest,
    JSONRPCError,
    Server,
    Session,
    connect_in_memory,
    memory_stream_pair,
)

pytestmark = pytest.mark.anyio

WAIT = 10.0
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


@dataclass
class Tenant:
    name: str


@asynccontextmanager
async def tenant(server: Server[Tenant]) -> AsyncIterator[Tenant]:
    yield Tenant("acme")


def build() -> Server[Tenant]:
    server = Server("guarded", lifespan=tenant)

    @server.tool()
    async def echo(text: str) -> str:
        return text

    @server.tool()
    async def whoami(context: Context[Tenant]) -> str:
        return context.lifespan_state.name

    return server


async def echo(client: Client, text: str) -> v4.CallToolResult:
    api = client.stub(v4.client.ClientStub)
    return await api.call_tool(v4.CallToolRequestParams(name="echo", arguments={"text": text}))


@asynccontextmanager
async def raw_session(server: Server[Any]) -> AsyncIterator[Session]:
    """Our JSON-RPC session against ``server``: for what the typed client would not send or not accept."""
    client_end, server_end = memory_stream_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Session(client_end) as session:
            yield session


async def test_middleware_runs_in_registration_order_around_every_request() -> None:
    server = build()
    trace: list[str] = []

    @server.middleware
    async def outer(request: IncomingRequest, call_next: CallNext) -> Any:
        trace.append(f"outer> {request.method}")
        result = await call_next(request)
        trace.append(f"outer< {request.method}")
        return result

    @server.middleware
    async def inner(request: IncomingRequest, call_next: CallNext) -> Any:
        trace.append(f"inner> {request.method}")
        try:
            return await call_next(request)
        finally:
            trace.append(f"inner< {request.method}")

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            assert text_of(await echo(client, "hi")) == "hi"
            await client.session.request("ping", timeout=WAIT)  # answered by the session: no middleware
    assert trace == [
        "outer> initialize",
        "inner> initialize",
        "inner< initialize",
        "outer< initialize",
        "outer> tools/call",
        "inner> tools/call",
        "inner< tools/call",
        "outer< tools/call",
    ]


async def test_middleware_sees_the_context_with_the_lifespan_state() -> None:
    server = build()
    seen: list[tuple[str, object, str]] = []

    @server.middleware
    async def record(request: IncomingRequest[Tenant], call_next: CallNext) -> Any:
        context = request.context
        seen.append((request.method, context.request_id, context.lifespan_state.name))
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            api = client.stub(v4.client.ClientStub)
            assert text_of(await api.call_tool(v4.CallToolRequestParams(name="whoami"))) == "acme"
    assert [(method, name) for method, _, name in seen] == [("initialize", "acme"), ("tools/call", "acme")]
    assert seen[0][1] != seen[1][1]  # each request its own context


async def test_a_middleware_refuses_a_request_with_a_json_rpc_error() -> None:
    server = build()

    @server.middleware
    async def no_secrets(request: IncomingRequest, call_next: CallNext) -> Any:
        params = request.params if isinstance(request.params, dict) else {}
        if request.method == "tools/call" and "secret" in str(params.get("arguments")):
            raise JSONRPCError(-32001, "Forbidden", {"why": "secret"})
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            assert text_of(await echo(client, "fine")) == "fine"
            with pytest.raises(JSONRPCError) as info:
                await echo(client, "a secret")
            assert (info.value.code, info.value.message, info.value.data) == (-32001, "Forbidden", {"why": "secret"})
            assert text_of(await echo(client, "still fine")) == "still fine"  # the connection goes on


async def test_a_middleware_can_refuse_initialize() -> None:
    server = build()

    @server.middleware
    async def members_only(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "initialize":
            params = request.params if isinstance(request.params, dict) else {}
            if params.get("clientInfo", {}).get("name") != "member":
                raise JSONRPCError(-32001, "Unauthorized")
        return await call_next(request)

    with anyio.fail_after(WAIT):
        with pytest.raises(JSONRPCError, match="Unauthorized"):
            async with connect_in_memory(server, version="2025-11-25"):
                pass
        async with connect_in_memory(
            server, client_info={"name": "member", "version": "1"}, version="2025-11-25"
        ) as client:
            assert text_of(await echo(client, "in")) == "in"


async def test_a_middleware_answers_a_request_itself_validated_as_the_result() -> None:
    server = build()

    @server.middleware
    async def cached(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/list":
            return v4.ListToolsResult(tools=[v4.Tool(name="cached", input_schema=v4.ToolInputSchema())])
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            tools = await client.stub(v4.client.ClientStub).list_all_tools()
            assert [tool.name for tool in tools] == ["cached"]


async def test_an_invalid_result_from_a_middleware_answers_internal_error() -> None:
    server = build()

    @server.middleware
    async def broken(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            result = await call_next(request)
            return {**result, "content": "not a list"}  # changed: validated again
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            with pytest.raises(JSONRPCError) as info:
                await echo(client, "x")
            assert info.value.code == -32603
            assert isinstance(info.value.data, dict) and info.value.data["errors"][0]["loc"][0] == "content"


async def test_a_middleware_passes_on_a_changed_request() -> None:
    server = build()

    @server.middleware
    async def shout(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call" and isinstance(request.params, dict):
            arguments = dict(request.params.get("arguments") or {})
            arguments["text"] = str(arguments.get("text", "")).upper()
            request = dataclasses.replace(request, params={**request.params, "arguments": arguments})
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            assert text_of(await echo(client, "quiet")) == "QUIET"


async def test_a_middleware_times_requests() -> None:
    server = build()
    timings: dict[str, float] = {}

    @server.middleware
    async def timing(request: IncomingRequest, call_next: CallNext) -> Any:
        started = time.perf_counter()
        try:
            return await call_next(request)
        finally:
            timings[request.method] = time.perf_counter() - started

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            await echo(client, "x")
    assert set(timings) == {"initialize", "tools/call"} and all(t >= 0 for t in timings.values())


async def test_a_middleware_can_answer_a_method_of_its_own() -> None:
    server = build()

    @server.middleware
    async def version(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "acme/version":
            return {"version": "1.2.3"}
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with raw_session(server) as session:
            await session.request("initialize", INITIALIZE, timeout=WAIT)
            assert await session.request("acme/version", timeout=WAIT) == {"version": "1.2.3"}
            with pytest.raises(JSONRPCError) as info:
                await session.request("acme/other", timeout=WAIT)
            assert info.value.code == -32601  # call_next: method not found, as without middleware


async def test_answering_initialize_without_call_next_is_an_internal_error() -> None:
    server = build()

    @server.middleware
    async def impostor(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "initialize":
            return {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "x", "version": "0"}}
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with raw_session(server) as session:
            with pytest.raises(JSONRPCError) as info:
                await session.request("initialize", INITIALIZE, timeout=WAIT)
            assert info.value.code == -32603
            with pytest.raises(JSONRPCError) as info:
                await session.request("tools/list", timeout=WAIT)
            assert info.value.code == -32600  # still not initialized


async def test_an_exception_in_a_middleware_answers_internal_error_without_details() -> None:
    server = build()

    @server.middleware
    async def crash(request: IncomingRequest, call_next: CallNext) -> Any:
        if request.method == "tools/call":
            raise RuntimeError("secret detail")
        return await call_next(request)

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            with pytest.raises(JSONRPCError) as info:
                await echo(client, "x")
    assert info.value.code == -32603 and "secret" not in info.value.message
