"""An MCP server written only with the official Python SDK (``mcp`` 2.3.0 ``MCPServer``, which serves both eras), run
as a real subprocess by ``test_interop_sdk_server``: over stdio (``python sdk_dual_server.py stdio``) or streamable
HTTP on a free loopback port (``python sdk_dual_server.py http``, which prints its URL as its first line; add
``--json-response`` and/or ``--stateless`` for the SDK's other HTTP configurations).

Its tools: ``add`` (plain), ``greet`` (asks the user for a name through a resolver: an ``elicitation/create``
request in the legacy era, an ``InputRequiredResult`` round in 2026-07-28), ``region`` (an ``x-mcp-header``
parameter), ``touch`` (publishes a tools change and a resource update to ``subscriptions/listen`` streams),
plus a resource and a prompt.
"""

from __future__ import annotations

import socket
import sys
import warnings
from typing import Annotated

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from pydantic import BaseModel, Field

warnings.filterwarnings("ignore", category=DeprecationWarning)

server = MCPServer("sdk-dual", version="2.3.0", instructions="an SDK server serving both eras")


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool(description="Add two integers")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Greets the user, whose name it asks for")
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    return f"Hello, {who.name}!"


@server.tool(description="Echoes a region that travels as the Mcp-Param-Region header")
def region(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    return f"region {region}"


@server.tool(description="Announces a tools change and an update of resource `uri` to subscriptions/listen")
async def touch(uri: str, ctx: Context) -> str:
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated(uri)
    return "touched"


@server.resource("config://app", name="app-config", mime_type="text/plain")
def app_config() -> str:
    return "debug=true"


@server.prompt(description="Review some code")
def review(code: str) -> str:
    return f"Please review: {code}"


# The SDK's HTTP configurations besides its default (stateful, answers on SSE streams), chosen by command-line flags.
HTTP_FLAGS = {"--json-response": "json_response", "--stateless": "stateless_http"}


async def serve_http(flags: list[str]) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    app = server.streamable_http_app(**{HTTP_FLAGS[flag]: True for flag in flags})
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"] and set(sys.argv[2:]) <= set(HTTP_FLAGS):
        anyio.run(serve_http, sys.argv[2:])
    elif sys.argv[1:] in ([], ["stdio"]):
        server.run("stdio")
    else:
        sys.exit(f"usage: sdk_dual_server.py [stdio | http [{' | '.join(HTTP_FLAGS)}]...]")
