"""The typed MCP layer that the server and the client share: what both sides do with the generated bindings.

- ``results``: a value handed over as a result, by user code or by the peer, checked against the negotiated
  version's result model, with errors that name the failing fields.
- ``apps``: the wire names and rules of MCP Apps (``io.modelcontextprotocol/ui``) that the server's authoring and
  the client's host helpers both apply: the extension's identifier and MIME type, the ``_meta.ui`` keys, what a CSP
  origin and a sandbox domain may be.
- ``meta``: a definition's ``_meta`` checked (string keys, JSON values all the way down) and copied.
- ``version_unions``: unions of one generated class over the versions served (``AnyRoot``, ``AnyTool`` ...), built
  on first use.

Anything else both sides need (and that knows pydantic or the generated models, unlike ``jsonrpc``) belongs here,
since ``server`` and ``client`` may not import each other. The version facts themselves (which versions, which era,
which codes) are ``mcpgen_runtime.versions``, one layer down, so that ``transports`` can read them too.

May import: ``jsonrpc``, ``versions``, the standard library, pydantic and ``mcp_bindings``; never ``transports`` (it
is about messages, not wires), ``server`` or ``client``.
"""

from .results import ResultValidationError, as_result, field_errors

__all__ = ["ResultValidationError", "as_result", "field_errors"]
