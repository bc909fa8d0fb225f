"""The HTTP stack of the benchmark servers (`--stack fast|h11`), shared by the three HTTP servers in this folder.

    fast: httptools parser + uvloop event loop (each falls back, with a note on stderr, when not installed)
    h11:  h11 parser + asyncio's default event loop

`options` parses the servers' shared command line (`--port`, `--json-response`, `--stack`); `serve` runs an ASGI
app under uvicorn on a stack, with the settings mcpgen's run_http uses (log level warning, no access log, no
`server` header), for the servers that are not mcpgen's. `resolve` picks the (loop, http) pair; `report_stack` makes the process print, on stderr, the loop class it really
runs on and the uvicorn protocol class it really serves with (read from uvicorn's config once it is loaded, inside
the running loop), as one line `STACK <label> loop=<module.Class> http=<Class>[ over <uvicorn base class>]`, which
bench_http.py reads back and prints: the stack is verified from the process, not assumed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import threading
from typing import Any

STACKS = ("fast", "h11")


def options() -> argparse.Namespace:
    """``--port PORT [--json-response] [--stack fast|h11]``, as bench_http.py starts every server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--stack", choices=STACKS, default="fast")
    return parser.parse_args()


def serve(app: Any, port: int, stack: str, label: str) -> None:
    """``app`` under uvicorn on 127.0.0.1:``port`` and ``stack``, reporting its STACK line as ``label``, until
    interrupted."""
    import uvicorn

    loop, http = resolve(stack)
    report_stack(label)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,  # as mcpgen's run_http sets them
        loop=loop,
        http=http,
    )
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass


def resolve(stack: str) -> tuple[str, str]:
    """(uvicorn `loop`, uvicorn `http`) for ``stack``; the fast stack's parts fall back one by one, with a note."""
    if stack == "h11":
        return "asyncio", "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    for wanted, got in (("uvloop", loop), ("httptools", http)):
        if wanted != got:
            print(f"NOTE: --stack fast: {wanted} is not installed, using {got}", file=sys.stderr, flush=True)
    return loop, http


def _protocol_name(cls: type) -> str:
    base = next((c for c in cls.__mro__ if c.__module__.startswith("uvicorn.protocols.http.")), None)
    return cls.__name__ if base is None or base is cls else f"{cls.__name__} over {base.__name__}"


def report_stack(label: str) -> None:
    """Print the STACK line once uvicorn has loaded its config (in the serving loop): wraps `uvicorn.Config.load`."""
    import uvicorn

    original = uvicorn.Config.load

    def load(self: Any) -> None:
        original(self)
        if threading.current_thread() is not threading.main_thread():
            return  # a probe (mcpgen checks its uvicorn fast path on a config of its own, in a thread): not the server
        loop = type(asyncio.get_running_loop())
        http = _protocol_name(self.http_protocol_class)
        print(f"STACK {label} loop={loop.__module__}.{loop.__name__} http={http}", file=sys.stderr, flush=True)

    uvicorn.Config.load = load  # type: ignore[method-assign]


def h11_protocol() -> type:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    return H11Protocol


def httptools_protocol() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return HttpToolsProtocol


def plain_app(handle: Any) -> Any:
    """The ASGI app of this folder's plain servers (the bare app, the floor): ``handle(scope, receive, send)`` for
    each HTTP request; the lifespan acknowledged (uvicorn and granian run it), nothing run in between."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
        elif scope["type"] == "http":
            await handle(scope, receive, send)

    return app
