"""Serving an ASGI app with uvicorn on a socket we bind ourselves: ``serve_app``.

Where it sits: in the ``transports`` layer, under ``app`` (``run_http`` serves its ``StreamableHTTPApp``
with it; it is re-exported there). Nothing here knows MCP: any ASGI app can be served, the official SDK's included
(the tests do).
"""

from __future__ import annotations

import logging
import math
import socket
from collections.abc import Awaitable, Callable

import anyio
import uvicorn
from anyio.abc import TaskStatus
from starlette.types import Receive, Scope, Send

from ....safe_mode import describe_fast_paths
from .coalesce import http_protocol

__all__ = ["serve_app"]

logger = logging.getLogger(__name__)


async def serve_app(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    before_shutdown: Callable[[], None] | None = None,
    shutdown_timeout: float = 5.0,
    reuse_port: bool = False,
    task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve an ASGI app with uvicorn until cancelled; ``task_status`` gets the base URL (``port=0``: a free port).

    We bind the socket ourselves so the port is known before uvicorn starts. On cancellation uvicorn is asked to
    exit and given ``shutdown_timeout`` to finish its connections (``before_shutdown`` first ends long-lived
    streams, which uvicorn would otherwise wait for). ``reuse_port``: SO_REUSEPORT, so that several processes (the
    workers of ``scaleout.supervisor``) each listen on the same port and the kernel spreads connections over them.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose protocol says TCP, and without it
    # Nagle's algorithm meets the client's delayed ACK: ~40 ms added to every request on a keep-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    # access_log=False: at log level warning nothing is logged per request anyway, but uvicorn would still build the
    # access log's arguments (client address, path) for every response. http: uvicorn's own choice (httptools when
    # installed, else h11), writing a fixed-length response's head and body in one system call (coalesce; its
    # self-check runs in a thread on first use, so the loop is not held).
    http = await anyio.to_thread.run_sync(http_protocol)
    logger.debug("%s", describe_fast_paths())
    config = uvicorn.Config(
        app,
        http=http,
        log_level="warning",
        access_log=False,
        server_header=False,  # "server: uvicorn" tells a client nothing it needs, and costs a header per response
        lifespan="on",
        timeout_graceful_shutdown=max(1, math.ceil(shutdown_timeout)),
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
