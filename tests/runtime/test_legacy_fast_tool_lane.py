"""A legacy-era ``tools/call`` of a tool that takes no ``Context`` skips the params model, the ``Context`` and the
handler layers (``ServerConnection._call_plain_tool``, issue 22); its answers must be what the general dispatch
answers, for every kind of outcome, and what the lane leaves alone must still take the general path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from support.servers import raw_session
from support.tool_zoo import TOOL_CALLS, tool_zoo

from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.dispatch.connection import ServerConnection

pytestmark = pytest.mark.anyio

VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def build_server() -> Server:
    server = tool_zoo("legacy-lane")

    @server.tool()
    async def with_context(a: int, ctx: Context) -> str:
        """Takes a Context: the general path."""
        return str(a)

    return server


@contextmanager
def lane(monkeypatch: pytest.MonkeyPatch, on: bool) -> Iterator[list[str]]:
    """The lane on (the tools it called, counted) or off (no request takes it)."""
    taken: list[str] = []
    original = ServerConnection._call_plain_tool

    async def counted(self: ServerConnection, route: Any, tool: Any, arguments: Any) -> Any:
        taken.append(tool.name)
        return await original(self, route, tool, arguments)

    with monkeypatch.context() as patch:
        patch.setattr(ServerConnection, "_call_plain_tool", counted)
        if not on:
            patch.setattr(ServerConnection, "_plain_tool", lambda self, params: None)
        yield taken


CASES: list[dict[str, Any]] = [
    {"name": name} if arguments is None else {"name": name, "arguments": arguments} for name, arguments in TOOL_CALLS
]
# What the lane leaves to the general path (which answers them as it always did).
GENERAL: list[dict[str, Any]] = [
    {"name": "with_context", "arguments": {"a": 1}},
    {"name": "unknown", "arguments": {}},
    {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": "p"}},
    {"name": "add", "arguments": [1, 2]},
    {"name": "nothing", "arguments": None},  # refused by the params model (-32602)
    {"name": 7},
]


async def outcomes(params_list: list[dict[str, Any]], version: str) -> list[Any]:
    """Each request's result, or its error as (code, message, data), over a legacy session of ``version``."""
    found: list[Any] = []
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "lane", "version": "1"}}
    async with raw_session(build_server()) as session:
        assert (await session.request("initialize", init))["protocolVersion"] == version
        await session.notify("notifications/initialized")
        for params in params_list:
            try:
                found.append(await session.request("tools/call", params))
            except JSONRPCError as error:
                found.append((error.code, error.message, error.data))
    return found


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_lane_answers_what_the_general_path_answers(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    with lane(monkeypatch, on=False) as taken_off:
        general = await outcomes(CASES, version)
    with lane(monkeypatch, on=True) as taken:
        direct = await outcomes(CASES, version)
    assert taken_off == []
    assert taken == [params["name"] for params in CASES]
    assert direct == general
    assert general[0] == {"content": [{"type": "text", "text": "3"}], "isError": False}


@pytest.mark.parametrize("version", VERSIONS)
async def test_what_the_lane_leaves_to_the_general_path(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    with lane(monkeypatch, on=False):
        general = await outcomes(GENERAL, version)
    with lane(monkeypatch, on=True) as taken:
        direct = await outcomes(GENERAL, version)
    assert taken == []
    assert direct == general
