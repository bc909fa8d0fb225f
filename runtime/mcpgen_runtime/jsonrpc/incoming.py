"""The requests a ``Session`` has taken from its peer and not answered yet, by id, and their cancellation by the
peer (``notifications/cancelled``): ``IncomingRequests``.

Where it sits: in the ``jsonrpc`` layer, under ``session`` (its receive loop and ``dispatch_now`` accept requests
here; ``execution`` forgets them when they are answered).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio

from .answers import Job, JobScope
from .envelopes import ErrorCode, JSONParams, Request, RequestId, error_response, is_request_id

__all__ = ["IncomingRequests"]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


class IncomingRequests:
    """Each incoming request's id and the scope its handler runs in (what the peer's cancellation cancels)."""

    __slots__ = ("_scopes", "inline_scope", "new_scope")

    def __init__(self) -> None:
        self._scopes: dict[RequestId, JobScope] = {}
        # The scope of a request run in its own task, and of one run inline in a transport's task: the backend's
        # own classes once the session runs (anyio.CancelScope() looks the async library up on every call).
        self.new_scope: Callable[[], JobScope] = anyio.CancelScope
        self.inline_scope: Callable[[], JobScope] = anyio.CancelScope

    def accept(self, request: Request, inline: bool = False) -> Job | dict[str, Any]:
        """A job for ``request`` (``inline``: run in the calling task), or the error answer of a duplicate id."""
        if request.id in self._scopes:
            # Ids must be unique among in-flight requests; a duplicate cannot be cancelled or answered unambiguously.
            return error_response(request.id, ErrorCode.INVALID_REQUEST, "Invalid Request: duplicate request id")
        scope = self.inline_scope() if inline else self.new_scope()
        self._scopes[request.id] = scope
        return Job(request, scope)

    def holds(self, request_id: RequestId) -> bool:
        """Whether a request of that id is in flight (a request of the same id would be a duplicate)."""
        return request_id in self._scopes

    def forget(self, job: Job) -> None:
        """The job is answered (or will never be): its id may be used again."""
        if self._scopes.get(job.request.id) is job.scope:
            del self._scopes[job.request.id]

    def cancel(self, params: JSONParams) -> None:
        """The peer's ``notifications/cancelled``."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        # Forgotten at once, not when the task gets round to it: for the peer the request is over, and it may reuse
        # the id straight away (no response will ever tell it when the task finished).
        scope = self._scopes.pop(request_id, None) if is_request_id(request_id) else None
        if scope is None:
            # Unknown or already answered: the spec says to ignore it.
            logger.debug("cancellation of unknown or finished request %r ignored", request_id)
            return
        logger.debug(
            "peer cancelled request %r: %s", request_id, params.get("reason") if isinstance(params, dict) else None
        )
        scope.cancel()
