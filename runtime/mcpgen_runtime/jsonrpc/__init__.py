"""The JSON-RPC 2.0 layer, the bottom of ``mcpgen_runtime``: a peer that knows no MCP version and no pydantic.

Holds, bottom up: ``envelopes`` (classifying incoming frames, building outgoing envelopes, ``JSONRPCError`` and the
error codes), ``streams`` (the ``MessageStream`` interface every transport implements, an in-memory pair),
``context`` (what a request handler sees: ``RequestContext``, the handler signatures, ``OutgoingSession``),
``inflight`` (``Admission``: how many incoming requests run at once, and back-pressure past that) and ``session``
(``Session``: ids, concurrency, cancellation, progress, ping).

May import: the standard library and anyio; nothing else of ``mcpgen_runtime`` (every other layer builds on this
one). Modules here import each other by module (``from .envelopes import ...``), never through this package.
This package re-exports their public names.
"""

from .context import (
    NotificationHandler,
    OutgoingSession,
    ProgressCallback,
    RequestContext,
    RequestHandler,
    SessionClosedError,
)
from .envelopes import (
    ErrorCode,
    InvalidParams,
    JSONParams,
    JSONRPCError,
    MethodNotFound,
    RequestId,
    decode_frame,
    encode_frame,
    error_response,
)
from .session import Session
from .streams import FrameTooLarge, MemoryMessageStream, MessageStream, memory_stream_pair

__all__ = [
    "ErrorCode",
    "FrameTooLarge",
    "InvalidParams",
    "JSONParams",
    "JSONRPCError",
    "MemoryMessageStream",
    "MessageStream",
    "MethodNotFound",
    "NotificationHandler",
    "OutgoingSession",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "RequestId",
    "Session",
    "SessionClosedError",
    "decode_frame",
    "encode_frame",
    "error_response",
    "memory_stream_pair",
]
