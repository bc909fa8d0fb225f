"""Server-sent events for the streamable HTTP server: the wire form of an ``http_session.Event`` and the ASGI
response that streams them.

Where it sits: in the ``transports`` layer, between ``http_session`` (which produces ``Event`` s) and
``http_server`` (which answers POSTs and GETs with ``SSEResponse`` s). starlette-free: plain ASGI.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.types import Receive, Scope, Send

from .http_session import Event

__all__ = ["SSE", "SSEResponse", "sse_bytes", "sse_event"]

logger = logging.getLogger(__name__)

SSE: Final = "text/event-stream"


def sse_event(frame: bytes, event_id: str | None = None) -> bytes:
    """One JSON-RPC frame as an SSE ``message`` event (with its id, if it has one)."""
    # Our encoder never emits a raw newline, but a handler's frame might: SSE needs one "data:" line per line.
    lines = frame.replace(b"\r\n", b"\n").split(b"\n")
    head = b"event: message\n" + (b"id: " + event_id.encode() + b"\n" if event_id is not None else b"")
    return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


def sse_bytes(event: Event) -> bytes:
    """An ``Event`` on the wire: a message, a priming event (an id and empty data: the client keeps the id as its
    ``Last-Event-ID``), or only a ``retry`` field (no data: clients take the field and dispatch nothing)."""
    retry = b"retry: %d\n" % event.retry_ms if event.retry_ms is not None else b""
    if event.frame is not None:
        return retry + sse_event(event.frame, event.event_id)
    if event.event_id is not None:
        return b"id: " + event.event_id.encode() + b"\n" + retry + b"data: \n\n"
    return retry + b"\n"


class SSEResponse:
    """An SSE response: ``prelude`` first (replayed events), then ``events`` until that stream ends (skipping those
    whose ids are in ``skip``: already in the prelude), pinging while idle. ``on_close(client_gone)`` is awaited at
    the end, shielded; ``client_gone`` says whether the client went away before the stream ended."""

    def __init__(
        self,
        events: MemoryObjectReceiveStream[Event],
        headers: Mapping[str, str],
        ping_interval: float,
        on_close: Callable[[bool], Awaitable[None]] | None = None,
        *,
        prelude: Sequence[Event] = (),
        skip: Collection[str] = (),
    ) -> None:
        self._events, self._headers, self._ping_interval, self._on_close = events, headers, ping_interval, on_close
        self._prelude, self._skip = prelude, skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", SSE.encode()), (b"cache-control", b"no-cache, no-transform")]
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self._headers.items()]
        client_gone = False
        try:
            async with anyio.create_task_group() as tg:

                async def watch_disconnect() -> None:
                    nonlocal client_gone
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    client_gone = True
                    tg.cancel_scope.cancel()

                tg.start_soon(watch_disconnect)
                try:
                    await self._stream(send, headers)
                except OSError:  # a server whose send raises once the client is gone (uvicorn's returns quietly)
                    client_gone = True
                    logger.debug("SSE client went away", exc_info=True)
                tg.cancel_scope.cancel()
        finally:
            self._events.close()
            if self._on_close is not None:
                with anyio.CancelScope(shield=True):
                    await self._on_close(client_gone)

    async def _stream(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for event in self._prelude:
            await send({"type": "http.response.body", "body": sse_bytes(event), "more_body": True})
        async with self._events:
            while True:
                chunk = b": ping\n\n"  # a comment: keeps proxies from timing the stream out
                with anyio.move_on_after(self._ping_interval):
                    try:
                        event = await self._events.receive()
                    except anyio.EndOfStream:
                        break
                    if event.event_id is not None and event.event_id in self._skip:
                        continue
                    chunk = sse_bytes(event)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
