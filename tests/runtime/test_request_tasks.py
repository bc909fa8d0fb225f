"""A session's incoming requests on asyncio run in plain tasks (``jsonrpc.request_tasks``), not in its anyio task
group: what the task group gave must still hold. Peer cancellation is anyio's (delivered again at every await,
shields honoured); ending the session cancels every request, the same way, plus an answer stuck in its write, and
waits for them; requests that were waiting for the in-flight limit start cancelled once the session ends."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcpgen_runtime import JSONParams, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.jsonrpc.request_tasks import RequestTasks

pytestmark = pytest.mark.anyio

WAIT = 5.0


def frame(request_id: Any, method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method}).encode()


async def test_requests_run_in_request_tasks_and_answer() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        await anyio.sleep(0.01 if method == "slow" else 0)
        return {"method": method}

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(server_end, request_handler=handler) as session:
            for n in range(10):
                await peer.send(frame(n, "slow" if n % 2 else "fast"))
            answers = [json.loads(await peer.receive()) for _ in range(10)]
            assert isinstance(session._request_tasks, RequestTasks)
            assert sorted(answer["id"] for answer in answers) == list(range(10))
            assert len(session._request_tasks) == 0  # each task let go of itself


async def test_a_peer_cancellation_is_delivered_again_to_a_handler_that_swallows_it() -> None:
    """anyio's semantics, as in the task group: a handler that catches the cancellation and awaits again is
    cancelled again; and no answer goes out."""
    caught, ended = anyio.Event(), anyio.Event()

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method != "stubborn":
            raise MethodNotFound(method)
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            caught.set()
        try:
            await anyio.sleep(60)  # cancelled again
        finally:
            ended.set()
        return {"never": True}

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(server_end, request_handler=handler):
            await peer.send(frame("s", "stubborn"))
            await anyio.sleep(0.05)
            await peer.send(
                json.dumps(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s"}}
                ).encode()
            )
            await caught.wait()
            await ended.wait()
            await peer.send(frame("p", "ping"))
            assert json.loads(await peer.receive()) == {"jsonrpc": "2.0", "id": "p", "result": {}}


async def test_ending_the_session_cancels_running_handlers_and_waits_for_them() -> None:
    """Even one that swallows the first cancellation, and one inside a shield finishes its shielded part first."""
    finished: list[str] = []
    started: list[str] = []

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        try:
            if method == "stubborn":
                try:
                    started.append(method)
                    await anyio.sleep(60)
                except anyio.get_cancelled_exc_class():
                    pass
                await anyio.sleep(60)
            elif method == "shielded":
                with anyio.CancelScope(shield=True):
                    started.append(method)
                    await anyio.sleep(0.2)
                    finished.append("shielded part")
                await anyio.sleep(60)
            else:
                started.append(method)
                await anyio.sleep(60)
            return {}
        finally:
            finished.append(method)

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(server_end, request_handler=handler):
            for method in ("stubborn", "shielded", "plain"):
                await peer.send(frame(method, method))
            while len(started) < 3:
                await anyio.sleep(0.01)
        # Out of the block: every handler has ended, the shielded one after its shielded part.
        assert sorted(finished) == ["plain", "shielded", "shielded part", "stubborn"]
        assert finished.index("shielded part") < finished.index("shielded")


class _StuckSend:
    """A stream whose sends never complete (a peer that stopped reading): receives come from a memory stream."""

    def __init__(self) -> None:
        self.server_end, self.peer = memory_stream_pair()
        self.sends = 0

    async def receive(self) -> bytes:
        return await self.server_end.receive()

    async def send(self, frame: bytes) -> None:
        self.sends += 1
        await anyio.sleep_forever()

    async def aclose(self) -> None:
        await self.server_end.aclose()


async def test_an_answer_stuck_in_its_write_is_cancelled_when_the_session_ends() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return {"ok": True}

    stream = _StuckSend()
    with anyio.fail_after(WAIT):
        async with Session(stream, request_handler=handler) as session:
            await stream.peer.send(frame(1, "anything"))
            while not stream.sends:
                await anyio.sleep(0.01)
            assert session._request_tasks is not None and len(session._request_tasks) == 1
        assert len(session._request_tasks) == 0


async def test_requests_waiting_for_the_in_flight_limit_start_cancelled_after_the_end() -> None:
    """With room for one request: the second waits; when the session ends while the first still runs (shielded,
    so it outlives the cancellation for a moment), the second is started as the limit frees, already cancelled:
    its handler never runs. (In the task group it ran up to its first await and was cancelled there; a handler
    with no await then still answered, after the session had ended.)"""
    calls: list[str] = []
    first_started = anyio.Event()

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        calls.append(method)
        if method == "first":
            with anyio.CancelScope(shield=True):
                first_started.set()
                await anyio.sleep(0.2)
        return {}

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(server_end, request_handler=handler, max_requests_in_flight=1):
            await peer.send(frame(1, "first"))
            await peer.send(frame(2, "second"))
            await first_started.wait()
            await anyio.sleep(0.05)  # the second has been read and waits for room
    assert calls == ["first"]


async def test_the_peer_closing_lets_running_requests_answer_within_the_grace() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        await anyio.sleep(0.1)
        return {"late": True}

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        session = Session(server_end, request_handler=handler, shutdown_grace=2.0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await peer.send(frame(7, "late"))
            await peer.send_eof()
            assert json.loads(await peer.receive()) == {"jsonrpc": "2.0", "id": 7, "result": {"late": True}}
