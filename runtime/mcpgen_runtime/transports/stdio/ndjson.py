"""The MCP stdio transport: newline-delimited JSON frames over a pair of byte streams.

Where it sits: in the ``transports`` layer; implements ``jsonrpc.streams.MessageStream`` for
``jsonrpc.session.Session``. ``NDJSONStream`` does the framing over any anyio byte streams; ``stdio_server_stream``
wires it to this process's stdin/stdout (the server side) and ``open_subprocess_stream`` to a child's pipes (the
client side); the byte streams under it (pipes used from the event loop, files on threads) are in
``pipes``. MCP stdio rules: one JSON-RPC message per line, UTF-8, no embedded newlines, and nothing but
protocol on stdout (logs go to stderr).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from ...jsonrpc.streams import FrameSink, FrameTooLarge, SendLock
from .pipes import READ_SIZE, PipeStream, file_byte_streams

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "NDJSONStream",
    "SubprocessStream",
    "file_byte_streams",
    "open_subprocess_stream",
    "stdio_server_stream",
]

logger = logging.getLogger(__name__)

# Generous (a base64 image or a big resource fits), but bounded so a peer that never sends a newline cannot make
# us buffer without limit.
DEFAULT_MAX_FRAME_BYTES = 256 * 1024 * 1024


class NDJSONStream:
    """A ``MessageStream`` of newline-delimited frames over a byte receive stream and a byte send stream.

    Incoming lines may arrive split across reads or several to a read; blank lines are skipped, a trailing ``\\r`` is
    dropped (CRLF peers), and an unterminated last line at end of stream still counts as a frame.

    Over a pipe read from the event loop (``PipeStream`` on asyncio) it takes a frame sink (``set_frame_sink``, see
    ``jsonrpc.streams.FrameSink``): the lines of a chunk that arrives while ``receive`` waits go to the sink from
    the loop's callback, and ``receive`` goes on waiting.
    """

    def __init__(
        self,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        # Where to resume looking for b"\n": rescanning a 10 MB partial line on every 64 KB read would be quadratic.
        self._scan_from = 0
        self._eof = False
        # Not anyio.Lock: taking a free one yields to the event loop, an extra loop turn for every frame sent.
        self._send_lock = SendLock()
        self._frame_sink: FrameSink | None = None
        self._pushing = False  # see _fill

    def set_frame_sink(self, sink: FrameSink | None) -> None:
        """``jsonrpc.streams.FrameSink``; a no-op over a byte stream that is not a loop-read pipe."""
        set_consumer = getattr(self._receive_stream, "set_consumer", None)
        if set_consumer is not None:
            self._frame_sink = sink
            set_consumer(self._consume if sink is not None else None)

    def _consume(self, chunk: bytes) -> bool:
        """The pipe's consumer: ``chunk`` arrived while ``receive`` waits in ``_fill`` (so the buffer holds no
        complete line). Its complete lines go to the frame sink now; True when ``receive`` must wake up and take over
        (the sink refused a frame, which stays buffered with what follows it, or the unfinished line is over the
        limit, which ``receive`` drops)."""
        buffer = self._buffer
        buffer += chunk
        sink = self._frame_sink
        if not self._pushing:
            return True  # receive is not waiting for a line: what came is for it
        scan = self._scan_from
        while (newline := buffer.find(b"\n", scan)) >= 0:
            line = bytes(buffer[:newline])
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace() and (sink is None or not sink(line, None)):
                self._scan_from = 0
                return True
            del buffer[: newline + 1]
            scan = 0
        self._scan_from = len(buffer)
        return len(buffer) > self._max_frame_bytes

    async def receive(self) -> bytes:
        while True:
            newline = self._buffer.find(b"\n", self._scan_from)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scan_from = 0
                if line.endswith(b"\r"):
                    line = line[:-1]
                if line and not line.isspace():
                    return line
                continue
            if len(self._buffer) > self._max_frame_bytes:
                await self._discard_rest_of_line()
                raise FrameTooLarge(self._max_frame_bytes)
            self._scan_from = len(self._buffer)
            if self._eof or not await self._fill(pushing=True):
                # An unterminated last line is still a message; after it, the end.
                line, self._buffer, self._scan_from = bytes(self._buffer).rstrip(b"\r"), bytearray(), 0
                if line and not line.isspace():
                    return line
                raise anyio.EndOfStream

    async def _fill(self, pushing: bool = False) -> bool:
        """Append one read to the buffer; False at end of stream. ``pushing``: lines may go to the frame sink
        meanwhile (only while ``receive`` waits for the next line, not while it drops an oversized one)."""
        self._pushing = pushing
        try:
            chunk = await self._receive_stream.receive(READ_SIZE)
        except anyio.EndOfStream:
            self._eof = True
            return False
        finally:
            self._pushing = False
        self._buffer += chunk
        return True

    async def _discard_rest_of_line(self) -> None:
        # Drop the oversized line up to and including its newline, keep whatever follows it.
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                del self._buffer[: newline + 1]
                self._scan_from = 0
                return
            self._buffer.clear()
            if self._eof or not await self._fill():
                return

    async def send(self, frame: bytes) -> None:
        if b"\n" in frame:
            # A raw newline would split the frame in two on the other side (encode_frame never produces one).
            raise ValueError("an NDJSON frame cannot contain a newline")
        lock = self._send_lock
        if not lock.try_acquire():  # the usual case is a free lock: no coroutine calls of `async with` for it
            await lock.__aenter__()
        try:
            await self._send_stream.send(frame + b"\n")
        finally:
            lock.release()

    async def aclose(self) -> None:
        # Send side first: closing the child's stdin (or our stdout) is how the peer learns we are done.
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()


@asynccontextmanager
async def stdio_server_stream(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    redirect_stdout: bool = True,
) -> AsyncIterator[NDJSONStream]:
    """The server side of the stdio transport: frames on this process's stdin/stdout.

    With ``redirect_stdout`` (the default), ``sys.stdout`` points at ``sys.stderr`` inside the block, so a stray
    ``print()`` in a handler lands in the log instead of corrupting the protocol stream.
    """
    protocol_in = stdin if stdin is not None else sys.stdin.buffer
    protocol_out = stdout if stdout is not None else sys.stdout.buffer
    receive_stream, send_stream = file_byte_streams(protocol_in, protocol_out)
    stream = NDJSONStream(receive_stream, send_stream, max_frame_bytes=max_frame_bytes)
    saved_stdout = sys.stdout
    if redirect_stdout:
        sys.stdout = sys.stderr
    try:
        yield stream
    finally:
        sys.stdout = saved_stdout
        with anyio.CancelScope(shield=True):
            await stream.aclose()


# ---------------------------------------------------------------------------------------------------------------
# A child process's stdin / stdout.


class SubprocessStream(NDJSONStream):
    """An ``NDJSONStream`` over a child's stdin/stdout; ``process`` is the child, ``stderr_output`` what it logged
    (only when started with ``capture_stderr=True``)."""

    def __init__(
        self,
        process: Process,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        stdin: ByteSendStream | None = None,
        stdout: ByteReceiveStream | None = None,
    ) -> None:
        """``stdin`` / ``stdout``: the streams writing to the child's stdin and reading its stdout, when not
        ``process.stdin`` / ``process.stdout``."""
        send_stream = stdin if stdin is not None else process.stdin
        receive_stream = stdout if stdout is not None else process.stdout
        assert receive_stream is not None and send_stream is not None
        super().__init__(receive_stream, send_stream, max_frame_bytes=max_frame_bytes)
        self.process = process
        self._stderr = bytearray()

    @property
    def stderr_output(self) -> bytes:
        return bytes(self._stderr)

    async def _drain_stderr(self, limit: int) -> None:
        # Always drain a captured stderr: a child blocked on a full stderr pipe would stop answering.
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self._stderr += chunk
            if len(self._stderr) > limit:
                del self._stderr[: len(self._stderr) - limit]


@asynccontextmanager
async def open_subprocess_stream(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    capture_stderr: bool = False,
    stderr_limit: int = 1024 * 1024,
    terminate_timeout: float = 2.0,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> AsyncIterator[SubprocessStream]:
    """Start ``command`` and yield a ``MessageStream`` over its stdin/stdout.

    ``env`` replaces the environment, as with ``subprocess`` (pass ``{**os.environ, ...}`` to extend it). The
    child's stderr goes to ours unless ``capture_stderr`` (then the last ``stderr_limit`` bytes are kept). On exit,
    the MCP stdio shutdown sequence: close the child's stdin, wait ``terminate_timeout``, SIGTERM, wait, SIGKILL.
    """
    # The child's stdin and stdout are pipes made here and used from the event loop (PipeStream): anyio's process
    # streams yield to the loop after every write, and asyncio's subprocess pipes hand what they read over one loop
    # turn later; an extra turn each way per request. Not on Windows (no non-blocking pipes).
    ours: list[int] = []  # our ends: closed here if the child cannot be started
    theirs: list[int] = []  # the child's ends: closed here once it has its copies
    if sys.platform != "win32":
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        ours, theirs = [stdin_write, stdout_read], [stdin_read, stdout_write]
    try:
        process = await anyio.open_process(
            list(command),
            env=env,
            cwd=cwd,
            stdin=theirs[0] if theirs else subprocess.PIPE,
            stdout=theirs[1] if theirs else subprocess.PIPE,
            stderr=subprocess.PIPE if capture_stderr else None,
        )
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    stdin = PipeStream(ours[0], owned=True) if ours else None
    stdout = PipeStream(ours[1], owned=True) if ours else None
    stream = SubprocessStream(process, max_frame_bytes=max_frame_bytes, stdin=stdin, stdout=stdout)
    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            if capture_stderr:
                tg.start_soon(stream._drain_stderr, stderr_limit)
            try:
                yield stream
            except BaseException as exc:
                # Re-raised below, outside the task group, which would otherwise wrap it in an ExceptionGroup.
                body_error = exc
            finally:
                with anyio.CancelScope(shield=True):
                    await _shut_down(process, stream, terminate_timeout)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if body_error is not None:
        raise body_error


async def _shut_down(process: Process, stream: SubprocessStream, timeout: float) -> None:
    try:
        await stream.aclose()
    except Exception:
        logger.debug("error closing the child's pipes", exc_info=True)
    with anyio.move_on_after(timeout):
        await process.wait()
        return
    for signal_it in (process.terminate, process.kill):
        try:
            signal_it()
        except ProcessLookupError:
            return
        with anyio.move_on_after(timeout):
            await process.wait()
            return
