"""The transports: ``MessageStream`` implementations that move whole JSON-RPC frames, one module per wire.

Holds ``stdio`` (newline-delimited JSON over this process's stdin/stdout or a child's pipes), ``http_server`` (the
streamable HTTP server: a starlette app served by uvicorn) with ``http_session`` (one HTTP session as the stream
its connection handler reads and writes), and ``http_client`` (the streamable HTTP client, over httpx2).

May import: the ``jsonrpc`` layer (envelopes, ``MessageStream``), the standard library, anyio, and per wire its
own library (starlette and uvicorn, httpx2); never ``protocol``, ``server`` or ``client``.

Nothing is re-exported here: import a transport from its module, so that a stdio server or client never imports
starlette, uvicorn or httpx2 (``server`` and ``client`` import the HTTP modules only when HTTP is used).
"""
