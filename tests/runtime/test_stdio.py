"""mcpgen_runtime.transports.stdio.ndjson: newline-delimited JSON over real child processes' pipes (and the framing on its
own)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from mcpgen_runtime import (
    FrameTooLarge,
    JSONParams,
    JSONRPCError,
    NDJSONStream,
    RequestContext,
    Session,
    SessionClosedError,
    open_subprocess_stream,
)

pytestmark = pytest.mark.anyio

# A server built on the runtime itself, talking over its own stdin/stdout.
SERVER_SCRIPT = textwrap.dedent("""
    import os, sys
    import anyio
    from mcpgen_runtime import MethodNotFound, Session, stdio_server_stream

    async def handler(method, params, context):
        if method == "echo":
            return {"echo": params}
        if method == "print":
            print("stray print from a handler")  # must not corrupt the protocol stream
            return {"printed": True}
        if method == "env":
            return {"value": os.environ.get("PEER_GREETING")}
        if method == "progress":
            for step in range(3):
                await context.report_progress(step + 1, 3)
            return {}
        if method == "ask_back":
            return {"client_said": await context.session.request("client/question", {"q": 1}, timeout=5)}
        if method == "exit":
            os._exit(3)
        raise MethodNotFound(method)

    async def main():
        print("server starting", file=sys.stderr)
        async with stdio_server_stream() as stream:
            await Session(stream, request_handler=handler).run()

    anyio.run(main)
    """)

# A peer with no runtime at all, writing frames in deliberately awkward pieces with raw os.write calls.
RAW_SCRIPT = textwrap.dedent("""
    import json, os, sys, time

    def out(data):
        os.write(1, data)
        time.sleep(0.01)

    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message:
            continue
        response = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"ok": message["method"]}}).encode()
        if message["method"] == "split":
            for start in range(0, len(response), 7):  # one frame in many reads
                out(response[start:start + 7])
            out(b"\\n")
        elif message["method"] == "merged":
            notes = b"".join(
                json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}).encode() + b"\\n"
                for n in range(5)
            )
            out(b"\\n\\n" + notes + b"  \\r\\n" + response + b"\\r\\n")  # blank lines, CRLF, several frames per read
        elif message["method"] == "unterminated":
            out(response)  # last frame without a newline, then end of stream
            sys.exit(0)
        else:
            out(response + b"\\n")
    """)


def _write(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source)
    return [sys.executable, str(path)]


async def test_stdio_request_response_with_a_runtime_server_process(tmp_path: Path) -> None:
    command = _write(tmp_path, "server.py", SERVER_SCRIPT)

    async def client_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return {"answer": method}

    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    with anyio.fail_after(30):
        async with open_subprocess_stream(command, capture_stderr=True) as stream:
            async with Session(stream, request_handler=client_handler) as client:
                assert await client.request("echo", {"x": [1, "é", None]}) == {"echo": {"x": [1, "é", None]}}
                assert await client.request("ping") == {}
                assert await client.request("print") == {"printed": True}
                assert await client.request("progress", progress_callback=on_progress) == {}
                assert updates == [1, 2, 3]
                assert await client.request("ask_back") == {"client_said": {"answer": "client/question"}}
                async with anyio.create_task_group() as tg:  # concurrent requests over one pipe
                    for n in range(20):
                        tg.start_soon(client.request, "echo", {"n": n})
        assert stream.process.returncode == 0  # closing stdin is a clean shutdown
    assert b"stray print from a handler" in stream.stderr_output
    assert b"server starting" in stream.stderr_output


async def test_stdio_ten_megabyte_frames_both_ways(tmp_path: Path) -> None:
    command = _write(tmp_path, "server.py", SERVER_SCRIPT)
    blob = "0123456789abcdef" * (10 * 1024 * 1024 // 16)
    with anyio.fail_after(60):
        async with open_subprocess_stream(command) as stream, Session(stream) as client:
            result = await client.request("echo", {"blob": blob})
            assert result == {"echo": {"blob": blob}}
            assert await client.request("ping") == {}


async def test_stdio_env_is_passed_to_the_child(tmp_path: Path) -> None:
    command = _write(tmp_path, "server.py", SERVER_SCRIPT)
    with anyio.fail_after(30):
        async with open_subprocess_stream(command, env={**os.environ, "PEER_GREETING": "hello"}) as stream:
            async with Session(stream) as client:
                assert await client.request("env") == {"value": "hello"}


async def test_stdio_split_and_merged_lines_from_a_raw_process(tmp_path: Path) -> None:
    command = _write(tmp_path, "raw.py", RAW_SCRIPT)
    notes: list[Any] = []

    async def on_notification(method: str, params: JSONParams) -> None:
        notes.append(params)

    with anyio.fail_after(30):
        async with open_subprocess_stream(command) as stream:
            async with Session(stream, notification_handler=on_notification) as client:
                assert await client.request("split") == {"ok": "split"}
                assert await client.request("merged") == {"ok": "merged"}
                assert await client.request("plain") == {"ok": "plain"}
                with anyio.fail_after(5):
                    while len(notes) < 5:
                        await anyio.sleep(0.01)
                assert notes == [{"n": n} for n in range(5)]
                assert await client.request("unterminated") == {"ok": "unterminated"}
                await client.wait_closed()


async def test_stdio_child_exit_fails_pending_requests(tmp_path: Path) -> None:
    command = _write(tmp_path, "server.py", SERVER_SCRIPT)
    with anyio.fail_after(30):
        async with open_subprocess_stream(command) as stream, Session(stream) as client:
            with pytest.raises(SessionClosedError):
                await client.request("exit")
        assert stream.process.returncode == 3


async def test_stdio_stubborn_child_is_terminated_on_exit(tmp_path: Path) -> None:
    command = _write(
        tmp_path,
        "stubborn.py",
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "sys.stdout.write('ready\\n'); sys.stdout.flush()\ntime.sleep(60)\n",
    )
    started = time.monotonic()
    with anyio.fail_after(30):
        async with open_subprocess_stream(command, terminate_timeout=0.3) as stream:
            assert await stream.receive() == b"ready"
    assert stream.process.returncode is not None  # SIGTERM ignored, so it took SIGKILL
    assert time.monotonic() - started < 10


async def test_stdio_server_can_exit_while_its_stdin_is_still_open(tmp_path: Path) -> None:
    # The stdin reader must not keep the process alive once the server is done (it is blocked in a read).
    command = _write(
        tmp_path,
        "one_shot.py",
        "import anyio\nfrom mcpgen_runtime import stdio_server_stream\n"
        "async def main():\n"
        "    async with stdio_server_stream() as stream:\n"
        "        await stream.send(await stream.receive())\n"
        "anyio.run(main)\n",
    )
    with anyio.fail_after(30):
        async with open_subprocess_stream(command) as stream:
            await stream.send(b'{"one":"shot"}')
            assert await stream.receive() == b'{"one":"shot"}'
            with anyio.fail_after(5):
                assert await stream.process.wait() == 0


async def test_stdio_body_exception_propagates_unwrapped(tmp_path: Path) -> None:
    command = _write(tmp_path, "server.py", SERVER_SCRIPT)
    with pytest.raises(KeyError):
        async with open_subprocess_stream(command, capture_stderr=True):
            raise KeyError("mine")


OFFICIAL_SDK_SERVER = textwrap.dedent("""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("official")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    server.run("stdio")
    """)


async def test_stdio_interoperates_with_an_official_sdk_server_process(tmp_path: Path) -> None:
    command = _write(tmp_path, "official.py", OFFICIAL_SDK_SERVER)
    with anyio.fail_after(60):
        async with open_subprocess_stream(command, capture_stderr=True) as stream, Session(stream) as client:
            initialized = await client.request(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "mcpgen-test", "version": "0"},
                },
                timeout=30,
            )
            assert initialized["protocolVersion"] == "2025-06-18"
            assert initialized["serverInfo"]["name"] == "official"
            await client.notify("notifications/initialized")
            tools = await client.request("tools/list", {}, timeout=10)
            assert [tool["name"] for tool in tools["tools"]] == ["add"]
            called = await client.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}, timeout=10)
            assert called["content"][0]["text"] == "5" and not called.get("isError")
            assert await client.request("ping", timeout=10) == {}
            with pytest.raises(JSONRPCError) as caught:
                await client.request("no/such/method", {}, timeout=10)
            assert caught.value.code == -32601


# -- framing on its own, with exact control of the read boundaries ---------------------------------------------------


class ChunkStream(ByteReceiveStream):
    """Hands out the given chunks one per read (a real ByteReceiveStream, so NDJSONStream sees exact boundaries)."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        chunk = self._chunks.pop(0)
        if len(chunk) > max_bytes:
            self._chunks.insert(0, chunk[max_bytes:])
        return chunk[:max_bytes]

    async def aclose(self) -> None:
        self._chunks.clear()


class SinkStream(ByteSendStream):
    def __init__(self) -> None:
        self.data = bytearray()

    async def send(self, item: bytes) -> None:
        self.data += item

    async def aclose(self) -> None:
        pass


async def _frames(chunks: Sequence[bytes], **options: Any) -> list[bytes | str]:
    stream = NDJSONStream(ChunkStream(chunks), SinkStream(), **options)
    frames: list[bytes | str] = []
    while True:
        try:
            frames.append(await stream.receive())
        except anyio.EndOfStream:
            return frames
        except FrameTooLarge:
            frames.append("too large")


async def test_stdio_framing_at_every_split_point() -> None:
    data = b'{"a":1}\n\n  \r\n{"b":[2,3]}\r\n{"c":"\xc3\xa9"}\n'
    expected = [b'{"a":1}', b'{"b":[2,3]}', b'{"c":"\xc3\xa9"}']
    assert await _frames([data]) == expected
    assert await _frames([bytes([byte]) for byte in data]) == expected
    for cut in range(1, len(data)):
        assert await _frames([data[:cut], data[cut:]]) == expected


async def test_stdio_framing_unterminated_last_line_and_blank_stream() -> None:
    assert await _frames([b'{"a":1}\n{"b":2}']) == [b'{"a":1}', b'{"b":2}']
    assert await _frames([b"\n\n \n"]) == []
    assert await _frames([]) == []


async def test_stdio_oversized_frame_is_dropped_and_reading_continues() -> None:
    big = b"x" * 5000
    frames = await _frames([b'{"a":1}\n', big[:2000], big[2000:] + b'\n{"b":2}\n', big], max_frame_bytes=1000)
    assert frames == [b'{"a":1}', "too large", b'{"b":2}', "too large"]


async def test_stdio_send_appends_the_newline_and_refuses_embedded_ones() -> None:
    sink = SinkStream()
    stream = NDJSONStream(ChunkStream([]), sink)
    await stream.send(b'{"a":1}')
    assert bytes(sink.data) == b'{"a":1}\n'
    with pytest.raises(ValueError):
        await stream.send(b'{"a":\n1}')


async def test_stdio_server_answers_bracketed_garbage_as_a_parse_error() -> None:
    """A real ``Server`` process (server_fixture.py): invalid JSON that starts with ``[`` is a parse error (-32700),
    not a refused batch (-32600), before initialize and on a version without batches; a real batch still gets
    -32600 there."""
    fixture = Path(__file__).with_name("server_fixture.py")
    garbage = [b"[", b"[{", b'[{"jsonrpc": "2.0", "id": 1', b"[1,]", b"  [oops"]
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}

    async def answer(stream: NDJSONStream, frame: bytes) -> Any:
        await stream.send(frame)
        with anyio.fail_after(10):
            return json.loads(await stream.receive())

    with anyio.fail_after(30):
        async with open_subprocess_stream([sys.executable, str(fixture)]) as stream:
            for phase in ("before initialize", "2025-06-18"):
                for frame in garbage:
                    reply = await answer(stream, frame)
                    assert reply["id"] is None and reply["error"]["code"] == -32700, (phase, frame, reply)
                batch = json.dumps([{"jsonrpc": "2.0", "id": 5, "method": "ping"}]).encode()
                reply = await answer(stream, batch)
                assert reply["id"] is None and reply["error"]["code"] == -32600, (phase, reply)
                if phase == "before initialize":
                    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
                    assert (await answer(stream, json.dumps(initialize).encode()))["id"] == 0
