"""``serve_app`` writes a fixed-length response (head and body) with one system call, and everything else as before.

The transport wrapper is checked against a recording transport (which writes reach the socket, and when: the
coalescing itself is only observable there). Then a real uvicorn server from ``serve_app`` on 127.0.0.1, read with a
raw socket: its connections are the coalescing protocol's, a streamed head is not held back (the app waits for the
client to have read it before sending any body: a held head would deadlock), and a fixed-length answer after it, on
the same keep-alive connection, arrives intact.
"""

from __future__ import annotations

import asyncio
import gc
import socket
from functools import partial
from typing import Any

import anyio
import pytest
from starlette.types import Receive, Scope, Send
from support.servers import answer_lifespan
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from mcpgen_runtime.transports.http.server.coalesce import (
    UVICORN_COALESCING,
    _HeadHoldingTransport,
    coalescing_protocol,
    http_protocol,
)
from mcpgen_runtime.transports.http.server.serving import http_stack, serve_app

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 2\r\n\r\n"
STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_a_fixed_length_head_goes_out_with_its_body() -> None:
    recording = RecordingTransport()
    transport = _HeadHoldingTransport(recording)
    transport.write(HEAD)
    assert recording.writes == []
    transport.write(b"{}")
    transport.write(b"")  # h11's end of message for a Content-Length body: nothing to write, no call made
    assert recording.writes == [HEAD + b"{}"]


def test_a_streamed_head_is_written_at_once() -> None:
    recording = RecordingTransport()
    transport = _HeadHoldingTransport(recording)
    transport.write(STREAM_HEAD)
    assert recording.writes == [STREAM_HEAD]
    transport.write(b"5\r\nhello\r\n")
    assert recording.writes == [STREAM_HEAD, b"5\r\nhello\r\n"]


def test_an_empty_body_and_close_release_a_held_head() -> None:
    recording = RecordingTransport()
    transport = _HeadHoldingTransport(recording)
    transport.write(HEAD.replace(b"Content-Length: 2", b"content-length: 0"))
    transport.write(b"")
    assert len(recording.writes) == 1 and recording.writes[0].endswith(b"\r\n\r\n")
    transport.write(HEAD)
    transport.close()
    assert recording.writes[-1] == HEAD and recording.closed
    assert not transport.is_closing() or recording.closed  # the rest is the real transport's


def test_the_protocol_is_uvicorns_own_choice_with_the_wrapper() -> None:
    protocol = coalescing_protocol(AutoHTTPProtocol)
    assert issubclass(protocol, AutoHTTPProtocol) and protocol is coalescing_protocol(AutoHTTPProtocol)


def _read_until(sock: socket.socket, marker: bytes, limit: int = 65536) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(limit)
        if not chunk:
            raise AssertionError(f"connection closed before {marker!r}; got {data!r}")
        data += chunk
    return data


@pytest.mark.anyio
async def test_over_a_real_socket_streams_are_not_held_and_answers_come_whole() -> None:
    head_read = anyio.Event()
    coalescing: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        await receive()
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            # The body waits for the client to have read the head: a held head would deadlock here (fail_after).
            await head_read.wait()
            await send({"type": "http.response.body", "body": b"tail", "more_body": False})
            return
        protocol = http_protocol(http_stack().parser)  # the class serve_app runs (MCPGEN_HTTP_STACK's parser)
        coalescing.append(
            not isinstance(protocol, str) and any(isinstance(live, protocol) for live in gc.get_objects())
        )
        body = b'{"answer":3}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def client(port: int) -> tuple[bytes, bytes, bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
            streamed_head = _read_until(sock, b"\r\n\r\n")
            anyio.from_thread.run_sync(head_read.set)
            streamed_rest = _read_until(sock, b"0\r\n\r\n")
            sock.sendall(b"GET /json HTTP/1.1\r\nhost: x\r\n\r\n")
            whole = _read_until(sock, b'{"answer":3}')
            return streamed_head + streamed_rest, whole, b""

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, app))
            port = int(base.rsplit(":", 1)[1])
            streamed, whole, _ = await anyio.to_thread.run_sync(client, port)
            tg.cancel_scope.cancel()
    # serve_app's uvicorn runs the coalescing protocol (unless safe mode or its self-check turned it off)
    assert coalescing == [UVICORN_COALESCING.active]
    assert b"tail" in streamed
    assert b"server: uvicorn" not in whole.lower()
    assert whole.startswith(b"HTTP/1.1 200") and whole.endswith(b'{"answer":3}'), whole


@pytest.mark.anyio
@pytest.mark.parametrize("stack", ["auto", "h11"])
async def test_a_head_answer_is_not_held_on_either_parser(stack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HEAD answer announces the GET's Content-Length but has no body: httptools writes nothing after its head, so
    the head is released when the response is complete, not held until the next one (which would never come)."""
    monkeypatch.setenv("MCPGEN_HTTP_STACK", stack)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        await receive()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"12")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"answer":3}'})

    def client(port: int) -> tuple[bytes, bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
            head = _read_until(sock, b"\r\n\r\n")
            sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            return head, _read_until(sock, b'{"answer":3}')

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, app))
            head, whole = await anyio.to_thread.run_sync(client, int(base.rsplit(":", 1)[1]))
            tg.cancel_scope.cancel()
    assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n") and b"content-length: 12" in head.lower()
    assert whole.startswith(b"HTTP/1.1 200") and whole.endswith(b'\r\n\r\n{"answer":3}'), whole
