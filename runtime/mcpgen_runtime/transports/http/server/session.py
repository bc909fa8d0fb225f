"""One MCP session of the streamable HTTP server, as the ``MessageStream`` its connection handler reads and writes.

Where it sits: created by ``app.StreamableHTTPApp`` for each ``Mcp-Session-Id``; the app feeds it the
frames POSTed to that session and routes what the handler sends back (see ``app``'s docstring): responses
to the stream of the POST that carried the request, other frames to the stream of the POST being served or to the
standalone GET stream. Resumability (spec 2025-11-25): with an ``event_store.EventStore``, every event on an SSE
stream is stored under an event id first, so a stream outlives the HTTP response carrying it (``ResponseStream``:
its live connection comes and goes) and a client can take it up again with ``Last-Event-ID``.

Also kept here: the requests in flight (``by_id``, counted against the session's and the app's limits), whether an
HTTP request is being served (the idle expiry of the session, ``idle_scope``), and what a client's disconnect means:
a request whose stream the client cannot resume (no event id reached it) is cancelled, as if the client had sent
``notifications/cancelled``; a resumable one goes on, its answer stored for the client's return.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import re
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import anyio

from ....jsonrpc.eager import Started
from ....jsonrpc.envelopes import (
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    encode_frame,
    error_response,
    is_request_id,
    notification_message,
)
from ....jsonrpc.streams import Dispatcher
from ....versions import SSE_PRIMING_VERSIONS
from .channel import DEFAULT_MAX_QUEUED_EVENTS, Channel, Event, ResponseStream
from .event_store import EventStore
from .stores import SessionMirror, StreamTails

__all__ = [
    "DEFAULT_BACKLOG",
    "Channel",
    "Event",
    "HTTPSessionStream",
    "InFlightBudget",
    "ResponseStream",
    "close_sse_stream",
    "current_http_scope",
    "error_body",
    "serve_http_scope",
]

logger = logging.getLogger(__name__)

# The answer for a request the client cancelled: on this wire a POST's stream ends only with a response, so a
# client that keeps the POST open (the official SDK does) would otherwise wait forever. Same code as the SDK.
REQUEST_CANCELLED: Final = -32800
# Server->client messages kept for a GET stream while none is open (HTTPSessionStream's ``backlog``).
DEFAULT_BACKLOG: Final = 256
# SSE_PRIMING_VERSIONS (mcpgen_runtime.versions): the versions whose clients expect a priming event (an id and empty
# data) and may be told to reconnect.
# How long a disconnect waits to hand its cancellations to a session that is not reading (back-pressure).
_CANCEL_DELIVERY_TIMEOUT: Final = 5.0

# What an SSE id line cannot carry (a store's ids are checked: one regex search, cheaper than a test per character).
_UNFIT_FOR_SSE_ID: Final = re.compile("[\r\n\0]").search
# The stream whose request the current task is serving (see the module docstring of ``app``).
_current_stream: contextvars.ContextVar[ResponseStream | None] = contextvars.ContextVar("mcp_http_stream", default=None)


def _clock() -> Callable[[], float]:
    """The event loop's clock, as ``anyio.current_time`` (which looks the loop up on every call)."""
    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return anyio.current_time


def error_body(code: int, message: str, request_id: RequestId | None = None) -> bytes:
    """A JSON-RPC error response, encoded (the body of an HTTP error answer, or a cancelled request's answer)."""
    return encode_frame(error_response(request_id, code, message))


class InFlightBudget:
    """Requests in flight over all the sessions of one app: the per-server limit."""

    def __init__(self, limit: float = math.inf) -> None:
        self.limit, self.used = limit, 0


class HTTPSessionStream:
    """One MCP session's ``MessageStream``: POST bodies come out of ``receive``; ``send`` routes to the streams."""

    def __init__(
        self,
        session_id: str,
        *,
        backlog: int = DEFAULT_BACKLOG,
        event_store: EventStore | None = None,
        retry_ms: int = 1000,
        budget: InFlightBudget | None = None,
        idle_timeout: float | None = None,
        key: str | None = None,
        stream_tag: str = "",
        max_queued_events: int = DEFAULT_MAX_QUEUED_EVENTS,
        tails: StreamTails | None = None,
    ) -> None:
        """``backlog``: server->client messages kept for a standalone GET stream while none is open (oldest dropped
        first; 0: none, when the event store is that backlog). ``event_store``: makes SSE streams resumable.
        ``retry_ms``: the SSE ``retry`` sent with priming events and before the server ends a connection. ``budget``:
        the app's in-flight count, shared by its sessions. ``idle_timeout``: seconds without an HTTP request being
        served after which ``idle_scope`` is cancelled. ``key`` (random): the prefix of the session's stream ids;
        ``stream_tag``: put before the number of each POST's stream (workers sharing a session's streams each use
        their own, so that their stream ids differ). ``max_queued_events``: the events one live connection may fall
        behind before it is ended (``channel``). ``tails``: the event store's ``StreamTails`` when other processes
        follow this session's streams (a stream's last event is stored as such). ``mirror`` (set after construction,
        ``storage.SessionDirectory.new_session``): what the session shares with other processes."""
        self.max_queued_events = max_queued_events
        self.tails = tails
        self.mirror: SessionMirror | None = None
        self.session_id = session_id
        self.owner: str | None = None  # who created it, when the endpoint is protected (``auth``)
        # Prefix of this session's stream ids: a Last-Event-ID is replayed only to the session that was sent it.
        self.key = key if key is not None else secrets.token_hex(8)
        self._stream_tag = stream_tag
        self.protocol_version: str | None = None  # set once the handler has answered initialize
        self.initialize_id: RequestId | None = None
        # Set by the ``mirror`` when the shared store would not keep the session (its bound of sessions, or it failed):
        # the initialize is then answered 503 with this message, and nothing is kept.
        self.refused: str | None = None
        self.event_store, self.retry_ms = event_store, retry_ms
        self.budget = budget if budget is not None else InFlightBudget()
        # Bounded: a POST waits (backpressure) while the handler is not reading.
        self._in_send, self._in_receive = anyio.create_memory_object_stream[tuple[bytes, ResponseStream | None]](64)
        self._queued = 0  # POST bodies delivered but not received yet
        # The reader of this stream (a jsonrpc Session) when it takes requests directly: see deliver.
        self._dispatcher: Dispatcher | None = None
        self._answerer: Callable[..., Awaitable[tuple[dict[str, Any], bytes] | bool]] | None = None
        self._eager: Callable[[Request], tuple[dict[str, Any], bytes] | Started | None] | None = None
        self.by_id: dict[RequestId, ResponseStream] = {}  # the requests in flight, by id
        self._streams: dict[str, ResponseStream] = {}  # the POST streams not done yet, by stream id
        self._stream_count = 0
        self.standalone = ResponseStream(
            f"{self.key}.0",
            (),
            sse=True,
            stored=event_store is not None,
            batch=False,
            retry_ms=retry_ms,
            max_queued=max_queued_events,
        )
        self.standalone_open = False  # a GET stream (fresh or resumed) is being served
        # Server->client messages with no open GET stream wait here for one (bounded; the oldest go first).
        self._backlog: deque[Event] = deque(maxlen=backlog)
        self.terminated = False
        self.on_terminate: list[Callable[[HTTPSessionStream], None]] = []  # called once, when the session ends
        self.idle_scope = anyio.CancelScope()  # cancelled by expire_when_idle
        self._idle_timeout = idle_timeout
        self._busy = 0
        self._clock = _clock()
        self._idle_since = self._clock()

    # -- MessageStream ---------------------------------------------------------------------------------------------

    async def receive(self) -> bytes:
        try:
            frame, stream = await self._in_receive.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None
        self._queued -= 1
        _current_stream.set(stream)
        return frame

    async def send(self, frame: bytes) -> None:
        await self.send_message(frame, json.loads(frame))

    async def send_message(self, frame: bytes, message: Any) -> None:
        """``send`` for a sender that has the message ``frame`` encodes (the session's): routed without a parse,
        and a success response (the session's own, well-formed) without classifying it again."""
        if self.mirror is not None:
            outcome = await self.mirror.outgoing(frame, message)
            if outcome is None:
                return
            frame, message = outcome
        if self.terminated:
            raise anyio.BrokenResourceError("the HTTP session has ended")
        if isinstance(message, list):
            for item in message:
                await self._route(item, encode_frame(item))
        elif isinstance(message, dict) and "result" in message and "method" not in message:
            request_id = message.get("id")
            kind = Response(request_id, message["result"]) if is_request_id(request_id) else classify(message)
            await self._route(message, frame, kind)
        else:
            await self._route(message, frame)

    def set_dispatcher(self, dispatcher: Dispatcher | None) -> None:
        self._dispatcher = dispatcher
        self._answerer = getattr(dispatcher, "answer_inline", None)  # a jsonrpc Session's: see answer_inline
        self._eager = getattr(dispatcher, "answer_eagerly", None)  # and see answer_eagerly

    async def aclose(self) -> None:
        self.terminate()

    # -- used by the app -------------------------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self.by_id)

    @contextmanager
    def busy(self) -> Iterator[None]:
        """An HTTP request of this session is being served: no idle expiry meanwhile."""
        self.enter_busy()
        try:
            yield
        finally:
            self.leave_busy()

    @property
    def idle(self) -> bool:
        """No HTTP request of this session is being served and none of its requests is in flight."""
        return not self._busy and not self.by_id

    def enter_busy(self) -> None:
        """``busy`` without the context manager (the per-request path): pair with ``leave_busy``."""
        self._busy += 1

    def leave_busy(self) -> None:
        self._busy -= 1
        if not self._busy:
            self._idle_since = self._clock()

    async def expire_when_idle(self) -> None:
        """Cancel ``idle_scope`` once no HTTP request has been served for ``idle_timeout`` seconds; run it beside the
        handler. Requests only note when they end (a timer re-armed per request cost more than the request's own
        bookkeeping): this wakes when the session could expire at the earliest, and looks."""
        timeout = self._idle_timeout
        if timeout is None:
            return
        while not self.terminated:
            if self._busy:
                await anyio.sleep(timeout)  # it cannot expire before it has been idle that long
                continue
            now, due = self._clock(), self._idle_since + timeout
            if now >= due:
                self.idle_scope.cancel()
                return
            await anyio.sleep(due - now)

    def open_stream(
        self,
        ids: Collection[RequestId],
        *,
        sse: bool,
        batch: bool,
        stored: bool,
        http_scope: Mapping[str, Any] | None = None,
    ) -> ResponseStream:
        """The stream for a POST carrying the requests ``ids`` (now in flight); ``http_scope``: that POST's."""
        self._stream_count += 1
        stream_id = f"{self.key}.{self._stream_tag}{self._stream_count}"
        stream = ResponseStream(
            stream_id,
            ids,
            sse=sse,
            stored=stored,
            batch=batch,
            retry_ms=self.retry_ms,
            http_scope=http_scope,
            max_queued=self.max_queued_events,
        )
        for request_id in ids:
            self.by_id[request_id] = stream
        self.budget.used += len(ids)
        self._streams[stream.stream_id] = stream
        return stream

    def find_stream(self, stream_id: str) -> ResponseStream | None:
        """A stream of this session that can still carry something (None when done, or not this session's)."""
        return self.standalone if stream_id == self.standalone.stream_id else self._streams.get(stream_id)

    def owns(self, stream_id: str) -> bool:
        return stream_id.startswith(self.key + ".")

    async def prime(self, stream: ResponseStream) -> None:
        """The first event of a POST's SSE stream (2025-11-25): an event id with empty data, so that the client can
        resume the stream even if it breaks before anything else is sent. With ``tails`` (other processes may serve
        the stream), its requests are recorded first (``StreamTails.note_requests``)."""
        if stream.stored and stream.sse and self.tails is not None and stream.unanswered:
            try:
                await self.tails.note_requests(stream.stream_id, list(stream.unanswered))
            except Exception:
                logger.warning("could not record the requests of SSE stream %s", stream.stream_id, exc_info=True)
        if stream.stored and self.event_store is not None and self.protocol_version in SSE_PRIMING_VERSIONS:
            event_id = await self._store(stream, None)
            if event_id is not None:
                stream.primed = stream.push(Event(None, event_id, self.retry_ms))

    async def deliver(
        self, body: bytes, stream: ResponseStream | None, request: Request | None = None, *, inline: bool = False
    ) -> None:
        """Hand one POST body to the session; ClosedResourceError once the session has ended.

        ``request``: the body is that one request. When the session reads this stream with a ``Session`` and
        nothing delivered earlier is still queued, the request goes to the session directly (``Dispatcher``), which
        saves a task switch; with ``inline`` its handler runs in the calling task, so this returns once it has
        answered (or was cancelled). Anything else is queued for ``receive``, as is a request the session cannot
        take at once (in-flight limit, closing). A ``mirror`` sees the body first."""
        if self.mirror is not None:
            translated = await self.mirror.incoming(body, request)
            if translated is None:
                return
            body = translated
        dispatcher = self._dispatcher
        if request is not None and dispatcher is not None and not self._queued and not self.terminated:
            token = _current_stream.set(stream)
            try:
                if await dispatcher.dispatch_now(request, inline=inline):
                    return
            finally:
                _current_stream.reset(token)
        await self.inject(body, stream)

    def answer_eagerly(self, request: Request) -> tuple[dict[str, Any], bytes] | Started | None:
        """Before a JSON POST's stream is opened: its one request answered at once by the session's reader, when its
        handler needs nothing of the stream and finishes without suspending (``jsonrpc.Session.answer_eagerly``):
        the answer as (message, frame), which the caller sends itself (nothing of the session tracks it). A
        ``Started`` when the handler suspended: the caller opens the stream and hands it to ``answer_inline``
        before it awaits anything. None, with nothing done, for the usual path. Only where ``answer_inline``
        would take the request."""
        eager = self._eager
        if eager is None or self._queued or self.terminated or self.mirror is not None:
            return None
        return eager(request)

    async def answer_inline(
        self, stream: ResponseStream, request: Request, started: Started | None = None
    ) -> bytes | bool:
        """``deliver(body, stream, request, inline=True)`` where the session's reader is a ``jsonrpc.Session`` (and
        no ``mirror`` stands between): the handler runs in the calling task and its answer comes back here, to be
        put on ``stream`` directly (not written to the session's stream and routed back by ``send_message``). False,
        with nothing done, when the request must be delivered the usual way instead; True when done; the answer's
        frame when it is the whole of ``stream``, a JSON answer to this one request (now done), which the caller
        sends itself: it is not queued on the stream's connection. ``started``: the handler, started by
        ``answer_eagerly`` (which checked what is checked here, with nothing run since)."""
        answerer = self._answerer
        if started is None and (answerer is None or self._queued or self.terminated or self.mirror is not None):
            return False
        assert answerer is not None
        token = _current_stream.set(stream)
        try:
            answer = await answerer(request, started)
        finally:
            _current_stream.reset(token)
        if isinstance(answer, tuple):
            return await self._answer_to(answer[0], answer[1], stream) or True
        return answer

    async def inject(self, body: bytes, stream: ResponseStream | None = None) -> None:
        """Queue ``body`` for ``receive`` as if the client had POSTed it, past the ``mirror`` (which replays a
        session's requests with it); ClosedResourceError once the session has ended."""
        self._queued += 1
        try:
            await self._in_send.send((body, stream))
        except BaseException:
            self._queued -= 1
            raise

    def open_standalone(self) -> Channel:
        """A live connection for the standalone stream (replacing any), with the backlog queued first."""
        channel = self.standalone.attach()  # closed at once if the session has ended
        self.standalone_open = True
        while self._backlog and not self.standalone.done:
            channel.push(self._backlog.popleft())
        return channel

    async def connection_closed(self, stream: ResponseStream, token: Channel, *, client_gone: bool) -> None:
        """A response carrying ``stream`` ended. If the client went away from a stream it cannot resume, its
        requests are cancelled: nobody can ever receive their answers."""
        cancelling = self.connection_ended(stream, token, client_gone=client_gone)
        if cancelling is not None:
            await cancelling

    def connection_ended(self, stream: ResponseStream, token: Channel, *, client_gone: bool) -> Awaitable[None] | None:
        """``connection_closed`` for a caller that awaits only when there is something to wait for (the usual end of
        a response has nothing): the delivery of the cancellations to await, if any (it shields itself)."""
        if not stream.detach(token):
            return None
        if stream is self.standalone:
            self.standalone_open = False
            return None
        if client_gone and not stream.done and not stream.resumable:
            ids = [request_id for request_id in stream.unanswered if self.by_id.get(request_id) is stream]
            for request_id in ids:
                self._untrack(request_id)
            stream.finish()
            self._streams.pop(stream.stream_id, None)
            return self._inject_cancellations(ids)
        return None

    async def cancel_request(self, request_id: object) -> None:
        """The client cancelled a request: end its stream with an error, as the handler will not answer it."""
        stream = self._untrack(request_id) if is_request_id(request_id) else None
        if stream is not None:
            assert is_request_id(request_id)
            await self._answer(stream, request_id, error_body(REQUEST_CANCELLED, "Request cancelled", request_id))

    async def cancel_notified(self, items: Collection[object]) -> None:
        """The requests cancelled by the ``notifications/cancelled`` among a POST's messages: as ``cancel_request``."""
        for item in items:
            if isinstance(item, Notification) and item.method == "notifications/cancelled":
                params = item.params if isinstance(item.params, dict) else {}
                await self.cancel_request(params.get("requestId"))

    def terminate(self) -> None:
        if self.terminated:
            return
        self.terminated = True
        self._in_send.close()  # the handler's receive drains what was queued, then sees EndOfStream
        for request_id in list(self.by_id):
            self._untrack(request_id)
        for stream in [*self._streams.values(), self.standalone]:
            stream.finish()
        self._streams.clear()
        for callback in self.on_terminate:
            callback(self)

    # -- routing ---------------------------------------------------------------------------------------------------

    def _untrack(self, request_id: RequestId) -> ResponseStream | None:
        stream = self.by_id.pop(request_id, None)
        if stream is not None:
            self.budget.used -= 1
        return stream

    async def _inject_cancellations(self, ids: Collection[RequestId]) -> None:
        # Through the handler's own input, as the client would have: the session cancels the handlers (and answers
        # nothing). Shielded and bounded: this runs while the HTTP request is ending.
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_DELIVERY_TIMEOUT) as scope:
            for request_id in ids:
                params = {"requestId": request_id, "reason": "the HTTP client disconnected"}
                try:
                    await self.deliver(encode_frame(notification_message("notifications/cancelled", params)), None)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
        if scope.cancelled_caught:
            logger.warning("session %s: could not deliver the cancellation of %r in time", self.session_id, ids)

    async def _store(self, stream: ResponseStream, frame: bytes | None, *, last: bool = False) -> str | None:
        assert self.event_store is not None
        try:
            if last and frame is not None and self.tails is not None:
                event_id = await self.tails.store_last(stream.stream_id, frame, delivered=stream.connected)
            else:
                event_id = await self.event_store.store(stream.stream_id, frame)
        except Exception:
            logger.exception("the event store failed; event sent without an id (not resumable)")
            return None
        if _UNFIT_FOR_SSE_ID(event_id) is not None:
            logger.error("the event store returned an id that cannot go on an SSE id line: %r", event_id)
            return None
        return event_id

    async def _emit(self, stream: ResponseStream, frame: bytes, *, last: bool = False) -> None:
        event_id = await self._store(stream, frame, last=last) if stream.stored and stream.sse else None
        event = Event(frame, event_id)
        if not stream.push(event) and stream is self.standalone and not self.terminated and self._backlog.maxlen:
            if len(self._backlog) == self._backlog.maxlen:
                logger.warning("session %s: no GET stream, dropping the oldest queued server message", self.session_id)
            self._backlog.append(event)

    async def _answer(self, stream: ResponseStream, request_id: RequestId | None, frame: bytes) -> None:
        # The stream's last event: its tails (other processes following it) stop after it.
        last = self.tails is not None and (request_id is None or stream.unanswered <= {request_id})
        await self._emit(stream, frame, last=last)
        self._answered(stream, request_id)

    def _answered(self, stream: ResponseStream, request_id: RequestId | None) -> None:
        """``stream`` carried the answer to ``request_id`` (None: to all its requests); done once all are answered."""
        if request_id is None:
            for other in [key for key, value in self.by_id.items() if value is stream]:
                self._untrack(other)
            stream.unanswered.clear()
        else:
            stream.unanswered.discard(request_id)
        if not stream.unanswered:
            stream.finish()
            self._streams.pop(stream.stream_id, None)

    async def _answer_to(self, message: dict[str, Any], frame: bytes, own: ResponseStream) -> bytes | None:
        """The answer a handler gave a request (``answer_inline``, for the stream ``own``), routed as
        ``send_message`` routes a response; the frame itself when it is all of ``own``, a JSON stream."""
        request_id = message["id"]
        if request_id == self.initialize_id and "result" in message:
            self._negotiated(message["result"])
        stream = self._untrack(request_id) if not self.terminated else None
        if stream is None:
            logger.debug("response to %r dropped: its stream is gone", request_id)
        elif stream is own and not stream.sse and len(stream.unanswered) == 1:
            self._answered(stream, request_id)
            return frame
        elif stream.stored or self.tails is not None:
            await self._answer(stream, request_id, frame)
        else:  # nothing to store first: what _answer does, without its awaits
            stream.push(Event(frame))
            self._answered(stream, request_id)
        return None

    def _negotiated(self, result: object) -> None:
        """The session's ``initialize`` was answered with ``result``: the negotiated version is known."""
        self.initialize_id = None
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        self.protocol_version = version if isinstance(version, str) else None

    async def _route(self, item: Any, frame: bytes, kind: Any = None) -> None:
        message = classify(item) if kind is None else kind
        context = _current_stream.get()
        if isinstance(message, Response | ErrorResponse):
            if message.id is None:
                # An error that answers a whole POST (e.g. a refused batch), else nothing in particular.
                if context is not None and not context.done:
                    await self._answer(context, None, frame)
                else:
                    await self._emit(self.standalone, frame)
                return
            if message.id == self.initialize_id and isinstance(message, Response):
                self._negotiated(message.result)
            stream = self._untrack(message.id)
            if stream is None:
                # Cancelled, or its client went away for good: the spec forbids responses on the GET stream.
                logger.debug("response to %r dropped: its stream is gone", message.id)
            else:
                await self._answer(stream, message.id, frame)
        elif (
            isinstance(message, Request | Notification)
            and context is not None
            and context.sse
            and not context.done
            and self._streams.get(context.stream_id) is context  # not another session's (Server.notify_* in a tool)
        ):
            await self._emit(context, frame)
        else:
            await self._emit(self.standalone, frame)


def serve_http_scope(scope: Mapping[str, Any]) -> None:
    """Make ``scope`` what ``current_http_scope`` gives in this task and the tasks it starts from now on: for a
    stream that carries a single request (the modern era's), whose handler has no session streams to route by."""
    _current_stream.set(ResponseStream("", (), sse=False, stored=False, batch=False, retry_ms=0, http_scope=scope))


def current_http_scope() -> Mapping[str, Any] | None:
    """The ASGI scope of the HTTP POST that carried the request the current task is serving (headers, path, client;
    not the body); None outside such a request (stdio, a notification, the handler's own background tasks)."""
    stream = _current_stream.get()
    return stream.http_scope if stream is not None else None


async def close_sse_stream() -> bool:
    """End the HTTP response that carries the SSE stream of the request being served, without ending the stream
    (SEP-1699, spec 2025-11-25 "polling"): the client reconnects with GET and ``Last-Event-ID`` after the ``retry``
    interval, and gets what was sent meanwhile, the answer included. Call it from the request's handler.

    True if the connection was ended; False (nothing done) when there is nothing to resume: not an HTTP request,
    JSON answers, no event store, or a client older than 2025-11-25 (which was sent no priming event).
    """
    stream = _current_stream.get()
    if stream is None or stream.done or not stream.primed or not stream.connected:
        return False
    stream.end_connection(stream.retry_ms)
    return True
