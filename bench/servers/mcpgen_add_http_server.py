"""The HTTP benchmark's mcpgen server: the `add` tool of mcpgen_add_server.py, and `add_progress` (the same sum,
after one progress notification), served over streamable HTTP.

    python bench/servers/mcpgen_add_http_server.py --port PORT [--json-response] [--stack fast|h11]

Runs the way the README shows (`server.run_http()`: uvicorn, one worker, 127.0.0.1); `--json-response` answers
each request POST with one JSON body instead of an SSE stream. `--stack` (_stack.py): the event loop and HTTP parser
(fast: uvloop + httptools, h11: asyncio + h11), the same for every benchmark server; the process prints the ones it
really runs on (a `STACK` line on stderr).
"""

import os

import _stack

from mcpgen_runtime.server import Context, Server

server = Server("bench-mcpgen", version="1.0.0")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def add_progress(a: int, b: int, ctx: Context) -> str:
    """Add two integers, reporting progress once first (an SSE answer when the request carries a progressToken)."""
    await ctx.report_progress(1, 1)
    return str(a + b)


def choose_stack(stack: str) -> None:
    """The runtime's documented switch, ``MCPGEN_HTTP_STACK`` (transports/http/server/serving.py): ``h11``, or
    ``fast`` when httptools and uvloop both import, else ``auto`` (whichever of them imports, as _stack.resolve)."""
    loop, http = _stack.resolve(stack)
    choice = "h11" if stack == "h11" else "fast" if (loop, http) == ("uvloop", "httptools") else "auto"
    os.environ["MCPGEN_HTTP_STACK"] = choice


if __name__ == "__main__":
    arguments = _stack.options()
    choose_stack(arguments.stack)
    _stack.report_stack("mcpgen")
    try:
        server.run_http("127.0.0.1", arguments.port, json_response=arguments.json_response, log_level="warning")
    except KeyboardInterrupt:
        pass
