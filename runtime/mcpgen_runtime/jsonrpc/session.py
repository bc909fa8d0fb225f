"""A JSON-RPC 2.0 peer: the part of an MCP server or client that is the same on both sides.

Where it sits: the top of the ``jsonrpc`` layer, on top of a ``MessageStream`` (``streams``; the concrete ones are
in ``transports``: stdio, streamable HTTP) and under the typed MCP server and client, which plug in a
``request_handler`` / ``notification_handler`` and call ``request`` / ``notify`` with plain dicts (the generated
``mcp_bindings`` models dump to and parse from those). The session knows only the MCP method names that are about
the connection itself: ``ping``, ``notifications/cancelled`` and ``notifications/progress``; everything else is
passed through untouched, so one session serves every MCP version.

Concurrency model: a single receive loop classifies frames and never awaits anything but ``receive`` (so one slow
handler or a stuck write cannot stop the session from reading, and so cancellations are seen at once); every incoming
request runs in its own task (on asyncio a plain one, see ``request_tasks``); notifications run in order on one
worker task; writes are serialized by a lock.
Bounded: at most ``max_requests_in_flight`` request tasks run at once; past that requests wait their turn, and once
as many wait, the loop stops reading until there is room (back-pressure: see ``inflight``).

``Session`` is the lifecycle and the receive loop; what it does with what it reads is done by its parts, one job
each: ``writer.FrameWriter`` (writing frames), ``outgoing.Outgoing`` (its own requests and notifications, their
answers, progress callbacks and cancellation notices), ``incoming.IncomingRequests`` (the peer's requests in flight,
and their cancellation), ``execution.RequestRunner`` (running a handler and sending its answer), ``work.SessionWork``
(the tasks it spawns, the in-flight limit and the shutdown grace) and ``notification_queue.NotificationQueue``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self, cast

import anyio
from anyio.abc import TaskGroup

from .answers import (
    ANYIO,
    Job,
    Primitives,
    TaskScope,
    failure_answer,
    ignore_notification,
    method_not_found,
    result_answer,
)
from .context import (
    CANCELLED,
    EagerHandler,
    NotificationHandler,
    ProgressCallback,
    RequestContext,
    RequestHandler,
    SessionClosedError,
)
from .eager import Started, first_step
from .envelopes import (
    Batch,
    Decoded,
    ErrorCode,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    decode_frame,
    decode_value,
    encode_frame,
    error_response,
)
from .execution import RequestRunner
from .incoming import IncomingRequests
from .inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT, Admission
from .notification_queue import NotificationQueue
from .outgoing import Outgoing
from .request_tasks import RequestTasks
from .streams import FrameTooLarge, MessageStream, stream_extras
from .work import SessionWork
from .writer import TRANSPORT_GONE, FrameWriter

__all__ = [
    "NotificationHandler",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "Session",
    "SessionClosedError",
]

logger = logging.getLogger(__name__)


class Session:
    """A JSON-RPC 2.0 peer over a ``MessageStream``.

    Use as ``async with Session(stream, ...) as session:``; the receive loop runs in the background until the peer
    closes its side (see ``wait_closed``) or the block exits (which cancels handlers and closes the stream).
    ``run()`` is the server-style shorthand: serve until the peer is done, then close.
    """

    def __init__(
        self,
        stream: MessageStream,
        *,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        allow_batches: bool = False,
        answer_pings: bool = True,
        shutdown_grace: float = 2.0,
        cancel_send_timeout: float = 5.0,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        eager_handler: EagerHandler | None = None,
    ) -> None:
        """``allow_batches`` is for MCP 2025-03-26 only (the one version with JSON-RPC batches).
        ``shutdown_grace``: after the peer stops sending, how long running handlers may still finish and answer
        (the usual stdio shutdown is "client closes stdin"; answers already being computed should still go out).
        ``max_requests_in_flight``: incoming requests handled at once (a batch counts its requests); as many more
        wait, read but not started, and beyond that the session stops reading until one finishes.
        ``max_batch_size``: messages in one batch; a longer batch is refused whole (-32600, id null).
        ``eager_handler``: for ``answer_eagerly``, the coroutine of a request the handler's owner can answer
        without a ``RequestContext`` (None for any other request); what it answers must be what
        ``request_handler`` would.
        """
        self._stream = stream
        # A transport with a task per incoming request may hand requests over directly (streams.Dispatcher).
        self._set_dispatcher, send_message_to = stream_extras(stream)
        self._receive_parsed = getattr(stream, "receive_parsed", None)  # streams.ParsedReceiver
        self._set_frame_sink = getattr(stream, "set_frame_sink", None)  # streams.FrameSink
        self._allow_batches = allow_batches
        self._shutdown_grace = shutdown_grace
        self._max_batch_size = max_batch_size
        self._admission = Admission(max_requests_in_flight)

        progress_callbacks: dict[RequestId, ProgressCallback] = {}
        self._writer = FrameWriter(stream, send_message_to)
        self._notifications = NotificationQueue(notification_handler or ignore_notification, progress_callbacks)
        self._outgoing = Outgoing(
            self._writer,
            self._notifications,
            progress_callbacks,
            cancel_send_timeout=cancel_send_timeout,
            closing=lambda: self._closing,
        )
        self._incoming = IncomingRequests()
        self._eager_handler = eager_handler
        self._eager_ok = False  # set once running with TaskScope (see answer_eagerly)
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it runs on, when eager_ok
        self._work = SessionWork(self._admission)
        self._runner = RequestRunner(
            self,
            request_handler or method_not_found,
            answer_pings=answer_pings,
            writer=self._writer,
            work=self._work,
            incoming=self._incoming,
        )
        self._started = False
        self._closing = False
        self._closed = anyio.Event()
        self._outer_tg: TaskGroup | None = None
        self._exit_stack: AsyncExitStack | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._started:
            raise RuntimeError("a Session can only be entered once")
        self._started = True
        stack = AsyncExitStack()
        outer = await stack.enter_async_context(anyio.create_task_group())
        outer.start_soon(self._serve)
        self._exit_stack, self._outer_tg = stack, outer
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._exit_stack is not None and self._outer_tg is not None
        self._closing = True
        self._outgoing.fail_all("session closed")
        self._outer_tg.cancel_scope.cancel()
        self._runner.cancel_untracked()
        try:
            # The body's own exception is not passed into the task group: it would come out wrapped in an
            # ExceptionGroup. Returning None lets it propagate unchanged.
            await self._exit_stack.__aexit__(None, None, None)
            return None
        finally:
            self._closed.set()
            self._notifications.close()  # whether the peer or this block ended the session
            with anyio.CancelScope(shield=True):
                try:
                    await self._stream.aclose()
                except Exception:
                    logger.debug("error closing the stream", exc_info=True)

    async def run(self) -> None:
        """Serve until the peer closes its side of the stream, then close."""
        async with self:
            await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the peer has stopped sending and the handlers still running have finished (or timed out)."""
        await self._closed.wait()

    @property
    def closed(self) -> bool:
        return self._closing

    @property
    def _request_tasks(self) -> RequestTasks | None:
        """Where requests run on asyncio (``execution``); the tests look at it."""
        return self._runner.request_tasks

    # -- outgoing (outgoing.Outgoing) ------------------------------------------------------------------------------

    @property
    def next_request_id(self) -> int:
        """The id the next ``request`` will carry (ids count up from 1): a caller that must know its request's id
        before sending it (``subscriptions/listen``, whose subscription id is that id) reads it right before the
        call, with no await in between."""
        return self._outgoing.next_id

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Send a request and return the raw ``result`` object.

        Raises ``JSONRPCError`` for an error response, ``TimeoutError`` after ``timeout`` seconds and
        ``SessionClosedError`` if the connection goes away. On timeout or cancellation of the calling task, the peer
        is told with ``notifications/cancelled``. With ``progress_callback``, ``params._meta.progressToken`` is set
        (to the request id, unless the caller already put one there) and matching progress notifications are routed
        to the callback, in order.
        """
        self._check_open()
        return await self._outgoing.request(method, params, timeout=timeout, progress_callback=progress_callback)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        self._check_open()
        await self._outgoing.notify(method, params)

    def _check_open(self) -> None:
        if not self._started:
            raise RuntimeError("the Session is not running; use `async with Session(...)`")
        if self._closing:
            raise SessionClosedError("session closed")

    # -- incoming --------------------------------------------------------------------------------------------------

    async def _serve(self) -> None:
        runner = self._runner
        try:
            async with anyio.create_task_group() as tg:
                self._work.tg = tg
                # anyio.CancelScope() looks the async library up on every call; its concrete class does not.
                self._incoming.new_scope = type(anyio.CancelScope())
                primitives = Primitives.for_running_loop()
                self._outgoing.primitives = primitives
                self._incoming.inline_scope = primitives.inline_scope
                if primitives is not ANYIO:  # asyncio
                    loop = asyncio.get_running_loop()
                    runner.use_request_tasks(loop)
                    if primitives.inline_scope is TaskScope:
                        # A session runs on one loop: its requests' scopes need not look it up (a system call each).
                        self._incoming.inline_scope = functools.partial(TaskScope, loop=loop)
                        # A handler started before its scope is entered is adopted by a TaskScope (eager.Started);
                        # not by an anyio.CancelScope, which must be left after the scopes entered inside it.
                        self._eager_ok = self._eager_handler is not None
                        self._loop = loop
                self._notifications.start_with(self._work.spawn)  # its worker starts with the first notification
                if self._set_dispatcher is not None:
                    self._set_dispatcher(self)
                if self._set_frame_sink is not None:
                    self._set_frame_sink(self._take_pushed)
                await self._receive_loop()
                # The peer is done sending: nothing can answer our requests any more, but let running handlers
                # (and queued notifications) finish for a bounded time so their answers still go out.
                self._closing = True
                self._outgoing.fail_all("the peer closed the stream")
                self._notifications.close_sending()
                with anyio.move_on_after(self._shutdown_grace):
                    await self._work.wait_idle()
                tg.cancel_scope.cancel()
                runner.cancel_untracked()
        finally:
            if self._set_frame_sink is not None:
                self._set_frame_sink(None)
            await runner.close()  # what leaving the task group does for its tasks
            if self._set_dispatcher is not None:
                self._set_dispatcher(None)
            self._closed.set()

    async def _receive_loop(self) -> None:
        admission = self._admission
        while True:
            # Back-pressure: with the in-flight limit reached and as many requests waiting, read nothing more.
            await admission.wait_for_room()
            try:
                if self._receive_parsed is not None:
                    frame, value = await self._receive_parsed()
                else:
                    frame, value = await self._stream.receive(), None
            except FrameTooLarge as exc:
                logger.warning("%s", exc)
                message = f"Invalid Request: frame larger than {exc.limit} bytes"
                self._answer_now(error_response(None, ErrorCode.INVALID_REQUEST, message))
                continue
            except anyio.EndOfStream:
                return
            except TRANSPORT_GONE as exc:
                logger.info("stream closed while receiving: %r", exc)
                return
            if admission.waiting >= admission.backlog:
                await admission.wait_for_room()  # the frame sink filled the backlog while receive waited
            self._dispatch_guarded(frame, value)

    def _take_pushed(self, frame: bytes, value: Any) -> bool:
        """The stream's ``streams.FrameSink``: a frame it read while the receive loop waited, dispatched at once;
        False (left for ``receive``) when the loop would hold back first (``Admission.wait_for_room``)."""
        if self._admission.waiting >= self._admission.backlog:
            return False
        self._dispatch_guarded(frame, value)
        return True

    def _dispatch_guarded(self, frame: bytes, value: Any) -> None:
        try:
            self._dispatch(frame, value)
        except Exception:
            # A bug in our own dispatch: keep serving rather than let one frame take the connection down.
            logger.exception("internal error while dispatching an incoming frame")

    async def dispatch_now(self, request: Request, *, inline: bool) -> bool:
        """Take ``request`` as if the receive loop had just read it (``streams.Dispatcher``): for a transport that
        receives each request in a task of its own, which saves the queue and the task switch. With ``inline`` the
        handler runs in the calling task (still cancellable by ``notifications/cancelled``, counted against the
        in-flight limit and the shutdown grace, cancelled when the session ends), and this returns once the answer
        is sent. False, with nothing done, when the request must take the usual way instead: the session is not
        serving, or the in-flight limit leaves no room at once. The caller makes sure that nothing it passed
        through the stream earlier is still unread (the order of messages is kept)."""
        admission = self._admission
        if self._work.tg is None or self._closing or admission.waiting or admission.running >= admission.limit:
            return False
        outcome = self._incoming.accept(request, inline)
        if not isinstance(outcome, Job):
            self._answer_now(outcome)  # a duplicate id: answered as the receive loop would
        elif inline:
            await self._runner.run_inline(outcome)
        else:
            self._runner.submit(outcome)
        return True

    def answer_eagerly(self, request: Request) -> tuple[dict[str, Any], bytes] | Started | None:
        """For a transport that carries the answer itself (the streamable HTTP server's JSON POST), before it sets
        anything up for the request: its handler's first step run at once, untracked (see ``eager``), when the
        ``eager_handler`` takes it. The answer as (message, encoded frame) when that finished it; a ``Started`` when
        it suspended, which the caller hands to ``answer_inline`` before it awaits anything (the request is then
        tracked as if from the start: nothing else has run since); None, with nothing done, for the usual path."""
        admission = self._admission
        if (
            not self._eager_ok
            or self._work.tg is None
            or self._closing
            or admission.waiting
            or admission.running >= admission.limit
            or self._incoming.holds(request.id)  # a duplicate id: the usual path answers it
        ):
            return None
        assert self._eager_handler is not None
        coro = self._eager_handler(request.method, request.params)
        if coro is None:
            return None
        task = asyncio.current_task(self._loop)
        assert task is not None  # _eager_ok: in a task on asyncio
        try:
            done, outcome = first_step(coro, task)
            if not done:
                return cast(Started, outcome)
            return result_answer(request, outcome)
        except Exception as exc:
            return failure_answer(request, exc)

    async def answer_inline(
        self, request: Request, started: Started | None = None
    ) -> tuple[dict[str, Any], bytes] | bool:
        """``dispatch_now(request, inline=True)`` for a transport that carries the answer itself (the streamable HTTP
        server's POST): the answer is returned, as (message, encoded frame), instead of written to the stream, which
        saves the write lock and the stream's routing of a frame it would only hand back to the same request. True
        when taken with nothing to answer (cancelled by the peer; a duplicate id, answered through the stream as
        the receive loop would); False, with nothing done, as for ``dispatch_now``. The in-flight slot is free again
        when this returns: the caller hands the answer on before it awaits anything. ``started``: the request's
        handler, started by ``answer_eagerly`` (which checked what is checked here, with nothing run since)."""
        admission = self._admission
        if started is None and (
            self._work.tg is None or self._closing or admission.waiting or admission.running >= admission.limit
        ):
            return False
        outcome = self._incoming.accept(request, True)
        if not isinstance(outcome, Job):
            if started is not None:
                started.close()
            self._answer_now(outcome)
            return True
        runner = self._runner
        runner.begin_inline(outcome)  # synchronous steps around execute: one coroutine less per request
        try:
            answer = await runner.execute(outcome, started)
        except Exception:
            logger.exception("internal error in a session task")
            return True
        finally:
            runner.end_inline(outcome)
        return True if answer is None else answer

    def _answer_now(self, message: dict[str, Any]) -> None:
        self._work.start(1, self._writer.send_frame, encode_frame(message))

    def _dispatch(self, frame: bytes, value: Any = None) -> None:
        """``value``: the frame's JSON, when the stream parsed it already (``streams.ParsedReceiver``)."""
        decoded: Decoded = decode_frame(frame) if value is None else decode_value(value)
        if isinstance(decoded, Batch):
            if not self._allow_batches:
                message = "Invalid Request: JSON-RPC batches are not supported"
                self._answer_now(error_response(None, ErrorCode.INVALID_REQUEST, message))
                return
            if len(decoded.items) > self._max_batch_size:
                message = (
                    f"Invalid Request: a batch of {len(decoded.items)} messages (the limit is {self._max_batch_size})"
                )
                self._answer_now(error_response(None, ErrorCode.INVALID_REQUEST, message))
                return
            immediate: list[dict[str, Any]] = []
            jobs: list[Job] = []
            for item in decoded.items:
                outcome = self._accept(item)
                if isinstance(outcome, Job):
                    jobs.append(outcome)
                elif outcome is not None:
                    immediate.append(outcome)
            if jobs or immediate:
                self._work.start(max(1, len(jobs)), self._runner.run_batch, jobs, immediate)
            return
        outcome = self._accept(decoded)
        if isinstance(outcome, Job):
            self._runner.submit(outcome)
        elif outcome is not None:
            self._answer_now(outcome)

    def _accept(self, message: Message) -> Job | dict[str, Any] | None:
        """Take one message the receive loop read: a job to run, an immediate answer, or None (nothing to answer)."""
        if isinstance(message, Request):
            return self._incoming.accept(message)
        if isinstance(message, Notification):
            if message.method == CANCELLED:
                self._incoming.cancel(message.params)
            else:
                self._notifications.put(message)
            return None
        if isinstance(message, Response | ErrorResponse):
            self._outgoing.deliver(message)
            return None
        if message.respond:
            return error_response(message.id, message.code, message.message)
        logger.warning("ignoring a malformed response: %s", message.message)
        if message.id is not None:
            self._outgoing.fail_malformed(message.id, message.message)
        return None
