"""The stdio transport's pipes read from the event loop (``transports.stdio.ndjson.PipeStream`` / ``LoopReader``): on
asyncio the fd stays registered with the loop and the loop's callback reads, at most one chunk ahead of the
consumer; a client reads its child's stdout through its own pipe the same way. Real pipes and real processes
throughout; bad frames that arrive through this path still get the right JSON-RPC errors."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgen_runtime import FrameTooLarge, JSONParams, NDJSONStream, RequestContext, Session, open_subprocess_stream
from mcpgen_runtime.transports.stdio.pipes import READ_SIZE, LoopReader, PipeStream

pytestmark = pytest.mark.anyio

# A runtime Server over its own stdin/stdout with a small frame limit, so that "too large" can be sent.
SERVER_SCRIPT = textwrap.dedent("""
    import anyio
    from mcpgen_runtime.server import Server

    server = Server("loop-reader", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> str:
        return str(a + b)

    anyio.run(lambda: server.serve_stdio(max_frame_bytes=2000))
    """)

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def _pipe_stream() -> tuple[PipeStream, int]:
    """A pipe read by a PipeStream (it owns the read end) and the raw write end."""
    read_end, write_end = os.pipe()
    return PipeStream(read_end, owned=True), write_end


async def test_frames_split_merged_and_unterminated_arrive_whole() -> None:
    reader, write_end = _pipe_stream()
    stream = NDJSONStream(reader, reader)
    with anyio.fail_after(10):
        try:
            os.write(write_end, b'{"a":1}\n\n{"b"')
            assert await stream.receive() == b'{"a":1}'
            assert reader._loop_reader is not None  # asyncio: the loop-registered reader is the one in use
            os.write(write_end, b":2}\r\n" + b'{"c":3}\n' * 3 + b'{"last":true}')
            assert [await stream.receive() for _ in range(4)] == [b'{"b":2}', *[b'{"c":3}'] * 3]
            os.close(write_end)
            assert await stream.receive() == b'{"last":true}'  # unterminated, then the end
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
            with pytest.raises(anyio.EndOfStream):  # and stays ended
                await stream.receive()
        finally:
            await reader.aclose()


async def test_at_most_one_chunk_is_read_ahead_of_the_consumer() -> None:
    """Back-pressure: a consumer that stops receiving (a session at its in-flight limit) makes the pipe fill up."""
    reader, write_end = _pipe_stream()
    os.set_blocking(write_end, False)
    written = bytearray()
    try:
        with anyio.fail_after(10):
            os.write(write_end, b"x")
            written += b"x"
            assert await reader.receive() == b"x"  # registered, and now nobody waits

            def fill() -> int:
                total = 0
                while True:
                    try:
                        total += os.write(write_end, bytes([65 + total % 26]) * 4096)
                    except BlockingIOError:
                        return total

            for _ in range(5):  # let the loop run its callbacks in between: it reads one chunk at most
                size = fill()
                written += b"".join(bytes([65 + n % 26]) * 4096 for n in range(0, size, 4096))[:size]
                await anyio.sleep(0.01)
            pipe_capacity = fill() or 0
            assert pipe_capacity == 0  # still full: nothing is being read
            assert reader._loop_reader is not None
            buffered = sum(len(chunk) for chunk in reader._loop_reader._chunks)
            assert buffered <= READ_SIZE
            received = bytearray(b"x")
            os.close(write_end)
            write_end = -1
            while True:
                try:
                    received += await reader.receive()
                except anyio.EndOfStream:
                    break
            assert received == written
    finally:
        if write_end >= 0:
            os.close(write_end)
        await reader.aclose()


async def test_a_cancelled_receive_loses_nothing() -> None:
    reader, write_end = _pipe_stream()
    try:
        with anyio.fail_after(10):
            with anyio.move_on_after(0.05):
                await reader.receive()  # nothing comes: cancelled while it waits
            os.write(write_end, b"after")
            await anyio.sleep(0.05)  # read by the callback with nobody waiting
            assert await reader.receive() == b"after"
            os.write(write_end, b"more")
            assert await reader.receive(2) == b"mo"  # max_bytes is kept; the rest stays for the next receive
            assert await reader.receive() == b"re"
    finally:
        os.close(write_end)
        await reader.aclose()


async def test_close_wakes_a_waiting_receive_and_restores_or_closes_the_fd() -> None:
    read_end, write_end = os.pipe()
    try:
        borrowed = PipeStream(read_end)  # not owned: stdin, say
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                errors: list[BaseException] = []

                async def wait() -> None:
                    try:
                        await borrowed.receive()
                    except anyio.ClosedResourceError as exc:
                        errors.append(exc)

                tg.start_soon(wait)
                await anyio.sleep(0.05)
                await borrowed.aclose()
            assert len(errors) == 1
        assert os.get_blocking(read_end)  # as it was before
        os.write(write_end, b"still usable")
        assert os.read(read_end, 100) == b"still usable"
    finally:
        os.close(read_end)
        os.close(write_end)
    owned, write_end = _pipe_stream()
    owned_fd = owned._fd
    await owned.aclose()  # never read: closing still works
    with pytest.raises(OSError):
        os.fstat(owned_fd)
    os.close(write_end)


async def test_without_a_loop_reader_the_pipe_is_read_with_wait_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback for event loops that cannot register fds (another anyio backend, the Windows proactor): trio is
    not installed here, so the detection is made to say "none" and the same frames must come through."""
    monkeypatch.setattr(LoopReader, "for_running_loop", classmethod(lambda cls, fd: None))
    reader, write_end = _pipe_stream()
    stream = NDJSONStream(reader, reader)
    try:
        with anyio.fail_after(10):
            os.write(write_end, b'{"a":1}\n{"b"')
            assert await stream.receive() == b'{"a":1}'
            assert reader._loop_reader is None
            os.write(write_end, b":2}\n")
            assert await stream.receive() == b'{"b":2}'
            os.close(write_end)
            write_end = -1
            with pytest.raises(anyio.EndOfStream):
                await stream.receive()
    finally:
        if write_end >= 0:
            os.close(write_end)
        await reader.aclose()


async def test_the_client_reads_the_childs_stdout_through_its_own_pipe(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        print("to stderr", file=sys.stderr, flush=True)
        for line in sys.stdin:
            message = json.loads(line)
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"n": message["id"]}}))
            sys.stdout.write("\\n")
            sys.stdout.flush()
        """))
    with anyio.fail_after(30):
        async with open_subprocess_stream([sys.executable, str(script)], capture_stderr=True) as stream:
            assert stream.process.stdout is None  # not asyncio's pipe: ours, read from the loop
            assert isinstance(stream._receive_stream, PipeStream)
            async with Session(stream) as client:
                async with anyio.create_task_group() as tg:
                    for _ in range(20):
                        tg.start_soon(client.request, "echo")
                assert await client.request("echo") == {"n": 21}
        assert stream.process.returncode == 0
    assert b"to stderr" in stream.stderr_output


async def test_a_server_process_answers_bad_frames_in_any_framing_with_the_right_errors(tmp_path: Path) -> None:
    """Bad frames reach a real Server through the loop reader: in one write with good ones, or in small pieces, and
    over the frame limit (longer than a read, so that it is over the limit before its newline comes); each gets its
    JSON-RPC error (id null when it cannot be known), the good ones their answers, and the server goes on."""
    script = tmp_path / "server.py"
    script.write_text(SERVER_SCRIPT)
    frames = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode(),
        b"not json",
        json.dumps({"jsonrpc": "2.0", "id": 2}).encode(),  # no method: -32600 with its id
        json.dumps({"jsonrpc": "1.0", "id": 3, "method": "ping"}).encode(),
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":"x"}}}',
        b"x" * 100_000,  # over the server's 2000-byte limit
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
            }
        ).encode(),
    ]
    expected: list[tuple[Any, Any]] = [
        (1, "result"),
        (None, -32700),
        (2, -32600),
        (3, -32600),
        (4, "tool error"),
        (None, -32600),
        (5, "5"),
    ]

    def judge(answer: dict[str, Any]) -> tuple[Any, Any]:
        if "error" in answer:
            return answer["id"], answer["error"]["code"]
        if answer["id"] == 1:
            return 1, "result"
        result = answer["result"]
        return answer["id"], "tool error" if result.get("isError") else result["content"][0]["text"]

    with anyio.fail_after(60):
        for framing in ("one write", "small pieces"):
            async with open_subprocess_stream([sys.executable, str(script)]) as stream:
                data = b"".join(frame + b"\n" for frame in frames)
                if framing == "one write":
                    await stream._send_stream.send(data)
                else:
                    for start in range(0, len(data), 61):
                        await stream._send_stream.send(data[start : start + 61])
                answers = [json.loads(await stream.receive()) for _ in expected]
                # Each request is answered by a task of its own: the order of the answers is not promised.
                assert sorted(map(repr, map(judge, answers))) == sorted(map(repr, expected)), framing
                await stream.send(b'{"jsonrpc":"2.0","id":6,"method":"ping"}')
                assert json.loads(await stream.receive()) == {"jsonrpc": "2.0", "id": 6, "result": {}}


# -- the frame sink: lines read by the loop's callback go straight to the session ----------------------------------


async def test_the_frame_sink_gets_lines_as_they_arrive_and_refused_ones_go_to_receive() -> None:
    reader, write_end = _pipe_stream()
    stream = NDJSONStream(reader, reader, max_frame_bytes=100)
    pushed: list[bytes] = []
    refuse = {b'{"refuse":1}'}

    def sink(frame: bytes, value: Any) -> bool:
        assert value is None
        if frame in refuse:
            return False
        pushed.append(frame)
        return True

    stream.set_frame_sink(sink)
    received: list[bytes | str] = []

    async def receive_all() -> None:
        while True:
            try:
                received.append(await stream.receive())
            except FrameTooLarge:
                received.append("too large")
            except anyio.EndOfStream:
                return

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(receive_all)
                await anyio.sleep(0.05)
                os.write(write_end, b'{"a":1}\n\r\n  \n{"b":2}\r\n{"c"')  # whole lines pushed, the partial one kept
                await anyio.sleep(0.05)
                assert pushed == [b'{"a":1}', b'{"b":2}'] and received == []
                os.write(write_end, b':3}\n{"refuse":1}\n{"d":4}\n')  # refused: it and what follows go to receive
                await anyio.sleep(0.05)
                assert pushed == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
                assert received == [b'{"refuse":1}', b'{"d":4}']
                os.write(write_end, b'{"e":5}\n' + b"x" * 150)  # an unfinished line over the limit: receive drops it
                await anyio.sleep(0.05)
                os.write(write_end, b"xx\n" + b'{"f":6}\n')  # read while receive drops the line: receive's
                await anyio.sleep(0.05)
                stream.set_frame_sink(None)
                os.write(write_end, b'{"g":7}\n')
                await anyio.sleep(0.05)
                stream.set_frame_sink(sink)
                os.write(write_end, b'{"h":8}\n{"i":9}')  # the last line unterminated: receive's, at the end
                os.close(write_end)
                write_end = -1
        assert pushed == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"e":5}', b'{"h":8}']
        assert received == [b'{"refuse":1}', b'{"d":4}', "too large", b'{"f":6}', b'{"g":7}', b'{"i":9}']
    finally:
        if write_end >= 0:
            os.close(write_end)
        await reader.aclose()


async def test_a_session_over_a_pipe_keeps_its_in_flight_limit_with_frames_pushed() -> None:
    """Requests pushed from the loop's callback count against the limit like read ones: with room for 2 running
    and 2 waiting, a burst of 20 leaves the rest unread (in the pipe or the stream's buffer) until handlers end;
    every request is answered once, none lost."""
    release = anyio.Event()
    running = 0
    most_running = 0

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        nonlocal running, most_running
        running += 1
        most_running = max(most_running, running)
        try:
            await release.wait()
            return {"n": params}
        finally:
            running -= 1

    to_server_read, to_server_write = os.pipe()
    from_server_read, from_server_write = os.pipe()
    server_stream = NDJSONStream(PipeStream(to_server_read, owned=True), PipeStream(from_server_write, owned=True))
    client_reader = PipeStream(from_server_read, owned=True)
    answers = NDJSONStream(client_reader, client_reader)
    try:
        with anyio.fail_after(20):
            async with Session(server_stream, request_handler=handler, max_requests_in_flight=2) as session:
                os.write(
                    to_server_write,
                    b"".join(
                        json.dumps({"jsonrpc": "2.0", "id": n, "method": "work", "params": [n]}).encode() + b"\n"
                        for n in range(20)
                    ),
                )
                await anyio.sleep(0.2)
                assert most_running == 2
                assert session._admission.waiting <= session._admission.backlog == 2
                release.set()
                ids = sorted([json.loads(await answers.receive())["id"] for _ in range(20)])
                assert ids == list(range(20))
                assert most_running == 2
                os.close(to_server_write)
                to_server_write = -1
    finally:
        if to_server_write >= 0:
            os.close(to_server_write)
        await client_reader.aclose()


async def test_a_cancellation_pushed_from_the_loop_callback_cancels_the_handler() -> None:
    """notifications/cancelled taken in the loop's callback (no task of the session's running) cancels the
    request's handler as when the receive loop reads it: no answer, and the session serves on."""
    started, cancelled = anyio.Event(), anyio.Event()

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "hang":
            started.set()
            try:
                await anyio.sleep(60)
            finally:
                cancelled.set()
        return {"method": method}

    to_server_read, to_server_write = os.pipe()
    from_server_read, from_server_write = os.pipe()
    server_stream = NDJSONStream(PipeStream(to_server_read, owned=True), PipeStream(from_server_write, owned=True))
    client_reader = PipeStream(from_server_read, owned=True)
    answers = NDJSONStream(client_reader, client_reader)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "h"}}
    try:
        with anyio.fail_after(20):
            async with Session(server_stream, request_handler=handler):
                os.write(to_server_write, json.dumps({"jsonrpc": "2.0", "id": "h", "method": "hang"}).encode() + b"\n")
                await started.wait()
                os.write(to_server_write, json.dumps(cancel).encode() + b"\n")
                await cancelled.wait()
                os.write(to_server_write, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "next"}).encode() + b"\n")
                assert json.loads(await answers.receive()) == {"jsonrpc": "2.0", "id": 2, "result": {"method": "next"}}
                os.close(to_server_write)
                to_server_write = -1
    finally:
        if to_server_write >= 0:
            os.close(to_server_write)
        await client_reader.aclose()
