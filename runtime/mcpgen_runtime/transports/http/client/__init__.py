"""The streamable HTTP client: a ``MessageStream`` to one MCP endpoint, in either era, over httpx2.

- ``stream``: ``HTTPClientStream`` and ``open_http_stream(url)``: each outgoing frame is one POST (a legacy
  request carries ``Mcp-Session-Id`` and ``MCP-Protocol-Version``; a modern one is its own stateless POST with the
  ``Mcp-*`` request headers); the standalone GET stream (legacy); cancellation; the auth retry; ending the session
  with DELETE. The one module here that imports httpx2.
- ``inbox``: ``Inbox``, what the server sends on its way to ``receive``: one frame per message, the requests still
  waiting, and an answer that cannot be delivered failing its call at once; ``DEFAULT_MAX_MESSAGE_BYTES``.
- ``resume``: ``SSEReconnect``, how an SSE stream the server closed early is resumed (GET with ``Last-Event-ID``,
  legacy era only), and the bookkeeping of one resumption.
- ``headers``: the 2026-07-28 request headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``) and the
  encoding of header values (also used by the typed client for ``Mcp-Param-*``).
- ``auth``: the auth hook protocol (``HTTPAuth``, implemented by ``client.auth.OAuthProvider``), the parsed
  ``WWW-Authenticate`` of a refusal (``AuthChallenge``) and how the typed client recovers it from an error.

Nothing is re-exported: the typed client imports ``resume``, ``inbox``, ``headers`` and ``auth`` without httpx2,
and ``stream`` only when it connects over HTTP.
"""
