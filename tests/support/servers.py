"""In-process HTTP servers for a test: uvicorn on 127.0.0.1 (port 0 unless a test needs its port first), run in a
task group for the length of an ``async with`` and cancelled on the way out.

``in_background`` is the one shape they all share; ``serving_app`` (any ASGI app, the official SDK's included),
``serving_streamable`` (a ``StreamableHTTPApp`` of a connection handler) and ``serving_server`` (a ``Server``'s
``serve_http``) are it for what most tests serve; ``serving_protected`` is a server behind ``BearerAuth`` and
``whoami_server`` the one-tool server the auth tests protect. Keyword options go to the runtime unchanged. And
without HTTP: ``raw_session`` is a ``Server`` over an in-memory stream, with a bare JSON-RPC ``Session`` as its client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio

from mcpgen_runtime import memory_stream_pair
from mcpgen_runtime.jsonrpc.session import Session
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.transports.http.server.app import StreamableHTTPApp
from mcpgen_runtime.transports.http.server.serving import serve_app

from .ports import HOST, free_port


@asynccontextmanager
async def in_background(start: Callable[..., Coroutine[Any, Any, Any]]) -> AsyncIterator[Any]:
    """Run ``start`` (a task that reports through its ``task_status`` that it is up, and where) while the body runs;
    yields what it reported (a server's base URL)."""
    async with anyio.create_task_group() as tg:
        reported = await tg.start(start)
        yield reported
        tg.cancel_scope.cancel()


@asynccontextmanager
async def serving_app(app: Any, host: str = HOST, port: int = 0, **options: Any) -> AsyncIterator[str]:
    """An ASGI app under uvicorn (``serve_app``, its lifespan on); yields the base URL."""
    async with in_background(partial(serve_app, app, host, port, **options)) as base:
        yield str(base)


@asynccontextmanager
async def serving_streamable(handler: Any, **options: Any) -> AsyncIterator[tuple[str, StreamableHTTPApp]]:
    """``StreamableHTTPApp(handler, **options)`` served (its sessions closed before uvicorn shuts down); yields its
    MCP URL and the app."""
    app = StreamableHTTPApp(handler, **options)
    async with serving_app(app, before_shutdown=app.close_sessions) as base:
        yield f"{base}/mcp", app


@asynccontextmanager
async def serving_server(server: Any, port: int = 0, **options: Any) -> AsyncIterator[str]:
    """``server.serve_http`` on 127.0.0.1:``port`` with ``options`` (``auth=``, limits); yields its MCP URL."""
    async with in_background(partial(server.serve_http, HOST, port, **options)) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def serving_protected(
    server: Any, issuer: str, *, verifier: Any = None, resource_name: str | None = None, **bearer: Any
) -> AsyncIterator[str]:
    """``server`` over HTTP behind ``BearerAuth``: tokens of ``issuer`` (``JWTVerifier`` unless ``verifier``) for
    the server's own URL as the resource, with the ``mcp`` scope required; yields that URL. ``bearer`` overrides
    or adds ``BearerAuth`` options (``authorization_servers``, ``required_scopes=()``, ``scopes_supported``,
    ``dpop``)."""
    from mcpgen_runtime.server.auth import BearerAuth, JWTVerifier  # only the auth tests need it

    port = free_port()
    url = f"http://{HOST}:{port}/mcp"
    options: dict[str, Any] = {"authorization_servers": [issuer], "required_scopes": ["mcp"], **bearer}
    protection = BearerAuth(
        verifier=verifier or JWTVerifier(issuer), resource=url, resource_name=resource_name, **options
    )
    async with serving_server(server, port=port, auth=protection):
        yield url


def whoami_server(name: str = "protected") -> Server:
    """A ``Server`` with one tool, ``whoami``: the authenticated subject (``?`` without one)."""
    server = Server(name)

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.auth.subject if ctx.auth is not None and ctx.auth.subject else "?"

    return server


@asynccontextmanager
async def raw_session(
    server: Any,
    deadline: float | None = 15,
    notification_handler: Callable[[str, Any], Coroutine[Any, Any, None]] | None = None,
) -> AsyncIterator[Session]:
    """``server.serve_stream`` over an in-memory stream; yields a bare JSON-RPC ``Session`` on the other end (no
    client logic: what a test sends is what the server gets), whose notifications go to ``notification_handler``.
    All of it within ``deadline`` seconds (None: each call bounds its own wait)."""
    server_end, client_end = memory_stream_pair()
    with anyio.fail_after(deadline):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_stream, server_end)
            async with Session(client_end, notification_handler=notification_handler) as session:
                yield session
            tg.cancel_scope.cancel()


async def answer_lifespan(receive: Any, send: Any) -> None:
    """The ASGI lifespan of a test's bare app: startup and shutdown acknowledged, nothing run in between."""
    while (message := await receive())["type"] != "lifespan.shutdown":
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})
