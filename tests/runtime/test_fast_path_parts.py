"""The parts the per-request fast paths are built of, checked on their own (the HTTP, stdio and session tests check
them through real servers and clients): ``TaskDeadline`` (a session's request deadline on asyncio), ``ValidResult``
(a result the runtime answers without validating it again) and ``AnswerGuard.receive_parsed`` (the client's guard
hands the session the JSON it parsed)."""

from __future__ import annotations

import asyncio
import importlib
import json
import math

import pytest

from mcp_bindings import MODULES
from mcpgen_runtime.jsonrpc import memory_stream_pair
from mcpgen_runtime.jsonrpc.answers import TaskDeadline
from mcpgen_runtime.jsonrpc.envelopes import ErrorResponse, JSONRPCError, decode_frame
from mcpgen_runtime.protocol.results import ValidResult
from mcpgen_runtime.server import Server
from mcpgen_runtime.transports.answer_guard import AnswerGuard
from mcpgen_runtime.transports.undeliverable import undeliverable_reason
from mcpgen_runtime.versions import LEGACY_VERSIONS

pytestmark = pytest.mark.anyio

WAIT = 5.0


# -- TaskDeadline -------------------------------------------------------------------------------------------------


async def test_the_deadline_raises_timeout_error_and_leaves_the_task_uncancelled() -> None:
    with pytest.raises(TimeoutError):
        with TaskDeadline(0.01):
            await asyncio.sleep(WAIT)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # nothing left over


async def test_no_deadline_for_none_or_infinity_and_none_after_the_block() -> None:
    for timeout in (None, math.inf):
        with TaskDeadline(timeout):
            await asyncio.sleep(0.01)
    with TaskDeadline(0.05):
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)  # the timer was cancelled with the block: no late cancellation


async def test_an_outside_cancellation_at_the_deadline_stays_a_cancellation() -> None:
    async def waiter() -> None:
        with TaskDeadline(0.05):
            await asyncio.sleep(WAIT)

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0.01)
    task.cancel()  # cancelled by someone else before the deadline: not turned into TimeoutError
    with pytest.raises(asyncio.CancelledError):
        await task


# -- ValidResult --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_a_text_tool_result_is_valid_as_built_in_every_handshake_version(version: str) -> None:
    # (The modern era adds resultType and _meta to every result and validates the copy: ModernRequest.finish.)
    server = Server("t")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    built = asyncio.run(server.tools["echo"].call({"text": "héllo \u2028"}, None))
    assert type(built) is ValidResult
    model = importlib.import_module(MODULES[version]).CallToolResult
    validated = model.model_validate(built).model_dump(mode="json")
    assert validated == built  # what validation would have answered, key for key


# -- AnswerGuard.receive_parsed -----------------------------------------------------------------------------------


async def test_the_guard_hands_over_what_it_parsed_and_still_fails_damaged_answers() -> None:
    ours, theirs = memory_stream_pair()
    guard = AnswerGuard(ours)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    await guard.send_message(json.dumps(request).encode(), request)
    assert await theirs.receive() == json.dumps(request).encode()

    await theirs.send(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}')
    frame, value = await guard.receive_parsed()
    assert value == {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}

    await theirs.send(b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
    frame, value = await guard.receive_parsed()
    assert value == json.loads(frame) and value["result"] == {"content": []}

    await guard.send_message(json.dumps({**request, "id": 2}).encode(), {**request, "id": 2})
    await theirs.receive()
    await theirs.send(b'{"jsonrpc":"2.0","id":2,"result":{"content":[')  # damaged: fails request 2 at once
    frame, value = await guard.receive_parsed()
    decoded = decode_frame(frame)
    assert value is None and isinstance(decoded, ErrorResponse) and decoded.id == 2
    assert undeliverable_reason(JSONRPCError(decoded.code, decoded.message, decoded.data)) == "malformed JSON"

    await theirs.send(b'{"jsonrpc":"2.0","id":7,"result":{}}')  # nothing in flight: not parsed here
    assert await guard.receive_parsed() == (b'{"jsonrpc":"2.0","id":7,"result":{}}', None)
