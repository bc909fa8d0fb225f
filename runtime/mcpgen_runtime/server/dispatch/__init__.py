"""How one request is handled, in either era: from what a transport hands over to the answer it sends back.

The pipeline (``pipeline``) is the same for both eras: a request's ``Context``, the server's middleware, then the
era's endpoint, which routes to the version's handler table. The eras differ in what carries the request:
- legacy (2024-11-05 .. 2025-11-25): a long-lived ``connection.ServerConnection`` over one ``jsonrpc.Session``
  (stdio, in memory, or an HTTP session), with ``initialize`` and the negotiated version's routes;
- modern (2026-07-28 and later): one call, ``modern.serve_modern``; over HTTP the transport calls it for each POST
  (``modern.answer_http``), over a long-lived stream ``ServerConnection`` hands each modern request to it.

Modules, bottom up:
- ``handlers``: ``Handlers``, the MCP request handlers written once for every version (the handler table), and the
  ``HandledConnection`` view they answer on.
- ``tool_headers``: the ``Mcp-Param-*`` header checks of a modern ``tools/call`` over HTTP.
- ``generated``: a version's generated code as dispatch uses it: bindings, server stub, the handler class derived
  from it, the methods served, and what a legacy request gets before ``initialize``.
- ``validation``: params validated into a version's models, results validated and dumped.
- ``request_meta``: ``ValidatedMetas``, a modern request's ``_meta`` validated once per distinct value.
- ``extension_methods``: the methods extensions add (``Registry.serve_extension_method``), answered where the
  request's capabilities declare the extension (the modern era's; the legacy era's have no extensions).
- ``request_state``: ``RequestStateCodec``, the sealed ``requestState`` of input rounds.
- ``input_rounds``: ``InputExchange``, multi round-trip requests (MRTR) behind ``Context.elicit`` / ``sample`` /
  ``list_roots`` in the modern era.
- ``subscriptions``: ``Listeners`` (``subscriptions/listen``), the ``Audience`` a server notifies, the relay to other
  workers.
- ``outgoing``: what both eras' connection views share: log messages, the client's answers, own resources read.
- ``pipeline``: ``run_request``, the middleware chain around an era's endpoint.
- ``modern_serving``: ``VersionServing`` and ``ModernServing``, what serving the modern era takes of a server,
  derived once; ``finished_result``, a result finished for a version.
- ``modern``: ``ModernRequest`` (a modern request's connection view), ``recognize``, ``serve_modern`` and
  ``answer_http`` (the one-call dispatch, over any transport and over HTTP).
- ``direct_call``: the direct lane of a modern ``tools/call`` that needs nothing of the general dispatch (no
  middleware, no ``Context``, no task): planned before it runs, answered as ``modern`` would answer it.
- ``connection``: ``ServerConnection``, a legacy session over one stream, which hands modern requests to ``modern``.
"""
