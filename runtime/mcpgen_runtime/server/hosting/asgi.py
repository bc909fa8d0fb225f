"""A server's streamable HTTP endpoint inside another ASGI app (Starlette, FastAPI): ``mount_mcp`` and ``MCPApp``.

Where it sits: in the ``server`` layer, beside ``server.Server``, over ``transports.http.server.app`` (whose
``StreamableHTTPApp`` does the HTTP). It imports starlette, so nothing imports it eagerly: a stdio server never
loads it. The server is anything with ``serve_stream`` (``MountableServer``), so that ``Server`` may import this
module (for an ``asgi_app()`` method) without an import cycle.

Why not just ``app.mount("/mcp", ...)``: the session manager is a task group that must outlive each request, and
starlette's ``Mount`` does not run a sub-app's lifespan; and a request for ``/mcp`` (no slash) does not match
``Mount("/mcp")``, so the parent router answers it with a 307 to ``/mcp/``. ``mount_mcp(app, server)`` instead adds
an exact route for ``/mcp`` and wraps the parent's lifespan, so the task group starts and stops with the app.
``MCPApp`` also starts itself on its first request when no lifespan started it (``app.mount`` or ``add_route``):
that needs the asyncio backend (uvicorn's), and its sessions then end only when the event loop does.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final, Protocol

import anyio
from starlette.applications import Starlette
from starlette.routing import Route, Router
from starlette.types import Receive, Scope, Send
from typing_extensions import Unpack

from ...jsonrpc.eager import Started
from ...jsonrpc.envelopes import Request
from ...jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ...jsonrpc.streams import MessageStream
from ...transports.http.server.app import EndpointOptions, StreamableHTTPApp
from ...transports.http.server.modern import ModernAnswer, ModernCall

__all__ = ["MCPApp", "MountOptions", "MountableServer", "mount_mcp"]

logger = logging.getLogger(__name__)

_INNER_PATH: Final = "/"  # the route of the inner StreamableHTTPApp; every request reaches it at this path


class MountOptions(EndpointOptions, total=False):
    """The options of ``MCPApp`` and ``mount_mcp``: ``StreamableHTTPApp``'s endpoint options (``path`` aside:
    ``mount_mcp`` takes it, and the app answers wherever it is routed; the modern handler, lifespan and start hooks
    are the server's own). A misspelt one fails in mypy, and at run time with ``StreamableHTTPApp``'s TypeError naming
    it."""


class MountableServer(Protocol):
    """What ``MCPApp`` serves: ``server.Server``."""

    async def serve_stream(
        self, stream: MessageStream, *, max_requests_in_flight: int = ..., max_batch_size: int = ...
    ) -> None: ...

    async def serve_modern(self, request: Request, call: ModernCall) -> ModernAnswer:
        """One modern request, as one call (``transports.http.server.modern.ModernHandler``)."""
        ...

    def start_modern(self, request: Request, task: asyncio.Task[Any]) -> ModernAnswer | Started | None:
        """A modern request started at once, if it can be (``transports.http.server.modern.ModernEager``)."""
        ...

    def running(self) -> AbstractAsyncContextManager[Any]:
        """One run of the server (its lifespan), which the sessions' ``serve_stream`` calls join."""
        ...


class MCPApp:
    """The streamable HTTP endpoint of ``server`` as an ASGI app that answers every request routed to it (the
    parent app does the routing: ``mount_mcp``, ``add_route(path, app)`` or ``Mount``).

    ``options``: those of ``transports.http.server.app.StreamableHTTPApp`` except ``path`` (limits, timeouts,
    resumability, ``allowed_hosts`` and ``allowed_origins``: behind a public name, list it in ``allowed_hosts``).

    Its session manager (and the server's lifespan) runs, in order of preference: inside the parent's lifespan
    (``mount_mcp`` arranges it), in ``async with app.running():`` (for a lifespan written by hand), in its own ASGI
    lifespan (when it is served directly), or else from its first request on, until ``aclose()`` or the end of the
    event loop (asyncio only; a lifespan that fails to start then fails every request, and is logged).

    Shutting down: uvicorn waits for open requests (an SSE GET stream stays open) before it runs the lifespan's
    shutdown, so give it ``timeout_graceful_shutdown`` or call ``close_sessions()`` first (``serve_app``'s
    ``before_shutdown`` does).
    """

    def __init__(self, server: MountableServer, **options: Unpack[MountOptions]) -> None:
        if "path" in options:
            raise TypeError("MCPApp answers wherever it is routed: give the path to mount_mcp, not to MCPApp")
        self.server = server
        self._limits = {
            "max_requests_in_flight": options.get("max_requests_in_flight", DEFAULT_MAX_REQUESTS_IN_FLIGHT),
            "max_batch_size": options.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE),
        }
        bound: dict[str, Any] = dict(options)
        bind = getattr(server, "http_auth_options", None)  # binds auth= to the server's tool scopes
        if bind is not None:
            bound = bind(bound)
        self.http = StreamableHTTPApp(
            self._handler,
            modern_handler=server.serve_modern,
            modern_eager=server.start_modern,
            path=_INNER_PATH,
            **bound,
        )
        # Serves the lifespan protocol when this app is the top-level one (starlette's Router does it right).
        self._lifespan_router = Router(lifespan=lambda _app: self.running())
        self._depth = 0  # nested `running()` entries; the outermost one owns the task group
        self._lazy: asyncio.Task[None] | None = None
        self._lazy_ready: anyio.Event | None = None
        self._lazy_stop: anyio.Event | None = None

    async def _handler(self, stream: MessageStream) -> None:
        await self.server.serve_stream(stream, **self._limits)

    @property
    def is_running(self) -> bool:
        return self._depth > 0

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the server (its lifespan) and the session manager for the duration of the block (re-entrant: an
        inner block does nothing). On exit every session ends (their streams close, their handlers see end of
        stream), then the server's lifespan."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        # The server's lifespan first: every session joins that one run instead of starting one of its own.
        async with self.server.running(), self.http.running():
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0

    def close_sessions(self) -> None:
        """End every session now (e.g. before a server's graceful shutdown, which waits for open SSE streams)."""
        self.http.close_sessions()

    async def aclose(self) -> None:
        """Stop a session manager this app started on its first request (nothing otherwise)."""
        task, stop = self._lazy, self._lazy_stop
        if task is None or stop is None:
            return
        stop.set()
        await task
        self._lazy = self._lazy_ready = self._lazy_stop = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan_router.lifespan(scope, receive, send)
            return
        if scope["type"] == "http" and not self._depth:
            await self._start_lazily()
        # The inner app routes one path; the parent has already chosen this endpoint, whatever its path.
        child = dict(scope)
        child["path"] = scope.get("root_path", "").rstrip("/") + _INNER_PATH
        await self.http(child, receive, send)

    async def _start_lazily(self) -> None:
        if self._lazy_ready is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    "MCPApp can start itself on its first request only under asyncio: run it in the app's "
                    "lifespan (mount_mcp does, or `async with mcp_app.running():` in your own)"
                ) from None
            logger.info("MCP session manager started on the first request (no lifespan ran it; see mount_mcp)")
            self._lazy_ready, self._lazy_stop = anyio.Event(), anyio.Event()
            # A fresh context: the task outlives this request and must not carry its context variables.
            self._lazy = loop.create_task(self._run_lazily(), context=contextvars.Context())
        await self._lazy_ready.wait()
        if not self._depth:
            raise RuntimeError("the MCP session manager failed to start (see the log)")

    async def _run_lazily(self) -> None:
        assert self._lazy_ready is not None and self._lazy_stop is not None
        ready, stop = self._lazy_ready, self._lazy_stop
        try:
            async with self.running():
                ready.set()
                await stop.wait()
        except Exception:
            logger.exception("the MCP session manager failed")
        finally:
            ready.set()


class _MetadataApp:
    """The endpoint's metadata documents as an ASGI app (an object, not a method: starlette's ``Route`` would take a
    method for a request -> response function)."""

    def __init__(self, http: StreamableHTTPApp) -> None:
        self._http = http

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._http.metadata_endpoint(scope, receive, send)


def mount_mcp(
    app: Starlette | Router, server: MountableServer, path: str = "/mcp", **options: Unpack[MountOptions]
) -> MCPApp:
    """Serve ``server`` at ``path`` of ``app`` (a Starlette or FastAPI app, or a Router) and run its session
    manager inside the app's lifespan; returns the ``MCPApp``.

    ``path`` answers exactly (no 307 to ``path/``) and takes precedence over the app's own routes, a ``Mount("/")``
    included. The app's lifespan (whatever it is: a function, the default) is wrapped: its startup runs first, then
    the session manager's; on shutdown the sessions end first, then the app's own shutdown runs. Call it before the
    app starts (a running app's lifespan has already begun: the endpoint then starts on its first request).
    ``options``: those of ``MCPApp``.
    """
    if not path.startswith("/") or (path != "/" and path.endswith("/")):
        raise ValueError(f"path {path!r} must start with '/' and not end with one (e.g. '/mcp')")
    router = app.router if isinstance(app, Starlette) else app
    if not isinstance(router, Router):
        raise TypeError(f"mount_mcp needs a Starlette or FastAPI app or a Router, not {type(app).__name__}")
    mcp_app = MCPApp(server, **options)
    router.routes.insert(0, Route(path, endpoint=mcp_app, name="mcp"))
    # A protected endpoint's metadata documents (RFC 9728) are the parent's routes: they live at its root.
    for metadata_path in getattr(mcp_app.http.auth, "metadata_paths", ()):
        router.routes.insert(0, Route(metadata_path, endpoint=_MetadataApp(mcp_app.http), methods=["GET"]))
    parent_lifespan = router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: Any) -> AsyncIterator[Any]:
        async with parent_lifespan(parent) as state:
            async with mcp_app.running():
                yield state

    router.lifespan_context = lifespan
    return mcp_app
