"""mcpgen_runtime: the hand-written runtime under the typed MCP servers and clients that mcpgen generates and
scaffolds. It needs the generated bindings (``mcp_bindings``), pydantic, anyio, starlette, uvicorn and httpx2, and
nothing of the mcpgen toolchain.

Layers, bottom up; a layer imports only the layers below it (``tests/test_layers.py`` checks this and that no
import cycle exists, counting ``TYPE_CHECKING`` and function-level imports):

- ``jsonrpc``: JSON-RPC 2.0 envelopes and errors, the ``MessageStream`` interface and an in-memory pair, the
  ``RequestContext`` handlers see, and ``Session`` (a JSON-RPC peer: ids, concurrency, cancellation, progress,
  ping). No MCP versions, no pydantic.
- ``transports`` (``MessageStream`` implementations: stdio, streamable HTTP server and client) and ``protocol``
  (what the typed server and client share: result validation against the negotiated version's models).
- ``server`` (``Server``, the authoring API, ``Context`` for handlers) and ``client`` (``Client``), built on
  ``Session`` with the generated ``mcp_bindings``. Neither imports the other.
- ``testing``: ``connect_in_memory(server)``, a ``Client`` connected to a ``Server`` in the same process (above
  both, since they do not import each other).
- this package, which re-exports the public API. Streamable HTTP lives in ``transports.http_server`` and
  ``transports.http_client``; import them from there (they pull in starlette, uvicorn and httpx2, which stdio does
  not need).
"""

from .client import Client
from .jsonrpc import (
    ErrorCode,
    FrameTooLarge,
    InvalidParams,
    JSONParams,
    JSONRPCError,
    MemoryMessageStream,
    MessageStream,
    MethodNotFound,
    NotificationHandler,
    ProgressCallback,
    RequestContext,
    RequestHandler,
    RequestId,
    Session,
    SessionClosedError,
    memory_stream_pair,
)
from .server import (
    Accepted,
    CacheHint,
    CallNext,
    Cancelled,
    Context,
    Declined,
    ElicitOutcome,
    IncomingRequest,
    InvalidParamsError,
    LifespanError,
    Middleware,
    ResourceNotFoundError,
    Server,
    ToolError,
)
from .testing import connect_in_memory
from .transports.stdio import NDJSONStream, SubprocessStream, open_subprocess_stream, stdio_server_stream

__all__ = [
    "Accepted",
    "CacheHint",
    "CallNext",
    "Cancelled",
    "Client",
    "Context",
    "Declined",
    "ElicitOutcome",
    "ErrorCode",
    "FrameTooLarge",
    "IncomingRequest",
    "InvalidParams",
    "InvalidParamsError",
    "JSONParams",
    "JSONRPCError",
    "LifespanError",
    "MemoryMessageStream",
    "MessageStream",
    "MethodNotFound",
    "Middleware",
    "NDJSONStream",
    "NotificationHandler",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "RequestId",
    "ResourceNotFoundError",
    "Server",
    "Session",
    "SessionClosedError",
    "SubprocessStream",
    "ToolError",
    "connect_in_memory",
    "memory_stream_pair",
    "open_subprocess_stream",
    "stdio_server_stream",
]
