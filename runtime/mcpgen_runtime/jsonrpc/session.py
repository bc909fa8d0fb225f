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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup

from .answers import (
    ANYIO,
    Job,
    JobScope,
    Pending,
    Primitives,
    call_handler,
    deliver_response,
    ignore_notification,
    method_not_found,
)
from .context import (
    CANCELLED,
    NotificationHandler,
    ProgressCallback,
    RequestContext,
    RequestHandler,
    SessionClosedError,
    with_progress_token,
)
from .envelopes import (
    Batch,
    Decoded,
    ErrorCode,
    ErrorResponse,
    JSONParams,
    JSONRPCError,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    decode_frame,
    decode_value,
    encode_frame,
    error_response,
    is_request_id,
    notification_message,
    request_message,
)
from .inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT, Admission
from .notification_queue import NotificationQueue
from .request_tasks import RequestTasks
from .streams import FrameTooLarge, MessageStream, SendLock, stream_extras

__all__ = [
    "NotificationHandler",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "Session",
    "SessionClosedError",
]

logger = logging.getLogger(__name__)

# Errors a transport raises once the connection is gone; anything else from a transport is a bug worth a traceback.
_TRANSPORT_GONE = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


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
    ) -> None:
        """``allow_batches`` is for MCP 2025-03-26 only (the one version with JSON-RPC batches).
        ``shutdown_grace``: after the peer stops sending, how long running handlers may still finish and answer
        (the usual stdio shutdown is "client closes stdin"; answers already being computed should still go out).
        ``max_requests_in_flight``: incoming requests handled at once (a batch counts its requests); as many more
        wait, read but not started, and beyond that the session stops reading until one finishes.
        ``max_batch_size``: messages in one batch; a longer batch is refused whole (-32600, id null).
        """
        self._stream = stream
        # A transport with a task per incoming request may hand requests over directly (streams.Dispatcher).
        self._set_dispatcher, self._send_message_to = stream_extras(stream)
        self._receive_parsed = getattr(stream, "receive_parsed", None)  # streams.ParsedReceiver
        self._set_frame_sink = getattr(stream, "set_frame_sink", None)  # streams.FrameSink
        self._request_handler = request_handler or method_not_found
        self._allow_batches = allow_batches
        self._answer_pings = answer_pings
        self._shutdown_grace = shutdown_grace
        self._cancel_send_timeout = cancel_send_timeout
        self._admission = Admission(max_requests_in_flight)
        self._max_batch_size = max_batch_size

        self._next_id = 1
        self._pending: dict[RequestId, Pending] = {}
        self._progress_callbacks: dict[RequestId, ProgressCallback] = {}
        self._incoming: dict[RequestId, JobScope] = {}
        self._inline: set[JobScope] = set()  # the scopes of requests running in a transport's task
        self._send_lock = SendLock()
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope  # the backend's own class, once running
        self._primitives: Primitives = ANYIO  # asyncio's own, once running on asyncio
        self._request_tasks: RequestTasks | None = None  # on asyncio: where requests run (see request_tasks)
        self._notifications = NotificationQueue(notification_handler or ignore_notification, self._progress_callbacks)
        # Tasks spawned but not finished (handlers, error answers, the notification worker), for the shutdown grace.
        self._active = 0
        self._idle = anyio.Event()
        self._started = False
        self._closing = False
        self._closed = anyio.Event()
        self._tg: TaskGroup | None = None
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
        self._fail_pending("session closed")
        self._outer_tg.cancel_scope.cancel()
        self._cancel_inline()
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

    # -- outgoing --------------------------------------------------------------------------------------------------

    @property
    def next_request_id(self) -> int:
        """The id the next ``request`` will carry (ids count up from 1): a caller that must know its request's id
        before sending it (``subscriptions/listen``, whose subscription id is that id) reads it right before the
        call, with no await in between."""
        return self._next_id

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
        request_id = self._next_id
        self._next_id += 1
        token: RequestId | None = None
        if progress_callback is not None:
            params, token = with_progress_token(params, request_id)
            self._progress_callbacks[token] = progress_callback
        pending = Pending(self._primitives.event())
        self._pending[request_id] = pending
        try:
            try:
                with self._primitives.deadline(timeout):
                    await self._send_message(request_message(request_id, method, params))
                    await pending.event.wait()
                    if self._notifications.handled < pending.notifications_before:
                        await self._notifications.wait_handled(pending.notifications_before, lambda: self._closing)
            except TimeoutError:
                await self._send_cancelled(request_id, f"Request timed out after {timeout} seconds")
                raise
            except anyio.get_cancelled_exc_class():
                await self._send_cancelled(request_id, "Request cancelled by the caller")
                raise
        finally:
            self._pending.pop(request_id, None)
            if token is not None:
                self._progress_callbacks.pop(token, None)
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        self._check_open()
        await self._send_message(notification_message(method, params))

    def _check_open(self) -> None:
        if not self._started:
            raise RuntimeError("the Session is not running; use `async with Session(...)`")
        if self._closing:
            raise SessionClosedError("session closed")

    async def _send_message(self, message: dict[str, Any]) -> None:
        frame = encode_frame(message)
        try:
            await self._send_frame(frame, message)
        except _TRANSPORT_GONE as exc:
            raise SessionClosedError("the stream is closed") from exc

    async def _send_frame(self, frame: bytes, message: Any = None) -> None:
        """Write ``frame``; ``message``, the value it encodes (if the caller has it), goes along to a transport
        that takes it (``send_message``), which then need not parse the frame."""
        lock = self._send_lock
        if not lock.try_acquire():
            await lock.__aenter__()  # another frame is being written: wait for our turn
        try:
            if message is not None and self._send_message_to is not None:
                await self._send_message_to(frame, message)
            else:
                await self._stream.send(frame)
        finally:
            lock.release()

    async def _send_cancelled(self, request_id: RequestId, reason: str) -> None:
        # Shielded: this runs exactly when the caller's task is being cancelled, and the peer must still hear of it.
        # Bounded, so a stuck transport cannot turn a cancellation into a hang.
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._cancel_send_timeout):
            try:
                await self._send_message(notification_message(CANCELLED, {"requestId": request_id, "reason": reason}))
            except SessionClosedError:
                pass

    def _fail_pending(self, reason: str) -> None:
        for pending in self._pending.values():
            pending.resolve(error=SessionClosedError(reason))

    # -- incoming --------------------------------------------------------------------------------------------------

    async def _serve(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                # anyio.CancelScope() looks the async library up on every call; its concrete class does not.
                self._new_scope = type(anyio.CancelScope())
                self._primitives = Primitives.for_running_loop()
                if self._primitives is not ANYIO:  # asyncio
                    self._request_tasks = RequestTasks(asyncio.get_running_loop())
                self._notifications.start_with(self._spawn)  # its worker starts with the first notification
                if self._set_dispatcher is not None:
                    self._set_dispatcher(self)
                if self._set_frame_sink is not None:
                    self._set_frame_sink(self._take_pushed)
                await self._receive_loop()
                # The peer is done sending: nothing can answer our requests any more, but let running handlers
                # (and queued notifications) finish for a bounded time so their answers still go out.
                self._closing = True
                self._fail_pending("the peer closed the stream")
                self._notifications.close_sending()
                with anyio.move_on_after(self._shutdown_grace):
                    while self._active:
                        await self._idle.wait()
                tg.cancel_scope.cancel()
                self._cancel_inline()
        finally:
            if self._set_frame_sink is not None:
                self._set_frame_sink(None)
            if self._request_tasks is not None:
                await self._request_tasks.close()  # what leaving the task group does for its tasks
            if self._set_dispatcher is not None:
                self._set_dispatcher(None)
            self._closed.set()

    async def _receive_loop(self) -> None:
        while True:
            # Back-pressure: with the in-flight limit reached and as many requests waiting, read nothing more.
            await self._admission.wait_for_room()
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
            except _TRANSPORT_GONE as exc:
                logger.info("stream closed while receiving: %r", exc)
                return
            if self._admission.waiting >= self._admission.backlog:
                await self._admission.wait_for_room()  # the frame sink filled the backlog while receive waited
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
        if self._tg is None or self._closing or admission.waiting or admission.running >= admission.limit:
            return False
        outcome = self._accept(request, inline)
        if not isinstance(outcome, Job):
            if outcome is not None:  # a duplicate id: answered as the receive loop would
                self._answer_now(outcome)
            return True
        if not inline:
            self._start_request(outcome)
            return True
        admission.running += 1  # what admit() does when there is room
        self._count_task()
        self._inline.add(outcome.scope)
        await self._run_job(outcome, None)
        return True

    def _cancel_inline(self) -> None:
        """Cancel the requests the task group does not hold: those run inline, and the request tasks."""
        for scope in list(self._inline):
            scope.cancel()
        if self._request_tasks is not None:
            self._request_tasks.cancel_all()

    def _spawn(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self._tg is not None
        # Counted here, synchronously, so that the shutdown wait cannot miss a task that has not started yet.
        self._count_task()
        self._tg.start_soon(self._guarded, func, *args)

    def _count_task(self) -> None:
        if self._active == 0:
            self._idle = anyio.Event()
        self._active += 1

    def _start(self, weight: int, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Spawn work for an incoming frame when the in-flight limit allows (see ``inflight.Admission``)."""
        self._admission.admit(weight, lambda: self._spawn(self._admitted, weight, func, *args))

    def _start_request(self, job: Job) -> None:
        """Run a single request when the in-flight limit allows: in a task of ``_request_tasks`` on asyncio, else in
        the task group."""
        self._admission.admit(1, lambda: self._spawn_request(job))

    def _spawn_request(self, job: Job) -> None:
        self._count_task()  # as _spawn does
        tasks = self._request_tasks
        if tasks is not None:
            tasks.start(job.scope, self._run_job(job, tasks))
        else:
            assert self._tg is not None
            self._tg.start_soon(self._run_job, job, None)

    async def _run_job(self, job: Job, tasks: RequestTasks | None) -> None:
        """A request admitted and counted already, answered (what _guarded(_admitted(...)) does, in one frame): in a
        task of ``tasks``, or else (None) in the task group or inline in a transport's task (``dispatch_now``)."""
        try:
            answer = await self._execute(job)
            if answer is not None:
                if tasks is not None:
                    tasks.answering(job.scope)
                await self._send_frame(answer[1], answer[0])
        except _TRANSPORT_GONE as exc:
            logger.info("could not send an answer, the stream is closed: %r", exc)
        except Exception:
            logger.exception("internal error in a session task")
        finally:
            if tasks is not None:
                tasks.finished(job.scope)
            else:
                self._inline.discard(job.scope)
            self._admission.release(1)
            self._task_done()

    async def _admitted(self, weight: int, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        finally:
            # Before _guarded's count goes down: a waiting request started here keeps the shutdown wait honest.
            self._admission.release(weight)

    def _answer_now(self, message: dict[str, Any]) -> None:
        self._start(1, self._send_frame, encode_frame(message))

    async def _guarded(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await func(*args)
        except _TRANSPORT_GONE as exc:
            logger.info("could not send an answer, the stream is closed: %r", exc)
        except Exception:
            logger.exception("internal error in a session task")
        finally:
            self._task_done()

    def _task_done(self) -> None:
        self._active -= 1
        if self._active == 0:
            self._idle.set()

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
                self._start(max(1, len(jobs)), self._run_batch, jobs, immediate)
            return
        outcome = self._accept(decoded)
        if isinstance(outcome, Job):
            self._start_request(outcome)
        elif outcome is not None:
            self._answer_now(outcome)

    def _accept(self, message: Message, inline: bool = False) -> Job | dict[str, Any] | None:
        """Take one message: a job to run (``inline``: in the calling task, see ``dispatch_now``), an immediate
        answer, or None (nothing to answer)."""
        if isinstance(message, Request):
            if message.id in self._incoming:
                # Ids must be unique among in-flight requests; a duplicate cannot be cancelled or answered unambiguously.
                return error_response(message.id, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id")
            scope = self._primitives.inline_scope() if inline else self._new_scope()
            self._incoming[message.id] = scope
            return Job(message, scope)
        if isinstance(message, Notification):
            if message.method == CANCELLED:
                self._on_cancelled(message.params)
            else:
                self._notifications.put(message)
            return None
        if isinstance(message, Response | ErrorResponse):
            deliver_response(self._pending, message, self._notifications.queued)
            return None
        if message.respond:
            return error_response(message.id, message.code, message.message)
        logger.warning("ignoring a malformed response: %s", message.message)
        pending = self._pending.get(message.id) if message.id is not None else None
        if pending is not None:
            # Better a clear error for the caller than a request that waits forever.
            pending.resolve(
                error=JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Malformed response from peer: {message.message}")
            )
        return None

    def _on_cancelled(self, params: JSONParams) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        # Forgotten at once, not when the task gets round to it: for the peer the request is over, and it may reuse
        # the id straight away (no response will ever tell it when the task finished).
        scope = self._incoming.pop(request_id, None) if is_request_id(request_id) else None
        if scope is None:
            # Unknown or already answered: the spec says to ignore it.
            logger.debug("cancellation of unknown or finished request %r ignored", request_id)
            return
        logger.debug(
            "peer cancelled request %r: %s", request_id, params.get("reason") if isinstance(params, dict) else None
        )
        scope.cancel()

    async def _run_batch(self, jobs: list[Job], immediate: list[dict[str, Any]]) -> None:
        answers = list(immediate)

        async def run(job: Job) -> None:
            answer = await self._execute(job)
            if answer is not None:
                answers.append(answer[0])

        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(run, job)
        # A batch of only notifications (or only cancelled requests) gets no answer at all, per JSON-RPC.
        if answers:
            await self._send_frame(encode_frame(answers))

    async def _execute(self, job: Job) -> tuple[dict[str, Any], bytes] | None:
        """Run one request's handler; the response as (message, encoded frame), or None if the peer cancelled it."""
        request = job.request
        try:
            if job.scope.cancel_called:
                return None  # cancelled while it waited for the in-flight limit: never started
            with job.scope:
                context = RequestContext(self, request.id, request.method, request.params)
                response = await call_handler(self._request_handler, request, context, answer_pings=self._answer_pings)
        finally:
            # Forget the id before answering, so the peer may reuse it as soon as it has the answer.
            if self._incoming.get(request.id) is job.scope:
                del self._incoming[request.id]
        if job.scope.cancel_called:
            # MCP: no response for a request the peer cancelled (even if the handler ignored the cancellation).
            return None
        return response
