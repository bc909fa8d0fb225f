"""What a client transport does when an answer cannot be delivered as sent, and how it resumes an SSE stream.

Where it sits: in the ``transports`` layer, beside the transports it serves; it needs only ``jsonrpc.envelopes`` and
``jsonrpc.streams`` (no httpx2, so that a stdio client can use it). ``http_client`` judges every message of a
request's answer with ``malformed`` / ``incomplete`` and resumes closed SSE streams under an ``SSEReconnect`` policy;
``client.Client`` wraps every other stream (stdio, in-memory) in an ``AnswerGuard``.

Why: ``jsonrpc.session.Session`` resolves a waiting request only from a well-formed response. An answer that is not
JSON, is over a transport's limit, or is an object with the request's ``id`` but neither ``result`` nor ``error``
would leave the call waiting for its timeout (or forever). Where the request it answers is known, the transport
fails that request at once instead, with an error response whose ``data`` carries this process's
``UNDELIVERABLE_MARKER`` (a random token a server cannot forge), which ``undeliverable_reason`` recognises and the
typed client turns into ``MalformedResponseError``.
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
from dataclasses import dataclass
from typing import Any, Final

from ..jsonrpc.envelopes import (
    ErrorCode,
    JSONRPCError,
    RequestId,
    decode_frame,
    encode_frame,
    error_response,
    is_request_id,
)
from ..jsonrpc.envelopes import Notification as _Notification
from ..jsonrpc.streams import FrameSink, MessageStream, stream_extras

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "UNDELIVERABLE_MARKER",
    "AnswerGuard",
    "Head",
    "SSEReconnect",
    "Undeliverable",
    "incomplete",
    "malformed",
    "scan_head",
    "strict_loads",
    "undeliverable_frame",
    "undeliverable_reason",
]

logger = logging.getLogger(__name__)

# The largest JSON body or SSE event the HTTP client accepts as one message (the stdio transport has its own limit).
DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
UNDELIVERABLE_MARKER: Final = secrets.token_hex(16)
_MARKER_KEY: Final = "mcpgenUndeliverable"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_ANSWER_KEYS: Final = frozenset({"result", "error"})
_HEAD_BYTES: Final = 65536


# -- failing a request at once ------------------------------------------------------------------------------------


def undeliverable_frame(request_id: RequestId, reason: str, code: int = ErrorCode.INTERNAL_ERROR) -> bytes:
    """An error response for ``request_id`` that says its answer arrived but could not be delivered."""
    data = {_MARKER_KEY: UNDELIVERABLE_MARKER, "reason": reason}
    return encode_frame(error_response(request_id, code, f"Undeliverable response: {reason}", data))


def undeliverable_reason(error: JSONRPCError) -> str | None:
    """The reason, if ``error`` is one of our own ``undeliverable_frame`` errors (not something the server sent)."""
    data = error.data
    if isinstance(data, dict) and data.get(_MARKER_KEY) == UNDELIVERABLE_MARKER:
        reason = data.get("reason")
        return reason if isinstance(reason, str) else "undeliverable response"
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number out of range")
    return value


# Made once: json.loads with options builds a new decoder on every call.
_STRICT_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_parse_float)


def strict_loads(data: bytes | str) -> Any:
    """JSON as ``jsonrpc.envelopes.decode_frame`` reads it (UTF-8 only; no NaN, Infinity or overflowing numbers), so
    that what passes here also parses for the session. Raises ``ValueError`` or ``RecursionError``."""
    text = data if isinstance(data, str) else data.decode("utf-8")
    return _STRICT_DECODER.decode(text)


# -- reading the head of a frame that may not parse ----------------------------------------------------------------


@dataclass(slots=True)
class Head:
    """The top-level members at the start of a JSON object, read up to the first ``method``, ``result`` or
    ``error`` key (whose value is not read) or the first damage."""

    id: RequestId | None = None  # a usable id member (string or integer)
    method: str | None = None  # the method name, when a "method" key came first
    is_request: bool = False  # a "method" key came before any result/error key: a request or a notification
    is_answer: bool = False  # a "result" or "error" key came before any method key
    complete: bool = False  # the whole object was read (and nothing but whitespace follows it)
    broken: bool = False  # the JSON is damaged before any of the above was decided


def scan_head(data: bytes | str) -> Head | None:
    """Read the top-level members of a frame that starts as a JSON object, without parsing what follows the first
    ``method``/``result``/``error`` key; None when the frame is not an object at all (a batch, or garbage).

    Cheap for well-formed messages (their envelope keys come first), and the one way to recover the id of a
    response whose ``result`` is damaged: an ``id`` member at the top level, before the damage, is that message's id.
    """
    if isinstance(data, bytes) and len(data) > _HEAD_BYTES:
        # The envelope keys come first in practice: read a prefix, and the whole frame only when the cut may matter.
        head = _scan(data[:_HEAD_BYTES].decode("utf-8", errors="replace"))
        if head is None or not (head.broken or head.complete):
            return head
    return _scan(data if isinstance(data, str) else data.decode("utf-8", errors="replace"))


def _scan(text: str) -> Head | None:
    end = len(text)
    position = _skip(text, 0)
    if position >= end or text[position] != "{":
        return None
    head = Head()
    position += 1
    first = True
    while True:
        position = _skip(text, position)
        if position < end and text[position] == "}" and first:
            head.complete = _skip(text, position + 1) == end
            head.broken = not head.complete
            return head
        try:
            key, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            head.broken = True
            return head
        position = _skip(text, position)
        if not isinstance(key, str) or position >= end or text[position] != ":":
            head.broken = True
            return head
        position = _skip(text, position + 1)
        if key in _ANSWER_KEYS:
            head.is_answer = True
            return head
        try:
            value, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            head.is_request = key == "method"
            head.broken = True
            return head
        if key == "method":
            head.is_request = True
            head.method = value if isinstance(value, str) else None
            return head
        if key == "id":
            head.id = value if is_request_id(value) else None
        position = _skip(text, position)
        if position < end and text[position] == ",":
            position += 1
            first = False
            continue
        if position < end and text[position] == "}":
            head.complete = _skip(text, position + 1) == end
            head.broken = not head.complete
            return head
        head.broken = True
        return head


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


@dataclass(frozen=True, slots=True)
class Undeliverable:
    """Why a message cannot be delivered; ``request_id`` is the request it answers, when that could be read."""

    reason: str
    request_id: RequestId | None = None
    malformed: bool = True  # not JSON at all (else: an object with an id but neither result nor error)


def malformed(data: bytes) -> Undeliverable | None:
    """Judge a message that does not parse (``strict_loads`` raised): None when its head shows a request or a
    notification (the session answers those with a parse error), else why it cannot be delivered and, when its head
    names one, the request it answers."""
    head = scan_head(data)
    if head is not None and head.is_request:
        return None
    return Undeliverable("malformed JSON", head.id if head is not None else None)


def incomplete(value: Any) -> Undeliverable | None:
    """Judge a parsed message: an object with a request id but neither ``result``, ``error`` nor ``method`` answers
    that request with nothing (the session would take it for a request without a method, and wait on)."""
    if (
        isinstance(value, dict)
        and is_request_id(value.get("id"))
        and "method" not in value
        and not _ANSWER_KEYS & value.keys()
    ):
        return Undeliverable('an object with an "id" but neither "result" nor "error"', value["id"], malformed=False)
    return None


# -- a guard for streams that do not judge answers themselves (stdio, in-memory) ------------------------------------


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What ``AnswerGuard`` makes of one incoming frame: the frame and JSON value the session gets, the request in
    flight it answers (None: none), and for an answer that cannot be delivered, why, and the frame as received."""

    frame: bytes
    value: Any
    answered: RequestId | None = None
    problem: str | None = None
    received: bytes = b""


class AnswerGuard:
    """A ``MessageStream`` wrapper that fails a waiting request at once when the peer's answer to it cannot be
    delivered: damaged JSON whose top-level ``id`` (read before the damage, with no ``method`` before it) is one of
    the requests in flight, or an object with such an id and neither ``result`` nor ``error``.

    It watches the requests going out (their ids) and the answers and ``notifications/cancelled`` that end them.
    Frames are inspected only while a request is in flight, and then only their head, except answers to those
    requests, which are parsed once more to see that they will parse for the session.

    What it cannot do: a frame the transport dropped for being over its size limit (``FrameTooLarge``) never reaches
    it, so which request it answered is unknown (it is passed on, and the session answers the peer); nor can it
    attribute garbage that has no readable id. Those calls end at their timeout.
    """

    def __init__(self, inner: MessageStream) -> None:
        self.inner = inner
        self._in_flight: set[RequestId] = set()
        self._inner_send_message = stream_extras(inner)[1]

    async def send(self, frame: bytes) -> None:
        head = scan_head(frame)
        if head is not None and head.method is not None:
            if head.id is not None:
                self._in_flight.add(head.id)
            elif head.method == "notifications/cancelled":
                self._forget_cancelled(frame)
        await self.inner.send(frame)

    async def send_message(self, frame: bytes, message: Any) -> None:
        """``send`` for a sender that has the message ``frame`` encodes (a ``Session``: see ``streams.Dispatcher``),
        which is read instead of the frame's head."""
        if not isinstance(message, dict):
            await self.send(frame)
            return
        method = message.get("method")
        if isinstance(method, str):
            request_id = message.get("id")
            if is_request_id(request_id):
                self._in_flight.add(request_id)
            elif method == "notifications/cancelled":
                self._forget_cancelled(frame)
        if self._inner_send_message is not None:
            await self._inner_send_message(frame, message)
        else:
            await self.inner.send(frame)

    def _forget_cancelled(self, frame: bytes) -> None:
        decoded = decode_frame(frame)
        params = decoded.params if isinstance(decoded, _Notification) else None
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if is_request_id(request_id):
            self._in_flight.discard(request_id)

    async def receive(self) -> bytes:
        return (await self.receive_parsed())[0]

    async def receive_parsed(self) -> tuple[bytes, Any]:
        """``receive``, with the frame's JSON value when it was parsed here (``jsonrpc.streams.ParsedReceiver``):
        the session then does not parse it again. None as the value: not parsed."""
        verdict = self._judge(await self.inner.receive(), None)
        self._settle(verdict)
        return verdict.frame, verdict.value

    def set_frame_sink(self, sink: FrameSink | None) -> None:
        """``jsonrpc.streams.FrameSink``, passed through to the inner stream when it takes one: each frame is judged
        as ``receive_parsed`` judges it before the sink sees it. A frame the sink refuses comes back through
        ``receive_parsed`` and is judged again, so the request it answers is forgotten only once it is delivered."""
        inner_set = getattr(self.inner, "set_frame_sink", None)
        if inner_set is None:
            return
        if sink is None:
            inner_set(None)
            return

        def judged(frame: bytes, value: Any) -> bool:
            verdict = self._judge(frame, value)
            if not sink(verdict.frame, verdict.value):
                return False
            self._settle(verdict)
            return True

        inner_set(judged)

    def _judge(self, frame: bytes, value: Any) -> _Verdict:
        """What the session gets for ``frame`` (``value``: its JSON when the stream parsed it already, else None),
        and which request in flight it ends; nothing is changed here (see ``_settle``)."""
        if not self._in_flight:
            return _Verdict(frame, value)
        # The usual frame parses: one parse (as strict as the session's) tells all. Only damage needs scan_head.
        if value is None:
            try:
                value = strict_loads(frame)
            except (ValueError, RecursionError):
                return self._judge_damaged(frame)
        request_id = value.get("id") if isinstance(value, dict) and "method" not in value else None
        if not is_request_id(request_id) or request_id not in self._in_flight:
            return _Verdict(frame, value)
        if not _ANSWER_KEYS & value.keys():
            reason = 'an object with an "id" but neither "result" nor "error"'
            return _Verdict(undeliverable_frame(request_id, reason), None, request_id, reason, frame)
        return _Verdict(frame, value, request_id)

    def _judge_damaged(self, frame: bytes) -> _Verdict:
        """A frame that does not parse: fails the request it answers, if its head names one in flight."""
        head = scan_head(frame)
        if head is None or head.is_request or head.id is None or head.id not in self._in_flight:
            return _Verdict(frame, None)
        if head.is_answer or not head.complete:
            reason = "malformed JSON"
        else:
            reason = 'an object with an "id" but neither "result" nor "error"'
        return _Verdict(undeliverable_frame(head.id, reason), None, head.id, reason, frame)

    def _settle(self, verdict: _Verdict) -> None:
        """The frame of ``verdict`` was delivered: the request it answers is no longer in flight."""
        if verdict.answered is None:
            return
        self._in_flight.discard(verdict.answered)
        if verdict.problem is not None:
            logger.warning(
                "the answer to request %r cannot be delivered (%s): %r",
                verdict.answered,
                verdict.problem,
                verdict.received[:200],
            )

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- resuming SSE streams -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SSEReconnect:
    """How the HTTP client resumes an SSE stream the server closed before it was done (MCP 2025-11-25,
    "Resumability and Redelivery"): after the delay the server's ``retry:`` field asks for, it GETs the endpoint with
    ``Last-Event-ID``, for a request's answer and for the standalone GET stream alike.

    - ``default_delay`` (seconds) when the server sent no ``retry:``; the server's value is obeyed but capped at
      ``max_delay``, so that a ``retry:`` of an hour cannot stall a call.
    - ``max_failures``: reconnections in a row that fail outright (connection error, an HTTP error status) before
      the stream is given up.
    - ``max_reconnects``: reconnections in a row that deliver no JSON-RPC message, failed ones included (a server
      may legitimately close each poll after a priming event; one that does so forever, even with ``retry: 0``,
      stops here). Each message delivered starts the count again.

    A request's stream that cannot be resumed (no event id was ever sent, or either limit is reached) fails the
    request with -32000; its own timeout bounds the whole wait in any case.
    """

    default_delay: float = 1.0
    max_delay: float = 30.0
    max_failures: int = 3
    max_reconnects: int = 100

    def delay(self, retry_ms: int | None) -> float:
        """Seconds to wait before the next reconnection, given the last ``retry:`` (milliseconds) the server sent."""
        if retry_ms is None:
            return min(self.default_delay, self.max_delay)
        return min(max(retry_ms, 0) / 1000, self.max_delay)
