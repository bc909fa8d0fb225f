"""One write per fixed-length HTTP response: the uvicorn protocol ``serve_app`` runs (``coalescing_protocol``).

Where it sits: in the ``transports`` layer, under ``serving`` (its only user). Nothing here knows MCP.

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

It relies on uvicorn's internals (a fast path, see ``safe_mode``): the protocol class behind ``http="auto"``
(``uvicorn.protocols.http.auto.AutoHTTPProtocol``), its constructor's keywords, and that it takes its transport in
``connection_made`` and writes a response through it. ``http_protocol()`` checks that once, by serving one request
through the wrapped class with a recording transport, and otherwise (or in safe mode) returns ``"auto"``: uvicorn's
public choice, two writes per response.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from ....safe_mode import fast_path, require

__all__ = ["UVICORN_COALESCING", "coalescing_protocol", "http_protocol"]


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


def _auto_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return AutoHTTPProtocol


class _RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


_PROBE_BODY: Final = b'{"probe":true}'


async def _probe_one_request() -> list[bytes]:
    """One keep-alive request served by the coalescing protocol over a recording transport: what it wrote."""
    import uvicorn
    from uvicorn.server import ServerState

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(_PROBE_BODY)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": _PROBE_BODY})

    # log_config None: the probe must not reconfigure uvicorn's loggers (serve_app's own Config does that).
    config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False, server_header=False)
    config.load()
    transport = _RecordingTransport()
    # The keywords uvicorn's Server passes (typed as a plain asyncio.Protocol here, so called through Any).
    make: Any = coalescing_protocol(_auto_protocol())
    protocol = make(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(transport)
    protocol.data_received(b"GET /probe HTTP/1.1\r\nhost: probe\r\n\r\n")
    for _ in range(200):  # the app runs in a task of the protocol's: a few turns of the loop
        if transport.writes:
            break
        await asyncio.sleep(0.001)
    protocol.connection_lost(None)
    return transport.writes


def _check_coalescing() -> None:
    require(issubclass(_auto_protocol(), asyncio.Protocol), "AutoHTTPProtocol is not an asyncio.Protocol")
    # A loop of its own, in a thread: serve_app asks from inside a running loop.
    with ThreadPoolExecutor(1, thread_name_prefix="mcpgen-self-check") as pool:
        writes = pool.submit(asyncio.run, _probe_one_request()).result(timeout=10)
    require(len(writes) == 1, f"a fixed-length response took {len(writes)} writes, not one")
    require(writes[0].startswith(b"HTTP/1.1 200 ") and writes[0].endswith(b"\r\n\r\n" + _PROBE_BODY), "bad response")


UVICORN_COALESCING: Final = fast_path(
    "uvicorn-coalescing",
    relies_on="uvicorn.protocols.http.auto.AutoHTTPProtocol: its constructor and connection_made",
    check=_check_coalescing,
)


def http_protocol() -> type[asyncio.Protocol] | str:
    """What ``serve_app`` hands uvicorn as ``http``: the coalescing protocol when its fast path is on, else
    ``"auto"`` (which the coalescing protocol wraps). The first call may run the self-check (a few ms, blocking)."""
    return coalescing_protocol(_auto_protocol()) if UVICORN_COALESCING.active else "auto"
