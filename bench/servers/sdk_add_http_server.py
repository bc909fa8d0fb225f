"""The HTTP benchmark's official-SDK server (mcp==2.3.0): the same `add` tool, served over streamable HTTP.

    python bench/servers/sdk_add_http_server.py --port PORT [--json-response]

Runs the way the SDK documents (`MCPServer.run("streamable-http")`: its Starlette app with the
StreamableHTTPSessionManager, under uvicorn, one worker, 127.0.0.1). `log_level="WARNING"` keeps uvicorn's
per-request access log off, as it is for the mcpgen server; `--json-response` is the SDK's `json_response=True`.
"""

import argparse
import warnings

from mcp.server.mcpserver import MCPServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

server = MCPServer("bench-sdk", version="1.0.0", log_level="WARNING")


@server.tool(description="Add two integers.")
async def add(a: int, b: int) -> str:
    return str(a + b)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-response", action="store_true")
    options = parser.parse_args()
    try:
        server.run("streamable-http", host="127.0.0.1", port=options.port, json_response=options.json_response)
    except KeyboardInterrupt:
        pass
