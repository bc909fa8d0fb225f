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
import base64
import binascii
import functools
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Final, Protocol

import anyio
from anyio.abc import TaskGroup
from starlette.types import Receive, Scope, Send

from ....jsonrpc.answers import ANYIO_SHIELD_STATE, JobScope, TaskScope
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
    CLIENT_CAPABILITIES_META,
    HEADER_MISMATCH,
    LEGACY_VERSIONS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ...routing_headers import METHOD_HEADER, NAME_HEADER, NAME_PARAMS, PROTOCOL_VERSION_HEADER
from .asgi import JSON, SSE, Answer, DelayedCalls, DisconnectWatch, HTTPRequest, accepts, running_task
from .channel import Channel, Event
from .session import InFlightBudget
from .sse import sse_bytes

__all__ = [
    "DEFAULT_MAX_LISTEN_STREAMS",
    "HEADER_MISMATCH",
    "HTTP_STATUS_OF_ERROR",
    "LEGACY_VERSIONS",
    "ModernAnswer",
    "ModernCall",
    "ModernEra",
    "ModernExchange",
    "ModernHandler",
    "decode_header_value",
    "header_problem",
    "is_modern",
    "method_not_served",
    "names_modern_version",
    "routing_problem",
]

logger = logging.getLogger(__name__)

# LEGACY_VERSIONS (mcpgen_runtime.versions): every version of the legacy era (whose requests carry no per-request
# ``_meta`` version); an ``MCP-Protocol-Version`` header naming another value is a request of the modern era, as the
# official SDK routes.
ROUTING_HEADERS: Final = frozenset({PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER})
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
_PARAM_PREFIX: Final = b"mcp-param-"
_ROUTING_HEADER_NAMES: Final = frozenset(name.encode("latin-1") for name in ROUTING_HEADERS)
# b"mcp-" in every case (header names are case-insensitive): a set lookup, not a lower() per header.
_MCP_PREFIXES: Final = frozenset(bytes([m, c, p, 0x2D]) for m in b"mM" for c in b"cC" for p in b"pP")
# The bytes a header value may hold (spec "Value Encoding", after RFC 9110): tab, space and visible ASCII.
_HEADER_VALUE_BYTES: Final = b"\t" + bytes(range(0x20, 0x7F))
_BASE64_SENTINEL: Final = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_SSE_HEADERS: Final = [
    (b"content-type", SSE.encode()),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),  # spec: proxies must not buffer the stream
]
_PING: Final = b": ping\n\n"  # an SSE comment: keeps proxies from timing the stream out


def _meta(message: Request | Notification) -> Mapping[str, Any] | None:
    params = message.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def names_modern_version(request: HTTPRequest) -> bool:
    """Whether the POST's ``MCP-Protocol-Version`` header names a version of the modern era (the request is then a
    modern one, whatever ``Mcp-Session-Id`` it carries: see ``is_modern``)."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    return version is not None and version.strip() in MODERN_VERSIONS


def is_modern(request: HTTPRequest, decoded: Any, *, in_session: bool = False) -> bool:
    """Whether a POST is of the modern era: its ``MCP-Protocol-Version`` names a modern version (without a live
    session: any version that is not of the legacy era, so that an unknown one is told -32022), or its request
    (not ``initialize``) carries the ``_meta`` protocol version, whatever the header says (it is then told it
    mismatches, -32020) and whatever ``Mcp-Session-Id`` it carries, live session or not. A request of a live
    session (``in_session``) with neither keeps the session's rules (an unknown header version: the session's 400).

    The spec (2026-07-28 basic/versioning, "Backward Compatibility"): "A dual-era server selects its behavior from
    how the client opens: A request carrying modern per-request ``_meta`` is served statelessly according to this
    revision"; and basic/transports/streamable-http, "Earlier Streamable HTTP Revisions": "An ``Mcp-Session-Id``
    header on a request: ignore it, and do not mint or echo session IDs". So a session id never makes a modern
    request legacy; and "Protocol Version Header": the header "MUST match the
    ``io.modelcontextprotocol/protocolVersion`` field carried in the request body's ``_meta``. If the values do not
    match, the server MUST reject the request with ``400 Bad Request`` and a ``HeaderMismatch`` JSON-RPC error", so
    a legacy header over a modern body is refused, never served by the session it names."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    if version is not None and version.strip() not in LEGACY_VERSIONS:
        if not in_session or version.strip() in MODERN_VERSIONS:
            return True
    if not isinstance(decoded, Request | Notification) or decoded.method == "initialize":
        return False
    meta = _meta(decoded)
    return meta is not None and PROTOCOL_VERSION_META in meta


def decode_header_value(value: str) -> str | None:
    """A header value as the client meant it: ``=?base64?...?=`` decoded (spec "Value Encoding"), others as they
    are; None for a malformed sentinel (bad or non-canonical base64, bad UTF-8), so that it matches nothing."""
    match = _BASE64_SENTINEL.fullmatch(value) if value.startswith("=?") else None  # (most values: no regex)
    if match is None:
        return value
    payload = match.group(1)
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            return None
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def header_problem(raw_headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """What is wrong with the request's ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and
    ``Mcp-Param-*`` headers as headers, whatever the body says: one of them twice, or a value with a character that
    is not visible ASCII, space or tab; None if nothing is.

    Read from the raw headers: a folded mapping hides duplicates (which two readers, a gateway and this server,
    would read differently), and its latin-1 reading of a raw UTF-8 or latin-1 value would match the body. The
    spec (basic/transports/streamable-http, "Value Encoding"): header values "must consist of visible ASCII
    characters (0x21-0x7E), space (0x20), and horizontal tab (0x09)", anything else travels as
    ``=?base64?...?=``; "Server Validation" lists "A header value contains invalid characters" as a failure
    (-32020), and "Server Behavior for Custom Headers": "Servers MUST reject requests with a recognized
    ``Mcp-Param-{Name}`` header that contains invalid characters". Every ``Mcp-Param-*`` header is checked here,
    recognized or not (the tool is not known yet): a conforming client encodes every value it sends and sends one
    header per parameter, so this refuses nothing it sends."""
    seen: set[bytes] | None = None  # made at the second header checked (nearly every request has three)
    first = b""
    for name, value in raw_headers:
        if name[:4] not in _MCP_PREFIXES:  # every header checked here starts so; most of a request's do not
            continue
        key = name if name in _ROUTING_HEADER_NAMES else name.lower()
        if key not in _ROUTING_HEADER_NAMES and not key.startswith(_PARAM_PREFIX):
            continue
        if key == first or (seen is not None and key in seen):
            return f"Header mismatch: {key.decode('latin-1')} appears more than once"
        if not first:
            first = key
        else:
            if seen is None:
                seen = {first}
            seen.add(key)
        if value.translate(None, _HEADER_VALUE_BYTES):
            return (
                f"Header mismatch: {key.decode('latin-1')} contains invalid characters (a header value is visible"
                " ASCII, space and tab; send any other value as =?base64?...?=)"
            )
    return None


def _plainly_clean(headers: Mapping[str, str], raw_count: int) -> bool:
    """What ``header_problem`` finds nothing in, told from the request's header mapping without walking the raw
    headers: no header name twice (ASGI names are lower-case, so the mapping has as many as the raw list), no
    ``Mcp-Param-*`` header at all, and routing header values of visible ASCII and space only. False: ask
    ``header_problem``, which decides (and names what is wrong)."""
    if len(headers) != raw_count:
        return False
    names = "\n".join(headers)
    if names.startswith("mcp-param-") or "\nmcp-param-" in names:
        return False
    for name in ROUTING_HEADERS:
        value = headers.get(name)
        if value is not None and not (value.isascii() and value.isprintable()):
            return False
    return True


def routing_problem(scope: Scope, request: HTTPRequest, decoded: Request) -> tuple[int, str] | None:
    """The JSON-RPC error (code, message) for a modern request whose ``_meta`` or routing headers are wrong; None
    if they are right. Header values are compared without surrounding whitespace (RFC 9110 field values)."""
    meta = _meta(decoded)
    if meta is None or PROTOCOL_VERSION_META not in meta or CLIENT_CAPABILITIES_META not in meta:
        missing = [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if meta is None or key not in meta]
        return ErrorCode.INVALID_PARAMS, f"Invalid params: params._meta must carry {' and '.join(missing)}"
    headers = request.headers
    raw = scope["headers"]
    if not _plainly_clean(headers, len(raw)):
        problem = header_problem(raw)
        if problem is not None:
            return HEADER_MISMATCH, problem
    version = headers.get(PROTOCOL_VERSION_HEADER)
    if version is None or version.strip() != meta[PROTOCOL_VERSION_META]:
        what = "is missing" if version is None else f"{version.strip()!r} does not match the body's _meta version"
        return HEADER_MISMATCH, f"Header mismatch: MCP-Protocol-Version {what}"
    method = headers.get(METHOD_HEADER)
    if method is None or method.strip() != decoded.method:
        what = "is missing" if method is None else f"{method.strip()!r} does not match the body's {decoded.method!r}"
        return HEADER_MISMATCH, f"Header mismatch: Mcp-Method {what}"
    param = NAME_PARAMS.get(decoded.method)
    body_value = decoded.params.get(param) if param is not None and isinstance(decoded.params, dict) else None
    if body_value is not None:
        name = headers.get(NAME_HEADER)
        if name is None:
            return HEADER_MISMATCH, f"Header mismatch: Mcp-Name is missing (the body's {param} is {body_value!r})"
        if decode_header_value(name.strip()) != body_value:
            return HEADER_MISMATCH, f"Header mismatch: Mcp-Name {name.strip()!r} does not match the body's {param}"
    return None


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
        "_request",
        "_send",
        "_spawn",
        "_writer",
        "notified",
        "request_id",
        "scope",
        "streams",
    )

    def __init__(
        self, era: ModernEra, handler: ModernHandler, request: Request, scope: Scope, *, streams: bool, listen: bool
    ) -> None:
        self._era, self._handler, self._request, self._listen = era, handler, request, listen
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

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        if self._closed:
            raise anyio.BrokenResourceError("the HTTP exchange of this request is over")
        if not self.streams or (not self._listen and method in _UNRELATED_NOTIFICATIONS):
            return
        self._events().push(Event(encode_frame(notification_message(method, params))))
        if not self.notified:
            self.notified = True
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
            task = running_task()  # looked up once (each look-up of the loop is a system call, for the pid)
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
        cancel = self._cancel
        assert cancel is not None
        try:
            async with DisconnectWatch(receive, self._client_gone, loop):
                with cancel:
                    try:
                        if not self._ended:
                            answer = await self._handler(self._request, self)
                    except Exception:
                        logger.exception("the handler of a modern HTTP request failed")
                if cancel.cancel_called:
                    answer = None  # cancelled (the client went away, or the server ends): a late answer is dropped
        finally:
            if deadline is not None:
                deadline.discard(self)
        if self._gone:
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
    ) -> None:
        if max_listen_streams < 1:
            raise ValueError("max_listen_streams must be at least 1")
        self._handler, self._budget = handler, budget
        self._json_response, self.ping_interval = json_response, ping_interval
        self.max_listen_streams = max_listen_streams
        self.listening = 0  # subscriptions/listen streams open
        self.exchanges: set[ModernExchange] = set()  # requests being answered (listen streams included)

    def close(self) -> None:
        """End every exchange (at shutdown: listen streams would otherwise keep the server from stopping)."""
        for exchange in list(self.exchanges):
            exchange.end()

    def post(self, scope: Scope, request: HTTPRequest, decoded: Any) -> Answer | ModernExchange:
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
        else:
            self._budget.used += 1
        exchange = ModernExchange(
            self, self._handler, decoded, scope, streams=listen or not self._json_response, listen=listen
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
