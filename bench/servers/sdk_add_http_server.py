"""The HTTP benchmark's official-SDK server (mcp==2.3.0): the same `add` and `add_progress` tools, over streamable
HTTP.

    python bench/servers/sdk_add_http_server.py --port PORT [--json-response] [--stack fast|h11]

The SDK's own app (`MCPServer.streamable_http_app()`: its Starlette app with the StreamableHTTPSessionManager), as
`MCPServer.run("streamable-http")` builds it, served by uvicorn (one worker, 127.0.0.1) the way that method does,
except that the event loop and HTTP parser are given explicitly (`--stack`, _stack.py), so that both servers run on
the same stack; the process prints the ones it really runs on (a `STACK` line on stderr). `log_level="warning"`, `access_log=False` and
`server_header=False` are what mcpgen's run_http sets; `--json-response` is the SDK's
`json_response=True`.
"""

import warnings

import _stack
from mcp.server.mcpserver import Context, MCPServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

server = MCPServer("bench-sdk", version="1.0.0", log_level="WARNING")


@server.tool(description="Add two integers.")
async def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Add two integers, reporting progress once first.")
async def add_progress(a: int, b: int, ctx: Context) -> str:
    await ctx.report_progress(1, 1)
    return str(a + b)


if __name__ == "__main__":
    arguments = _stack.options()
    app = server.streamable_http_app(json_response=arguments.json_response, host="127.0.0.1")
    _stack.serve(app, arguments.port, arguments.stack, "mcp 2.3.0")
