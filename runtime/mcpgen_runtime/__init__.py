"""mcpgen_runtime: the hand-written runtime under the typed MCP servers and clients that mcpgen generates and
scaffolds. It needs the generated bindings (``mcp_bindings``), pydantic, anyio, starlette, uvicorn and httpx2, and
nothing of the mcpgen toolchain.

Layers, bottom up; a layer imports only the layers below it (``tests/test_layers.py`` checks this and that no
import cycle exists, counting ``TYPE_CHECKING`` and function-level imports):

- ``safe_mode``: the one switch (``MCPGEN_SAFE_MODE=1``) and the registry of fast paths that rely on another
  library's private parts, each used only after a start-up self-check.
- ``jsonrpc``: JSON-RPC 2.0 envelopes and errors, the ``MessageStream`` interface and an in-memory pair, the
  ``RequestContext`` handlers see, and ``Session`` (a JSON-RPC peer: ids, concurrency, cancellation, progress,
  ping). No MCP versions, no pydantic.
- ``versions`` (beside ``jsonrpc``; neither imports the other): the protocol versions served, their era (legacy: the ``initialize`` handshake, 2024-11-05 ..
  2025-11-25; modern: per-request ``_meta``, 2026-07-28), and the facts of each, read from the generated bindings;
  the only runtime module that names a protocol version.
- ``transports`` (``MessageStream`` implementations: ``stdio/``, ``http/server/`` and ``http/client/``) and
  ``protocol`` (what the typed server and client share: result validation against the negotiated version's models)
  and ``task_store`` (what a task is, ``TaskStore`` and the in-memory store; no wire, no MCP version).
- ``scaleout``: Redis implementations of the HTTP server's storage components (sessions, events, stream tails,
  notification fan-out) and the worker supervisor; plugged into the transport, subclassing nothing of it.
- ``server`` (``Server``, the authoring API, ``Context`` for handlers, both eras' dispatch, hosting) and ``client``
  (``Client``), built with the generated ``mcp_bindings``. Neither imports the other.
- ``testing``: ``connect_in_memory(server)``, a ``Client`` connected to a ``Server`` in the same process (above
  both, since they do not import each other).
- this package, which re-exports the public API. Streamable HTTP lives in ``transports.http.server.app`` and
  ``transports.http.client.stream``; import them from there (they pull in starlette, uvicorn and httpx2, which stdio
  does not need).
"""

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # type checkers read these; at run time a name is imported on first use (__getattr__ below)
    from .client import HTTP as HTTP
    from .client import Client as Client
    from .client import InProcess as InProcess
    from .client import Stdio as Stdio
    from .jsonrpc import ErrorCode as ErrorCode
    from .jsonrpc import FrameTooLarge as FrameTooLarge
    from .jsonrpc import InvalidParams as InvalidParams
    from .jsonrpc import JSONParams as JSONParams
    from .jsonrpc import JSONRPCError as JSONRPCError
    from .jsonrpc import MemoryMessageStream as MemoryMessageStream
    from .jsonrpc import MessageStream as MessageStream
    from .jsonrpc import MethodNotFound as MethodNotFound
    from .jsonrpc import NotificationHandler as NotificationHandler
    from .jsonrpc import ProgressCallback as ProgressCallback
    from .jsonrpc import RequestContext as RequestContext
    from .jsonrpc import RequestHandler as RequestHandler
    from .jsonrpc import RequestId as RequestId
    from .jsonrpc import Session as Session
    from .jsonrpc import SessionClosedError as SessionClosedError
    from .jsonrpc import memory_stream_pair as memory_stream_pair
    from .server import Accepted as Accepted
    from .server import CacheHint as CacheHint
    from .server import CallNext as CallNext
    from .server import Cancelled as Cancelled
    from .server import Context as Context
    from .server import Declined as Declined
    from .server import ElicitOutcome as ElicitOutcome
    from .server import IncomingRequest as IncomingRequest
    from .server import InvalidParamsError as InvalidParamsError
    from .server import LifespanError as LifespanError
    from .server import Middleware as Middleware
    from .server import ResourceNotFoundError as ResourceNotFoundError
    from .server import Server as Server
    from .server import ToolError as ToolError
    from .testing import connect_in_memory as connect_in_memory
    from .transports.stdio.ndjson import NDJSONStream as NDJSONStream
    from .transports.stdio.ndjson import SubprocessStream as SubprocessStream
    from .transports.stdio.ndjson import open_subprocess_stream as open_subprocess_stream
    from .transports.stdio.ndjson import stdio_server_stream as stdio_server_stream

# Lazy (PEP 562), so that `from mcpgen_runtime.server import Server` does not import the client, and a client does not
# import the server: each pays only for what it uses (every layer below imports what it needs itself).
_DEFINED_IN: Final[dict[str, str]] = {
    "Accepted": ".server",
    "CacheHint": ".server",
    "CallNext": ".server",
    "Cancelled": ".server",
    "Client": ".client",
    "HTTP": ".client",
    "InProcess": ".client",
    "Stdio": ".client",
    "Context": ".server",
    "Declined": ".server",
    "ElicitOutcome": ".server",
    "ErrorCode": ".jsonrpc",
    "FrameTooLarge": ".jsonrpc",
    "IncomingRequest": ".server",
    "InvalidParams": ".jsonrpc",
    "InvalidParamsError": ".server",
    "JSONParams": ".jsonrpc",
    "JSONRPCError": ".jsonrpc",
    "LifespanError": ".server",
    "MemoryMessageStream": ".jsonrpc",
    "MessageStream": ".jsonrpc",
    "MethodNotFound": ".jsonrpc",
    "Middleware": ".server",
    "NDJSONStream": ".transports.stdio.ndjson",
    "NotificationHandler": ".jsonrpc",
    "ProgressCallback": ".jsonrpc",
    "RequestContext": ".jsonrpc",
    "RequestHandler": ".jsonrpc",
    "RequestId": ".jsonrpc",
    "ResourceNotFoundError": ".server",
    "Server": ".server",
    "Session": ".jsonrpc",
    "SessionClosedError": ".jsonrpc",
    "SubprocessStream": ".transports.stdio.ndjson",
    "ToolError": ".server",
    "connect_in_memory": ".testing",
    "memory_stream_pair": ".jsonrpc",
    "open_subprocess_stream": ".transports.stdio.ndjson",
    "stdio_server_stream": ".transports.stdio.ndjson",
}

__all__ = sorted(_DEFINED_IN)

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _DEFINED_IN.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
