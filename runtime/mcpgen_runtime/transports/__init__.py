"""The transports: ``MessageStream`` implementations that move whole JSON-RPC frames, one subpackage per wire.

- ``stdio`` (package): newline-delimited JSON over this process's stdin/stdout (a server) or a child's pipes (a
  client that starts its server).
- ``http`` (package): streamable HTTP; ``http.server`` is the server side (both eras on one endpoint), and
  ``http.client`` the client side (over httpx2).
- ``answer_guard``: ``AnswerGuard``, the wrapper the typed client puts around a stdio or in-memory stream so that
  an answer that arrives but cannot be delivered fails its call at once (the HTTP client stream does this itself).
- ``undeliverable``: what "cannot be delivered" means (not JSON, an object with the request's id but neither
  ``result`` nor ``error``), the error frame that fails such a call (``undeliverable_frame``, with a marker a server
  cannot forge) and how the client recognises it (``undeliverable_reason``).
- ``frame_head``: ``scan_head``, the top-level ``id`` and kind of a frame read before any damage in it.
- ``routing_headers``: the header names of a 2026-07-28 HTTP request (``Mcp-Method``, ``Mcp-Name``,
  ``MCP-Protocol-Version``) and which params member ``Mcp-Name`` mirrors: what both HTTP sides agree on.

The two eras (the spec's names): legacy (2024-11-05 .. 2025-11-25: ``initialize``, sessions) and modern
(2026-07-28 and later: no handshake, ``_meta`` on every request). stdio carries both unchanged; over HTTP each era
has its own module on either side.

May import: the ``jsonrpc`` layer (envelopes, ``MessageStream``), the standard library, anyio, and per wire its
own library (starlette and uvicorn, httpx2); never ``protocol``, ``server`` or ``client``.

Nothing is re-exported here: import a transport from its module, so that a stdio server or client never imports
starlette, uvicorn or httpx2 (the modules at this level, ``stdio`` and the non-HTTP modules of ``http.client``
need none of them).
"""
