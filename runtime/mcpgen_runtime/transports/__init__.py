"""The transports: ``MessageStream`` implementations that move whole JSON-RPC frames, one module per wire.

Holds ``stdio`` (newline-delimited JSON over this process's stdin/stdout or a child's pipes); the streamable HTTP
server, both eras on one endpoint: ``http_server`` (the app: options, checks, limits, routing a request to its era),
``http_handshake`` (the session era, 2024-11-05 .. 2025-11-25: ``Mcp-Session-Id``, GET streams, resumability),
``http_modern`` (the stateless era, 2026-07-28: one POST as a one-shot stream, the ``Mcp-*`` header checks,
``subscriptions/listen`` streams), ``http_session`` (one HTTP session as the stream its connection handler reads and
writes, and ``close_sse_stream``), ``http_sse`` (SSE framing with event ids, priming and ``retry:``),
``event_store`` (the ``EventStore`` protocol and its bounded in-memory default, for ``Last-Event-ID`` replay),
``http_uvicorn`` (serving the app on a TCP_NODELAY socket) and ``http_coalesce`` (a fixed-length answer in one
write); and the client side: ``http_client`` (the streamable HTTP client over httpx2, resuming closed SSE streams),
``mcp_headers`` (the 2026-07-28 request headers a client sends) and ``delivery`` (answers that cannot be delivered
fail their call at once, and the ``SSEReconnect`` policy; no httpx2, so stdio clients use it too).

May import: the ``jsonrpc`` layer (envelopes, ``MessageStream``), the standard library, anyio, and per wire its
own library (starlette and uvicorn, httpx2); never ``protocol``, ``server`` or ``client``.

Nothing is re-exported here: import a transport from its module, so that a stdio server or client never imports
starlette, uvicorn or httpx2 (``server`` imports ``http_session``, which needs none of them, for
``close_sse_stream``; ``server`` and ``client`` import the HTTP server and client only when HTTP is used).
"""
