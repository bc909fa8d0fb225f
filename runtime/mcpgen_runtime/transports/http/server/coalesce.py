"""One write per fixed-length HTTP response: the uvicorn protocol ``serve_app`` runs (``coalescing_protocol``).

Where it sits: in the ``transports`` layer, under ``http_uvicorn`` (its only user). Nothing here knows MCP.

Why: uvicorn writes a response's status line and headers to the socket as soon as the app sends
``http.response.start``, and the body with the next message, so every JSON answer costs two ``send`` system calls
and, with TCP_NODELAY, two TCP segments the client reads one by one. On a keep-alive connection with one request in
flight those are a fixed part of every round trip (about 18 us of CPU per response here, 6-7 % of a small
``tools/call``). A response whose head carries ``Content-Length`` is complete only with its body, which every ASGI
app sends right after the head (ours always does), so holding that head until the next write costs the client
nothing and saves a system call. A head without ``Content-Length`` (an SSE stream, a chunked body) is written at
once, as before: its body may come much later, and the client wants the head now.

It works on the transport, below uvicorn's HTTP parser, so it holds for h11 and httptools alike and does not
depend on how uvicorn builds its messages: the protocol class is the one uvicorn would choose, with a transport
that delays a fixed-length head until the next write (or ``close``).
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["coalescing_protocol"]


class _HeadHoldingTransport:
    """``transport``, except that a written response head announcing a ``Content-Length`` is kept until the next
    write (which sends head and body in one call) or until the transport is closed. Everything else is passed on."""

    __slots__ = ("_held", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data and not self._held:
            return  # h11's end of a Content-Length body, every response: nothing to write
        if self._held:
            data, self._held = self._held + bytes(data), b""
        elif _fixed_length_head(data):
            self._held = bytes(data)
            return
        self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def _flush(self) -> None:
        if self._held:
            held, self._held = self._held, b""
            self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = b""
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # is_closing, get_extra_info, pause_reading, ...: the real transport's
        return getattr(self._transport, name)


def _fixed_length_head(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` is a whole response head (status line to the blank line) with a Content-Length header."""
    head = bytes(data[:8192]) if isinstance(data, memoryview) else data
    if not head.startswith(b"HTTP/1.") or not head.endswith(b"\r\n\r\n"):
        return False
    return b"\r\ncontent-length:" in head.lower()


_made: dict[type[asyncio.Protocol], type[asyncio.Protocol]] = {}


def coalescing_protocol(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's HTTP protocol class ``base`` whose connections write through a
    ``_HeadHoldingTransport`` (made once per ``base``)."""
    if base not in _made:

        def connection_made(self: Any, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            base.connection_made(self, _HeadHoldingTransport(transport))  # type: ignore[arg-type]

        _made[base] = type(f"Coalescing{base.__name__}", (base,), {"connection_made": connection_made})
    return _made[base]
