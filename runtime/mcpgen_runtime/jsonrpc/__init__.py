"""The JSON-RPC 2.0 layer, the bottom of ``mcpgen_runtime``: a peer that knows no MCP version and no pydantic.

Modules, bottom up:

- ``envelopes``: classifying incoming frames, building outgoing envelopes, encoding frames, ``JSONRPCError`` and
  the error codes.
- ``streams``: the ``MessageStream`` interface every transport implements (and its optional extras), an in-memory
  pair, ``SendLock``.
- ``context``: what a request handler sees: ``RequestContext``, the handler signatures, ``OutgoingSession``, and
  the method names the session handles itself (ping, cancellation, progress).
- ``inflight``: ``Admission``, how many incoming requests run at once, and back-pressure past that.
- ``answers``: a request's pieces: ``Job`` (incoming), ``Pending`` (outgoing), ``call_handler`` (an outcome as an
  answer), the per-loop ``Primitives`` with ``TaskScope`` / ``TaskDeadline`` (asyncio's fast versions).
- ``eager``: ``Started``, a request's handler started at once in the caller's task (answered untracked if it
  finishes without suspending, adopted by the usual path if it suspends).
- ``request_tasks``: ``RequestTasks``, the plain asyncio tasks incoming requests run in.
- ``notification_queue``: ``NotificationQueue``, incoming notifications handled in order on one worker.
- ``writer``: ``FrameWriter``, whole frames written one at a time.
- ``outgoing``: ``Outgoing``, the session's own requests (ids, answers, progress callbacks, cancellation
  notices) and notifications.
- ``incoming``: ``IncomingRequests``, the peer's requests in flight by id, and their cancellation by the peer.
- ``work``: ``SessionWork``, the tasks a session spawns, the in-flight limit and the shutdown grace.
- ``execution``: ``RequestRunner``, the one way a handler is run and answered (in a request task, the task group,
  inline in a transport's task, or in a batch).
- ``session``: ``Session``, the lifecycle and the receive loop, composed of the parts above.

May import: the standard library, anyio, and ``mcpgen_runtime.safe_mode`` (below every layer: the switch for the
fast paths on other libraries' private parts); nothing else of ``mcpgen_runtime`` (every other layer builds on this
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
