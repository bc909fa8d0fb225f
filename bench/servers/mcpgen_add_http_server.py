"""The HTTP benchmark's mcpgen server: the `add` tool of mcpgen_add_server.py, served over streamable HTTP.

    python bench/servers/mcpgen_add_http_server.py --port PORT [--json-response]

Runs the way the README shows (`server.run_http()`: uvicorn, one worker, 127.0.0.1); `--json-response` answers
each request POST with one JSON body instead of an SSE stream.
"""

import argparse

from mcpgen_runtime.server import Server

server = Server("bench-mcpgen", version="1.0.0")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--json-response", action="store_true")
    options = parser.parse_args()
    try:
        server.run_http("127.0.0.1", options.port, json_response=options.json_response)
    except KeyboardInterrupt:
        pass
