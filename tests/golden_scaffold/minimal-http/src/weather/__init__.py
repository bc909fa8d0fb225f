"""Weather: an MCP server built with mcpgen (see server.py)."""
