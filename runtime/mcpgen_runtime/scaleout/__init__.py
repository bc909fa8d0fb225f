"""Scale-out: one MCP server as many worker processes (and hosts) behind one address, sharing state through Redis.

Without a Redis URL nothing here is used: a single worker keeps everything in memory. With one, any worker answers
any request, with no session affinity (see ``settings.ScaleOutSettings`` for the configuration, docs/how-to/deploy.md for
running it).

Holds, bottom up: ``settings`` (the configuration, from arguments or ``MCPGEN_*`` variables), ``keys`` (every Redis
key and channel name), ``redis_client`` (a worker's bounded pools; the check a command line runs first), the Redis
implementations of the transport's storage interfaces (``transports.http.server.storage``): ``redis_events`` (the
SSE event store and stream tails, on Redis streams), ``shared_session`` (``RedisSessionStore``, the legacy-era
session records, and ``SharedSession``, what a worker's copy of a session shares), ``session_fanout`` (server-wide
notifications to every worker's legacy-era sessions), ``directory`` (``SharedDirectory``: restoring sessions, GET
streams from Redis, DELETE everywhere), ``task_store`` (``RedisTaskStore``, the ``task_store.TaskStore`` every
worker shares: tasks started, polled, updated and cancelled through any worker); then ``worker`` (``ScaleOut`` /
``ScaleOutWorker``: a plain ``StreamableHTTPApp`` with that storage plugged in, the worker's heartbeat and channels;
nothing here subclasses the transport), ``broadcast`` (2026-07-28 change notifications to every worker's listen
streams) and ``supervisor`` (forking the workers of one host onto one port).

May import: ``jsonrpc``, ``transports``, ``protocol`` and ``task_store``, the standard library, anyio and redis-py
(the runtime's ``redis`` extra, imported nowhere else); never ``server`` or ``client``: the server layer builds a
worker from these pieces (``Server.serve_http(scale_out=...)``, ``Server.run_http(workers=, redis=)``,
``server.runner``).
"""

from .settings import ScaleOutSettings

__all__ = ["ScaleOutSettings"]
