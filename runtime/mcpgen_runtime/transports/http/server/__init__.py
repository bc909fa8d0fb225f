"""The streamable HTTP transport, server side: one ASGI endpoint serving both eras of MCP, and where it keeps state.

Modules, top down:

- ``app``: ``StreamableHTTPApp`` (routing, auth, Host/Origin and body checks, the limits) composed of the two eras,
  and ``run_http`` (typed options: ``HTTPAppOptions``; ``AppFactory`` builds the app, e.g. ``scaleout``'s).
- ``legacy``: ``LegacyEra``, the legacy era (2024-11-05 .. 2025-11-25): ``initialize``, sessions, POST/GET/DELETE,
  resumption with ``Last-Event-ID``, the in-flight limits.
- ``modern``: ``ModernEra``, the modern era (2026-07-28 and later): one POST, one request, served as one call;
  ``modern_routing``: which era a POST is of, and the ``_meta`` and ``Mcp-*`` header checks of a modern one.
- ``session``: ``HTTPSessionStream``, one legacy-era session as the ``MessageStream`` its handler reads and writes
  (routing of what it sends to the right SSE stream, idle expiry, the ``ResponseStream`` s of its POSTs).
- ``channel``: ``Channel``, the bounded queue of ``Event`` s between a session and one live HTTP response, and
  ``ResponseStream``, what one POST or GET of a session answers on.
- ``sse``: SSE encoding and the SSE responses (``SSEResponse``, ``InlineSSE``).
- ``asgi``: plain ASGI helpers (the request, simple answers, ``DisconnectWatch``, the Origin check).
- ``auth``: the authentication interface the app calls (``HTTPAuthenticator``) and its answers.
- ``storage``: ``HTTPStorage``, what an app is given, and the interfaces over sessions (``SessionDirectory``,
  ``SessionHost``); ``stores``: the interfaces under them (``SessionStore``, ``StreamTails``, ``SessionFanout``,
  ``SessionMirror``); ``event_store``: ``EventStore`` and the default ``InMemoryEventStore``; ``memory``: the other
  in-memory implementations (``scaleout`` has the Redis ones).
- ``serving``: ``serve_app``, uvicorn running an app; ``coalesce``: uvicorn's protocol writing a response's head and
  first body chunk in one send (a fast path behind ``safe_mode``).
"""
