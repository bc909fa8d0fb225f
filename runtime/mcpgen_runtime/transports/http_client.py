"""The MCP streamable HTTP transport, client side (spec 2025-03-26 and later): a ``MessageStream`` over httpx2.

Where it sits: beside ``stdio`` under ``session`` (``open_http_stream(url)`` is the HTTP counterpart of
``open_subprocess_stream``). Each outgoing frame is one POST; the answers (a JSON body, or an SSE stream carrying
the server's related requests/notifications and then the responses) and the messages of the standalone GET stream
all come out of ``receive``, one frame per JSON-RPC message. The transport reads just enough of the frames passing
through to keep the wire state: the ``Mcp-Session-Id`` of the ``initialize`` answer, the negotiated
``protocolVersion`` (sent back as ``MCP-Protocol-Version``), ``notifications/initialized`` (time to open the GET
stream) and ``notifications/cancelled`` (time to drop the cancelled request's POST).

httpx2 is the HTTP client the official MCP SDK (``mcp>=2``) depends on; it is httpx under a new name.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus

from ..jsonrpc.envelopes import (
    Batch,
    ErrorCode,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    decode_frame,
    encode_frame,
    error_response,
    is_request_id,
)

__all__ = ["HTTPClientStream", "open_http_stream"]

logger = logging.getLogger(__name__)

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
LAST_EVENT_ID_HEADER: Final = "last-event-id"
JSON: Final = "application/json"
SSE: Final = "text/event-stream"
# The GET stream is best effort: a few reconnections after a drop, then the session lives on without it.
GET_RECONNECT_ATTEMPTS: Final = 3
DEFAULT_RECONNECT_DELAY: Final = 1.0


class HTTPClientStream:
    """A ``MessageStream`` to one streamable HTTP MCP endpoint (make it with ``open_http_stream``)."""

    def __init__(
        self,
        url: str,
        client: httpx2.AsyncClient,
        *,
        headers: Mapping[str, str] | None = None,
        terminate_on_close: bool = True,
        close_timeout: float = 5.0,
        max_sse_event_size: int | None = 64 * 1024 * 1024,
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._client = client
        self._headers = dict(headers or {})
        self._terminate_on_close = terminate_on_close
        self._close_timeout = close_timeout
        self._max_sse_event_size = max_sse_event_size
        # Unbounded: the HTTP readers must never wait on the session (it may be busy sending on our POST lock).
        self._in_send, self._in_receive = anyio.create_memory_object_stream[bytes](math.inf)
        self._initialize_ids: set[RequestId] = set()
        self._posts: dict[RequestId, anyio.CancelScope] = {}  # request POSTs in flight, to drop on cancellation
        self._get_started = False
        self._closed = False
        self._stop = anyio.Event()
        self._tg: TaskGroup | None = None

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Own the background tasks (request POSTs, the GET stream) until ``aclose``."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await self._stop.wait()
            tg.cancel_scope.cancel()

    # -- MessageStream ---------------------------------------------------------------------------------------------

    async def receive(self) -> bytes:
        try:
            return await self._in_receive.receive()
        except anyio.ClosedResourceError:
            raise anyio.EndOfStream from None

    async def send(self, frame: bytes) -> None:
        if self._closed or self._tg is None:
            raise anyio.ClosedResourceError("the HTTP stream is closed")
        decoded = decode_frame(frame)
        items = decoded.items if isinstance(decoded, Batch) else (decoded,)
        ids = [item.id for item in items if isinstance(item, Request)]
        self._initialize_ids.update(
            item.id for item in items if isinstance(item, Request) and item.method == "initialize"
        )
        if ids:
            # Requests run as tasks: their answers may take long, and many may be in flight at once.
            scope = anyio.CancelScope()
            for request_id in ids:
                self._posts[request_id] = scope
            self._tg.start_soon(self._post_request, frame, ids, scope)
            return
        await self._post_message(frame, isinstance(decoded, Invalid))
        for item in items:
            if isinstance(item, Notification) and item.method == "notifications/initialized" and not self._get_started:
                self._get_started = True
                self._tg.start_soon(self._get_stream)
            elif isinstance(item, Notification) and item.method == "notifications/cancelled":
                # The session gave up on that request; its POST would only hold a connection open.
                params = item.params if isinstance(item.params, dict) else {}
                cancelled_id = params.get("requestId")
                post = self._posts.pop(cancelled_id, None) if is_request_id(cancelled_id) else None
                if post is not None:
                    post.cancel()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._close_timeout):
            if self.session_id is not None and self._terminate_on_close:
                try:
                    response = await self._client.delete(self.url, headers=self._request_headers())
                    if response.status_code not in (200, 202, 204, 404, 405):
                        logger.info("DELETE of session %s answered %s", self.session_id, response.status_code)
                except httpx2.HTTPError as exc:
                    logger.info("could not end session %s: %r", self.session_id, exc)
        self._in_send.close()

    # -- HTTP ------------------------------------------------------------------------------------------------------

    def _request_headers(self, accept: str = f"{JSON}, {SSE}") -> dict[str, str]:
        headers = {**self._headers, "accept": accept}
        if self.session_id is not None:
            headers[SESSION_ID_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
        return headers

    def _session_gone(self, status: int) -> bool:
        """A 404 once we have a session means the server ended it: end the stream so the session notices."""
        if status == 404 and self.session_id is not None:
            logger.info("the server ended session %s", self.session_id)
            self._in_send.close()
            return True
        return False

    async def _post_message(self, frame: bytes, invalid: bool) -> None:
        """POST notifications/responses: the server answers 202 and nothing else."""
        headers = {**self._request_headers(), "content-type": JSON}
        try:
            response = await self._client.post(self.url, content=frame, headers=headers)
        except httpx2.HTTPError as exc:
            raise anyio.BrokenResourceError(f"POST to {self.url} failed: {exc!r}") from exc
        if response.status_code >= 400 and not self._session_gone(response.status_code):
            # Nobody waits for an answer here, so a log line is all a rejected notification can become.
            logger.warning("server rejected a message with HTTP %s: %s", response.status_code, response.text[:200])

    async def _post_request(self, frame: bytes, ids: list[RequestId], scope: anyio.CancelScope) -> None:
        remaining = set(ids)
        failure: tuple[int, str] = (ErrorCode.CONNECTION_CLOSED, "connection closed before the response arrived")
        headers = {**self._request_headers(), "content-type": JSON}
        with scope:
            try:
                async with self._client.stream("POST", self.url, content=frame, headers=headers) as response:
                    failure = await self._read_answer(response, ids, remaining)
            except (httpx2.HTTPError, httpx2.SSEError) as exc:
                failure = (ErrorCode.CONNECTION_CLOSED, f"HTTP request failed: {exc!r}")
            finally:
                for request_id in ids:
                    if self._posts.get(request_id) is scope:
                        del self._posts[request_id]
        if scope.cancel_called:
            return  # the session cancelled these requests; it waits for no answer
        for request_id in list(remaining):  # a copy: _feed discards each answered id from `remaining`
            # The session must not wait forever for an answer that cannot come.
            self._feed(encode_frame(error_response(request_id, *failure)), remaining)

    async def _read_answer(
        self, response: httpx2.Response, ids: list[RequestId], remaining: set[RequestId]
    ) -> tuple[int, str]:
        """Feed the answers of one request POST; the error for ids left unanswered."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status < 300 and self.session_id is None and SESSION_ID_HEADER in response.headers:
            self.session_id = response.headers[SESSION_ID_HEADER]
        if status == 202:
            return ErrorCode.INVALID_REQUEST, "the server accepted a request without answering it (HTTP 202)"
        if status >= 400:
            gone = self._session_gone(status)
            if content_type == JSON and len(ids) == 1:
                # Servers put a JSON-RPC error in the body of a 4xx; keep its code, with our request id.
                try:
                    error = json.loads(await response.aread()).get("error")
                    if isinstance(error, dict) and isinstance(error.get("code"), int):
                        return error["code"], str(error.get("message", f"HTTP {status}"))
                except (ValueError, AttributeError, httpx2.HTTPError):
                    pass
            return (ErrorCode.CONNECTION_CLOSED if gone else ErrorCode.INTERNAL_ERROR), f"HTTP error {status}"
        if content_type == JSON:
            self._feed(await response.aread(), remaining)
        elif content_type == SSE:
            async for event in httpx2.EventSource(response, max_event_size=self._max_sse_event_size):
                if event.event in ("message", "") and event.data:
                    self._feed(event.data.encode(), remaining)
                if not remaining:
                    break  # all answered: the server ends the stream too, but we need not wait for it
        else:
            return ErrorCode.INTERNAL_ERROR, f"unexpected content type {content_type!r} (HTTP {status})"
        return ErrorCode.CONNECTION_CLOSED, "the server ended the response without answering"

    async def _get_stream(self) -> None:
        """The standalone server->client stream: opened after initialization if the server offers it."""
        attempts, delay, last_event_id = 0, DEFAULT_RECONNECT_DELAY, None
        while attempts < GET_RECONNECT_ATTEMPTS and not self._closed:
            headers = self._request_headers(accept=SSE)
            if last_event_id is not None:
                headers[LAST_EVENT_ID_HEADER] = last_event_id
            try:
                async with self._client.stream("GET", self.url, headers=headers) as response:
                    if response.status_code != 200:
                        # 405: the server offers no GET stream; 409: one is open already; 404: session gone.
                        if not self._session_gone(response.status_code):
                            logger.debug("no GET stream: HTTP %s", response.status_code)
                        return
                    attempts = 0
                    async for event in httpx2.EventSource(response, max_event_size=self._max_sse_event_size):
                        last_event_id = event.id or last_event_id
                        delay = event.retry / 1000 if event.retry is not None else delay
                        if event.event in ("message", "") and event.data:
                            self._feed(event.data.encode(), None)
            except (httpx2.HTTPError, httpx2.SSEError) as exc:
                logger.debug("GET stream failed: %r", exc)
            attempts += 1
            await anyio.sleep(min(delay, 30.0))

    def _feed(self, data: bytes, remaining: set[RequestId] | None) -> None:
        """Pass one answer body / SSE message on to ``receive``, one frame per message (batches are split: the
        session would refuse an array of responses)."""
        try:
            value = json.loads(data)
        except ValueError:
            logger.warning("dropping a malformed message from the server: %r", data[:200])
            return
        for item in value if isinstance(value, list) and value else [value]:
            message = classify(item)
            if isinstance(message, Response | ErrorResponse) and message.id is not None:
                if remaining is not None:
                    remaining.discard(message.id)
                if message.id in self._initialize_ids and isinstance(message, Response):
                    self._initialize_ids.discard(message.id)
                    version = message.result.get("protocolVersion") if isinstance(message.result, dict) else None
                    # Before the frame is passed on: the session's next message must carry the header already.
                    self.protocol_version = version if isinstance(version, str) else None
            try:
                self._in_send.send_nowait(data if item is value else encode_frame(item))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


@asynccontextmanager
async def open_http_stream(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float = 30.0,
    sse_read_timeout: float = 300.0,
    http_client: httpx2.AsyncClient | None = None,
    terminate_on_close: bool = True,
    **options: Any,
) -> AsyncIterator[HTTPClientStream]:
    """A ``MessageStream`` to the streamable HTTP MCP endpoint ``url`` (e.g. ``http://127.0.0.1:8000/mcp``).

    ``headers`` go on every request (auth, for one). ``sse_read_timeout`` bounds the silence on an SSE stream;
    ``http_client`` replaces the default client (its own timeouts then apply). On exit the session is ended with
    DELETE (unless ``terminate_on_close`` is false).
    """
    async with anyio.create_task_group() as tg:
        if http_client is None:
            client = httpx2.AsyncClient(timeout=httpx2.Timeout(timeout, read=sse_read_timeout))
        else:
            client = http_client
        try:
            stream = HTTPClientStream(url, client, headers=headers, terminate_on_close=terminate_on_close, **options)
            await tg.start(stream._run)
            try:
                yield stream
            finally:
                await stream.aclose()
        finally:
            if http_client is None:
                with anyio.CancelScope(shield=True):
                    await client.aclose()
