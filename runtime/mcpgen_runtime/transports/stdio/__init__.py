"""MCP's stdio transport: one JSON-RPC message per line (UTF-8, no embedded newline), nothing but protocol on
stdout; both eras travel over it unchanged.

- ``ndjson``: the framing (``NDJSONStream``, over any pair of anyio byte streams), ``stdio_server_stream`` (this
  process's stdin/stdout: a server) and ``open_subprocess_stream`` (a child's pipes: a client that starts its
  server, shut down with the MCP stdio sequence: close its stdin, then SIGTERM, then SIGKILL).
- ``pipes``: the byte streams under the framing: pipes read and written on the event loop (``PipeStream``,
  ``LoopReader`` on asyncio) and blocking files (a terminal, a regular file) on threads (``file_byte_streams``).
"""
