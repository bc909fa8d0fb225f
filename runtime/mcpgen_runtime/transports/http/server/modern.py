"""The modern era (MCP 2026-07-28 and later) of the streamable HTTP server: one POST, one request, one call.

Where it sits: in the ``transports`` layer, a part of ``app.StreamableHTTPApp``, which routes here every POST of
that era (``is_modern``) and answers GET and DELETE of it with 405; the legacy era's sessions are ``legacy``.
A modern POST is served as one call of the app's ``ModernHandler`` (the server layer's ``Server.serve_modern``):
the decoded request and a ``ModernCall`` (the POST's ASGI scope, and ``notify`` for notifications on the response)
in, the JSON-RPC response out, in the HTTP request's own task. No session, no connection, no event ids, nothing to
resume, so any worker can answer any request. An app given no ``ModernHandler`` answers every modern request -32601
(``method_not_served``).

What the transport checks before the handler sees the request (spec basic/transports/streamable-http, "Request
Metadata" and "Server Validation"), in the official SDK's order: one request or notification per body; the
``_meta`` fields the era needs (-32602); ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and every
``Mcp-Param-*`` at most once and of valid characters (visible ASCII, space, tab: ``header_problem``), the first
three present and equal to the body (-32020 HeaderMismatch). A request is of this era by its header or its
``_meta`` version, whatever ``Mcp-Session-Id`` it carries (``is_modern`` quotes the spec). The version's support (-32022), the method (-32601), the client's
capabilities and the ``Mcp-Param-*`` headers are the server layer's (it reads the headers in ``ModernCall.scope``).
Whoever answers an error, ``HTTP_STATUS_OF_ERROR`` gives its HTTP status.

The answer: JSON when the handler answers without sending a notification first; an SSE stream (no ids) when it
sends one (progress, log messages) or is still silent after ``ping_interval`` (so that pings keep proxies from
timing it out), if the app streams at all (not ``json_response``). ``subscriptions/listen`` is always a stream: it
lasts until the client goes away (which cancels the handler, as closing any response stream does) or the server
shuts down (the stream then ends unanswered and the handler is cancelled). A notification POST is answered 202 and
dropped: this era defines no client notification over HTTP (``notifications/cancelled`` is closing the stream), and
a modern request is served statelessly: there is no request of another POST to act on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Final, Protocol, cast

import anyio
from anyio.abc import TaskGroup
from starlette.types import Receive, Scope, Send

from ....jsonrpc.answers import ANYIO_SHIELD_STATE, JobScope, TaskScope
from ....jsonrpc.eager import Started
from ....jsonrpc.envelopes import (
    ErrorCode,
    Notification,
    Request,
    RequestId,
    encode_frame,
    error_response,
    notification_message,
)
from ....versions import (
    HEADER_MISMATCH,
    LEGACY_VERSIONS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .asgi import JSON, SSE, Answer, DelayedCalls, DisconnectWatch, HTTPRequest, accepts, running_task
from .channel import Channel, Event
from .modern_routing import (
    decode_header_value,
    header_problem,
    is_modern,
    names_modern_version,
    routing_problem,
)
from .session import InFlightBudget
from .sse import sse_bytes

__all__ = [
    "DEFAULT_MAX_LISTEN_STREAMS",
    "HEADER_MISMATCH",
    "HTTP_STATUS_OF_ERROR",
    "LEGACY_VERSIONS",
    "ModernAnswer",
    "ModernCall",
    "ModernEager",
    "ModernEra",
    "ModernExchange",
    "ModernHandler",
    "ModernJSONAnswer",
    "decode_header_value",
    "header_problem",
    "is_modern",
    "method_not_served",
    "names_modern_version",
    "routing_problem",
]

logger = logging.getLogger(__name__)

LISTEN_METHOD: Final = "subscriptions/listen"

# HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION: the modern era's error codes
# (mcpgen_runtime.versions).
TOO_MANY_REQUESTS_IN_FLIGHT: Final = -32810  # as legacy's (the same refusal in both eras)
# The HTTP status of an answer that is a JSON-RPC error, by code (spec: 400 for a header mismatch and an unsupported
# version, 404 for an unknown method; the rest as the official SDK: a bad request is a 400). Other codes: 200.
HTTP_STATUS_OF_ERROR: Final[Mapping[int, int]] = {
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    TOO_MANY_REQUESTS_IN_FLIGHT: 503,
}
DEFAULT_MAX_LISTEN_STREAMS: Final = 100
# Notifications that never relate to one request: a non-listen request's stream must not carry them (spec
# "Receiving Messages": its notifications MUST relate to the originating request).
_UNRELATED_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)
_SSE_HEADERS: Final = [
    (b"content-type", SSE.encode()),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # spec: proxies must not buffer the stream
]
_PING: Final = b": ping\n\n"  # an SSE comment: keeps proxies from timing the stream out


class ModernCall(Protocol):
    """What the handler of one modern request may use of its HTTP exchange (``ModernExchange`` is it): ``scope``, the
    POST's ASGI scope (headers, client address, the authenticated identity; not the body), the request's id, whether
    the answer may stream (``streams``: not with ``json_response``, except a listen stream), and ``notify``, which
    sends a notification on the response (progress, log messages, a listen stream's changes). There is no way back
    to the client in this era: no server->client requests (the server layer uses input requests instead, MRTR).

    ``notify`` never blocks: the notification is queued, and the first one turns the answer into an SSE stream. It
    is dropped when the answer cannot stream, and, unless this is a ``subscriptions/listen`` request, when it never
    relates to one request (list changes, resource updates: spec "Receiving Messages"). Once the exchange is over it
    raises ``anyio.BrokenResourceError``."""

    @property
    def scope(self) -> Scope: ...

    @property
    def request_id(self) -> RequestId: ...

    @property
    def streams(self) -> bool: ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None: ...


ModernAnswer = tuple[dict[str, Any], bytes]
"""The response to a modern request: the JSON-RPC message and its encoded frame (``jsonrpc.answers.call_handler``
gives both)."""


ModernEager = Callable[[Request, "asyncio.Task[Any]"], "ModernAnswer | Started | None"]
"""Starts a modern request at once, in the HTTP request's task (given), before an exchange is made for it: its
answer when its handler finished without suspending; a ``jsonrpc.eager.Started`` when it suspended (the exchange then
goes on with it); None, with nothing done, for a request the handler serves the usual way. ``server.Server``'s
``start_modern`` is one (the requests of its direct lane)."""


class ModernHandler(Protocol):
    """Serves one modern request as one call: ``request`` (validated by the transport: one request, its ``_meta``
    and routing headers present and agreeing) and its ``call`` (what it may use of the HTTP exchange) in, the
    response out. It runs in the HTTP request's own task; the client going away cancels it. ``server.Server``'s
    ``serve_modern`` is one."""

    async def __call__(self, request: Request, call: ModernCall) -> ModernAnswer: ...


async def method_not_served(request: Request, call: ModernCall) -> ModernAnswer:
    """The ``ModernHandler`` of an app given none (a server of the legacy era only): -32601 to every request, which
    clients that probe with ``server/discover`` take for "a legacy server" (HTTP 404)."""
    message = error_response(request.id, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {request.method}")
    return message, encode_frame(message)


async def _send_json(scope: Scope, receive: Receive, send: Send, message: dict[str, Any], frame: bytes) -> None:
    """The JSON answer to a modern request: ``frame``, with the HTTP status of ``message``'s error (if any), as
    ``Answer`` would send it (written out: this is every JSON answer's path)."""
    error = message.get("error")
    if error is None:
        headers = [(b"content-length", b"%d" % len(frame)), _JSON_CONTENT_TYPE]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": frame})
        return
    code = error.get("code") if isinstance(error, dict) else None
    status = HTTP_STATUS_OF_ERROR.get(code, 200) if isinstance(code, int) else 200
    retry = {"Retry-After": "1"} if status == 503 else None
    await Answer(frame, status, retry, media_type=JSON)(scope, receive, send)


_JSON_CONTENT_TYPE: Final = (b"content-type", JSON.encode("latin-1"))


class ModernJSONAnswer:
    """The ASGI response of a modern request answered when it was started (``ModernEager``): its JSON."""

    __slots__ = ("frame", "message")

    def __init__(self, message: dict[str, Any], frame: bytes) -> None:
        self.message, self.frame = message, frame

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _send_json(scope, receive, send, self.message, self.frame)


class ModernExchange:
    """The ASGI response to one modern request POST, and the ``ModernCall`` its handler is given (one object per
    request): calls the ``ModernHandler`` in this HTTP request's task and answers with JSON, or with an SSE stream
    once the handler has sent a notification or is still silent after ``ping_interval`` (see the module
    docstring). A stream is written by a task of its own, started when it goes live (on asyncio; elsewhere a task
    group holds it); its queue (``Channel``) is made only then, or by a first notification. A request answered
    before that takes no task, no timer (the ping deadline is one of ``DelayedCalls``, shared by every request) and
    leaves nothing behind: every reference an exchange makes to itself (the writer task, the deadline) is dropped
    when it ends, so no reference cycle is left for the cyclic garbage collector (whose full collections, 10-30 ms
    with the bindings loaded, were the modern era's p99). A client that goes away (``DisconnectWatch``) cancels the
    handler. Its era is told when it is over (in-flight count, open listen streams)."""

    __slots__ = (
        "_cancel",
        "_channel",
        "_closed",
        "_ended",
        "_era",
        "_gone",
        "_handler",
        "_listen",
        "_live_soon",
        "_request",
        "_send",
        "_spawn",
        "_started",
        "_writer",
        "notified",
        "request_id",
        "scope",
        "streams",
    )

    def __init__(
        self,
        era: ModernEra,
        handler: ModernHandler,
        request: Request,
        scope: Scope,
        *,
        streams: bool,
        listen: bool,
        started: Started | None = None,
    ) -> None:
        """``started``: the handler, started already by the era's ``ModernEager``: it goes on in the exchange."""
        self._era, self._handler, self._request, self._listen = era, handler, request, listen
        self._started = started
        self.scope: Scope = scope
        self.request_id: RequestId = request.id
        self.streams = streams
        self.notified = False  # a notification was queued
        self._channel: Channel | None = None  # what the stream carries: made by the first notification, or going live
        self._closed = False  # the exchange is over: nothing more is queued
        # The scope the handler runs in: the session's inline scope of the running loop (on asyncio ``TaskScope``,
        # which cancels this request's task asyncio's way; an ``anyio.CancelScope`` looked the async library up
        # on every request, a fifth of the exchange's CPU). Made when the exchange runs, in its loop.
        self._cancel: JobScope | None = None
        self._ended = False  # ended (``end``) before the handler was called: it is not called
        self._writer: Awaitable[None] | None = None
        self._send: Send | None = None
        self._spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], Awaitable[None]] | None = None
        self._gone = False
        # The first notification's go-live, due at the loop's next turn (asyncio): a handler that answers before
        # then is answered inline, its events and result in one SSE body, with no writer task.
        self._live_soon: asyncio.Handle | None = None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self._closed:
            raise anyio.BrokenResourceError("the HTTP exchange of this request is over")
        if not self.streams or (not self._listen and method in _UNRELATED_NOTIFICATIONS):
            return
        self._events().push(Event(encode_frame(notification_message(method, params))))
        if not self.notified:
            self.notified = True
            # The writer could not run before the handler suspends anyway: it starts at the loop's next turn.
            loop = self._era.loop
            if loop is not None and self._spawn is _spawn_task:
                self._live_soon = loop.call_soon(self._go_live)
            else:
                self._go_live()

    def end(self) -> None:
        """End the exchange now (at shutdown): the response ends after what is queued, the handler is cancelled."""
        self._close()
        self._ended = True
        if self._cancel is not None:
            self._cancel.cancel()

    def _events(self) -> Channel:
        channel = self._channel
        if channel is None:
            channel = self._channel = Channel()
            if self._closed:
                channel.close()
        return channel

    def _close(self) -> None:
        self._closed = True
        if self._channel is not None:
            self._channel.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            task = running_task(self._era.loop)  # the app's loop, noted: no look-up (a system call, for the pid)
            if task is not None:
                self._cancel = TaskScope(task) if ANYIO_SHIELD_STATE.active else anyio.CancelScope()
                await self._exchange(scope, receive, send, _spawn_task, task.get_loop())
            else:
                self._cancel = anyio.CancelScope()
                async with anyio.create_task_group() as tg:
                    await self._exchange(scope, receive, send, functools.partial(_spawn_in, tg), None)
        finally:
            self._close()
            self._send = self._spawn = self._writer = None
            self._era.exchange_ended(self, self._listen)

    def _go_live(self) -> None:
        """Turn the answer into an SSE stream (a first notification, or ``ping_interval`` of silence)."""
        if self._writer is None and self._spawn is not None and self._send is not None and not self._closed:
            self._writer = self._spawn(functools.partial(self._write, self._send, self._events()))

    async def _client_gone(self) -> None:
        self._gone = True
        if self._cancel is not None:
            self._cancel.cancel()  # closing the response stream cancels the request (spec)
        self._close()

    async def _exchange(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        spawn: Callable[[Callable[[], Coroutine[Any, Any, None]]], Awaitable[None]],
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        self._send, self._spawn = send, spawn
        answer: ModernAnswer | None = None
        # The DelayedCalls that turns a silent answer into a pinging stream (asyncio; elsewhere none: the answer
        # stays JSON until a notification).
        deadline = DelayedCalls.for_loop(loop, self._era.ping_interval) if self.streams and loop is not None else None
        if deadline is not None:
            deadline.add(self, self._go_live)
        watch = DisconnectWatch(receive, self._client_gone, loop)
        try:
            if loop is None:
                async with watch:
                    answer = await self._answer()
            else:  # entered without ``async with``, whose two coroutines were most of the watch's cost
                watch.start()
                try:
                    answer = await self._answer()
                finally:
                    watch.stop()
        finally:
            if deadline is not None:
                deadline.discard(self)
        live_soon, self._live_soon = self._live_soon, None
        if live_soon is not None:
            live_soon.cancel()  # (a no-op once it ran)
        if self._gone:
            return
        if self._writer is None and self.notified and self._channel is not None:
            # Answered before the stream went live: the events so far and the answer, written here, one body.
            channel = self._channel
            if answer is not None:
                channel.push(Event(answer[1]))
            channel.close()
            await self._write(send, channel)
            return
        if self._writer is not None:
            channel = self._events()
            if answer is not None:
                channel.push(Event(answer[1]))
            channel.close()  # the stream ends after the answer; ended unanswered (shutdown), it just ends
            await self._writer
            return
        self._close()
        if answer is None:  # ended at shutdown before it answered
            error = error_response(self.request_id, ErrorCode.INTERNAL_ERROR, "the server did not answer")
            await Answer(encode_frame(error), 500, media_type=JSON)(scope, receive, send)
        else:
            await _send_json(scope, receive, send, *answer)

    async def _answer(self) -> ModernAnswer | None:
        """The handler's answer, in the exchange's cancel scope; None if it failed or was cancelled (the client went
        away, or the server ends: a late answer is dropped)."""
        cancel = self._cancel
        assert cancel is not None
        answer: ModernAnswer | None = None
        started, self._started = self._started, None
        with cancel:
            try:
                if started is not None:
                    started.adopted_by(cancel)
                    if self._ended:
                        started.close()
                    else:
                        answer = await started.handler()
                elif not self._ended:
                    answer = await self._handler(self._request, self)
            except Exception:
                logger.exception("the handler of a modern HTTP request failed")
        return None if cancel.cancel_called else answer

    async def _write(self, send: Send, channel: Channel) -> None:
        """The SSE response: what is queued, as it comes, pinging while idle, until the channel ends."""
        ping_interval = self._era.ping_interval
        try:
            await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            while True:
                chunk = b"".join(sse_bytes(event) for event in channel.take())
                if channel.ended:
                    await send({"type": "http.response.body", "body": chunk, "more_body": False})
                    return
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    continue
                with anyio.move_on_after(ping_interval) as idle:
                    await channel.wait()
                if idle.cancelled_caught:
                    await send({"type": "http.response.body", "body": _PING, "more_body": True})
        except OSError:  # a server whose send raises once the client is gone (uvicorn's returns quietly)
            logger.debug("the client of a modern SSE answer went away", exc_info=True)
            self._gone = True
            if self._cancel is not None:
                self._cancel.cancel()
            channel.close()


_WRITERS: set[asyncio.Task[None]] = set()  # asyncio keeps only weak references to tasks


def _spawn_task(write: Callable[[], Coroutine[Any, Any, None]]) -> Awaitable[None]:
    task = asyncio.get_running_loop().create_task(write())
    _WRITERS.add(task)
    task.add_done_callback(_WRITERS.discard)
    return task  # awaiting it waits for the stream's end; cancelling the awaiting task cancels it too


def _spawn_in(tg: TaskGroup, write: Callable[[], Coroutine[Any, Any, None]]) -> Awaitable[None]:
    done = anyio.Event()

    async def run() -> None:
        try:
            await write()
        finally:
            done.set()

    tg.start_soon(run)
    return done.wait()


class ModernEra:
    """The modern era's part of ``StreamableHTTPApp``: its ``ModernHandler``, the exchanges in progress and their
    limits."""

    def __init__(
        self,
        handler: ModernHandler,
        budget: InFlightBudget,
        *,
        json_response: bool,
        ping_interval: float,
        max_listen_streams: int,
        eager: ModernEager | None = None,
    ) -> None:
        """``eager``: starts the requests it can at once (see ``ModernEager``); used on asyncio with ``TaskScope``
        (which a handler started before the scope is entered can be adopted by)."""
        if max_listen_streams < 1:
            raise ValueError("max_listen_streams must be at least 1")
        self._handler, self._budget = handler, budget
        self._eager = eager
        # The app's asyncio loop while it runs (set by the app, as LegacyEra notes it), so that a request's task is
        # found without looking the loop up; None: looked up per request.
        self.loop: asyncio.AbstractEventLoop | None = None
        self._json_response, self.ping_interval = json_response, ping_interval
        self.max_listen_streams = max_listen_streams
        self.listening = 0  # subscriptions/listen streams open
        self.exchanges: set[ModernExchange] = set()  # requests being answered (listen streams included)

    def close(self) -> None:
        """End every exchange (at shutdown: listen streams would otherwise keep the server from stopping)."""
        for exchange in list(self.exchanges):
            exchange.end()

    def post(self, scope: Scope, request: HTTPRequest, decoded: Any) -> Answer | ModernJSONAnswer | ModernExchange:
        """The answer to a modern POST whose body is one well-formed JSON-RPC message (``decoded``)."""
        if isinstance(decoded, Notification):
            return Answer(status=202)  # accepted and dropped (see the module docstring)
        if not isinstance(decoded, Request):
            message = "Invalid Request: the body must be one JSON-RPC request or notification"
            return _error(400, ErrorCode.INVALID_REQUEST, message, getattr(decoded, "id", None))
        listen = decoded.method == LISTEN_METHOD
        if listen and not accepts(request.headers.get("accept", ""))[1]:
            return _error(406, ErrorCode.INVALID_REQUEST, "Not Acceptable: a listen stream is text/event-stream")
        problem = routing_problem(scope, request, decoded)
        if problem is not None:
            return _error(400, problem[0], problem[1], decoded.id)
        if listen:
            if self.listening >= self.max_listen_streams:
                message = f"Too many listen streams: the server keeps at most {self.max_listen_streams}; retry later"
                return _error(503, TOO_MANY_REQUESTS_IN_FLIGHT, message, decoded.id, {"Retry-After": "1"})
            self.listening += 1
        elif self._budget.used + 1 > self._budget.limit:
            message = f"Too many requests in flight: the server handles at most {int(self._budget.limit)} at once"
            return _error(503, TOO_MANY_REQUESTS_IN_FLIGHT, message, decoded.id, {"Retry-After": "1"})
        started: Started | None = None
        if not listen:
            eager = self._eager
            if eager is not None and ANYIO_SHIELD_STATE.active and (task := running_task(self.loop)) is not None:
                # A request the handler finishes without suspending is answered before anything is set up for it
                # (its exchange, cancel scope and disconnect watch): none of them can matter to it.
                outcome = eager(decoded, task)
                if type(outcome) is tuple:
                    return ModernJSONAnswer(*outcome)
                started = cast("Started | None", outcome)
            self._budget.used += 1
        exchange = ModernExchange(
            self,
            self._handler,
            decoded,
            scope,
            streams=listen or not self._json_response,
            listen=listen,
            started=started,
        )
        self.exchanges.add(exchange)
        return exchange

    def exchange_ended(self, exchange: ModernExchange, listen: bool) -> None:
        """An exchange is over: its bookkeeping undone (called once, by the exchange)."""
        self.exchanges.discard(exchange)
        if listen:
            self.listening -= 1
        else:
            self._budget.used -= 1


def _error(
    status: int, code: int, message: str, request_id: Any = None, headers: dict[str, str] | None = None
) -> Answer:
    return Answer(encode_frame(error_response(request_id, code, message)), status, headers, media_type=JSON)
