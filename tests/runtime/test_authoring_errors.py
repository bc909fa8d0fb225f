"""Errors a registered function raises on purpose: ``ResourceNotFoundError`` (the negotiated version's code),
``InvalidParamsError`` (-32602) and ``ToolError`` (an ``isError: true`` result with its content), each logged at INFO
without a traceback, against an unexpected exception (-32603, or ``isError`` for a tool, logged with its traceback).

A real ``Server`` answers our ``Client``: over in-memory streams with the log captured by ``caplog``, and as a real
stdio subprocess whose stderr is read back.
"""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_bindings import MODULES
from mcp_bindings import v2025_11_25 as mcp
from mcp_bindings.v2025_11_25.client import ClientStub
from mcpgen_runtime import (
    Client,
    Context,
    ErrorCode,
    InvalidParamsError,
    JSONRPCError,
    ResourceNotFoundError,
    ToolError,
    memory_stream_pair,
    open_subprocess_stream,
)
from mcpgen_runtime.server import LEGACY_VERSIONS, Server
from mcpgen_runtime.server.authoring.errors import RESOURCE_NOT_FOUND, ProtocolError, resource_not_found_code

pytestmark = pytest.mark.anyio

WAIT = 10.0
NOTES = {"1": "first note"}


def build_server() -> Server:
    server = Server("errors")

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        if note_id not in NOTES:
            raise ResourceNotFoundError(f"notes://{note_id}")
        return NOTES[note_id]

    @server.resource("notes://secret")
    def secret() -> str:
        raise InvalidParamsError("secret notes need a password", {"hint": "ask nicely"})

    @server.resource("notes://broken")
    def broken() -> str:
        raise RuntimeError("disk on fire")

    @server.tool()
    async def divide(a: float, b: float, ctx: Context) -> float:
        if b == 0:
            raise ToolError("Cannot divide by zero: pass a non-zero b")
        return a / b

    @server.tool()
    def chart(kind: str) -> str:
        raise ToolError([mcp.TextContent(text="no chart"), {"type": "text", "text": f"unknown kind {kind!r}"}])

    @server.tool()
    def strict(level: int) -> str:
        raise InvalidParamsError(f"level {level} is out of range", {"range": [0, 3]})

    @server.tool()
    def lookup(note_id: str) -> str:
        raise ResourceNotFoundError(f"notes://{note_id}")

    @server.tool()
    def crash() -> str:
        raise RuntimeError("unexpected")

    @server.prompt()
    def summarise(note_id: str) -> str:
        raise InvalidParamsError(f"no note {note_id!r}")

    @server.completion(resource="notes://{note_id}", argument="note_id")
    def note_ids(value: str) -> list[str]:
        raise InvalidParamsError("completion refused")

    return server


@asynccontextmanager
async def connected(server: Server, version: str = "2025-11-25") -> AsyncIterator[Client]:
    server_end, client_end = memory_stream_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Client.connect(client_end, version=version, request_timeout=WAIT) as client:
            yield client
        with anyio.fail_after(WAIT):
            while server.connections:
                await anyio.sleep(0.01)


async def read_error(client: Client, version: str, uri: str) -> JSONRPCError:
    package = importlib.import_module(MODULES[version])
    with pytest.raises(JSONRPCError) as raised:
        await client.request(package.ReadResourceRequest, package.ReadResourceRequestParams(uri=uri))
    return raised.value


def records(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if text in record.getMessage()]


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_resource_not_found_has_the_versions_code_and_no_traceback(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpgen_runtime")
    async with connected(build_server(), version) as client:
        raised = await read_error(client, version, "notes://404")
        assert (raised.code, raised.message, raised.data) == (-32002, "Resource not found", {"uri": "notes://404"})
        # An unknown URI (no template matches) gets the same answer.
        unknown = await read_error(client, version, "elsewhere://x")
        assert (unknown.code, unknown.data) == (-32002, {"uri": "elsewhere://x"})
    (logged,) = records(caplog, "notes://404")
    assert logged.levelno == logging.INFO and logged.exc_info is None and "-32002" in logged.getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_resource_not_found_code_follows_the_spec_of_each_version() -> None:
    # 2025-11-25 server/resources "Error Handling": -32002; 2026-07-28: -32602 (clients also accept -32002).
    assert [resource_not_found_code(v) for v in LEGACY_VERSIONS] == [RESOURCE_NOT_FOUND] * 4
    assert resource_not_found_code("2026-07-28") == ErrorCode.INVALID_PARAMS
    assert isinstance(ResourceNotFoundError("x"), ProtocolError) and isinstance(InvalidParamsError("x"), JSONRPCError)


async def test_invalid_params_from_resources_prompts_tools_and_completions(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpgen_runtime")
    async with connected(build_server()) as client:
        api = client.stub(ClientStub)
        raised = await read_error(client, "2025-11-25", "notes://secret")
        assert (raised.code, raised.message, raised.data) == (
            ErrorCode.INVALID_PARAMS,
            "secret notes need a password",
            {"hint": "ask nicely"},
        )
        with pytest.raises(JSONRPCError) as prompt:
            await api.get_prompt(mcp.GetPromptRequestParams(name="summarise", arguments={"note_id": "7"}))
        assert (prompt.value.code, prompt.value.message) == (ErrorCode.INVALID_PARAMS, "no note '7'")
        # From a tool too: the author chose a protocol error (a ToolError would be a result the model reads).
        with pytest.raises(JSONRPCError) as tool:
            await api.call_tool(mcp.CallToolRequestParams(name="strict", arguments={"level": 9}))
        assert (tool.value.code, tool.value.data) == (ErrorCode.INVALID_PARAMS, {"range": [0, 3]})
        with pytest.raises(JSONRPCError) as not_found:
            await api.call_tool(mcp.CallToolRequestParams(name="lookup", arguments={"note_id": "9"}))
        assert (not_found.value.code, not_found.value.data) == (-32002, {"uri": "notes://9"})
        ref = mcp.ResourceTemplateReference(uri="notes://{note_id}")
        argument = mcp.CompleteRequestParamsArgument(name="note_id", value="")
        with pytest.raises(JSONRPCError) as completion:
            await api.complete(mcp.CompleteRequestParams(ref=ref, argument=argument))
        assert completion.value.code == ErrorCode.INVALID_PARAMS
    for text in ("secret notes need a password", "no note '7'", "level 9 is out of range", "completion refused"):
        (logged,) = records(caplog, text)
        assert logged.levelno == logging.INFO and logged.exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_subscribe_hook_that_refuses_leaves_no_subscription() -> None:
    server = Server("subscriptions")

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        return NOTES[note_id]

    @server.on_subscribe
    def check(uri: str) -> None:
        if uri != "notes://1":
            raise ResourceNotFoundError(uri)

    async with connected(server) as client:
        api = client.stub(ClientStub)
        with pytest.raises(JSONRPCError) as raised:
            await api.subscribe(mcp.SubscribeRequestParams(uri="notes://2"))
        assert (raised.value.code, raised.value.data) == (-32002, {"uri": "notes://2"})
        await api.subscribe(mcp.SubscribeRequestParams(uri="notes://1"))
        (connection,) = server.connections
        assert connection.subscriptions == {"notes://1"}


async def test_tool_error_is_an_is_error_result_with_its_content(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpgen_runtime")
    async with connected(build_server()) as client:
        api = client.stub(ClientStub)
        result = await api.call_tool(mcp.CallToolRequestParams(name="divide", arguments={"a": 1, "b": 0}))
        assert result.model_dump(mode="json") == {
            "content": [{"type": "text", "text": "Cannot divide by zero: pass a non-zero b"}],
            "isError": True,
        }
        result = await api.call_tool(mcp.CallToolRequestParams(name="chart", arguments={"kind": "pie"}))
        assert result.is_error and [block.model_dump(mode="json") for block in result.content] == [
            {"type": "text", "text": "no chart"},
            {"type": "text", "text": "unknown kind 'pie'"},
        ]
        ok = await api.call_tool(mcp.CallToolRequestParams(name="divide", arguments={"a": 1, "b": 4}))
        assert not ok.is_error
    (logged,) = records(caplog, "Cannot divide by zero")
    assert logged.levelno == logging.INFO and logged.exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_unexpected_exceptions_are_logged_with_their_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpgen_runtime")
    async with connected(build_server()) as client:
        raised = await read_error(client, "2025-11-25", "notes://broken")
        assert (raised.code, raised.message, raised.data) == (ErrorCode.INTERNAL_ERROR, "Internal error", None)
        result = await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name="crash", arguments={}))
        assert result.is_error  # a tool's failure stays a result the model can read
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2 and all(r.exc_info is not None for r in errors)
    assert {type(r.exc_info[1]) for r in errors if r.exc_info} == {RuntimeError}


SERVER_SCRIPT = """
    from mcpgen_runtime import ResourceNotFoundError, Server, ToolError

    server = Server("stdio-errors")

    @server.tool()
    def deliberate() -> str:
        raise ToolError("deliberate tool error")

    @server.tool()
    def accident() -> str:
        raise ZeroDivisionError("accidental tool error")

    @server.resource("notes://{note_id}")
    def note(note_id: str) -> str:
        raise ResourceNotFoundError(f"notes://{note_id}")

    server.run_stdio()
"""


async def test_over_stdio_deliberate_errors_log_one_line_and_accidents_a_traceback(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(SERVER_SCRIPT), encoding="utf-8")
    with anyio.fail_after(30):
        async with open_subprocess_stream([sys.executable, str(script)], None, capture_stderr=True) as stream:
            async with Client.connect(stream, version="2025-11-25", request_timeout=WAIT) as client:
                api = client.stub(ClientStub)
                deliberate = await api.call_tool(mcp.CallToolRequestParams(name="deliberate"))
                assert deliberate.is_error
                missing: Any = None
                try:
                    await api.read_resource(mcp.ReadResourceRequestParams(uri="notes://1"))
                except JSONRPCError as exc:
                    missing = exc
                assert missing is not None and missing.code == -32002
                assert (await api.call_tool(mcp.CallToolRequestParams(name="accident"))).is_error
            log = b""
            while b"accidental tool error" not in log:
                await anyio.sleep(0.05)
                log = stream.stderr_output
    lines = log.decode().splitlines()
    deliberate_lines = [line for line in lines if "deliberate tool error" in line or "notes://1" in line]
    assert len(deliberate_lines) == 2 and all(" INFO " in line for line in deliberate_lines), lines
    # One traceback, the accident's, and it is the only ERROR.
    assert sum("Traceback (most recent call last)" in line for line in lines) == 1, lines
    assert [line for line in lines if " ERROR " in line] == [
        next(line for line in lines if "tool 'accident' failed" in line)
    ]
    assert any(line.startswith("ZeroDivisionError: accidental tool error") for line in lines)
