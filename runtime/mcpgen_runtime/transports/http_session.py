"""One MCP session of the streamable HTTP server, as the ``MessageStream`` its connection handler reads and writes.

Where it sits: created by ``http_server.StreamableHTTPApp`` for each ``Mcp-Session-Id``; the app feeds it the
frames POSTed to that session and routes what the handler sends back (see ``http_server``'s docstring): responses
to the POST that carried the request, other frames to the POST being served (a ``_Channel``) or to the standalone
GET stream.
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
from collections import deque
from collections.abc import Callable, Collection
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..jsonrpc.envelopes import (
    ErrorResponse,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    encode_frame,
    error_response,
    is_request_id,
)

__all__ = ["HTTPSessionStream"]

logger = logging.getLogger(__name__)

# The answer for a request the client cancelled: on this wire a POST's stream ends only with a response, so a
# client that keeps the POST open (the official SDK does) would otherwise wait forever. Same code as the SDK.
REQUEST_CANCELLED: Final = -32800

# The POST whose request the current task is serving (see the module docstring).
_current_channel: contextvars.ContextVar[_Channel | None] = contextvars.ContextVar("mcp_http_channel", default=None)


def _error_body(code: int, message: str, request_id: RequestId | None = None) -> bytes:
    return encode_frame(error_response(request_id, code, message))


class _Channel:
    """The answer side of one POST that carried requests: their responses and, in SSE mode, related messages."""

    def __init__(self, ids: Collection[RequestId], *, sse: bool, batch: bool) -> None:
        self.unanswered: set[RequestId] = set(ids)
        self.sse, self.batch = sse, batch
        # Unbounded: send() must never block, or one slow HTTP client would stall the session's shared send lock.
        self._send, self.frames = anyio.create_memory_object_stream[bytes](math.inf)
        self.open = True

    def push(self, frame: bytes) -> None:
        if self.open:
            self._send.send_nowait(frame)

    def answer(self, request_id: RequestId | None, frame: bytes) -> None:
        self.push(frame)
        if request_id is None:
            self.unanswered.clear()  # an id-less error answers the whole POST (e.g. a rejected batch)
        else:
            self.unanswered.discard(request_id)
        if not self.unanswered:
            self.close()

    def close(self) -> None:
        self.open = False
        self._send.close()


class HTTPSessionStream:
    """One MCP session's ``MessageStream``: POST bodies come out of ``receive``; ``send`` routes to POSTs / GET."""

    def __init__(self, session_id: str, *, backlog: int = 256) -> None:
        self.session_id = session_id
        self.protocol_version: str | None = None  # set once the handler has answered initialize
        self.initialize_id: RequestId | None = None
        # Bounded: a POST waits (backpressure) while the handler is not reading.
        self._in_send, self._in_receive = anyio.create_memory_object_stream[tuple[bytes, _Channel | None]](64)
        self.by_id: dict[RequestId, _Channel] = {}
        self._standalone: MemoryObjectSendStream[bytes] | None = None
        # Server->client messages with no open stream wait here for a GET (bounded; the oldest go first).
        self._backlog: deque[bytes] = deque(maxlen=backlog)
        self.terminated = False
        self._on_terminate: Callable[[HTTPSessionStream], None] | None = None

    # -- MessageStream ---------------------------------------------------------------------------------------------

    async def receive(self) -> bytes:
        try:
            frame, channel = await self._in_receive.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None
        _current_channel.set(channel)
        return frame

    async def send(self, frame: bytes) -> None:
        if self.terminated:
            raise anyio.BrokenResourceError("the HTTP session has ended")
        value = json.loads(frame)
        items = value if isinstance(value, list) else [value]
        for item in items:
            self._route(item, frame if items is not value else encode_frame(item))

    async def aclose(self) -> None:
        self.terminate()

    # -- used by the app -------------------------------------------------------------------------------------------

    async def deliver(self, body: bytes, channel: _Channel | None) -> None:
        """Queue one POST body for ``receive``; ClosedResourceError once the session has ended."""
        await self._in_send.send((body, channel))

    def terminate(self) -> None:
        if self.terminated:
            return
        self.terminated = True
        self._in_send.close()  # the handler's receive drains what was queued, then sees EndOfStream
        for channel in list(self.by_id.values()):
            channel.close()
        self.by_id.clear()
        if self._standalone is not None:
            self._standalone.close()
        if self._on_terminate is not None:
            self._on_terminate(self)

    def cancel_request(self, request_id: object) -> None:
        """The client cancelled a request: end its POST with an error, as the handler will not answer it."""
        channel = self.by_id.pop(request_id, None) if is_request_id(request_id) else None
        if channel is not None:
            assert is_request_id(request_id)
            channel.answer(request_id, _error_body(REQUEST_CANCELLED, "Request cancelled", request_id))

    def abandon(self, channel: _Channel) -> None:
        """The POST is finished or its client went away: later answers to its requests have nowhere to go."""
        channel.close()
        for request_id in [key for key, value in self.by_id.items() if value is channel]:
            del self.by_id[request_id]

    def open_standalone(self) -> tuple[MemoryObjectReceiveStream[bytes], Callable[[], None]] | None:
        """The frames for a new GET stream (backlog first) and its close callback; None while another is open."""
        if self._standalone is not None:
            return None
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._standalone = send
        while self._backlog:
            send.send_nowait(self._backlog.popleft())
        if self.terminated:
            send.close()

        def close() -> None:
            send.close()
            if self._standalone is send:
                self._standalone = None

        return receive, close

    def _route(self, item: Any, frame: bytes) -> None:
        message = classify(item)
        context = _current_channel.get()
        if isinstance(message, Response | ErrorResponse):
            if message.id is None:
                if context is not None and context.open:
                    context.answer(None, frame)
                    self.abandon(context)
                else:
                    self._push_standalone(frame)
                return
            if message.id == self.initialize_id and isinstance(message, Response):
                self.initialize_id = None
                version = message.result.get("protocolVersion") if isinstance(message.result, dict) else None
                self.protocol_version = version if isinstance(version, str) else None
            channel = self.by_id.pop(message.id, None)
            if channel is None:
                # Cancelled, or its client disconnected: the spec forbids responses on the GET stream.
                logger.debug("response to %r dropped: its POST is gone", message.id)
            else:
                channel.answer(message.id, frame)
        elif isinstance(message, Request | Notification) and context is not None and context.sse and context.open:
            context.push(frame)
        else:
            self._push_standalone(frame)

    def _push_standalone(self, frame: bytes) -> None:
        if self._standalone is not None:
            try:
                self._standalone.send_nowait(frame)
                return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._standalone = None
        if len(self._backlog) == self._backlog.maxlen:
            logger.warning("session %s: no GET stream, dropping the oldest queued server message", self.session_id)
        self._backlog.append(frame)
