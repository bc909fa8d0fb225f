"""The errors a tool, resource, prompt or completion function raises on purpose: the answer is what the exception
says, and the server logs one INFO line without a traceback (an unexpected exception is logged with its traceback,
and answered -32603, or for a tool ``isError: true`` with its message).

- ``ToolError(content)``: from a tool, the call's result is ``isError: true`` with that content (a str is one text
  block; content blocks, generated models or dicts, and lists of them are passed as they are). The spec's "tool
  execution error": the model reads it and may correct itself. Raised anywhere else it is an unexpected exception.
- ``ResourceNotFoundError(uri)``: the JSON-RPC error for a resource that does not exist, with ``data: {"uri": uri}``;
  its code follows the negotiated version (``resource_not_found_code``): -32002 up to 2025-11-25 (server/resources
  "Error Handling"), -32602 from 2026-07-28 on.
- ``InvalidParamsError(message, data=None)``: -32602 with that message and data.
- ``CapabilityError``: the client did not declare what a ``Context`` call needs. In the modern era (2026-07-28) it
  is raised as ``MissingClientCapabilityError``, also a ``ProtocolError``: the request is answered -32021
  (MissingRequiredClientCapability, ``data.requiredCapabilities``), as the spec requires.
- ``HeaderMismatchError``: -32020, an HTTP header that contradicts the request body (the transport answers 400).
- ``InputRequired``: not an error of the function's own; ``Context.elicit`` / ``sample`` / ``list_roots`` raise it in
  the modern era to stop a handler that needs input it does not have yet (``dispatch.input_rounds``).

Both ``ProtocolError`` subclasses are JSON-RPC errors of the request, from whatever function raised them, tools
included: in a tool, raise ``ToolError`` for input the model can correct (the spec wants those as results).

Where it sits: in the ``server`` layer, at its bottom with ``context``; ``authoring`` and ``handlers`` catch these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...jsonrpc.envelopes import ErrorCode, JSONRPCError
from ...versions import (
    HEADER_MISMATCH,
    LEGACY_RESOURCE_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    resource_not_found_code,
)

__all__ = [
    "RESOURCE_NOT_FOUND",
    "CapabilityError",
    "HeaderMismatchError",
    "InputRequired",
    "InvalidParamsError",
    "MissingClientCapabilityError",
    "ProtocolError",
    "ResourceNotFoundError",
    "ToolError",
    "resource_not_found_code",
]

RESOURCE_NOT_FOUND: Final = LEGACY_RESOURCE_NOT_FOUND
"""The code MCP gives resources/read of an unknown URI up to 2025-11-25 (-32602, invalid params, from 2026-07-28:
``resource_not_found_code`` of the version, from ``mcpgen_runtime.versions``)."""


class ProtocolError(JSONRPCError):
    """A JSON-RPC error a registered function raises on purpose: the request is answered with it, from tools too,
    and it is logged at INFO without a traceback."""


class ResourceNotFoundError(ProtocolError):
    """The resource ``uri`` does not exist (raise it from a resource or template function, e.g. for an id that
    matches the template but names nothing). Answered with ``resource_not_found_code`` of the negotiated version."""

    def __init__(self, uri: str, message: str = "Resource not found") -> None:
        super().__init__(RESOURCE_NOT_FOUND, message, {"uri": uri})
        self.uri = uri


class InvalidParamsError(ProtocolError):
    """-32602 (invalid params): the request's params are well-formed but not acceptable; ``data`` is any JSON."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(ErrorCode.INVALID_PARAMS, message, data)


class ToolError(Exception):
    """Raised by a tool: the call answers ``isError: true`` with ``content``, a str (one text block), a content
    block (a generated ``TextContent``, ``ImageContent``, ... or a dict with a ``type``) or a list of them."""

    def __init__(self, content: Any) -> None:
        super().__init__(content if isinstance(content, str) else "tool error")
        self.content = content


class CapabilityError(RuntimeError):
    """The client did not declare (or the negotiated protocol version does not have) what a call needs."""


class MissingClientCapabilityError(CapabilityError, ProtocolError):
    """Modern era: the request needs a client capability its ``_meta`` did not declare (-32021, with
    ``data.requiredCapabilities``, a ``ClientCapabilities`` object naming it)."""

    def __init__(self, capability: str, method: str) -> None:
        message = f"Missing required client capability: {capability} (needed for {method})"
        ProtocolError.__init__(
            self, MISSING_REQUIRED_CLIENT_CAPABILITY, message, {"requiredCapabilities": {capability: {}}}
        )
        self.capability = capability


class HeaderMismatchError(ProtocolError):
    """-32020: an HTTP header disagrees with the request body (``Mcp-Param-*`` against the tool's arguments, ...)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(HEADER_MISMATCH, message, data)


class InputRequired(BaseException):
    """Stops a handler that needs input it does not have yet (modern era, ``dispatch.input_rounds``). A
    ``BaseException``, like cancellation, so that ``except Exception`` in a tool or resource function does not
    swallow it."""

    def __init__(self, requests: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = dict(requests)
