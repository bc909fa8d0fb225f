"""``subscriptions/listen`` on the client side (MCP 2026-07-28): a long-running request whose notifications, tagged
with ``io.modelcontextprotocol/subscriptionId`` (the request's JSON-RPC id), come out of a ``Subscription`` as the
negotiated version's typed notification models.

Where it sits: in the ``client`` layer; ``Subscriptions`` is the part of ``Client`` that opens them
(``Client.listen(...)``: an async context manager that waits for the server's acknowledgment, sending the listen
request through the request path) and that the client's notification handler feeds (``Subscriptions.route``).
Spec: basic/patterns/subscriptions.mdx.

- Iterate with ``async for notification in subscription`` (or ``await subscription.next()``); a
  ``notifications/tasks`` of the tasks extension (``Client.listen(task_ids=...)``) comes out as a ``TaskInfo``.
  The loop ends when the server ends the subscription gracefully (its result to the listen request); a listen
  request that fails raises its error from the iteration.
- ``acknowledged`` is the filter the server agreed to honour (it may be narrower than the one asked for).
- At most ``max_pending`` (``DEFAULT_MAX_PENDING``, 1024) notifications wait to be read; past that the subscription
  is given up with ``SubscriptionLostError`` rather than let memory grow.
- Leaving the ``async with`` cancels the listen request (over HTTP its stream is closed; over stdio the server is
  sent ``notifications/cancelled``). The caches of ``Client.tools()`` and friends are invalidated by the
  ``list_changed`` notifications that arrive on any subscription.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..jsonrpc.context import ProgressCallback
from ..jsonrpc.envelopes import ErrorCode, JSONParams, JSONRPCError, RequestId
from .connection import Connection
from .errors import ClientError, InvalidResultError
from .task_info import TASK_STATUS_NOTIFICATION, TASKS_EXTENSION_CAPABILITIES, modern_task_info

__all__ = ["DEFAULT_MAX_PENDING", "Subscription", "SubscriptionLostError", "Subscriptions", "open_subscription"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_PENDING: Final = 1024
SUBSCRIPTION_ID_META: Final = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
# (method, params, timeout, progress, capabilities to declare) -> the raw result: the request path's `call`, which
# stamps a modern request.
Call = Callable[
    [str, dict[str, Any] | None, float | None, ProgressCallback | None, Mapping[str, Any] | None],
    Awaitable[dict[str, Any]],
]


class SubscriptionLostError(ClientError):
    """A subscription that ended without the server's graceful result: the stream broke, or too many
    notifications were left unread."""


class Subscription:
    """One open ``subscriptions/listen`` stream (make it with ``Client.listen``)."""

    def __init__(self, subscription_id: RequestId, package: Any, max_pending: int) -> None:
        self.id = subscription_id
        self.acknowledged: Any = None  # the negotiated package's SubscriptionFilter, once acknowledged
        self._package = package
        self._ack = anyio.Event()
        self._send: MemoryObjectSendStream[Any]
        self._receive: MemoryObjectReceiveStream[Any]
        self._send, self._receive = anyio.create_memory_object_stream[Any](max_pending)
        self._error: BaseException | None = None
        self.ended = False

    async def wait_acknowledged(self) -> None:
        await self._ack.wait()
        if self.acknowledged is None and self._error is not None:
            raise self._error

    def deliver(self, method: str, params: JSONParams) -> None:
        """One notification of this subscription, from the client's notification handler (never blocks)."""
        if method == ACKNOWLEDGED and isinstance(params, dict):
            self.acknowledged = self._package.SubscriptionFilter.model_validate(params.get("notifications") or {})
            self._ack.set()
            return
        try:
            if method == TASK_STATUS_NOTIFICATION:
                # The tasks extension's notification is not in the core bindings: it comes out as a TaskInfo.
                typed: Any = modern_task_info(params, method)
            else:
                message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
                typed = self._package.parse_server_notification(message)
        except (ValueError, InvalidResultError) as exc:
            logger.warning("dropping a subscription notification that does not validate: %s", exc)
            return
        try:
            self._send.send_nowait(typed)
        except anyio.WouldBlock:
            self.finish(
                SubscriptionLostError(f"more than {self._send.statistics().max_buffer_size} unread notifications")
            )
        except anyio.ClosedResourceError:
            pass

    def finish(self, error: BaseException | None = None) -> None:
        """The listen request ended: gracefully (no ``error``) or not."""
        if self.ended:
            return
        self.ended = True
        self._error = error
        self._ack.set()
        self._send.close()

    async def next(self) -> Any:
        """The next notification; ``StopAsyncIteration`` once the subscription ended gracefully."""
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        return await self.next()

    def close(self) -> None:
        self._send.close()
        self._receive.close()


class Subscriptions:
    """The client's open subscriptions, by subscription id."""

    def __init__(self, connection: Connection, call: Call) -> None:
        self._connection = connection
        self._call = call
        self._open: dict[RequestId, Subscription] = {}

    def listen(
        self,
        *,
        tools: bool,
        prompts: bool,
        resources: bool,
        resource_uris: Sequence[str],
        ack_timeout: float | None,
        max_pending: int,
        task_ids: Sequence[str] = (),
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream (modern era) for the list changes and resource updates asked for
        (see ``Client.listen``); ``task_ids`` asks for ``notifications/tasks`` and declares the tasks extension on
        the listen request (a server refuses task notifications to a client that does not)."""
        spec = self._connection.negotiated()
        if self._connection.modern is None:
            raise ClientError(f"subscriptions/listen needs MCP 2026-07-28; this connection speaks {spec.version}")
        wanted: dict[str, Any] = {}
        for key, on in (
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ):
            if on:
                wanted[key] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        if task_ids:
            wanted["taskIds"] = list(task_ids)
        declare = TASKS_EXTENSION_CAPABILITIES if task_ids else None

        async def call() -> None:
            await self._call("subscriptions/listen", {"notifications": wanted}, math.inf, None, declare)

        # The subscription id is the listen request's JSON-RPC id: the one the session gives its next request (read
        # here, and the request is sent with no await in between, so no other request can take it first).
        return open_subscription(
            call,
            self._connection.session.next_request_id,
            spec.package,
            self,
            ack_timeout=ack_timeout,
            max_pending=max_pending,
        )

    def add(self, subscription: Subscription) -> None:
        self._open[subscription.id] = subscription

    def remove(self, subscription: Subscription) -> None:
        self._open.pop(subscription.id, None)

    def route(self, method: str, params: JSONParams) -> bool:
        """Deliver a notification that names one of our subscriptions; False for any other."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        subscription_id = meta.get(SUBSCRIPTION_ID_META) if isinstance(meta, dict) else None
        subscription = self._open.get(subscription_id) if isinstance(subscription_id, str | int) else None
        if subscription is None:
            return False
        subscription.deliver(method, params)
        return True


@asynccontextmanager
async def open_subscription(
    listen: Callable[[], Awaitable[None]],
    subscription_id: RequestId,
    package: Any,
    registry: Subscriptions,
    *,
    ack_timeout: float | None,
    max_pending: int,
) -> AsyncIterator[Subscription]:
    """Run ``listen`` (the ``subscriptions/listen`` request, whose JSON-RPC id is ``subscription_id``) in the
    background and yield its ``Subscription`` once acknowledged; leaving the block cancels the request."""
    subscription = Subscription(subscription_id, package, max_pending)
    registry.add(subscription)

    async def run() -> None:
        try:
            await listen()
        except Exception as exc:  # the stream broke or the server refused: the iteration raises it
            # The server's refusal (JSONRPCError) or our own error as itself; a broken stream (the transport's
            # "connection closed" answer, or the session closing) as "lost": the spec's unexpected disconnect.
            refused = isinstance(exc, JSONRPCError) and exc.code != ErrorCode.CONNECTION_CLOSED
            kept = refused or isinstance(exc, ClientError)
            subscription.finish(exc if kept else SubscriptionLostError(f"the listen request ended: {exc!r}"))
        else:
            subscription.finish()

    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                with anyio.fail_after(ack_timeout if ack_timeout is not None else math.inf):
                    await subscription.wait_acknowledged()
                yield subscription
            except BaseException as exc:
                body_error = exc  # re-raised below, not wrapped in an ExceptionGroup by the task group
            finally:
                tg.cancel_scope.cancel()  # ends the listen request (closes its stream / cancels it)
    finally:
        registry.remove(subscription)
        subscription.close()
    if body_error is not None:
        raise body_error
