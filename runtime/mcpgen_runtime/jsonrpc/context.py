"""What request handlers see of a session: their context object, the handler signatures, and the few MCP method
names the session handles itself.

Where it sits: in the ``jsonrpc`` layer, below ``session`` (which implements all of this and imports it from here).
``RequestContext.session`` is typed as ``OutgoingSession``, the part of a ``Session`` a handler talks back through,
so that this module needs nothing from ``session``. The typed MCP server and client import these names from
``mcpgen_runtime.jsonrpc`` (or ``mcpgen_runtime``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeGuard

from .envelopes import JSONParams, Notification, RequestId, is_request_id

__all__ = [
    "CANCELLED",
    "PING",
    "PROGRESS",
    "EagerHandler",
    "NotificationHandler",
    "OutgoingSession",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "SessionClosedError",
    "route_progress",
]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where route_progress was written

PING: Final = "ping"
CANCELLED: Final = "notifications/cancelled"
PROGRESS: Final = "notifications/progress"

RequestHandler = Callable[[str, JSONParams, "RequestContext"], Awaitable[dict[str, Any]]]
EagerHandler = Callable[[str, JSONParams], Coroutine[Any, Any, dict[str, Any]] | None]
"""A request's coroutine when it needs no ``RequestContext`` (else None): see ``Session.answer_eagerly``."""
NotificationHandler = Callable[[str, JSONParams], Awaitable[None]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]


class SessionClosedError(ConnectionError):
    """The session (or its stream) is closed: the request was not sent, or its answer can no longer arrive."""


class OutgoingSession(Protocol):
    """What a request handler can do with the session its request came in on: send requests and notifications
    to the peer. ``session.Session`` implements it (the object behind ``RequestContext.session`` is that session)."""

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> dict[str, Any]: ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None: ...


@dataclass(slots=True)
class RequestContext:
    """What a request handler gets besides method and params."""

    session: OutgoingSession
    request_id: RequestId
    method: str
    params: JSONParams

    @property
    def meta(self) -> dict[str, Any] | None:
        meta = self.params.get("_meta") if isinstance(self.params, dict) else None
        return meta if isinstance(meta, dict) else None

    @property
    def progress_token(self) -> RequestId | None:
        token = self.meta.get("progressToken") if self.meta is not None else None
        return token if is_request_id(token) else None

    async def report_progress(
        self,
        progress: float,
        total: float | None = None,
        message: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Send ``notifications/progress`` for this request (with ``meta`` as its ``_meta``); a no-op when the
        requester asked for no progress."""
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        if meta is not None:
            params["_meta"] = meta
        await self.session.notify(PROGRESS, params)


def is_number(value: object) -> TypeGuard[float]:
    """A JSON number as Python sees it; bool is an int subclass but not a number on the wire."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def progress_fields(params: dict[str, Any]) -> tuple[float, float | None, str | None] | None:
    """(progress, total, message) of a ``notifications/progress``; None if one of them has the wrong type."""
    progress, total, message = params.get("progress"), params.get("total"), params.get("message")
    if not is_number(progress) or not (total is None or is_number(total)):
        return None
    return (progress, total, message) if message is None or isinstance(message, str) else None


def with_progress_token(params: dict[str, Any] | None, request_id: int) -> tuple[dict[str, Any], RequestId]:
    """``params`` with a ``_meta.progressToken`` (the caller's own, if it set one), without mutating the caller's dict."""
    params = dict(params) if params is not None else {}
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    token = meta.get("progressToken")
    if not is_request_id(token):
        token = request_id
        meta["progressToken"] = token
    params["_meta"] = meta
    return params, token


async def route_progress(callbacks: Mapping[RequestId, ProgressCallback], notification: Notification) -> bool:
    """Deliver a progress notification to the callback of the request that asked for it (``callbacks``: by
    progress token); False if none did."""
    params = notification.params
    if notification.method != PROGRESS or not isinstance(params, dict):
        return False
    token = params.get("progressToken")
    callback = callbacks.get(token) if is_request_id(token) else None
    if callback is None:
        return False
    fields = progress_fields(params)
    if fields is None:
        logger.warning("malformed progress notification for token %r dropped", token)
        return True
    await callback(*fields)
    return True
