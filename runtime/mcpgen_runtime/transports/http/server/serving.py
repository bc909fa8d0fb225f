"""Serving an ASGI app with uvicorn on a socket we bind ourselves: ``serve_app``; and which HTTP stack serves it
(``http_stack``).

Where it sits: in the ``transports`` layer, under ``app`` (``run_http`` serves its ``StreamableHTTPApp``
with it; it is re-exported there). Nothing here knows MCP: any ASGI app can be served, the official SDK's included
(the tests do).

The HTTP stack: uvicorn's HTTP/1.1 parser (httptools, a C parser, or h11, pure Python) and the event loop (uvloop or
asyncio's own). The fast pair serves a ``tools/call`` 1.3-2x faster than h11 and asyncio (a bare ASGI app about 3x;
bench/bench_stacks.py); mcpgen-runtime depends on both (uvloop where it installs: not on Windows, not on PyPy).
granian was measured too and is slower than uvicorn on the fast pair in every cell (0.4-0.87x), so it is not
offered. ``MCPGEN_HTTP_STACK`` chooses:

- ``auto`` (the default, also when unset or empty): httptools when it imports, else h11; uvloop when it imports,
  else asyncio's loop. Never an error.
- ``fast``: httptools and uvloop, and an error when either does not import (uvloop only where it installs).
- ``h11``: h11 and asyncio's loop, whatever is installed (the pure-Python stack, e.g. to rule the C ones out).

Any other value is a ``ValueError`` with one line saying so (``run_http`` and the command lines: ``error:`` and
exit 2). ``serve_app`` picks the parser; the loop is chosen by whoever starts it (``server.hosting.options.run_http``,
hence ``Server.run_http``, the runner and ``--workers``, passes ``loop_options(stack)`` to ``anyio.run``). Once
serving, ``serve_app`` logs one DEBUG line (``--log-level debug``) saying what serves, e.g. ``HTTP stack: uvicorn with httptools and uvloop
(MCPGEN_HTTP_STACK=auto)``: the parser it chose and the loop it runs on.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import uvicorn
from anyio.abc import TaskStatus
from starlette.types import Receive, Scope, Send

from ....safe_mode import describe_fast_paths
from .coalesce import http_protocol

__all__ = ["HTTP_STACKS", "HTTP_STACK_VARIABLE", "HTTPStack", "http_stack", "loop_options", "serve_app"]

logger = logging.getLogger(__name__)

HTTP_STACK_VARIABLE: Final = "MCPGEN_HTTP_STACK"
HTTP_STACKS: Final = ("auto", "fast", "h11")


@dataclass(frozen=True, slots=True)
class HTTPStack:
    """What serves HTTP: ``choice`` (one of ``HTTP_STACKS``), uvicorn's ``parser`` ("httptools" or "h11") and the
    ``loop`` ("uvloop" or "asyncio")."""

    choice: str
    parser: str
    loop: str


def _imports(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _uvloop_installs() -> bool:
    """Where mcpgen-runtime depends on uvloop (its environment marker): elsewhere ``fast`` does without it."""
    import platform
    import sys

    return sys.platform != "win32" and platform.python_implementation() == "CPython"


def http_stack(environ: Mapping[str, str] | None = None) -> HTTPStack:
    """The stack ``MCPGEN_HTTP_STACK`` (in ``environ``, default ``os.environ``) chooses, see the module docstring.
    ``ValueError`` (one line) for an unknown value, or for ``fast`` when httptools or uvloop does not import."""
    text = (os.environ if environ is None else environ).get(HTTP_STACK_VARIABLE, "")
    choice = text.strip().lower() or "auto"
    if choice not in HTTP_STACKS:
        raise ValueError(f"{HTTP_STACK_VARIABLE}: {text!r} is not one of: {', '.join(HTTP_STACKS)}")
    if choice == "h11":
        return HTTPStack(choice, "h11", "asyncio")
    has_httptools, has_uvloop = _imports("httptools"), _imports("uvloop")
    if choice == "fast":
        missing = [name for name, ok in (("httptools", has_httptools), ("uvloop", has_uvloop)) if not ok]
        if not _uvloop_installs() and missing == ["uvloop"]:
            missing = []  # uvloop does not exist here: fast is httptools on asyncio's loop
        if missing:
            raise ValueError(
                f"{HTTP_STACK_VARIABLE}=fast: {' and '.join(missing)} cannot be imported; install them, "
                "or use auto (falls back to h11 and asyncio's loop)"
            )
    return HTTPStack(choice, "httptools" if has_httptools else "h11", "uvloop" if has_uvloop else "asyncio")


def loop_options(stack: HTTPStack) -> dict[str, Any]:
    """``anyio.run``'s keywords that run ``stack``'s loop (asyncio backend; uvloop through anyio's ``use_uvloop``)."""
    return {"backend": "asyncio", "backend_options": {"use_uvloop": stack.loop == "uvloop"}}


def _running_loop_name() -> str:
    """The running loop's library, from its class: "uvloop" (uvloop.Loop), "asyncio" (asyncio's own), or another."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


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
    # access log's arguments (client address, path) for every response. http: the stack's parser (httptools when
    # installed, unless MCPGEN_HTTP_STACK=h11), writing a fixed-length response's head and body in one system call
    # (coalesce; its self-check runs in a thread on first use, so the loop is not held).
    stack = http_stack()
    http = await anyio.to_thread.run_sync(http_protocol, stack.parser)
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
            logger.debug(  # DEBUG, as describe_fast_paths: a server's stderr at the default level is an interface
                "HTTP stack: uvicorn with %s and %s (%s=%s)",
                stack.parser,
                _running_loop_name(),
                HTTP_STACK_VARIABLE,
                stack.choice,
            )
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
