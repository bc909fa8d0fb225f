"""The MCP streamable HTTP transport, client side (spec 2025-03-26 and later): a ``MessageStream`` over httpx2.

Where it sits: in ``transports.http.client``, beside ``transports.stdio`` (``open_http_stream(url)`` is the HTTP
counterpart of ``open_subprocess_stream``); what the server sends goes through an ``inbox.Inbox`` on its way to
``receive``, and SSE resumption follows ``resume.SSEReconnect``. Each outgoing frame is one POST; the answers (a JSON body, or an SSE stream carrying
the server's related requests/notifications and then the responses) and the messages of the standalone GET stream
all come out of ``receive``, one frame per JSON-RPC message. The transport reads just enough of the frames passing
through to keep the wire state: the ``Mcp-Session-Id`` of the ``initialize`` answer, the negotiated
``protocolVersion`` (sent back as ``MCP-Protocol-Version``), ``notifications/initialized`` (time to open the GET
stream) and ``notifications/cancelled`` (time to drop the cancelled request's POST).

Every request POST ends with an answer for each of its ids, never with a silent wait:

- an answer that cannot be delivered (not JSON, over ``max_message_bytes``, an object with the id but neither
  ``result`` nor ``error``) fails its request at once (``undeliverable.undeliverable_frame``, which the typed client
  raises as ``MalformedResponseError``); damage that names no id fails every request of that POST still waiting;
- an SSE stream the server closes (or that breaks) before the answer is resumed (MCP 2025-11-25): after the
  ``retry:`` the server sent, GET with ``Last-Event-ID``, within the bounds of ``resume.SSEReconnect``; the
  standalone GET stream is resumed the same way;
- anything else (HTTP errors, a 202, a stream that cannot be resumed) becomes an error response with the request's
  id, so the session's call raises ``JSONRPCError`` instead of waiting for its timeout.

Modern requests (MCP 2026-07-28: their ``_meta`` names the protocol version; ``headers``) are told apart frame
by frame and sent statelessly: no ``Mcp-Session-Id`` (one a server sends back is ignored), the request metadata
headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, and the ``Mcp-Param-*`` the typed client supplies
through ``param_headers``), no GET stream, no resumption, and cancellation by closing the request's POST instead of
sending ``notifications/cancelled``. A 4xx body's JSON-RPC error keeps its ``data`` (a -32022 lists the server's
versions there).

Authorization plugs in through ``auth`` (``auth.HTTPAuth``): its headers go on every request; a 401, or
a 403 ``insufficient_scope``, goes to it, and the request is sent again once it has authorized (``max_auth_retries``
times at most); any 401/403 left unresolved (or with no hook) fails the request with the challenge in the error's
data, which the typed client raises as ``AuthorizationError``.

httpx2 is the HTTP client the official MCP SDK (``mcp>=2``) depends on; it is httpx under a new name.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus

from ....jsonrpc.envelopes import (
    Batch,
    ErrorCode,
    Invalid,
    Notification,
    Request,
    RequestId,
    decode_frame,
    is_request_id,
)
from .auth import DEFAULT_MAX_AUTH_RETRIES, AuthChallenge, HTTPAuth
from .headers import meta_protocol_version, standard_headers
from .inbox import DEFAULT_MAX_MESSAGE_BYTES, Failure, Inbox
from .resume import ReconnectAttempts, SSEReconnect, StreamPosition

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "HTTPClientStream", "ParamHeaders", "SSEReconnect", "open_http_stream"]

logger = logging.getLogger(__name__)

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
LAST_EVENT_ID_HEADER: Final = "last-event-id"
JSON: Final = "application/json"
SSE: Final = "text/event-stream"

# The client's hook for the Mcp-Param-{Name} headers of one modern request: (method, params) -> headers.
ParamHeaders = Callable[[str, Mapping[str, Any]], Mapping[str, str]]


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
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        reconnect: SSEReconnect | None = None,
        auth: HTTPAuth | None = None,
        max_auth_retries: int = DEFAULT_MAX_AUTH_RETRIES,
    ) -> None:
        self.url = url
        self.auth = auth
        self._max_auth_retries = max_auth_retries
        self._auth_headers: dict[str, str] = {}
        self.session_id: str | None = None
        self._client = client
        self._headers = dict(headers or {})
        self._terminate_on_close = terminate_on_close
        self._close_timeout = close_timeout
        self._max_message_bytes = max_message_bytes
        self._reconnect = reconnect or SSEReconnect()
        # Set by the typed client: the x-mcp-header values of a modern tools/call (it knows the tools' schemas).
        self.param_headers: ParamHeaders | None = None
        # Requests sent in the modern era (2026-07-28): stateless POSTs, cancelled by closing their stream.
        self._modern: set[RequestId] = set()
        self._inbox = Inbox()  # what the server sends, on its way to `receive`
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

    @property
    def protocol_version(self) -> str | None:
        """The version the server answered ``initialize`` with (sent back as ``MCP-Protocol-Version``)."""
        return self._inbox.protocol_version

    async def receive(self) -> bytes:
        return await self._inbox.receive()

    async def send(self, frame: bytes) -> None:
        if self._closed or self._tg is None:
            raise anyio.ClosedResourceError("the HTTP stream is closed")
        decoded = decode_frame(frame)
        items = decoded.items if isinstance(decoded, Batch) else (decoded,)
        ids = [item.id for item in items if isinstance(item, Request)]
        if ids:
            # Requests run as tasks: their answers may take long, and many may be in flight at once.
            initialize = [item.id for item in items if isinstance(item, Request) and item.method == "initialize"]
            remaining = self._inbox.expect(ids, initialize)
            scope = anyio.CancelScope()
            for request_id in ids:
                self._posts[request_id] = scope
            modern = None
            if isinstance(decoded, Request):
                modern = self._modern_headers(decoded)
                if modern is not None:
                    self._modern.add(decoded.id)
            self._tg.start_soon(self._post_request, frame, ids, remaining, scope, modern)
            return
        if self._cancels_modern(items):
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

    def _modern_headers(self, request: Request) -> dict[str, str] | None:
        """The headers of a modern request (its ``_meta`` names the protocol version), or None for a legacy
        one. Modern requests carry no session: each is its own stateless POST."""
        version = meta_protocol_version(request.params)
        if version is None:
            return None
        headers = standard_headers(request.method, request.params, version)
        if self.param_headers is not None and isinstance(request.params, dict):
            headers.update(self.param_headers(request.method, request.params))
        return headers

    def _cancels_modern(self, items: tuple[Any, ...] | list[Any]) -> bool:
        """A ``notifications/cancelled`` for a modern request is not sent: in 2026-07-28 closing the request's
        response stream is the cancellation (and there are no client notifications over HTTP); its POST is
        dropped instead."""
        if len(items) != 1 or not isinstance(items[0], Notification) or items[0].method != "notifications/cancelled":
            return False
        params = items[0].params if isinstance(items[0].params, dict) else {}
        cancelled_id = params.get("requestId")
        if not is_request_id(cancelled_id) or cancelled_id not in self._modern:
            return False
        post = self._posts.pop(cancelled_id, None)
        if post is not None:
            post.cancel()
        return True

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
        self._inbox.close()

    # -- HTTP ------------------------------------------------------------------------------------------------------

    def _request_headers(self, accept: str = f"{JSON}, {SSE}") -> dict[str, str]:
        headers = {**self._headers, **self._auth_headers, "accept": accept}
        if self.session_id is not None:
            headers[SESSION_ID_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
        return headers

    def _session_gone(self, status: int) -> bool:
        """A 404 once we have a session means the server ended it: end the stream so the session notices."""
        if status == 404 and self.session_id is not None:
            logger.info("the server ended session %s", self.session_id)
            self._inbox.close()
            return True
        return False

    async def _refresh_auth(self) -> None:
        """Ask the auth hook for the current headers (it may refresh an expired token first)."""
        if self.auth is not None:
            self._auth_headers = dict(await self.auth.headers())

    async def _post_headers(self, modern: dict[str, str] | None) -> dict[str, str]:
        """The headers of a request POST (a modern one carries no session), with the auth hook's current ones."""
        await self._refresh_auth()
        if modern is None:
            return {**self._request_headers(), "content-type": JSON}
        return {**self._headers, **self._auth_headers, "accept": f"{JSON}, {SSE}", "content-type": JSON, **modern}

    def _challenge(self, response: httpx2.Response, sent: Mapping[str, str]) -> AuthChallenge | None:
        """The challenge of a 401 / 403 answer (None for any other answer)."""
        if response.status_code not in (401, 403):
            return None
        return AuthChallenge.from_response(response, self.url, sent.get("authorization"))

    async def _authorized(self, challenge: AuthChallenge) -> bool:
        """Whether the auth hook authorized after this refusal: a plain 403 is one that no token can fix."""
        if self.auth is None or (challenge.status == 403 and challenge.error != "insufficient_scope"):
            return False
        return await self.auth.on_challenge(challenge)

    async def _post_message(self, frame: bytes, invalid: bool) -> None:
        """POST notifications/responses: the server answers 202 and nothing else."""
        await self._refresh_auth()
        headers = {**self._request_headers(), "content-type": JSON}
        try:
            response = await self._client.post(self.url, content=frame, headers=headers)
        except httpx2.HTTPError as exc:
            raise anyio.BrokenResourceError(f"POST to {self.url} failed: {exc!r}") from exc
        if response.status_code >= 400 and not self._session_gone(response.status_code):
            # Nobody waits for an answer here, so a log line is all a rejected notification can become.
            logger.warning("server rejected a message with HTTP %s: %s", response.status_code, response.text[:200])

    async def _post_request(
        self,
        frame: bytes,
        ids: list[RequestId],
        remaining: set[RequestId],
        scope: anyio.CancelScope,
        modern: dict[str, str] | None = None,
    ) -> None:
        failure: Failure | None = (ErrorCode.CONNECTION_CLOSED, "connection closed before the response arrived")
        position = StreamPosition()
        with scope:
            try:
                for attempt in range(self._max_auth_retries + 1):
                    headers = await self._post_headers(modern)
                    async with self._client.stream("POST", self.url, content=frame, headers=headers) as response:
                        if (challenge := self._challenge(response, headers)) is None:
                            failure = await self._read_answer(
                                response, ids, remaining, position, stateless=modern is not None
                            )
                            break
                    if attempt == self._max_auth_retries or not await self._authorized(challenge):
                        failure = challenge.failure()
                        break
                if failure is None and remaining and modern is not None:
                    # 2026-07-28 removed resumption: the request is lost (the caller may send it again).
                    failure = (ErrorCode.CONNECTION_CLOSED, "the response stream ended before the answer")
                elif failure is None and remaining:
                    failure = await self._resume(remaining, position)
            except httpx2.HTTPError as exc:
                failure = (ErrorCode.CONNECTION_CLOSED, f"HTTP request failed: {exc!r}")
            finally:
                self._inbox.forget(ids, remaining)
                for request_id in ids:
                    self._modern.discard(request_id)
                    if self._posts.get(request_id) is scope:
                        del self._posts[request_id]
        if scope.cancel_called:
            return  # the session cancelled these requests; it waits for no answer
        if failure is None:
            failure = (ErrorCode.CONNECTION_CLOSED, "the server ended the response without answering")
        self._inbox.fail_unanswered(remaining, failure)

    async def _read_answer(
        self,
        response: httpx2.Response,
        ids: list[RequestId],
        remaining: set[RequestId],
        position: StreamPosition,
        *,
        stateless: bool = False,
    ) -> Failure | None:
        """Deliver the answers of one request POST. Returns the error for the ids left unanswered, or None when an
        SSE stream ended early (``position`` then says where to resume it). A ``stateless`` (modern) POST never
        sets the session: a session id a server sends with it is ignored, as 2026-07-28 has none."""
        status = response.status_code
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status < 300 and not stateless and self.session_id is None and SESSION_ID_HEADER in response.headers:
            self.session_id = response.headers[SESSION_ID_HEADER]
        if status == 202:
            return ErrorCode.INVALID_REQUEST, "the server accepted a request without answering it (HTTP 202)"
        if status >= 400:
            gone = self._session_gone(status)
            if content_type == JSON and len(ids) == 1:
                # Servers put a JSON-RPC error in the body of a 4xx; keep its code and data (a modern server's
                # -32022 lists its versions there), with our request id.
                try:
                    error = json.loads(await self._read_body(response, 65536)).get("error")
                    if isinstance(error, dict) and isinstance(error.get("code"), int):
                        return error["code"], str(error.get("message", f"HTTP {status}")), error.get("data")
                except (ValueError, AttributeError, httpx2.HTTPError):
                    pass
            return (ErrorCode.CONNECTION_CLOSED if gone else ErrorCode.INTERNAL_ERROR), f"HTTP error {status}"
        if content_type == JSON:
            try:
                body = await self._read_body(response, self._max_message_bytes)
            except ValueError as exc:
                self._inbox.fail(remaining, str(exc))
            else:
                self._inbox.deliver(body, remaining)
            return ErrorCode.CONNECTION_CLOSED, "the server's JSON answer did not answer the request"
        if content_type == SSE:
            return await self._read_events(response, remaining, position)
        return ErrorCode.INTERNAL_ERROR, f"unexpected content type {content_type!r} (HTTP {status})"

    @staticmethod
    async def _read_body(response: httpx2.Response, limit: int | None) -> bytes:
        """The whole body, or ``ValueError`` as soon as it is over ``limit`` bytes (nothing more is read)."""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if limit is not None and len(body) > limit:
                raise ValueError(f"a response body over the {limit}-byte limit")
        return bytes(body)

    async def _read_events(
        self, response: httpx2.Response, remaining: set[RequestId] | None, position: StreamPosition
    ) -> Failure | None:
        """Deliver the messages of one SSE response until it ends (or, for a request's stream, until every id is
        answered). A stream that breaks off counts as ended: whether it can be resumed is the caller's business."""
        try:
            async for event in httpx2.EventSource(response, max_event_size=self._max_message_bytes):
                position.last_event_id = event.id or position.last_event_id
                position.retry_ms = event.retry if event.retry is not None else position.retry_ms
                if event.event == "message" and event.data:
                    position.messages += 1
                    self._inbox.deliver(event.data.encode(), remaining)
                if remaining is not None and not remaining:
                    return None  # all answered: the server ends the stream too, but we need not wait for it
        except httpx2.SSEError as exc:
            # Only the size limit raises here (the content type was checked): the event that broke it is lost.
            if remaining is None:
                logger.warning("dropped a message on the GET stream: %s", exc)
                return ErrorCode.INTERNAL_ERROR, str(exc)
            self._inbox.fail(remaining, f"an SSE event over the {self._max_message_bytes}-byte limit")
        except httpx2.HTTPError as exc:
            logger.debug("SSE stream broke off: %r", exc)
        return None

    async def _resume(self, remaining: set[RequestId], position: StreamPosition) -> Failure | None:
        """Resume a request's SSE stream with GET and ``Last-Event-ID`` until its ids are answered (or give up)."""
        if position.last_event_id is None:
            return (
                ErrorCode.CONNECTION_CLOSED,
                "the server ended the response stream before answering, with no event id to resume from",
            )
        attempts = ReconnectAttempts(self._reconnect)
        while remaining:
            if (exhausted := attempts.exhausted()) is not None:
                return ErrorCode.CONNECTION_CLOSED, f"gave up resuming the response stream: {exhausted}"
            await anyio.sleep(self._reconnect.delay(position.retry_ms))
            if not remaining:
                break  # answered on another stream meanwhile
            status = await self._reconnect_once(remaining, position)
            if status == 405:
                return ErrorCode.CONNECTION_CLOSED, "the response stream ended early and the server offers no GET"
            if status == 404 and self.session_id is not None:
                return ErrorCode.CONNECTION_CLOSED, "the session ended before the response arrived"
            attempts.record(status, position.messages)
        return None

    async def _reconnect_once(self, remaining: set[RequestId] | None, position: StreamPosition) -> int:
        """One GET (with ``Last-Event-ID`` when there is one) whose messages are delivered; its HTTP status, or 0
        when it could not be made."""
        await self._refresh_auth()
        headers = self._request_headers(accept=SSE)
        if position.last_event_id is not None:
            headers[LAST_EVENT_ID_HEADER] = position.last_event_id
        position.messages = 0
        try:
            async with self._client.stream("GET", self.url, headers=headers) as response:
                status = response.status_code
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if status != 200 or content_type != SSE:
                    self._session_gone(status)
                    logger.debug("GET answered HTTP %s (%s)", status, content_type)
                    return status if status != 200 else 0
                await self._read_events(response, remaining, position)
                return status
        except httpx2.HTTPError as exc:
            logger.debug("GET failed: %r", exc)
            return 0

    async def _get_stream(self) -> None:
        """The standalone server->client stream: opened after initialization if the server offers it, and resumed
        (``Last-Event-ID``, after the server's ``retry:``) when it ends, within ``SSEReconnect``'s bounds."""
        position, attempts = StreamPosition(), ReconnectAttempts(self._reconnect)
        status = await self._reconnect_once(None, position)
        while status not in (404, 405, 409) and (status == 200 or attempts.failed) and not self._closed:
            # The stream ended, or a reconnection failed: come back for the rest, within bounds.
            if (exhausted := attempts.exhausted()) is not None:
                logger.info("GET stream given up: %s", exhausted)
                return
            await anyio.sleep(self._reconnect.delay(position.retry_ms))
            status = await self._reconnect_once(None, position)
            attempts.record(status, position.messages)
        # 405: the server offers no GET stream; 409: one is open already; 404: the session is gone.
        logger.debug("GET stream ended: HTTP %s", status)


@asynccontextmanager
async def open_http_stream(
    url: str,
    headers: Mapping[str, str] | None = None,
    *,
    timeout: float = 30.0,
    sse_read_timeout: float = 300.0,
    http_client: httpx2.AsyncClient | None = None,
    terminate_on_close: bool = True,
    auth: HTTPAuth | None = None,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    reconnect: SSEReconnect | None = None,
    close_timeout: float = 5.0,
    max_auth_retries: int = DEFAULT_MAX_AUTH_RETRIES,
) -> AsyncIterator[HTTPClientStream]:
    """A ``MessageStream`` to the streamable HTTP MCP endpoint ``url`` (e.g. ``http://127.0.0.1:8000/mcp``).

    ``headers`` go on every request. ``auth`` is the auth hook (an ``HTTPAuth``, e.g. ``client.auth.OAuthProvider``);
    an ``auth`` with an ``http_auth`` (an ``httpx2.Auth``, e.g. DPoP proofs) signs every request of the default client.
    ``sse_read_timeout`` bounds the silence on an SSE stream; ``http_client`` replaces the default client (its own
    timeouts then apply). ``max_message_bytes``, ``reconnect``, ``close_timeout`` and ``max_auth_retries`` are those
    of ``HTTPClientStream``. On exit the session is ended with DELETE (unless
    ``terminate_on_close`` is false). An exception raised in the ``async with`` body comes out as itself, not
    wrapped in an ``ExceptionGroup`` by the task group that runs the POSTs.
    """
    if http_client is None:
        # An auth hook with an ``http_auth`` (an ``httpx2.Auth``: DPoP signs each request, method and URL, and reads
        # the DPoP-Nonce of every answer) signs every request of the default client.
        client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout, read=sse_read_timeout), auth=getattr(auth, "http_auth", None)
        )
    else:
        client = http_client
    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            stream = HTTPClientStream(
                url,
                client,
                headers=headers,
                terminate_on_close=terminate_on_close,
                close_timeout=close_timeout,
                max_message_bytes=max_message_bytes,
                reconnect=reconnect,
                auth=auth,
                max_auth_retries=max_auth_retries,
            )
            await tg.start(stream._run)
            try:
                yield stream
            except BaseException as exc:
                # Re-raised below, outside the task group, which would otherwise wrap it in an ExceptionGroup.
                body_error = exc
            finally:
                await stream.aclose()
    finally:
        if http_client is None:
            with anyio.CancelScope(shield=True):
                await client.aclose()
    if body_error is not None:
        raise body_error
