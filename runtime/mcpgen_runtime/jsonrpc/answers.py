"""A ``Session``'s requests, each way: an incoming one (``Job``) and how it is answered (the handler's outcome as a
response, message and frame, or the error it becomes when the handler fails), an outgoing one waiting for its
answer (``Pending``), and the handlers a session has when given none.

Where it sits: in the ``jsonrpc`` layer, under ``session`` (split out of it: this part needs nothing of a session's
state but its request handler and the context it hands that handler).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio

from .context import PING, RequestContext, RequestHandler
from .envelopes import (
    ErrorCode,
    JSONParams,
    JSONRPCError,
    MethodNotFound,
    Request,
    encode_frame,
    error_response,
    success_response,
)

__all__ = ["Job", "Pending", "call_handler", "ignore_notification", "method_not_found"]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


@dataclass(slots=True)
class Job:
    """An accepted incoming request; ``scope`` is what ``notifications/cancelled`` cancels."""

    request: Request
    scope: anyio.CancelScope


@dataclass(slots=True)
class Pending:
    """An outgoing request waiting for its response."""

    event: anyio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    # How many notifications had been queued when the response arrived: the caller waits until those are handled,
    # so a progress notification the peer sent before its answer reaches the callback before the call returns.
    notifications_before: int = 0

    def resolve(self, result: dict[str, Any] | None = None, error: BaseException | None = None) -> None:
        if not self.event.is_set():
            self.result, self.error = result, error
            self.event.set()


async def method_not_found(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    raise MethodNotFound(method)


async def ignore_notification(method: str, params: JSONParams) -> None:
    logger.debug("notification %r ignored (no notification handler)", method)


async def call_handler(
    handler: RequestHandler, request: Request, context: RequestContext, *, answer_pings: bool
) -> tuple[dict[str, Any], bytes]:
    """Run ``handler`` for ``request``: the response as (message, encoded frame). A ``JSONRPCError`` becomes that
    error; any other exception is logged and answered -32603 (the peer learns nothing of it)."""
    try:
        if request.method == PING and answer_pings:
            result: Any = {}
        else:
            result = await handler(request.method, request.params, context)
        if not isinstance(result, dict):
            raise TypeError(f"request handler returned {type(result).__name__}, not dict")
        message = success_response(request.id, result)
        return message, encode_frame(message)
    except JSONRPCError as exc:
        message = error_response(request.id, exc.code, exc.message, exc.data)
        try:
            return message, encode_frame(message)
        except (TypeError, ValueError):
            logger.exception("error data of %r is not JSON-serializable", request.method)
    except Exception:
        # Log the details here; the peer only learns that something failed (no exception text, no traceback).
        logger.exception("request handler for %r (id %r) failed", request.method, request.id)
    message = error_response(request.id, ErrorCode.INTERNAL_ERROR, "Internal error")
    return message, encode_frame(message)
