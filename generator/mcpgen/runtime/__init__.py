"""mcpgen.runtime: the hand-written runtime under the typed MCP servers and clients (no generator dependencies).

Layers, bottom up: ``jsonrpc`` (JSON-RPC 2.0 envelopes and error codes), ``streams`` (the ``MessageStream``
interface and an in-memory pair), ``stdio`` (newline-delimited JSON over stdin/stdout or a child's pipes) and
``session`` (a JSON-RPC peer: ids, concurrency, cancellation, progress, ping). The typed MCP layer builds on
``Session`` with the generated ``mcp_bindings`` models: ``server`` (``Server``, the authoring API, and
``server_context.Context`` for handlers) and ``client`` (``Client``). Streamable HTTP lives in ``http_server``
and ``http_client``; import them from there (they pull in starlette, uvicorn and httpx2, which stdio does not need).
"""

from .client import Client
from .jsonrpc import ErrorCode, InvalidParams, JSONParams, JSONRPCError, MethodNotFound, RequestId
from .server import Server
from .server_context import Context
from .session import (
    NotificationHandler,
    ProgressCallback,
    RequestContext,
    RequestHandler,
    Session,
    SessionClosedError,
)
from .stdio import NDJSONStream, SubprocessStream, open_subprocess_stream, stdio_server_stream
from .streams import FrameTooLarge, MemoryMessageStream, MessageStream, memory_stream_pair

__all__ = [
    "Client",
    "Context",
    "ErrorCode",
    "FrameTooLarge",
    "InvalidParams",
    "JSONParams",
    "JSONRPCError",
    "MemoryMessageStream",
    "MessageStream",
    "MethodNotFound",
    "NDJSONStream",
    "NotificationHandler",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "RequestId",
    "Server",
    "Session",
    "SessionClosedError",
    "SubprocessStream",
    "memory_stream_pair",
    "open_subprocess_stream",
    "stdio_server_stream",
]
