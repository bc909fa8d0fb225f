"""The receiving side of the streamable HTTP client: every message the server sends, on any POST's answer or the GET
stream, goes through the ``Inbox`` on its way to ``HTTPClientStream.receive``.

Where it sits: in ``transports.http.client``, owned by ``stream.HTTPClientStream``, which hands it each JSON body and
SSE message it reads; no httpx2 here. The inbox knows which requests still wait for an answer (per POST: an answer
may come on any stream), and so:

- passes well-formed messages on, one frame per message (a batch of answers is split: the session would refuse an
  array of responses), noting the ``protocolVersion`` of an ``initialize`` answer before the frame goes on (the
  session's next message must carry ``MCP-Protocol-Version`` already);
- fails a request whose answer cannot be delivered (not JSON, an object with its id but neither ``result`` nor
  ``error``) at once, with ``undeliverable.undeliverable_frame``; damage that names no id fails every request of
  the POST it came on;
- answers what is left unanswered when a POST ends (``fail_unanswered``), so the session never waits for an answer
  that cannot come.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any, Final

import anyio

from ....jsonrpc.envelopes import (
    ErrorResponse,
    RequestId,
    Response,
    classify,
    encode_frame,
    error_response,
    strict_loads,
)
from ...undeliverable import incomplete, malformed, undeliverable_frame

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Failure", "Inbox"]

logger = logging.getLogger(__name__)

# The largest JSON body or SSE event the HTTP client accepts as one message (the stdio transport has its own limit).
DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
# (code, message) or (code, message, data): the error response an unanswered request gets.
Failure = tuple[int, str] | tuple[int, str, Any]


class Inbox:
    """The messages on their way to ``receive``, and the requests still waiting for theirs."""

    def __init__(self) -> None:
        # Unbounded: the HTTP readers must never wait on the session (it may be busy sending on our POST lock).
        self._send, self._receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._initialize_ids: set[RequestId] = set()
        # Each request in flight -> the set of its POST's unanswered ids (an answer may come on any stream).
        self._waiting: dict[RequestId, set[RequestId]] = {}
        self.protocol_version: str | None = None  # from the answer to initialize

    async def receive(self) -> bytes:
        try:
            return await self._receive.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    def close(self) -> None:
        """No more messages: ``receive`` ends (the session notices the connection is gone)."""
        self._send.close()

    def expect(self, ids: list[RequestId], initialize: list[RequestId]) -> set[RequestId]:
        """The requests of one POST are on their way: the set of its ids still unanswered (emptied as they are
        answered). ``initialize`` are those whose answer names the protocol version."""
        self._initialize_ids.update(initialize)
        remaining = set(ids)
        for request_id in ids:
            self._waiting[request_id] = remaining
        return remaining

    def forget(self, ids: list[RequestId], remaining: set[RequestId]) -> None:
        """The POST of ``ids`` is over: its answers are no longer waited for there."""
        for request_id in ids:
            if self._waiting.get(request_id) is remaining:
                del self._waiting[request_id]

    def fail_unanswered(self, remaining: set[RequestId], failure: Failure) -> None:
        """Answer every id still in ``remaining`` with ``failure``: the session must not wait for what cannot come."""
        for request_id in list(remaining):  # a copy: answering discards from `remaining`
            remaining.discard(request_id)
            error = error_response(request_id, *failure)
            self.pass_on(encode_frame(error), error)

    def fail(self, ids: set[RequestId], reason: str) -> None:
        """Fail requests whose answer arrived but cannot be delivered, at once."""
        for request_id in list(ids):
            logger.warning("the answer to request %r cannot be delivered: %s", request_id, reason)
            self._answered(request_id)
            ids.discard(request_id)
            frame = undeliverable_frame(request_id, reason)
            self.pass_on(frame, json.loads(frame))

    def _answered(self, request_id: RequestId) -> None:
        remaining = self._waiting.pop(request_id, None)
        if remaining is not None:
            remaining.discard(request_id)

    def deliver(self, data: bytes, remaining: set[RequestId] | None) -> None:
        """Pass one answer body / SSE message on to ``receive``, or fail the requests it cannot answer. ``remaining``
        is the unanswered ids of the request stream it came on (None: the standalone GET stream)."""
        value: Any = None
        try:
            value = strict_loads(data)
        except (ValueError, RecursionError):
            verdict = malformed(data)
        else:
            verdict = incomplete(value)
        if verdict is None:
            self.pass_on(data, value)
            return
        target = verdict.request_id
        if target is not None and target in self._waiting:
            self.fail({target}, verdict.reason)
        elif verdict.malformed and remaining:
            # Damage with no readable id, on the stream that carries these requests' answers: any of them.
            self.fail(remaining, verdict.reason)
        elif verdict.malformed:
            logger.warning("dropping a malformed message from the server: %r", data[:200])
        else:
            self.pass_on(data, value)  # an id nobody waits for: the session answers it as an invalid request

    def pass_on(self, data: bytes, value: Any = None) -> None:
        """One frame per message (batches are split: the session would refuse an array of responses). ``value`` is
        ``data`` parsed, when it parsed (else the frame goes on as it is, for the session to answer)."""
        items = value if isinstance(value, list) and value else [value]
        for item in items:
            message = classify(item)
            if isinstance(message, Response | ErrorResponse) and message.id is not None:
                self._answered(message.id)
                if message.id in self._initialize_ids and isinstance(message, Response):
                    self._initialize_ids.discard(message.id)
                    version = message.result.get("protocolVersion") if isinstance(message.result, dict) else None
                    # Before the frame is passed on: the session's next message must carry the header already.
                    self.protocol_version = version if isinstance(version, str) else None
            try:
                self._send.send_nowait(data if item is value else encode_frame(item))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
