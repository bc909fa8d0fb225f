"""The byte streams under the stdio transport's ``NDJSONStream``: pipes read and written on the event loop
(``PipeStream``, with ``LoopReader`` on asyncio), and blocking files (a terminal, a regular file) on threads.

Where it sits: in ``transports.stdio``, below ``ndjson`` (this module is how bytes move; ``ndjson`` is about frames
and processes). ``file_byte_streams`` picks the right pair for this process's stdin/stdout;
``ndjson.open_subprocess_stream`` uses ``PipeStream`` for a child's pipes.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["READ_SIZE", "LoopReader", "PipeStream", "file_byte_streams"]

READ_SIZE = 65536  # bytes asked for per read


# ---------------------------------------------------------------------------------------------------------------
# Blocking files (a terminal, a regular file, a file-like), on threads.


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
                chunk = os.read(fd, READ_SIZE) if fd is not None else read_some(READ_SIZE)
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

    async def receive(self, max_bytes: int = READ_SIZE) -> bytes:
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


# ---------------------------------------------------------------------------------------------------------------
# Pipes, on the event loop.


class PipeStream(ByteReceiveStream, ByteSendStream):
    """One end of a pipe, read or written on the event loop itself: the fd is made non-blocking, so a frame costs no
    thread hop. This is the usual stdio case (the client owns both pipes of a server; a client reads and writes its
    child's pipes this way too); the fd's flags are restored on close. With ``owned`` (a pipe this process made: the
    client's ends of a child's stdin and stdout) the fd is closed instead, which is how the child sees EOF.

    Reading, on asyncio: the fd is registered with the loop once (``LoopReader``), and the loop's callback reads
    what arrived and wakes the waiting ``receive``; per frame that saves the read that finds the pipe empty and the
    two ``epoll_ctl`` calls of registering and unregistering for each wait (``anyio.wait_readable``), and for a
    client it saves the extra loop turn asyncio's subprocess pipes take to hand data over. On other event loops,
    ``anyio.wait_readable`` between reads."""

    def __init__(self, file: BinaryIO | int, *, owned: bool = False) -> None:
        self._fd = file if isinstance(file, int) else file.fileno()
        self._owned = owned
        self._saved_blocking = os.get_blocking(self._fd)
        os.set_blocking(self._fd, False)
        self._closed = False
        self._loop_reader: LoopReader | None = None
        self._loop_checked = False  # whether the running loop was looked at for LoopReader
        self._consumer: Callable[[bytes], bool] | None = None

    def set_consumer(self, consumer: Callable[[bytes], bool] | None) -> None:
        """Chunks that arrive while a ``receive`` waits go to ``consumer`` instead (on asyncio; see ``LoopReader``);
        when it returns True, the waiting ``receive`` returns ``b""`` (look at what the consumer kept), else it
        goes on waiting."""
        self._consumer = consumer
        if self._loop_reader is not None:
            self._loop_reader.consumer = consumer

    async def receive(self, max_bytes: int = READ_SIZE) -> bytes:
        reader = self._loop_reader
        if reader is None and not self._loop_checked:
            reader = self._loop_reader = LoopReader.for_running_loop(self._fd)
            self._loop_checked = True
            if reader is not None:
                reader.consumer = self._consumer
        if reader is not None:
            return await reader.receive(max_bytes)
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
            if self._loop_reader is not None:
                self._loop_reader.close()
            if self._owned:
                os.close(self._fd)
            else:
                os.set_blocking(self._fd, self._saved_blocking)


class LoopReader:
    """The read side of a ``PipeStream`` on an asyncio loop: the loop calls ``_on_readable`` whenever the fd has
    data, which reads one chunk (at most ``READ_SIZE`` bytes) and wakes the waiting ``receive``.

    Bounded: a chunk read while nobody waits (the consumer is busy, or holding back on purpose: a session at its
    in-flight limit) unregisters the fd until the next ``receive`` that finds nothing buffered, so at most one
    chunk is read ahead and a peer that floods us still meets a full pipe. While a consumer keeps coming back (the
    usual case), the fd stays registered.

    With a ``consumer`` (``PipeStream.set_consumer``), a chunk that arrives while a ``receive`` waits goes to it
    instead, in the callback; the ``receive`` goes on waiting unless the consumer asks for it to wake."""

    __slots__ = ("_chunks", "_closed", "_eof", "_error", "_fd", "_loop", "_registered", "_waiter", "consumer")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self._loop = loop
        self._fd = fd
        self._chunks: deque[bytes] = deque()
        self._eof = False  # the peer is done sending (or the read failed: _error): raised once the chunks are used up
        self._error: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._registered = False
        self._closed = False
        self.consumer: Callable[[bytes], bool] | None = None  # see PipeStream.set_consumer

    @classmethod
    def for_running_loop(cls, fd: int) -> LoopReader | None:
        """A reader on the running asyncio loop, or None when there is none (another anyio backend) or it cannot
        watch file descriptors (the Windows proactor loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        reader = cls(loop, fd)
        try:
            reader._register()
        except (NotImplementedError, OSError, ValueError):
            return None
        return reader

    def _register(self) -> None:
        if not self._registered:
            self._loop.add_reader(self._fd, self._on_readable)
            self._registered = True

    def _unregister(self) -> None:
        if self._registered:
            self._registered = False
            self._loop.remove_reader(self._fd)

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            chunk, self._error = b"", exc
        waiter = self._waiter
        if waiter is not None and waiter.done():
            waiter = None  # cancelled: its receive is on its way out
        if chunk and waiter is not None and self.consumer is not None:
            if not self.consumer(chunk):
                return  # all taken: the receive goes on waiting
            self._chunks.append(b"")  # the receive wakes up to what the consumer kept
        elif chunk:
            self._chunks.append(chunk)
            if waiter is None:
                self._unregister()  # nobody asked for it: read nothing more until someone does
        else:
            self._eof = True
            self._unregister()
        if waiter is not None:
            waiter.set_result(None)

    async def receive(self, max_bytes: int) -> bytes:
        while True:
            chunks = self._chunks
            if chunks:
                chunk = chunks.popleft()
                if len(chunk) > max_bytes:
                    chunks.appendleft(chunk[max_bytes:])
                    chunk = chunk[:max_bytes]
                return chunk
            if self._eof:
                raise anyio.EndOfStream from self._error
            if self._closed:
                raise anyio.ClosedResourceError
            if self._waiter is not None:
                raise anyio.BusyResourceError("reading")
            self._register()
            self._waiter = waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def close(self) -> None:
        self._closed = True
        self._unregister()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(anyio.ClosedResourceError())


def _is_pipe(file: BinaryIO) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(file.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def file_byte_streams(stdin: BinaryIO, stdout: BinaryIO) -> tuple[ByteReceiveStream, ByteSendStream]:
    """anyio byte streams over two binary files (e.g. ``sys.stdin.buffer`` / ``sys.stdout.buffer``): pipes are
    used from the event loop directly, anything else (a terminal, a regular file, a file-like) on threads."""
    receive = PipeStream(stdin) if _is_pipe(stdin) and sys.platform != "win32" else _ThreadedFileReceiveStream(stdin)
    send = PipeStream(stdout) if _is_pipe(stdout) and sys.platform != "win32" else _ThreadedFileSendStream(stdout)
    return receive, send
