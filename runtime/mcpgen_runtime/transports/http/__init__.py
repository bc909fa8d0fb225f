"""MCP's streamable HTTP transport (2025-03-26 and later), both sides.

- ``server`` (package): the ASGI app serving one MCP endpoint, both eras on it: the legacy one with
  ``Mcp-Session-Id`` sessions, GET streams and resumption, the modern one with one request per POST; sessions,
  SSE framing, the event store, serving with uvicorn.
- ``client`` (package): ``HTTPClientStream``, the ``MessageStream`` to such an endpoint over httpx2 (what
  ``Client.connect_http`` uses), its auth hook, the 2026-07-28 request headers and the SSE resumption policy.

Nothing is re-exported: the server needs starlette and uvicorn, the client httpx2, and neither side needs the
other's library.
"""
