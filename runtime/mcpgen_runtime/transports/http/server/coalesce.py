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

A held head is also released when uvicorn calls the protocol's ``on_response_complete``: a response to ``HEAD``
announces the GET's ``Content-Length`` but has no body, and httptools' protocol (unlike h11's, which writes an empty
body) writes nothing after the head.

It relies on uvicorn's internals (a fast path, see ``safe_mode``): its protocol classes (h11's, httptools', and
``uvicorn.protocols.http.auto.AutoHTTPProtocol``, the one of the two ``http="auto"`` picks), their constructor's
keywords, that they take their transport in ``connection_made``, write a response through it and call
``on_response_complete`` when it is whole. ``http_protocol(parser)`` checks that once, by serving a GET and a HEAD
through each installed wrapped class with a recording transport, and otherwise (or in safe mode) returns the parser's
name: uvicorn's public choice, two writes per response.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from ....safe_mode import fast_path, require

__all__ = ["PARSERS", "UVICORN_COALESCING", "coalescing_protocol", "http_protocol"]

PARSERS: Final = ("auto", "httptools", "h11")  # uvicorn's names for its HTTP/1.1 protocols


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

        def connection_made(self: Any, transport: Any) -> None:
            # Any: uvloop's TCPTransport has asyncio.Transport's methods but is no subclass of it (no isinstance).
            base.connection_made(self, _HeadHoldingTransport(transport))  # type: ignore[arg-type]

        def on_response_complete(self: Any) -> None:
            # A HEAD answer's head (httptools writes no body for it): out now, not with the next response.
            self.transport._flush()
            base.on_response_complete(self)  # type: ignore[attr-defined]

        namespace = {"connection_made": connection_made, "on_response_complete": on_response_complete}
        _made[base] = type(f"Coalescing{base.__name__}", (base,), namespace)
    return _made[base]


def _auto_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return AutoHTTPProtocol


def _h11_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return H11Protocol


def _httptools_protocol() -> type[asyncio.Protocol] | None:
    """httptools' protocol class, None when httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None
    return HttpToolsProtocol


def _protocol_class(parser: str) -> type[asyncio.Protocol]:
    if parser == "h11":
        return _h11_protocol()
    if parser == "httptools":
        found = _httptools_protocol()
        if found is None:
            raise ImportError("the httptools parser is not installed")
        return found
    return _auto_protocol()


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


async def _probe_one_request(base: type[asyncio.Protocol], method: bytes) -> list[bytes]:
    """One keep-alive request served by the coalescing protocol of ``base`` over a recording transport: what it
    wrote."""
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
    make: Any = coalescing_protocol(base)
    protocol = make(config=config, server_state=ServerState(), app_state={})
    protocol.connection_made(transport)
    protocol.data_received(method + b" /probe HTTP/1.1\r\nhost: probe\r\n\r\n")
    for _ in range(200):  # the app runs in a task of the protocol's: a few turns of the loop
        if transport.writes:
            break
        await asyncio.sleep(0.001)
    protocol.connection_lost(None)
    return transport.writes


async def _probe_all(bases: list[type[asyncio.Protocol]]) -> list[tuple[str, bytes, list[bytes]]]:
    return [(base.__name__, method, await _probe_one_request(base, method)) for base in bases for method in _METHODS]


_METHODS: Final = (b"GET", b"HEAD")


def _check_coalescing() -> None:
    bases = [_auto_protocol(), _h11_protocol(), *filter(None, [_httptools_protocol()])]
    bases = list(dict.fromkeys(bases))  # auto is one of the others, unless monkeypatched
    for base in bases:
        require(issubclass(base, asyncio.Protocol), f"{base.__name__} is not an asyncio.Protocol")
    # A loop of its own, in a thread: serve_app asks from inside a running loop.
    with ThreadPoolExecutor(1, thread_name_prefix="mcpgen-self-check") as pool:
        probes = pool.submit(asyncio.run, _probe_all(bases)).result(timeout=10)
    for name, method, writes in probes:
        require(len(writes) == 1, f"{name}: a fixed-length {method.decode()} answer took {len(writes)} writes, not one")
        ending = b"\r\n\r\n" + (_PROBE_BODY if method == b"GET" else b"")
        require(writes[0].startswith(b"HTTP/1.1 200 ") and writes[0].endswith(ending), f"{name}: bad response")


UVICORN_COALESCING: Final = fast_path(
    "uvicorn-coalescing",
    relies_on="uvicorn.protocols.http (h11_impl, httptools_impl): constructors, connection_made, on_response_complete",
    check=_check_coalescing,
)


def http_protocol(parser: str = "auto") -> type[asyncio.Protocol] | str:
    """What ``serve_app`` hands uvicorn as ``http`` for ``parser`` (one of ``PARSERS``): the coalescing protocol
    over that parser's protocol class when its fast path is on, else ``parser`` itself (uvicorn's name for the class
    the coalescing protocol wraps). The first call may run the self-check (a few ms, blocking). ``ImportError`` for
    ``"httptools"`` when httptools is not installed."""
    if parser not in PARSERS:
        raise ValueError(f"unknown HTTP parser {parser!r}; choose one of: {', '.join(PARSERS)}")
    base = _protocol_class(parser)
    return coalescing_protocol(base) if UVICORN_COALESCING.active else parser
