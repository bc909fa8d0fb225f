"""The frame-level transport interface every ``mcpgen_runtime`` transport implements, plus an in-memory pair.

Where it sits: in the ``jsonrpc`` layer, below ``session`` (which only ever calls ``receive`` / ``send`` /
``aclose``) and below the concrete transports (the ``transports`` layer: stdio, streamable HTTP). A frame is one
complete JSON-RPC message (or batch) as UTF-8 bytes; how frames are delimited is the transport's business.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .envelopes import Request

__all__ = [
    "Dispatcher",
    "FrameSink",
    "FrameTooLarge",
    "MemoryMessageStream",
    "MessageStream",
    "ParsedReceiver",
    "SendLock",
    "memory_stream_pair",
]


@runtime_checkable
class MessageStream(Protocol):
    """A bidirectional stream of whole frames.

    ``receive`` raises ``anyio.EndOfStream`` once the peer is done sending (and may raise ``FrameTooLarge`` for a
    frame it had to drop; the stream stays usable after that). ``send`` writes one frame atomically with respect to
    other ``send`` calls.
    """

    async def receive(self) -> bytes: ...

    async def send(self, frame: bytes) -> None: ...

    async def aclose(self) -> None: ...


class Dispatcher(Protocol):
    """What a ``Session`` offers a transport that receives each request in a task of its own (the streamable HTTP
    server: one per POST), so that the request need not queue for ``receive``: see ``Session.dispatch_now``.

    The optional part of a ``MessageStream`` that goes with it: ``set_dispatcher(dispatcher | None)``, which the
    session calls when it starts and stops reading the stream, and ``send_message(frame, message)``, ``send`` with
    the message the frame encodes (so that a transport routing by content does not parse what was just encoded).
    """

    async def dispatch_now(self, request: Request, *, inline: bool) -> bool: ...


class ParsedReceiver(Protocol):
    """An optional extra of a ``MessageStream`` that parses incoming frames itself (the client's answer guard does,
    to judge answers): ``receive_parsed`` is ``receive`` with the frame's JSON value, or ``None`` as the value when
    the frame was not parsed, so that the session does not parse it a second time."""

    async def receive_parsed(self) -> tuple[bytes, Any]: ...


FrameSink = Callable[[bytes, Any], bool]
"""Where a stream may hand incoming frames as it reads them, instead of waking the reader: an optional extra of a
``MessageStream`` is ``set_frame_sink(sink | None)``, which a session calls when it starts and stops reading. The
stream calls ``sink(frame, value)`` (``value``: the frame's JSON, or None when it was not parsed, as for
``ParsedReceiver``) only while the session waits in ``receive`` with nothing unread before the frame, so the order of
frames is kept, and from a callback of the event loop (over stdio: the one that read the pipe), which saves waking
the session's receive loop for it. ``sink`` returns False, having done nothing, when the frame must come through
``receive`` instead (the session is holding back, or the frame needs what only ``receive`` does); the stream then
keeps it, and everything after it, for ``receive``."""


def stream_extras(stream: Any) -> tuple[Any, Any]:
    """A stream's ``set_dispatcher`` and ``send_message`` (see ``Dispatcher``), None where it has not got them."""
    return getattr(stream, "set_dispatcher", None), getattr(stream, "send_message", None)


class SendLock:
    """A first-come first-served lock around a stream's ``send`` (a session writes whole frames, one at a time).
    Taking it when free and giving it back cost two attribute writes: ``anyio.Lock`` tracks the owning task, which
    cost more than the rest of writing an answer. Not reentrant; released by whoever holds it."""

    __slots__ = ("_locked", "_waiters")

    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[anyio.Event] = deque()

    async def __aenter__(self) -> None:
        if not self._locked:
            self._locked = True
            return
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():  # handed over just as the wait was cancelled: hand it on
                self._release()
            else:
                self._waiters.remove(turn)
            raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._release()

    def try_acquire(self) -> bool:
        """Take the lock if it is free (True), without awaiting; give it back with ``release``. For a writer on the
        per-request path, which saves the two coroutine calls of ``async with`` when nobody else is writing."""
        if self._locked:
            return False
        self._locked = True
        return True

    def release(self) -> None:
        self._release()

    def _release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # stays locked: the next one holds it now
        else:
            self._locked = False


class FrameTooLarge(Exception):
    """A transport dropped an incoming frame longer than its limit; the next ``receive`` continues after it.

    Raised rather than swallowed so that the session can still answer (with id null): otherwise the peer would wait
    forever for a response to a request nobody saw.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"incoming frame larger than {limit} bytes was dropped")
        self.limit = limit


class MemoryMessageStream:
    """One end of an in-process frame pipe (tests, and in-process server/client pairs)."""

    def __init__(self, send_stream: MemoryObjectSendStream[bytes], receive_stream: MemoryObjectReceiveStream[bytes]):
        self._send_stream = send_stream
        self._receive_stream = receive_stream

    async def receive(self) -> bytes:
        return await self._receive_stream.receive()

    async def send(self, frame: bytes) -> None:
        await self._send_stream.send(frame)

    async def send_eof(self) -> None:
        """Half-close: the peer's ``receive`` raises ``EndOfStream``, but we can still receive (like closing stdin)."""
        await self._send_stream.aclose()

    async def aclose(self) -> None:
        # Closing our send side is what makes the peer's receive raise EndOfStream.
        await self._send_stream.aclose()
        await self._receive_stream.aclose()


def memory_stream_pair(max_buffer_size: float = math.inf) -> tuple[MemoryMessageStream, MemoryMessageStream]:
    """Two connected ``MessageStream`` ends: what one sends, the other receives."""
    a_to_b_send, a_to_b_receive = anyio.create_memory_object_stream[bytes](max_buffer_size)
    b_to_a_send, b_to_a_receive = anyio.create_memory_object_stream[bytes](max_buffer_size)
    return MemoryMessageStream(a_to_b_send, b_to_a_receive), MemoryMessageStream(b_to_a_send, a_to_b_receive)
