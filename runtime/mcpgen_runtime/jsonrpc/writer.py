"""How a ``Session`` writes: whole frames, one at a time, to its ``MessageStream`` (``FrameWriter``).

Where it sits: in the ``jsonrpc`` layer, under ``session``; every part of a session that sends (outgoing requests,
answers, error answers) writes through the one ``FrameWriter`` of its session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from .context import SessionClosedError
from .envelopes import encode_frame
from .streams import MessageStream, SendLock

__all__ = ["TRANSPORT_GONE", "FrameWriter"]

# Errors a transport raises once the connection is gone; anything else from a transport is a bug worth a traceback.
TRANSPORT_GONE: Final = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class FrameWriter:
    """Writes frames to ``stream`` under a lock; ``send_message_to`` is the stream's ``send_message``, if it has one
    (``streams.Dispatcher``: ``send`` with the message the frame encodes)."""

    __slots__ = ("_lock", "_send_message_to", "_stream")

    def __init__(self, stream: MessageStream, send_message_to: Callable[[bytes, Any], Awaitable[None]] | None) -> None:
        self._stream = stream
        self._send_message_to = send_message_to
        self._lock = SendLock()

    async def send_frame(self, frame: bytes, message: Any = None) -> None:
        """Write ``frame``; ``message``, the value it encodes (if the caller has it), goes along to a transport
        that takes it (``send_message``), which then need not parse the frame."""
        lock = self._lock
        if not lock.try_acquire():
            await lock.__aenter__()  # another frame is being written: wait for our turn
        try:
            if message is not None and self._send_message_to is not None:
                await self._send_message_to(frame, message)
            else:
                await self._stream.send(frame)
        finally:
            lock.release()

    async def send_message(self, message: dict[str, Any]) -> None:
        """Encode and write ``message``; ``SessionClosedError`` when the stream is gone."""
        frame = encode_frame(message)
        try:
            await self.send_frame(frame, message)
        except TRANSPORT_GONE as exc:
            raise SessionClosedError("the stream is closed") from exc
