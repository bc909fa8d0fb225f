"""Scale-out: one MCP server as many worker processes (and hosts) behind one address, sharing state through Redis.

Without a Redis URL nothing here is used: a single worker keeps everything in memory. With one, any worker answers
any request, with no session affinity (see ``settings.ScaleOutSettings`` for the configuration, docs/deploy.md for
running it).

Holds, bottom up: ``settings`` (the configuration, from arguments or ``MCPGEN_*`` variables), ``keys`` (every Redis
key and channel name), ``redis_client`` (a worker's bounded pools; the check a command line runs first),
``redis_events`` (the SSE event store on Redis streams, and following a stream another worker writes),
``shared_session`` (a handshake-era session's state in Redis and a worker's copy of it), ``shared_app``
(``ScaleOutHTTPApp``: the streamable HTTP endpoint of one worker), ``broadcast`` (2026-07-28 change notifications
to every worker's listen streams) and ``supervisor`` (forking the workers of one host onto one port).

May import: ``jsonrpc``, ``transports`` and ``protocol``, the standard library, anyio and redis-py (the runtime's
``redis`` extra, imported nowhere else); never ``server`` or ``client``: the server layer builds a worker from these
pieces (``Server.serve_http(scale_out=...)``, ``Server.run_http(workers=, redis=)``, ``server.runner``).
"""

from .settings import ScaleOutSettings

__all__ = ["ScaleOutSettings"]
