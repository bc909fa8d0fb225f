"""Server-sent events for the streamable HTTP server: the wire form of an ``channel.Event`` and the ASGI
response that streams them.

Where it sits: in the ``transports`` layer, between ``session`` (which produces ``Event`` s) and
``app`` (which answers POSTs and GETs with ``SSEResponse`` s). starlette-free: plain ASGI.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Final

import anyio
from starlette.types import Receive, Scope, Send

from .asgi import SSE, Answer, DelayedCalls, DisconnectWatch
from .session import Channel, Event

__all__ = ["SSE", "InlineSSE", "SSEResponse", "sse_bytes", "sse_event"]

logger = logging.getLogger(__name__)

# How long the handler of an SSE request running in the request's own task (InlineSSE) may go before its response
# starts streaming: until then its events wait and go out together.
LIVE_AFTER: Final = 0.01
_PING: Final = b": ping\n\n"  # a comment: keeps proxies from timing the stream out
_HEADERS: Final = ((b"content-type", SSE.encode()), (b"cache-control", b"no-cache, no-transform"))


def sse_event(frame: bytes, event_id: str | None = None) -> bytes:
    """One JSON-RPC frame as an SSE ``message`` event (with its id, if it has one)."""
    head = b"event: message\n" + (b"id: " + event_id.encode() + b"\n" if event_id is not None else b"")
    if b"\n" not in frame:  # one line (our encoder never emits a raw newline): no splitting
        return head + b"data: " + frame + b"\n\n"
    # A handler's frame might have newlines: SSE needs one "data:" line per line.
    lines = frame.replace(b"\r\n", b"\n").split(b"\n")
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
    """An SSE response: ``prelude`` first (replayed events), then the events of ``events`` until that channel ends
    (skipping those whose ids are in ``skip``: already in the prelude), pinging while idle. ``on_close(client_gone)``
    is called at the end, and what it returns, if anything, awaited, shielded (a plain function returns None when
    there is nothing to wait for, which saves the shield's cancel scope); ``client_gone`` says whether the client
    went away before the stream ended.

    What is queued when the response gets to run goes out as one chunk (the end of the stream with the last one),
    so a stream whose events are all there (a quick handler: priming event and answer) costs two ``send`` calls.
    """

    def __init__(
        self,
        events: Channel,
        headers: Mapping[str, str],
        ping_interval: float,
        on_close: Callable[[bool], Awaitable[None] | None] | None = None,
        *,
        prelude: Sequence[Event] = (),
        skip: Collection[str] = (),
    ) -> None:
        self._events, self._headers, self._ping_interval, self._on_close = events, headers, ping_interval, on_close
        self._prelude, self._skip = prelude, skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [*_HEADERS, *[(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self._headers.items()]]
        events = self._events
        if events.closed:  # everything is here (a quick handler's answer, a finished replay): nothing to wait for
            try:
                body = b"".join(map(sse_bytes, (*self._prelude, *self._unskipped(events.take()))))
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
            finally:
                await self._closed(False)
            return
        client_gone = False

        async def gone() -> None:
            events.wake()  # the stream loop sees watch.gone

        watch = DisconnectWatch(receive, gone)
        try:
            async with watch:
                try:
                    await self._stream(send, headers, watch)
                except OSError:  # a server whose send raises once the client is gone (uvicorn's returns quietly)
                    client_gone = True
                    logger.debug("SSE client went away", exc_info=True)
        finally:
            events.close()
            await self._closed(client_gone or watch.gone)

    async def _closed(self, client_gone: bool) -> None:
        pending = self._on_close(client_gone) if self._on_close is not None else None
        if pending is not None:
            with anyio.CancelScope(shield=True):
                await pending

    async def _stream(self, send: Send, headers: list[tuple[bytes, bytes]], watch: DisconnectWatch) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        events = self._events
        chunk = b"".join(sse_bytes(event) for event in self._prelude)
        while not watch.gone:
            for event in self._unskipped(events.take()):
                chunk += sse_bytes(event)
            if events.ended:
                await send({"type": "http.response.body", "body": chunk, "more_body": False})
                return
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = b""
                continue  # more may have come meanwhile
            with anyio.move_on_after(self._ping_interval) as idle:
                await events.wait()
            if idle.cancelled_caught:
                chunk = _PING

    def _unskipped(self, events: list[Event]) -> list[Event]:
        if not self._skip:
            return events
        return [event for event in events if event.event_id is None or event.event_id not in self._skip]


class InlineSSE:
    """The SSE response to a request whose handler runs in the HTTP request's own task: ``work`` (which runs it)
    first, then ``response``, all the events queued meanwhile going out together. A handler still running after
    ``LIVE_AFTER`` gets its response started in a task of its own, so that its events (progress, requests to the
    client, a server-ended connection) stream as they come. ``work`` finding the session ended
    (ClosedResourceError / BrokenResourceError) before the response started sends ``refused()`` instead. asyncio
    only.
    """

    def __init__(
        self,
        work: Callable[[], Awaitable[None]],
        response: SSEResponse,
        refused: Callable[[], Answer],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """``loop``: the running loop (the caller has looked it up already)."""
        self._work, self._response, self._refused, self._loop = work, response, refused, loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = self._loop
        live: list[asyncio.Task[None]] = []

        def go_live() -> None:
            live.append(loop.create_task(self._response(scope, receive, send)))

        # One timer of the loop for every such response (a call_later each cost a timer handle and a heap push and
        # pop per request, for a handler that nearly always ends first).
        timer = DelayedCalls.for_loop(loop, LIVE_AFTER)
        timer.add(self, go_live)
        try:
            await self._work()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            if not live:
                timer.discard(self)
                await self._refused()(scope, receive, send)
                return
        except BaseException:
            timer.discard(self)
            for task in live:
                task.cancel()
            raise
        timer.discard(self)
        if not live:
            await self._response(scope, receive, send)
            return
        await live[0]  # cancelling this task cancels it too
