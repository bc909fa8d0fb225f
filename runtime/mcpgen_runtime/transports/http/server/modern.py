"""The stateless era (MCP 2026-07-28) of the streamable HTTP server: one POST, one request, nothing kept.

Where it sits: in the ``transports`` layer, a part of ``http_server.StreamableHTTPApp``, which routes here every
POST of that era (``is_modern``) and answers GET and DELETE of it with 405; the handshake era's sessions are
``http_handshake``. The same connection handler serves both: each modern POST becomes a ``OneShotStream`` (a
``MessageStream`` whose only incoming frame is the POST's request) handed to the handler, which answers the one
request (the server layer knows the era from the request's ``_meta``). When the answer is out the stream ends, and
with it the handler's connection: no session, no event ids, nothing to resume, so any worker can answer any request.

What the transport checks before the handler sees the request (spec basic/transports/streamable-http, "Request
Metadata" and "Server Validation"), in the official SDK's order: one request or notification per body; the
``_meta`` fields the era needs (-32602); ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` present, once,
and equal to the body (-32020 HeaderMismatch). The version's support (-32022), the method (-32601), the client's
capabilities and the ``Mcp-Param-*`` headers are the server layer's (it sees the headers: ``current_http_scope``).
Whoever answers an error, ``HTTP_STATUS_OF_ERROR`` gives its HTTP status.

The answer: JSON when the handler answers without sending a notification first; an SSE stream (no ids) when it
sends one (progress, log messages) or is still silent after ``ping_interval`` (so that pings keep proxies from
timing it out), if the app streams at all (not ``json_response``). ``subscriptions/listen`` is always a stream: it
lasts until the client goes away (which cancels the handler, as closing any response stream does) or the server
shuts down. A notification POST is answered 202 and dropped: this era defines no client notification over HTTP
(``notifications/cancelled`` is closing the stream), and a stateless server has no request of another POST to act on.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
from starlette.types import Receive, Scope, Send

from ....jsonrpc.envelopes import ErrorCode, Notification, Request, RequestId, encode_frame, error_response
from ....jsonrpc.streams import MessageStream
from .asgi import JSON, Answer, DisconnectWatch, HTTPRequest, accepts
from .session import Channel, Event, InFlightBudget, serve_http_scope
from .sse import SSEResponse

__all__ = [
    "DEFAULT_MAX_LISTEN_STREAMS",
    "HANDSHAKE_ERA_VERSIONS",
    "HEADER_MISMATCH",
    "HTTP_STATUS_OF_ERROR",
    "ModernEra",
    "ModernExchange",
    "OneShotStream",
    "decode_header_value",
    "is_modern",
    "routing_problem",
]

logger = logging.getLogger(__name__)

# Every version of the handshake era (whose requests carry no per-request ``_meta`` version): an
# ``MCP-Protocol-Version`` header naming another value is a request of the stateless era, as the official SDK routes.
HANDSHAKE_ERA_VERSIONS: Final = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
ROUTING_HEADERS: Final = frozenset({PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER})
# The methods whose ``Mcp-Name`` header mirrors a parameter, and that parameter.
NAME_PARAMS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
LISTEN_METHOD: Final = "subscriptions/listen"

# MCP 2026-07-28 error codes (schema: HeaderMismatchError, MissingRequiredClientCapabilityError,
# UnsupportedProtocolVersionError).
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
TOO_MANY_REQUESTS_IN_FLIGHT: Final = -32810  # as http_handshake's (the same refusal in both eras)
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
# How long, after its answer went out, the connection handler of a request may take to end before it is cancelled.
_HANDLER_EXIT_TIMEOUT: Final = 5.0
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
_BASE64_SENTINEL: Final = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_SSE_EXTRA_HEADERS: Final = {"X-Accel-Buffering": "no"}  # spec: proxies must not buffer the stream


def _meta(message: Request | Notification) -> Mapping[str, Any] | None:
    params = message.params
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def is_modern(request: HTTPRequest, decoded: Any) -> bool:
    """Whether a POST that belongs to no live session is of the stateless era: its ``MCP-Protocol-Version`` names
    no handshake-era version (the session id it may carry is ignored, as the spec says), or, without a session id,
    its request carries the ``_meta`` protocol version (whatever the header says: it is then told it mismatches)."""
    version = request.headers.get(PROTOCOL_VERSION_HEADER)
    if version is not None and version.strip() not in HANDSHAKE_ERA_VERSIONS:
        return True
    if "mcp-session-id" in request.headers:
        return False
    if not isinstance(decoded, Request | Notification) or decoded.method == "initialize":
        return False
    meta = _meta(decoded)
    return meta is not None and PROTOCOL_VERSION_META in meta


def decode_header_value(value: str) -> str | None:
    """A header value as the client meant it: ``=?base64?...?=`` decoded (spec "Value Encoding"), others as they
    are; None for a malformed sentinel (bad or non-canonical base64, bad UTF-8), so that it matches nothing."""
    match = _BASE64_SENTINEL.fullmatch(value)
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


def routing_problem(scope: Scope, request: HTTPRequest, decoded: Request) -> tuple[int, str] | None:
    """The JSON-RPC error (code, message) for a modern request whose ``_meta`` or routing headers are wrong; None
    if they are right. Header values are compared without surrounding whitespace (RFC 9110 field values)."""
    meta = _meta(decoded)
    missing = [key for key in (PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META) if meta is None or key not in meta]
    if missing:
        return ErrorCode.INVALID_PARAMS, f"Invalid params: params._meta must carry {' and '.join(missing)}"
    assert meta is not None
    seen: set[bytes] = set()
    for name, _ in scope["headers"]:  # a folded mapping hides duplicates, which two readers would read differently
        key = name.lower()
        if key.decode("latin-1") in ROUTING_HEADERS:
            if key in seen:
                return HEADER_MISMATCH, f"Header mismatch: {key.decode('latin-1')} appears more than once"
            seen.add(key)
    headers = request.headers
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


class OneShotStream:
    """The ``MessageStream`` of one modern request: ``receive`` gives the POST's body once, then ends (EndOfStream)
    when the answer has been sent or the exchange is over; what the handler sends goes to ``channel``: notifications
    (when ``streams``) and then the answer, which closes it. There is no way back to the client in this era: a
    server->client request fails at once (the server layer uses input requests instead, MRTR)."""

    def __init__(self, body: bytes, request: Request, scope: Scope, *, streams: bool, listen: bool) -> None:
        self._body: bytes | None = body
        self.request_id: RequestId = request.id
        self.channel = Channel()
        self.answer: dict[str, Any] | None = None  # the response, once sent
        self.notified = False  # a notification went to the channel before the answer
        self.streams, self._listen = streams, listen
        self._over = anyio.Event()
        self._scope = scope

    async def receive(self) -> bytes:
        if self._body is not None:
            body, self._body = self._body, None
            serve_http_scope(self._scope)  # what current_http_scope (so Context.headers) reads in the handler
            return body
        await self._over.wait()
        raise anyio.EndOfStream

    async def send(self, frame: bytes) -> None:
        await self.send_message(frame, json.loads(frame))

    async def send_message(self, frame: bytes, message: Any) -> None:
        if self._over.is_set():
            raise anyio.BrokenResourceError("the HTTP exchange of this request is over")
        if not isinstance(message, dict):  # a batch: never an answer to the one request this stream carried
            logger.warning("dropped a batch sent on the stream of a single stateless request")
            return
        if "method" not in message:
            if message.get("id") in (self.request_id, None):  # id None: an error answering the whole body
                self.answer = message
                self.channel.push(Event(frame))
                self.end()
            return
        if "id" in message:
            raise anyio.BrokenResourceError(f"no server->client requests in a stateless exchange ({message['method']})")
        if not self.streams or (not self._listen and message["method"] in _UNRELATED_NOTIFICATIONS):
            return
        self.notified = True
        self.channel.push(Event(frame))

    def end(self) -> None:
        """The exchange is over: the handler's stream ends, and the response after what is queued."""
        self._over.set()
        self.channel.close()

    async def aclose(self) -> None:
        self.end()


def _json_answer(message: dict[str, Any], frame: bytes) -> Answer:
    error = message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    status = HTTP_STATUS_OF_ERROR.get(code, 200) if isinstance(code, int) else 200
    headers = {"Retry-After": "1"} if status == 503 else None
    return Answer(frame, status, headers, media_type=JSON)


class ModernExchange:
    """The ASGI response to one modern request POST: runs the connection handler on a ``OneShotStream`` in this
    HTTP request's task and answers (JSON or SSE: see the module docstring). ``on_end`` is called once when it is
    over (the app's bookkeeping: in-flight count, open listen streams)."""

    def __init__(
        self,
        handler: Callable[[MessageStream], Awaitable[None]],
        stream: OneShotStream,
        *,
        ping_interval: float,
        on_end: Callable[[], None],
    ) -> None:
        self._handler, self.stream, self._ping_interval, self._on_end = handler, stream, ping_interval, on_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream, channel = self.stream, self.stream.channel
        handler_done = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:

                async def serve() -> None:
                    try:
                        await self._handler(stream)
                    except Exception:
                        logger.exception("connection handler of a stateless HTTP request failed")
                    finally:
                        handler_done.set()
                        stream.end()  # a handler that returned without answering: the response ends unanswered

                async def client_gone() -> None:
                    tg.cancel_scope.cancel()  # closing the response stream cancels the request (spec)

                tg.start_soon(serve)
                async with DisconnectWatch(receive, client_gone) as watch:
                    # Until the first notification or the answer (or, streaming, until a ping is due).
                    with anyio.move_on_after(self._ping_interval if stream.streams else None):
                        await channel.wait()  # (the client's going away cancels it, with the whole task group)
                if watch.gone:
                    return
                if not stream.notified and channel.closed:
                    events = channel.take()
                    if stream.answer is None or not events or events[-1].frame is None:
                        error = error_response(stream.request_id, ErrorCode.INTERNAL_ERROR, "the server did not answer")
                        await Answer(encode_frame(error), 500, media_type=JSON)(scope, receive, send)
                    else:
                        await _json_answer(stream.answer, events[-1].frame)(scope, receive, send)
                else:

                    async def on_close(gone: bool) -> None:
                        if gone:
                            tg.cancel_scope.cancel()

                    await SSEResponse(channel, _SSE_EXTRA_HEADERS, self._ping_interval, on_close)(scope, receive, send)
                # Answered: the handler sees the end of its stream and returns. Ended unanswered (a listen stream
                # at shutdown): its request is cancelled at once, as when the client closes the stream.
                stream.end()
                if stream.answer is not None:
                    with anyio.move_on_after(_HANDLER_EXIT_TIMEOUT):
                        await handler_done.wait()
                tg.cancel_scope.cancel()
        finally:
            stream.end()
            self._on_end()


class ModernEra:
    """The stateless era's part of ``StreamableHTTPApp``: the exchanges in progress and their limits."""

    def __init__(
        self,
        handler: Callable[[MessageStream], Awaitable[None]],
        budget: InFlightBudget,
        *,
        json_response: bool,
        ping_interval: float,
        max_listen_streams: int,
    ) -> None:
        if max_listen_streams < 1:
            raise ValueError("max_listen_streams must be at least 1")
        self._handler, self._budget = handler, budget
        self._json_response, self._ping_interval = json_response, ping_interval
        self.max_listen_streams = max_listen_streams
        self.listening = 0  # subscriptions/listen streams open
        self.exchanges: set[ModernExchange] = set()  # requests being answered (listen streams included)

    def close(self) -> None:
        """End every exchange (at shutdown: listen streams would otherwise keep the server from stopping)."""
        for exchange in list(self.exchanges):
            exchange.stream.end()

    def post(self, scope: Scope, request: HTTPRequest, body: bytes, decoded: Any) -> Answer | ModernExchange:
        """The answer to a modern POST whose body is one well-formed JSON-RPC message (``decoded``)."""
        if isinstance(decoded, Notification):
            return Answer(status=202)  # accepted and dropped (see the module docstring)
        if not isinstance(decoded, Request):
            message = "Invalid Request: the body must be one JSON-RPC request or notification"
            return _error(400, ErrorCode.INVALID_REQUEST, message, getattr(decoded, "id", None))
        listen = decoded.method == LISTEN_METHOD
        wants_sse = accepts(request.headers.get("accept", ""))[1]
        if listen and not wants_sse:
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
        streams = listen or not self._json_response
        stream = OneShotStream(body, decoded, scope, streams=streams, listen=listen)

        def on_end() -> None:
            self.exchanges.discard(exchange)
            if listen:
                self.listening -= 1
            else:
                self._budget.used -= 1

        exchange = ModernExchange(self._handler, stream, ping_interval=self._ping_interval, on_end=on_end)
        self.exchanges.add(exchange)
        return exchange


def _error(
    status: int, code: int, message: str, request_id: Any = None, headers: dict[str, str] | None = None
) -> Answer:
    return Answer(encode_frame(error_response(request_id, code, message)), status, headers, media_type=JSON)
