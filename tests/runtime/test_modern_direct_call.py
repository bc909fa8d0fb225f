"""The direct lane of a modern ``tools/call`` (``server.dispatch.direct_call``, issue 22): a request it takes gets,
byte for byte, the answer the general path gives; a request it may not take is left to the general path. Each case
is served three times in one run (the first validates and caches its ``_meta``, so the next ones may take the lane),
once with the lane and once without, over HTTP's path (``Server.serve_modern``) and over a stream's (stdio:
``ServerConnection``), and the lane's use is counted, so a lane that is never taken fails the test."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from support.servers import raw_session
from support.tool_zoo import MODERN_META, TOOL_CALLS, tool_zoo

from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.jsonrpc.envelopes import Request
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server import server as server_module
from mcpgen_runtime.server.dispatch import connection as connection_module
from mcpgen_runtime.server.dispatch import direct_call

pytestmark = pytest.mark.anyio


def build_server() -> Server:
    return tool_zoo("direct")


def call(request_id: int | str, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> Request:
    params: dict[str, Any] = {"name": name, "_meta": dict(MODERN_META), **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return Request(request_id, "tools/call", params)


class _Call:
    """A stand-in for the transport's ``ModernCall``."""

    scope: Mapping[str, Any] = {"type": "http", "headers": []}
    request_id = 0
    streams = False

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        pass


@contextmanager
def lane(monkeypatch: pytest.MonkeyPatch, on: bool) -> Iterator[list[str]]:
    """The lane on (its answers counted, by tool) or off (no request takes it)."""
    taken: list[str] = []
    original = direct_call.answer_direct

    async def counted(plan: direct_call.DirectPlan, request: Request) -> Any:
        taken.append(plan[0].tool.name)
        return await original(plan, request)

    with monkeypatch.context() as patch:
        patch.setattr(server_module, "answer_direct", counted)
        if not on:
            patch.setattr(server_module, "direct_plan", lambda serving, method, params: None)
        yield taken


CASES = TOOL_CALLS


async def answers(server: Server, requests: list[Request]) -> list[bytes]:
    frames = []
    async with server.running():
        for request in requests:
            _, frame = await server.serve_modern(request, _Call())
            frames.append(frame)
    return frames


@pytest.mark.parametrize(("name", "arguments"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
async def test_the_lane_answers_what_the_general_path_answers(
    monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any] | None
) -> None:
    requests = [call(1, name, arguments), call(2, name, arguments), call("three", name, arguments)]
    with lane(monkeypatch, on=False) as taken_off:
        general = await answers(build_server(), requests)
    with lane(monkeypatch, on=True) as taken:
        direct = await answers(build_server(), requests)
    assert taken_off == []
    assert taken == [name, name]  # the first request validated the _meta; the next ones took the lane
    assert direct == general


async def test_what_the_lane_leaves_to_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    server = build_server()

    @server.tool()
    async def with_context(a: int, ctx: Context) -> str:
        """Takes a Context."""
        return str(a)

    @server.tool(task="optional")
    async def as_task(a: int) -> str:
        """May run as a task."""
        return str(a)

    meta_with_progress = {**MODERN_META, "progressToken": "p"}
    left = [
        call(2, "with_context", {"a": 1}),
        call(3, "as_task", {"a": 1}),
        call(4, "add", {"a": 1, "b": 2}, task={"ttl": 1000}),  # a key the lane does not know
        call(5, "unknown", {}),
        call(6, "add", ["a"]),  # type: ignore[arg-type]  # arguments that are not an object
        Request(12, "tools/call", {"name": "add", "arguments": None, "_meta": dict(MODERN_META)}),  # null: -32602
        Request(7, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta_with_progress}),
        Request(8, "tools/call", {"name": 5, "_meta": dict(MODERN_META)}),
        Request(
            9, "tools/call", {"name": "add", "_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "9"}}
        ),
        Request(10, "tools/list", {"_meta": dict(MODERN_META)}),
    ]
    with lane(monkeypatch, on=True) as taken:
        async with server.running():
            await server.serve_modern(call(1, "add", {"a": 1, "b": 2}), _Call())  # caches the _meta
            for request in left:
                await server.serve_modern(request, _Call())
            await server.serve_modern(call(11, "add", {"a": 1, "b": 2}), _Call())
    assert taken == ["add"]  # only the last: every other one took the general path

    async def passing(request: Any, call_next: Any) -> Any:
        return await call_next(request)

    server.middleware(passing)
    with lane(monkeypatch, on=True) as taken:
        async with server.running():
            for request_id in range(3):
                await server.serve_modern(call(request_id, "add", {"a": 1, "b": 2}), _Call())
    assert taken == []  # a middleware sees every request


async def stream_answers(server: Server, name: str, arguments: dict[str, Any] | None) -> list[Any]:
    """The same case over a long-lived stream (stdio's path: ``ServerConnection``), as results or errors."""
    outcomes: list[Any] = []
    async with raw_session(server) as session:
        for _ in range(3):
            params: dict[str, Any] = {"name": name, "_meta": dict(MODERN_META)}
            if arguments is not None:
                params["arguments"] = arguments
            try:
                outcomes.append(await session.request("tools/call", params))
            except JSONRPCError as exc:
                outcomes.append((exc.code, exc.message, exc.data))
    return outcomes


@pytest.mark.parametrize(("name", "arguments"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
async def test_over_a_stream_the_lane_answers_what_the_general_path_answers(
    monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any] | None
) -> None:
    taken: list[str] = []
    original = direct_call.direct_result

    async def counted(plan: direct_call.DirectPlan) -> Any:
        taken.append(plan[0].tool.name)
        return await original(plan)

    with monkeypatch.context() as patch:
        patch.setattr(connection_module, "direct_plan", lambda serving, method, params: None)
        general = await stream_answers(build_server(), name, arguments)
    with monkeypatch.context() as patch:
        patch.setattr(connection_module, "direct_result", counted)
        direct = await stream_answers(build_server(), name, arguments)
    assert taken == [name, name]
    assert direct == general


def _text(frame: bytes) -> tuple[Any, Any]:
    """A lane answer's text (or error message) and serverInfo."""
    message = json.loads(frame)
    if "error" in message:
        return message["error"]["message"], None
    result = message["result"]
    return result["content"][0]["text"], result["_meta"]["io.modelcontextprotocol/serverInfo"]


async def test_the_lane_follows_what_changes_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lanes are derived once per tool and version (``direct_call.ToolLanes``): a tool replaced or removed, the
    server renamed, and a resource added at run time are all seen by the next request, as the general path sees
    them; a name no tool has is never kept."""
    server = Server("lanes", version="1")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    async def ask(request_id: int, name: str = "echo") -> tuple[Any, Any]:
        _, frame = await server.serve_modern(call(request_id, name, {"text": "hi"}), _Call())
        return _text(frame)

    with lane(monkeypatch, on=True) as taken:
        async with server.running():
            assert await ask(1) == ("hi", {"name": "lanes", "version": "1"})  # validates the _meta
            assert await ask(2) == ("hi", {"name": "lanes", "version": "1"})

            @server.tool(name="echo", replace=True)
            async def shout(text: str) -> str:
                """Echo, louder."""
                return text.upper()

            assert await ask(3) == ("HI", {"name": "lanes", "version": "1"})
            server.version, server.title = "2", "Lanes"
            assert await ask(4) == ("HI", {"name": "lanes", "version": "2", "title": "Lanes"})

            @server.resource("test://r")
            async def r() -> str:
                """A resource."""
                return "r"

            assert await ask(5) == ("HI", {"name": "lanes", "version": "2", "title": "Lanes"})
            for request_id in range(6, 26):
                await ask(request_id, f"missing-{request_id}")  # not tools: the general path's error, never kept
            serving = server._modern
            assert serving is not None and isinstance(serving.lanes, direct_call.ToolLanes)
            assert len(serving.lanes._lanes) == 1  # echo's, in 2026-07-28
            server.remove_tool("echo")
            message, _ = await ask(26)
            assert message == "Method not found: tools/call"  # no tool left: tools/call is not served
    assert taken == ["echo"] * 4  # 2 to 5; 26 found no tool (and 1 validated the _meta)
