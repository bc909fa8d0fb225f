"""Bounded work in ``Session``: at most ``max_requests_in_flight`` handlers run, as many more requests wait, and then
the session stops reading (back-pressure); batches are bounded too.

Over unbuffered memory streams (a send completes only when the other side receives it, so "the session stopped
reading" is visible without any timing), and over stdio with a real ``Server`` process, where the pipe carries the
back-pressure to the client."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgen_runtime import (
    ErrorCode,
    JSONParams,
    JSONRPCError,
    MethodNotFound,
    RequestContext,
    Session,
    memory_stream_pair,
    open_subprocess_stream,
)
from mcpgen_runtime.jsonrpc import encode_frame

pytestmark = pytest.mark.anyio

WAIT = 10.0


def request(request_id: int, method: str = "hold", params: dict[str, Any] | None = None) -> bytes:
    return encode_frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})


class Holder:
    """A request handler whose "hold" requests wait for ``release``; it records the order and the peak concurrency."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.started.append(context.request_id)
        try:
            if method == "hold":
                await self.release.wait()
            elif method == "ask":
                return {"client_said": await context.session.request("client/question", {}, timeout=WAIT)}
            elif method != "ping":
                raise MethodNotFound(method)
            return {"n": context.request_id}
        except anyio.get_cancelled_exc_class():
            self.cancelled.append(context.request_id)
            raise
        finally:
            self.running -= 1


async def test_session_runs_the_limit_queues_as_many_then_stops_reading() -> None:
    holder = Holder()
    server_end, client_end = memory_stream_pair(0)  # unbuffered: a send returns once the session has read it
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            session = Session(server_end, request_handler=holder, answer_pings=False, max_requests_in_flight=2)
            tg.start_soon(session.run)
            for n in range(4):
                await client_end.send(request(n))  # each returns: the session read it
            await anyio.wait_all_tasks_blocked()
            assert holder.started == [0, 1]  # two run, two wait

            fifth_read = anyio.Event()

            async def send_fifth() -> None:
                await client_end.send(request(4))
                fifth_read.set()

            tg.start_soon(send_fifth)
            await anyio.wait_all_tasks_blocked()
            assert not fifth_read.is_set(), "the session read past its in-flight limit and its queue"

            holder.release.set()
            answers = [json.loads(await client_end.receive()) for _ in range(5)]
            assert fifth_read.is_set()
            assert sorted(answer["id"] for answer in answers) == [0, 1, 2, 3, 4]
            assert holder.peak == 2 and holder.started[:2] == [0, 1]
            await client_end.aclose()


async def test_session_keeps_reading_answers_while_requests_wait() -> None:
    """Why requests wait instead of reading simply stopping at the limit: handlers that wait for the peer's answer
    to a request of their own must still get it."""
    holder = Holder()
    server_end, client_end = memory_stream_pair(0)

    async def client_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return {"answer": 42}

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            server = Session(server_end, request_handler=holder, answer_pings=False, max_requests_in_flight=2)
            tg.start_soon(server.run)
            async with Session(client_end, request_handler=client_handler) as client:
                results: dict[int, Any] = {}

                async def call(n: int, method: str) -> None:
                    results[n] = await client.request(method, {}, timeout=WAIT)

                async with anyio.create_task_group() as calls:
                    calls.start_soon(call, 1, "ask")
                    calls.start_soon(call, 2, "ask")
                    await anyio.wait_all_tasks_blocked()
                    calls.start_soon(call, 3, "ping")  # waits: two handlers run, both waiting for our answers
                assert results == {1: {"client_said": {"answer": 42}}, 2: {"client_said": {"answer": 42}}, 3: {"n": 3}}
                assert holder.peak == 2 and holder.started[-1] == 3


async def test_session_cancelled_waiting_request_never_starts() -> None:
    holder = Holder()
    server_end, client_end = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(Session(server_end, request_handler=holder, max_requests_in_flight=2).run)
            for n in (1, 2, 3):
                await client_end.send(request(n))
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
            await client_end.send(encode_frame(cancel))
            await client_end.send(request(4))
            await anyio.wait_all_tasks_blocked()
            assert holder.started == [1, 2]
            holder.release.set()
            answers = [json.loads(await client_end.receive()) for _ in range(3)]
            assert sorted(answer["id"] for answer in answers) == [1, 2, 4]
            assert holder.started == [1, 2, 4]  # 3 was cancelled before its turn: its handler never ran
            await client_end.aclose()


async def test_session_refuses_a_batch_over_the_limit_whole() -> None:
    server_end, client_end = memory_stream_pair()
    ping = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(4)]
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(Session(server_end, allow_batches=True, max_batch_size=3).run)
            await client_end.send(encode_frame(ping))
            answer = json.loads(await client_end.receive())
            assert answer["id"] is None and answer["error"]["code"] == ErrorCode.INVALID_REQUEST
            assert "4 messages" in answer["error"]["message"] and "3" in answer["error"]["message"]
            await client_end.send(encode_frame(ping[:3]))
            assert sorted(item["id"] for item in json.loads(await client_end.receive())) == [0, 1, 2]
            await client_end.aclose()


# -- over stdio: a real Server process ---------------------------------------------------------------------------

LIMITED_SERVER = textwrap.dedent("""
    import json
    import anyio
    from mcpgen_runtime import stdio_server_stream
    from mcpgen_runtime.server import Server

    server = Server("limited")
    state = {"read": 0, "running": 0, "started": 0}

    class Counting:
        # Counts the frames the session has read from stdin.
        def __init__(self, inner):
            self.inner = inner
        async def receive(self):
            frame = await self.inner.receive()
            state["read"] += 1
            return frame
        async def send(self, frame):
            await self.inner.send(frame)
        async def aclose(self):
            await self.inner.aclose()

    @server.tool()
    async def hold(seconds: float) -> str:
        state["running"] += 1
        state["started"] += 1
        seen = dict(state)
        try:
            await anyio.sleep(seconds)
        finally:
            state["running"] -= 1
        return json.dumps(seen)

    async def main():
        async with stdio_server_stream() as stream:
            await server.serve_stream(Counting(stream), max_requests_in_flight=2)

    anyio.run(main)
    """)


async def test_stdio_server_handles_at_most_the_limit_and_reads_no_further_ahead(tmp_path: Path) -> None:
    script = tmp_path / "limited_server.py"
    script.write_text(LIMITED_SERVER)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    with anyio.fail_after(30):
        async with open_subprocess_stream([sys.executable, str(script)]) as stream, Session(stream) as client:
            await client.request("initialize", init, timeout=WAIT)
            await client.notify("notifications/initialized")
            seen: list[dict[str, int]] = []

            async def call() -> None:
                result = await client.request("tools/call", {"name": "hold", "arguments": {"seconds": 0.1}}, timeout=20)
                assert result.get("isError") is not True, result
                seen.append(json.loads(result["content"][0]["text"]))

            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(call)
    assert len(seen) == 10
    assert max(state["running"] for state in seen) <= 2, seen
    # Back-pressure: when a call starts, the server has read at most the two frames of the handshake, the calls
    # finished (fewer than those started), two running (admitted, perhaps not started yet) and two waiting: at
    # most started + 6 frames. Without it all twelve are read before the first call starts (read - started = 11).
    assert all(state["read"] - state["started"] <= 6 for state in seen), seen


async def test_stdio_request_of_a_limited_server_is_answered_not_refused(tmp_path: Path) -> None:
    """Over stdio nothing is refused for the limit: the client only waits longer (back-pressure, not errors)."""
    script = tmp_path / "limited_server.py"
    script.write_text(LIMITED_SERVER)
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    with anyio.fail_after(30):
        async with open_subprocess_stream([sys.executable, str(script)]) as stream, Session(stream) as client:
            await client.request("initialize", init, timeout=WAIT)
            errors: list[JSONRPCError] = []

            async def ping() -> None:
                try:
                    await client.request("ping", {}, timeout=20)
                except JSONRPCError as exc:
                    errors.append(exc)

            async with anyio.create_task_group() as tg:
                for _ in range(50):
                    tg.start_soon(ping)
            assert errors == []
