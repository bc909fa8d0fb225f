"""The typed MCP layer that the server and the client share: what both sides do with the generated bindings.

Holds ``results`` (a value handed over as a result, by user code or by the peer, checked against the negotiated
version's result model, with errors that name the failing fields). Anything else both sides need (and that knows
MCP versions or pydantic, unlike ``jsonrpc``) belongs here, since ``server`` and ``client`` may not import each other.

May import: ``jsonrpc``, the standard library, pydantic and ``mcp_bindings``; never ``transports`` (it is about
messages, not wires), ``server`` or ``client``.
"""

from .results import ResultValidationError, as_result, field_errors

__all__ = ["ResultValidationError", "as_result", "field_errors"]
