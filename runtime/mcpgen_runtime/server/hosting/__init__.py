"""How a server process runs and where it is served: logging, the announced URL, the Host names it accepts, and
its streamable HTTP endpoint inside another ASGI app.

Modules:
- ``options``: ``run_http`` / ``run_stdio`` (what ``Server.run_http`` / ``run_stdio`` and ``runner`` do), logging on
  stderr, ``allowed_hosts_for``; the standard library and anyio only, so that a stdio server loads no web stack.
- ``asgi``: ``MCPApp`` and ``mount_mcp``, a server's endpoint routed or mounted in a Starlette or FastAPI app (it
  imports starlette, so nothing imports it eagerly).
"""
