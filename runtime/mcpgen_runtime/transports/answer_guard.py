"""``AnswerGuard``: a ``MessageStream`` wrapper that fails a waiting request at once when the peer's answer to it
cannot be delivered, for the streams that do not judge answers themselves (stdio, in-memory).

Where it sits: in the ``transports`` layer, on top of any ``jsonrpc.streams.MessageStream``; ``client.Client.connect``
wraps the stream in it (``connect_http`` does not: the HTTP client stream judges its answers itself). The error it
hands the session in place of such an answer is ``undeliverable.undeliverable_frame``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..jsonrpc.envelopes import Notification, RequestId, decode_frame, is_request_id, strict_loads
from ..jsonrpc.streams import FrameSink, MessageStream, stream_extras
from .frame_head import ANSWER_KEYS, scan_head
from .undeliverable import undeliverable_frame

__all__ = ["AnswerGuard"]

logger = logging.getLogger(__name__)


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
        params = decoded.params if isinstance(decoded, Notification) else None
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
        if not ANSWER_KEYS & value.keys():
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
