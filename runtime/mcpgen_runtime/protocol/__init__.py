"""The typed MCP layer that the server and the client share: what both sides do with the generated bindings.

- ``results``: a value handed over as a result, by user code or by the peer, checked against the negotiated
  version's result model, with errors that name the failing fields.
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
