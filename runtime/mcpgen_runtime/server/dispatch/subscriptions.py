"""``subscriptions/listen`` (MCP 2026-07-28 basic/patterns/subscriptions): the long-running requests through which a
modern client receives change notifications, tagged with ``io.modelcontextprotocol/subscriptionId``.

Where it sits: in the ``server`` layer, under ``connection`` (each ``ServerConnection`` has one ``Listeners``: the
listen requests open on it) and ``modern`` (whose ``subscriptions/listen`` handler calls ``listen``; over HTTP a
listen request gets ``Listeners`` of its own, reached through a ``ListenOnly``). ``Server.notify_*`` reach every
``Audience`` in ``Server.connections``, and a legacy connection hands the notification to its listeners here as
well as to its legacy client. With several workers (``scaleout.broadcast``), a ``Server`` also hands what it raises
to its ``relay`` (a ``NotificationRelay``), and the notifications other workers raised arrive through ``deliver`` of
the listeners of this worker; ``resync`` covers a gap in that feed.

A listen request is answered with ``notifications/subscriptions/acknowledged`` first, carrying the subset of the
requested filter the server honours (list changes of what it declares ``listChanged`` for; resource URIs when it
declares ``resources.subscribe``, each passed to the ``on_subscribe`` hook, which may refuse one by raising a
``ProtocolError``); then it stays open, and only the notification types it opted in to reach it, until the client
cancels it (``notifications/cancelled``, or over HTTP by closing the stream) or the connection ends; when the server
ends it (``close``: the client closed its side of the connection, or ``Server.end_subscriptions`` at shutdown) it is
answered, as the spec's "graceful closure", with a result carrying its subscription id.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio

from ...jsonrpc.context import OutgoingSession, SessionClosedError
from ...jsonrpc.envelopes import RequestId
from ...versions import SUBSCRIPTION_ID_META
from ..authoring.definitions import call_function
from ..authoring.errors import ProtocolError
from ..authoring.registry import Registry
from ..tasks.modern import detailed_task
from .generated import declared

__all__ = [
    "LIST_CHANGED_FILTERS",
    "LIST_CHANGED_METHODS",
    "MAX_WATCHED_TASKS",
    "Audience",
    "ListenOnly",
    "Listeners",
    "NotificationRelay",
    "TaskWatch",
]

logger = logging.getLogger(__name__)

LIST_CHANGED_FILTERS: Final = {
    "tools.listChanged": "toolsListChanged",
    "prompts.listChanged": "promptsListChanged",
    "resources.listChanged": "resourcesListChanged",
}
"""The capability a list-changed notification needs -> the filter field that opts in to it."""
LIST_CHANGED_METHODS: Final = {
    "tools.listChanged": "notifications/tools/list_changed",
    "prompts.listChanged": "notifications/prompts/list_changed",
    "resources.listChanged": "notifications/resources/list_changed",
}
"""The capability a list-changed notification needs -> its method."""


MAX_WATCHED_TASKS: Final = 100  # task ids one listen request may follow (notifications/tasks); more are -32602
TASK_WAIT_SECONDS: Final = 30.0  # one wait on the store for a task's change (then waited on again)


@dataclass
class TaskWatch:
    """The tasks a listen request follows (the tasks extension's ``notifications.taskIds``), already checked to be
    the requester's: each change of one is sent as ``notifications/tasks`` carrying its ``DetailedTask``, until it
    is terminal or gone. ``store``: a ``task_store.TaskStore``."""

    store: Any
    task_ids: list[str]


class NotificationRelay(Protocol):
    """Where a ``Server`` hands each change notification raised in this process, for the listen streams other
    processes hold (``scaleout.broadcast.NotificationBroadcast``). ``publish`` must neither block nor raise: it is
    called from whatever raised the notification (a tool call, a file watcher)."""

    def publish(self, capability: str, method: str, params: Mapping[str, Any] | None) -> None: ...


@dataclass
class _Subscription:
    kinds: frozenset[str]  # filter fields opted in to (toolsListChanged, ...)
    uris: frozenset[str] = field(default_factory=frozenset)


class Listeners:
    """The ``subscriptions/listen`` requests open on one connection (over HTTP: of one modern exchange).
    ``session``: where their notifications go."""

    def __init__(self, server: Registry, session: Callable[[], OutgoingSession]) -> None:
        self._server, self._session = server, session
        self._open: dict[RequestId, _Subscription] = {}
        self._closed = anyio.Event()

    def __len__(self) -> int:
        return len(self._open)

    def close(self) -> None:
        """End every listen request open on this connection, and any that arrives later, with a result."""
        self._closed.set()

    async def listen(
        self,
        requested: Mapping[str, Any],
        capabilities: Mapping[str, Any],
        request_id: RequestId,
        tasks: TaskWatch | None = None,
    ) -> Any:
        """Serve one listen request until it is cancelled or closed: acknowledge, then deliver; the graceful end's
        result. ``requested``: the filter as JSON; ``capabilities``: the server's, fitted to the request's version;
        ``tasks``: the tasks it follows, if it asked for ``taskIds`` (the modern dispatch checks them)."""
        kinds = frozenset(
            name
            for capability, name in LIST_CHANGED_FILTERS.items()
            if requested.get(name) is True and declared(capabilities, capability)
        )
        uris: list[str] = []
        if declared(capabilities, "resources.subscribe"):
            for uri in requested.get("resourceSubscriptions") or ():
                if await self._subscribe(uri):
                    uris.append(uri)
        agreed: dict[str, Any] = {name: True for name in sorted(kinds)}
        if "resourceSubscriptions" in requested and declared(capabilities, "resources.subscribe"):
            agreed["resourceSubscriptions"] = uris
        if tasks is not None:
            agreed["taskIds"] = list(tasks.task_ids)
        ack = {"_meta": {SUBSCRIPTION_ID_META: request_id}, "notifications": agreed}
        try:
            await self._session().notify("notifications/subscriptions/acknowledged", ack)
            # Only once acknowledged: nothing may reach the subscription before its acknowledgment.
            self._open[request_id] = _Subscription(kinds, frozenset(uris))
            async with anyio.create_task_group() as watchers:
                for task_id in tasks.task_ids if tasks is not None else ():
                    assert tasks is not None
                    watchers.start_soon(self._follow_task, tasks.store, task_id, request_id)
                await self._closed.wait()
                watchers.cancel_scope.cancel()
        finally:
            self._open.pop(request_id, None)
            with anyio.CancelScope(shield=True):
                for uri in uris:
                    await self._unsubscribe(uri)
        return {"_meta": {SUBSCRIPTION_ID_META: request_id}}

    async def _follow_task(self, store: Any, task_id: str, request_id: RequestId) -> None:
        """``notifications/tasks`` for each change of one task (its current state first), until it is terminal or
        gone. Each wait on the store is bounded; a store error ends the following (the client can still poll)."""
        version = -1
        while True:
            try:
                record = await store.wait_for_change(task_id, version, TASK_WAIT_SECONDS)
            except Exception:
                logger.warning("following task %s for a listen request failed", task_id, exc_info=True)
                return
            if record is None:
                return
            if record.version > version:
                version = record.version
                params = {**detailed_task(record), "_meta": {SUBSCRIPTION_ID_META: request_id}}
                try:
                    await self._session().notify("notifications/tasks", params)
                except (SessionClosedError, RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
            if record.is_terminal:
                return

    async def _subscribe(self, uri: str) -> bool:
        hook = self._server.subscribe_hook
        if hook is None:
            return True
        try:
            await call_function(functools.partial(hook, uri), {})
        except ProtocolError as exc:
            logger.info("subscription to %r refused: %s", uri, exc.message)
            return False
        return True

    async def _unsubscribe(self, uri: str) -> None:
        hook = self._server.unsubscribe_hook
        if hook is not None:
            try:
                await call_function(functools.partial(hook, uri), {})
            except Exception:
                logger.exception("the unsubscribe hook failed for %r", uri)

    async def deliver(self, capability: str, method: str, params: Mapping[str, Any] | None) -> None:
        """``method`` to the subscriptions that opted in to ``capability``'s notifications (a list change, or
        ``resources.subscribe`` for ``notifications/resources/updated`` of ``params["uri"]``)."""
        if not self._open:
            return
        name = LIST_CHANGED_FILTERS.get(capability)
        uri = (params or {}).get("uri")
        for request_id, subscription in list(self._open.items()):
            wanted = name in subscription.kinds if name is not None else uri in subscription.uris
            if not wanted:
                continue
            tagged = {**(params or {}), "_meta": {SUBSCRIPTION_ID_META: request_id}}
            try:
                await self._session().notify(method, tagged)
            except (SessionClosedError, RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                logger.debug("%s not sent to subscription %r: the connection is closed", method, request_id)

    async def resync(self) -> None:
        """Send each open subscription every list change it opted in to and an update of each resource it watches:
        after a gap in the notifications from other workers (Redis was unreachable), when what changed meanwhile is
        unknown. A needless change notification costs the client a re-list; a missed one leaves it a stale list."""
        for capability, method in LIST_CHANGED_METHODS.items():
            await self.deliver(capability, method, None)
        for uri in sorted({uri for subscription in list(self._open.values()) for uri in subscription.uris}):
            await self.deliver("resources.subscribe", "notifications/resources/updated", {"uri": uri})


class Audience(Protocol):
    """What ``Server`` reaches with its change notifications (``Server.connections``): a legacy connection (its
    client, and the listen requests open on it: ``connection.ServerConnection``) or the listen request of one modern
    HTTP exchange (``ListenOnly``)."""

    @property
    def listeners(self) -> Listeners: ...

    async def notify(self, capability: str, method: str, params: dict[str, Any] | None) -> None: ...

    async def notify_resource_updated(self, uri: str) -> None: ...


class ListenOnly:
    """The ``Audience`` of a modern ``subscriptions/listen`` request over HTTP, which has no connection: only its
    ``listeners`` are reached."""

    __slots__ = ("listeners",)

    def __init__(self, listeners: Listeners) -> None:
        self.listeners = listeners

    async def notify(self, capability: str, method: str, params: dict[str, Any] | None) -> None:
        await self.listeners.deliver(capability, method, params)

    async def notify_resource_updated(self, uri: str) -> None:
        await self.listeners.deliver("resources.subscribe", "notifications/resources/updated", {"uri": uri})
