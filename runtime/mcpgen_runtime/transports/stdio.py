"""The MCP stdio transport: newline-delimited JSON frames over a pair of byte streams.

Where it sits: in the ``transports`` layer; implements ``jsonrpc.streams.MessageStream`` for
``jsonrpc.session.Session``. ``NDJSONStream`` does the framing over any anyio byte streams; ``stdio_server_stream``
wires it to this process's stdin/stdout (the server side) and ``open_subprocess_stream`` to a child's pipes (the
client side). MCP stdio rules: one JSON-RPC message per line, UTF-8, no embedded newlines, and nothing but protocol
on stdout (logs go to stderr).
"""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..jsonrpc.streams import FrameTooLarge, SendLock

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
_READ_SIZE = 65536


class NDJSONStream:
    """A ``MessageStream`` of newline-delimited frames over a byte receive stream and a byte send stream.

    Incoming lines may arrive split across reads or several to a read; blank lines are skipped, a trailing ``\\r`` is
    dropped (CRLF peers), and an unterminated last line at end of stream still counts as a frame.
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
            if self._eof or not await self._fill():
                # An unterminated last line is still a message; after it, the end.
                line, self._buffer, self._scan_from = bytes(self._buffer).rstrip(b"\r"), bytearray(), 0
                if line and not line.isspace():
                    return line
                raise anyio.EndOfStream

    async def _fill(self) -> bool:
        """Append one read to the buffer; False at end of stream."""
        try:
            chunk = await self._receive_stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            self._eof = True
            return False
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
        async with self._send_lock:
            await self._send_stream.send(frame + b"\n")

    async def aclose(self) -> None:
        # Send side first: closing the child's stdin (or our stdout) is how the peer learns we are done.
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()


# ---------------------------------------------------------------------------------------------------------------
# This process's stdin / stdout.


class _ThreadedFileReceiveStream(ByteReceiveStream):
    """Reads a blocking binary file (stdin) on a daemon thread.

    A daemon thread, not ``anyio.to_thread``: a read blocked on an idle stdin must not keep the process alive after
    the server decided to exit, and anyio's worker threads are joined at interpreter exit. ``os.read`` on the file
    descriptor rather than ``file.read1``, so the thread holds no lock of the ``sys.stdin`` object either.
    """

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._chunks_send: MemoryObjectSendStream[bytes] | None = None
        self._chunks_receive: MemoryObjectReceiveStream[bytes] | None = None
        self._leftover = b""

    def _start(self) -> MemoryObjectReceiveStream[bytes]:
        # A small buffer gives back-pressure: the thread stops reading when we stop consuming.
        self._chunks_send, self._chunks_receive = anyio.create_memory_object_stream[bytes](4)
        token = anyio.lowlevel.current_token()
        thread = threading.Thread(
            target=self._read_forever, args=(self._chunks_send, token), name="mcpgen-stdin", daemon=True
        )
        thread.start()
        return self._chunks_receive

    def _read_forever(self, chunks: MemoryObjectSendStream[bytes], token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            fd: int | None = self._file.fileno()
        except (OSError, ValueError, AttributeError):
            fd = None
        # read1 returns what is available instead of waiting for a full buffer; plain read for file-likes without it.
        read_some = getattr(self._file, "read1", self._file.read)
        while True:
            try:
                chunk = os.read(fd, _READ_SIZE) if fd is not None else read_some(_READ_SIZE)
            except OSError:
                chunk = b""
            try:
                if chunk:
                    anyio.from_thread.run(chunks.send, chunk, token=token)
                else:
                    anyio.from_thread.run(chunks.aclose, token=token)
                    return
            except Exception:
                # The loop has finished or the stream was closed: nobody wants the data any more.
                return

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        if self._leftover:
            chunk, self._leftover = self._leftover[:max_bytes], self._leftover[max_bytes:]
            return chunk
        chunks = self._chunks_receive or self._start()
        chunk = await chunks.receive()
        chunk, self._leftover = chunk[:max_bytes], chunk[max_bytes:]
        return chunk

    async def aclose(self) -> None:
        # The underlying file is not ours to close; closing the channel makes the reader thread stop.
        if self._chunks_receive is not None:
            await self._chunks_receive.aclose()


class _ThreadedFileSendStream(ByteSendStream):
    """Writes to a blocking binary file (stdout) on a worker thread, flushing every frame."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._closed = False

    def _write(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            # Not abandoned on cancellation: a frame is written whole or not at all.
            await anyio.to_thread.run_sync(self._write, item)
        except (BrokenPipeError, ValueError) as exc:
            # ValueError: "I/O operation on closed file".
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._closed = True


class _PipeStream(ByteReceiveStream, ByteSendStream):
    """One end of a pipe, read or written on the event loop itself: the fd is made non-blocking and the loop waits
    for it (``anyio.wait_readable``/``wait_writable``), so a frame costs no thread hop. This is the usual stdio
    server case (the client owns both pipes); the fd's flags are restored on close. With ``owned`` (a pipe this
    process made: the client's end of a child's stdin) the fd is closed instead, which is how the child sees EOF."""

    def __init__(self, file: BinaryIO | int, *, owned: bool = False) -> None:
        self._fd = file if isinstance(file, int) else file.fileno()
        self._owned = owned
        self._saved_blocking = os.get_blocking(self._fd)
        os.set_blocking(self._fd, False)
        self._closed = False

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        while True:
            try:
                chunk = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.EndOfStream from exc
            if not chunk:
                raise anyio.EndOfStream
            return chunk

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        view = memoryview(item)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except (BrokenPipeError, OSError) as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owned:
                os.close(self._fd)
            else:
                os.set_blocking(self._fd, self._saved_blocking)


def _is_pipe(file: BinaryIO) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(file.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def file_byte_streams(stdin: BinaryIO, stdout: BinaryIO) -> tuple[ByteReceiveStream, ByteSendStream]:
    """anyio byte streams over two binary files (e.g. ``sys.stdin.buffer`` / ``sys.stdout.buffer``): pipes are
    used from the event loop directly, anything else (a terminal, a regular file, a file-like) on threads."""
    receive = _PipeStream(stdin) if _is_pipe(stdin) and sys.platform != "win32" else _ThreadedFileReceiveStream(stdin)
    send = _PipeStream(stdout) if _is_pipe(stdout) and sys.platform != "win32" else _ThreadedFileSendStream(stdout)
    return receive, send


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
    ) -> None:
        """``stdin``: the stream writing to the child's stdin, when not ``process.stdin``."""
        send_stream = stdin if stdin is not None else process.stdin
        assert process.stdout is not None and send_stream is not None
        super().__init__(process.stdout, send_stream, max_frame_bytes=max_frame_bytes)
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
    # The child's stdin is a pipe made here and written from the event loop (_PipeStream): anyio's process stream
    # yields to the loop after every write, an extra loop turn per request. Not on Windows (no non-blocking pipes).
    stdin_read, stdin_write = os.pipe() if sys.platform != "win32" else (None, None)
    try:
        process = await anyio.open_process(
            list(command),
            env=env,
            cwd=cwd,
            stdin=stdin_read if stdin_read is not None else subprocess.PIPE,
            stderr=subprocess.PIPE if capture_stderr else None,
        )
    except BaseException:
        if stdin_write is not None:
            os.close(stdin_write)
        raise
    finally:
        if stdin_read is not None:
            os.close(stdin_read)  # the child has its copy
    stdin = _PipeStream(stdin_write, owned=True) if stdin_write is not None else None
    stream = SubprocessStream(process, max_frame_bytes=max_frame_bytes, stdin=stdin)
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
