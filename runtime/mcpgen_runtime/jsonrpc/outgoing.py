"""What a ``Session`` sends of its own accord: requests (ids, the answers waited for, progress callbacks, the
``notifications/cancelled`` for a request given up) and notifications (``Outgoing``).

Where it sits: in the ``jsonrpc`` layer, under ``session`` (which checks that it is open and calls ``request`` /
``notify`` here, and hands over the responses its receive loop reads: ``deliver``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from .answers import ANYIO, Pending, Primitives, deliver_response
from .context import CANCELLED, ProgressCallback, SessionClosedError, with_progress_token
from .envelopes import (
    ErrorCode,
    ErrorResponse,
    JSONRPCError,
    RequestId,
    Response,
    notification_message,
    request_message,
)
from .notification_queue import NotificationQueue
from .writer import FrameWriter

__all__ = ["Outgoing"]


class Outgoing:
    """The requests a session sent and waits for (``pending``, by id), and their progress callbacks (by progress
    token; the ``NotificationQueue`` routes progress notifications through the same dict)."""

    def __init__(
        self,
        writer: FrameWriter,
        notifications: NotificationQueue,
        progress_callbacks: dict[RequestId, ProgressCallback],
        *,
        cancel_send_timeout: float,
        closing: Callable[[], bool],
    ) -> None:
        self._writer = writer
        self._notifications = notifications
        self._progress_callbacks = progress_callbacks
        self._cancel_send_timeout = cancel_send_timeout
        self._closing = closing
        self.next_id = 1
        self.pending: dict[RequestId, Pending] = {}
        self.primitives: Primitives = ANYIO  # asyncio's own, once the session runs on asyncio

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float | None,
        progress_callback: ProgressCallback | None,
    ) -> dict[str, Any]:
        """``Session.request`` (see there), once the session is known to be open."""
        request_id = self.next_id
        self.next_id += 1
        token: RequestId | None = None
        if progress_callback is not None:
            params, token = with_progress_token(params, request_id)
            self._progress_callbacks[token] = progress_callback
        pending = Pending(self.primitives.event())
        self.pending[request_id] = pending
        notifications = self._notifications
        try:
            try:
                with self.primitives.deadline(timeout):
                    await self._writer.send_message(request_message(request_id, method, params))
                    await pending.event.wait()
                    if notifications.handled < pending.notifications_before:
                        await notifications.wait_handled(pending.notifications_before, self._closing)
            except TimeoutError:
                await self._send_cancelled(request_id, f"Request timed out after {timeout} seconds")
                raise
            except anyio.get_cancelled_exc_class():
                await self._send_cancelled(request_id, "Request cancelled by the caller")
                raise
        finally:
            self.pending.pop(request_id, None)
            if token is not None:
                self._progress_callbacks.pop(token, None)
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        await self._writer.send_message(notification_message(method, params))

    async def _send_cancelled(self, request_id: RequestId, reason: str) -> None:
        # Shielded: this runs exactly when the caller's task is being cancelled, and the peer must still hear of it.
        # Bounded, so a stuck transport cannot turn a cancellation into a hang.
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._cancel_send_timeout):
            try:
                await self._writer.send_message(
                    notification_message(CANCELLED, {"requestId": request_id, "reason": reason})
                )
            except SessionClosedError:
                pass

    def deliver(self, message: Response | ErrorResponse) -> None:
        """A response the receive loop read: the answer of the request it names (see ``answers.deliver_response``)."""
        deliver_response(self.pending, message, self._notifications.queued)

    def fail_malformed(self, request_id: RequestId, reason: str) -> None:
        """The peer answered ``request_id`` with something malformed: better a clear error for the caller than a
        request that waits forever."""
        pending = self.pending.get(request_id)
        if pending is not None:
            pending.resolve(error=JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Malformed response from peer: {reason}"))

    def fail_all(self, reason: str) -> None:
        """No answer can come any more: every request waiting fails with ``SessionClosedError(reason)``."""
        for pending in self.pending.values():
            pending.resolve(error=SessionClosedError(reason))
