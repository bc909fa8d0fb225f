"""The MCP streamable HTTP transport, server side (spec 2025-03-26 and later): an ASGI app that turns HTTP into
per-session ``MessageStream`` s.

Where it sits: beside ``stdio`` under ``session``. ``StreamableHTTPApp`` (starlette, served by uvicorn via
``run_http`` / ``serve_app``) creates one ``HTTPSessionStream`` per MCP session (an ``initialize`` POST without an
``Mcp-Session-Id``) and hands it to a connection handler, ``async def handle(stream: MessageStream) -> None`` - the
same entry a stdio server uses, so the handler never learns it is behind HTTP.

Routing the handler's outgoing frames: a response goes to the POST that carried its request (by id). A
server->client request or notification goes to the POST whose request the handler was serving when it sent it, and
otherwise to the standalone GET stream. "Which request was being served" is a context variable set by ``receive``:
``Session`` runs each request's handler in a task spawned from its receive loop right after ``receive`` returned,
so the task inherits the value. No session internals are touched.
"""

from __future__ import annotations

import logging
import math
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import urlsplit

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request as HTTPRequest
from starlette.responses import Response as HTTPResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..jsonrpc.envelopes import (
    Batch,
    ErrorCode,
    Invalid,
    Notification,
    Request,
    decode_frame,
)
from ..jsonrpc.streams import MessageStream
from .http_session import HTTPSessionStream, _Channel, _error_body

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "ConnectionHandler",
    "HTTPSessionStream",
    "StreamableHTTPApp",
    "run_http",
    "serve_app",
]

logger = logging.getLogger(__name__)

ConnectionHandler = Callable[[MessageStream], Awaitable[None]]

SESSION_ID_HEADER: Final = "mcp-session-id"
PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
# What a request without MCP-Protocol-Version is taken to speak (the spec's rule for backwards compatibility).
DEFAULT_PROTOCOL_VERSION: Final = "2025-03-26"
# The handshake-era versions whose wire is this transport (2026-07-28 has its own, stateless, envelope).
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
DEFAULT_MAX_BODY_SIZE: Final = 4 * 1024 * 1024
LOCAL_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
JSON: Final = "application/json"
SSE: Final = "text/event-stream"


def _sse_event(frame: bytes) -> bytes:
    # Our encoder never emits a raw newline, but a handler's frame might: SSE needs one "data:" line per line.
    lines = frame.replace(b"\r\n", b"\n").split(b"\n")
    return b"event: message\n" + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


def _accepts(request: HTTPRequest) -> tuple[bool, bool]:
    """(accepts JSON, accepts SSE), with the RFC 9110 wildcards."""
    types = {part.split(";")[0].strip().lower() for part in request.headers.get("accept", "").split(",")}
    anything = "*/*" in types
    return anything or bool(types & {JSON, "application/*"}), anything or bool(types & {SSE, "text/*"})


class _SSEResponse:
    """An SSE response fed from a frame stream: ends when the stream does, pings while idle, stops on disconnect."""

    def __init__(
        self,
        frames: MemoryObjectReceiveStream[bytes],
        headers: Mapping[str, str],
        ping_interval: float,
        on_close: Callable[[], None],
    ) -> None:
        self._frames, self._headers, self._ping_interval, self._on_close = frames, headers, ping_interval, on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", SSE.encode()), (b"cache-control", b"no-cache, no-transform")]
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self._headers.items()]
        try:
            async with anyio.create_task_group() as tg:

                async def watch_disconnect() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(watch_disconnect)
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                async with self._frames:
                    while True:
                        chunk = b": ping\n\n"  # a comment: keeps proxies from timing the stream out
                        with anyio.move_on_after(self._ping_interval):
                            try:
                                chunk = _sse_event(await self._frames.receive())
                            except anyio.EndOfStream:
                                break
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        except OSError:
            logger.debug("SSE client went away", exc_info=True)
        finally:
            self._on_close()


class _Endpoint:
    """Wraps an ASGI callable so that starlette's Route calls it as ASGI (a plain method it would treat as a
    request -> response function)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


class StreamableHTTPApp:
    """The streamable HTTP endpoint as an ASGI app: ``handler`` serves each MCP session's ``MessageStream``.

    Needs its lifespan run (uvicorn does; ``run_http`` / ``serve_app`` do it for you): session handlers are tasks
    of the app, not of the HTTP request that created the session.
    """

    def __init__(
        self,
        handler: ConnectionHandler,
        *,
        path: str = "/mcp",
        json_response: bool = False,
        allowed_hosts: Collection[str] | None = None,
        allowed_origins: Collection[str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        supported_versions: Collection[str] = SUPPORTED_PROTOCOL_VERSIONS,
        max_sessions: int = 1000,
        ping_interval: float = 15.0,
    ) -> None:
        """``json_response``: answer request POSTs with one JSON body instead of an SSE stream (server->client
        messages then all travel on the GET stream). ``allowed_hosts``: host names (any port) accepted in ``Host``
        and, unless ``allowed_origins`` (exact ``scheme://host[:port]`` strings) is given, in ``Origin``; default
        local only, ``"*"`` turns the check off (DNS-rebinding protection, so only behind something that checks).
        """
        self._handler = handler
        self.json_response = json_response
        self._allowed_hosts = {h.strip("[]").lower() for h in (allowed_hosts or LOCAL_HOSTS)}
        self._allowed_origins = None if allowed_origins is None else {o.rstrip("/").lower() for o in allowed_origins}
        self._max_body_size = max_body_size
        self._supported_versions = frozenset(supported_versions)
        self._max_sessions = max_sessions
        self._ping_interval = ping_interval
        self.sessions: dict[str, HTTPSessionStream] = {}
        self._tg: TaskGroup | None = None
        self.app = Starlette(
            routes=[Route(path, endpoint=_Endpoint(self._asgi), methods=["GET", "POST", "DELETE"])],
            lifespan=self._lifespan,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self.close_sessions()
                tg.cancel_scope.cancel()
                self._tg = None

    def close_sessions(self) -> None:
        """End every session (their open streams end, their handlers see end of stream)."""
        for session in list(self.sessions.values()):
            session.terminate()

    async def _run_handler(self, session: HTTPSessionStream) -> None:
        try:
            await self._handler(session)
        except Exception:
            logger.exception("connection handler of HTTP session %s failed", session.session_id)
        finally:
            session.terminate()

    # -- HTTP ------------------------------------------------------------------------------------------------------

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = HTTPRequest(scope, receive)
        response: HTTPResponse | _SSEResponse
        if (problem := self._check_origin(request)) is not None:
            response = self._error(403, ErrorCode.INVALID_REQUEST, f"Forbidden: {problem}")
        elif request.method == "POST":
            response = await self._post(request)
        elif request.method == "GET":
            response = self._get(request)
        else:
            response = self._delete(request)
        await response(scope, receive, send)

    def _check_origin(self, request: HTTPRequest) -> str | None:
        """DNS-rebinding protection: a web page must not reach a local server through a name it controls."""
        if "*" in self._allowed_hosts:
            return None
        host = request.headers.get("host", "")
        name = host[1 : host.find("]")] if host.startswith("[") else host.rsplit(":", 1)[0]
        if name.lower() not in self._allowed_hosts:
            return f"host {host!r} is not allowed"
        origin = request.headers.get("origin")
        if origin is None:  # not a browser: nothing to protect against
            return None
        if self._allowed_origins is not None:
            ok = origin.rstrip("/").lower() in self._allowed_origins
        else:
            try:
                ok = (urlsplit(origin).hostname or "") in self._allowed_hosts
            except ValueError:
                ok = False
        return None if ok else f"origin {origin!r} is not allowed"

    def _error(self, status: int, code: int, message: str, session: HTTPSessionStream | None = None) -> HTTPResponse:
        return HTTPResponse(_error_body(code, message), status, self._headers(session), media_type=JSON)

    def _headers(self, session: HTTPSessionStream | None) -> dict[str, str]:
        return {"Mcp-Session-Id": session.session_id} if session is not None else {}

    def _find_session(self, request: HTTPRequest) -> HTTPSessionStream | HTTPResponse:
        session_id = request.headers.get(SESSION_ID_HEADER)
        if session_id is None:
            return self._error(400, ErrorCode.INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
        session = self.sessions.get(session_id)
        if session is None:
            return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: unknown or ended session")
        version = request.headers.get(PROTOCOL_VERSION_HEADER)
        if version is not None and (
            version not in self._supported_versions
            or (session.protocol_version is not None and version != session.protocol_version)
        ):
            message = f"Bad Request: unsupported or unnegotiated MCP-Protocol-Version {version!r}"
            return self._error(400, ErrorCode.INVALID_REQUEST, message, session)
        return session

    def _new_session(self) -> HTTPSessionStream | HTTPResponse:
        if self._tg is None:
            raise RuntimeError("StreamableHTTPApp needs its ASGI lifespan to run (uvicorn does; see run_http)")
        if len(self.sessions) >= self._max_sessions:
            return self._error(503, ErrorCode.INTERNAL_ERROR, "Service Unavailable: too many sessions")
        session = HTTPSessionStream(secrets.token_urlsafe(24))

        def forget(ended: HTTPSessionStream) -> None:
            self.sessions.pop(ended.session_id, None)

        session._on_terminate = forget
        self.sessions[session.session_id] = session
        self._tg.start_soon(self._run_handler, session)
        return session

    async def _read_body(self, request: HTTPRequest) -> bytes | None:
        """The body, or None when it exceeds the limit (checked as it arrives: Content-Length may lie or be absent)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body_size:
            return None
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > self._max_body_size:
                return None
        return bytes(body)

    async def _post(self, request: HTTPRequest) -> HTTPResponse | _SSEResponse:
        wants_json, wants_sse = _accepts(request)
        if not wants_json or not (wants_sse or self.json_response):
            message = "Not Acceptable: the client must accept both application/json and text/event-stream"
            return self._error(406, ErrorCode.INVALID_REQUEST, message)
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != JSON:
            return self._error(415, ErrorCode.INVALID_REQUEST, "Unsupported Media Type: use application/json")
        body = await self._read_body(request)
        if body is None:
            message = f"Payload Too Large: the limit is {self._max_body_size} bytes"
            return self._error(413, ErrorCode.INVALID_REQUEST, message)
        decoded = decode_frame(body)
        if isinstance(decoded, Invalid):
            return HTTPResponse(_error_body(decoded.code, decoded.message, decoded.id), 400, media_type=JSON)
        items = decoded.items if isinstance(decoded, Batch) else (decoded,)
        for item in items:
            if isinstance(item, Invalid):
                return HTTPResponse(_error_body(item.code, item.message, item.id), 400, media_type=JSON)

        is_initialize = isinstance(decoded, Request) and decoded.method == "initialize"
        found: HTTPSessionStream | HTTPResponse
        if is_initialize and SESSION_ID_HEADER not in request.headers:
            found = self._new_session()
        else:
            found = self._find_session(request)
        if isinstance(found, HTTPResponse):
            return found
        session = found

        requests = [item for item in items if isinstance(item, Request)]
        ids = [r.id for r in requests]
        if len(set(ids)) != len(ids) or any(i in session.by_id for i in ids):
            return self._error(400, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id", session)
        channel = _Channel(ids, sse=not self.json_response, batch=isinstance(decoded, Batch)) if ids else None
        for request_id in ids:
            session.by_id[request_id] = channel  # type: ignore[assignment]
        if is_initialize:
            session.initialize_id = ids[0]
        try:
            await session.deliver(body, channel)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: the session has ended")
        for item in items:
            if isinstance(item, Notification) and item.method == "notifications/cancelled":
                params = item.params if isinstance(item.params, dict) else {}
                session.cancel_request(params.get("requestId"))
        if channel is None:
            return HTTPResponse(status_code=202, headers=self._headers(session))
        if channel.sse:
            return _SSEResponse(
                channel.frames, self._headers(session), self._ping_interval, lambda: session.abandon(channel)
            )
        try:
            frames = [frame async for frame in channel.frames]
        finally:
            session.abandon(channel)
        if not frames:
            return self._error(404, ErrorCode.INVALID_REQUEST, "Not Found: the session ended before answering")
        content = b"[" + b",".join(frames) + b"]" if channel.batch else frames[0]
        return HTTPResponse(content, 200, self._headers(session), media_type=JSON)

    def _get(self, request: HTTPRequest) -> HTTPResponse | _SSEResponse:
        if not _accepts(request)[1]:
            return self._error(
                406, ErrorCode.INVALID_REQUEST, "Not Acceptable: the client must accept text/event-stream"
            )
        found = self._find_session(request)
        if isinstance(found, HTTPResponse):
            return found
        standalone = found.open_standalone()
        if standalone is None:
            return self._error(409, ErrorCode.INVALID_REQUEST, "Conflict: a GET stream is already open", found)
        return _SSEResponse(standalone[0], self._headers(found), self._ping_interval, standalone[1])

    def _delete(self, request: HTTPRequest) -> HTTPResponse:
        found = self._find_session(request)
        if isinstance(found, HTTPResponse):
            return found
        found.terminate()
        return HTTPResponse(status_code=200, headers=self._headers(found))


async def serve_app(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    before_shutdown: Callable[[], None] | None = None,
    shutdown_timeout: float = 5.0,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve an ASGI app with uvicorn until cancelled; ``task_status`` gets the base URL (``port=0``: a free port).

    We bind the socket ourselves so the port is known before uvicorn starts. On cancellation uvicorn is asked to
    exit and given ``shutdown_timeout`` to finish its connections (``before_shutdown`` first ends long-lived
    streams, which uvicorn would otherwise wait for).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=max(1, math.ceil(shutdown_timeout))
    )
    server = uvicorn.Server(config)
    done = anyio.Event()

    async def serve() -> None:
        # Shielded: stopping goes through should_exit, so that uvicorn runs its own shutdown (connections, lifespan).
        with anyio.CancelScope(shield=True):
            try:
                await server.serve(sockets=[sock])
            finally:
                done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            with anyio.fail_after(10):
                while not server.started and not done.is_set():
                    await anyio.sleep(0.01)
            if done.is_set():
                raise RuntimeError("uvicorn failed to start")
            url_host = f"[{host}]" if family == socket.AF_INET6 else host
            task_status.started(f"http://{url_host}:{bound_port}")
            await done.wait()
        finally:
            with anyio.CancelScope(shield=True):
                if before_shutdown is not None:
                    before_shutdown()
                server.should_exit = True
                with anyio.move_on_after(shutdown_timeout + 2):
                    await done.wait()
                if not done.is_set():
                    server.force_exit = True
                    with anyio.move_on_after(2):
                        await done.wait()
            sock.close()


async def run_http(
    handler: ConnectionHandler,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """Serve ``handler`` over streamable HTTP at ``http://host:port/mcp`` until cancelled (``options``: see
    ``StreamableHTTPApp``). ``await task_group.start(run_http, handler, "127.0.0.1", 0)`` gives the base URL."""
    app = StreamableHTTPApp(handler, **options)
    await serve_app(app, host, port, before_shutdown=app.close_sessions, task_status=task_status)
