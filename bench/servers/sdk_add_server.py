"""The benchmark's official-SDK server (mcp==2.3.0): the same `add` tool, served over stdio."""

import warnings

from mcp.server.mcpserver import MCPServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

server = MCPServer("bench-sdk", version="1.0.0")


@server.tool(description="Add two integers.")
async def add(a: int, b: int) -> str:
    return str(a + b)


if __name__ == "__main__":
    server.run("stdio")
