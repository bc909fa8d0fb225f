"""The benchmark's mcpgen server: one tool, `add`, served over stdio by mcpgen_runtime."""

from mcpgen_runtime.server import Server

server = Server("bench-mcpgen", version="1.0.0")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


if __name__ == "__main__":
    server.run_stdio()
