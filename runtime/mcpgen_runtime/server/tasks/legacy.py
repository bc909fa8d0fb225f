"""The 2025-11-25 tasks utility (basic/utilities/tasks) on the era-neutral task store and engine: the wire shapes of
that version (``Task``, ``CreateTaskResult``, the ``tasks/result`` payload), who may see a task, and ``LegacyTasks``,
the per-connection side of ``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` and
``notifications/tasks/status``.

Where it sits: in ``server.tasks``, above ``task_store`` (records, the store interface) and ``jsonrpc`` (errors),
under ``dispatch`` (``connection.ServerConnection`` owns one ``LegacyTasks`` and ``handlers`` routes the methods to
it). The engine that runs a task is the same for both eras (``server.tasks.engine``); what differs is only how the
task is seen and asked for, which is this module.

Decisions, each from the 2025-11-25 text:
- Binding ("Task Isolation and Access Control"): a task belongs to the authenticated owner of the HTTP request
  when there is one ("MUST bind tasks to said context"); unauthenticated, to the legacy session that created it
  (``session:<Mcp-Session-Id>`` over HTTP, a random id per stdio / in-memory connection). So ``tasks/list`` only ever
  shows the requestor's own tasks and may be declared; a task started without authentication is not reachable from
  another session, even with its id.
- Status: the text says a tool call whose result has ``isError: true`` is ``failed`` (the 2026-07-28 extension says
  ``completed``): the store keeps the extension's view and this module shows such a task as ``failed``, while
  ``tasks/result`` still returns that ``CallToolResult`` ("exactly what the underlying request would have
  returned").
- ``tasks/result`` of a ``cancelled`` task has no underlying answer to return: it answers -32000 "Task was
  cancelled" (data: the task id), as other 2025-11-25 servers do.
- ``tasks/result`` blocks (the text's MUST) but not forever: at most ``result_wait_seconds`` (default
  ``DEFAULT_RESULT_WAIT_SECONDS``), then -32603 saying the task is still running, with its status in ``data``; the
  client asks again (the task is untouched).
- ``input_required``: the questions the task waits on (the store's ``input_requests``, key -> ``{method, params}``)
  are sent as real server->client requests while the client waits in ``tasks/result``, each with the
  related-task ``_meta`` (the text's "Task-Augmented Tool Call With Elicitation" flow); the answers go back to the
  store (``add_input_responses``), where the engine running the task (on any worker) takes them. A client that
  answers a question with an error gets that error as the ``tasks/result`` answer (data names the task and the
  question); the task keeps waiting until it is cancelled or expires.
- ``tasks/cancel`` "MUST transition the task to cancelled before sending the response": the cancel is requested
  (the engine stops the tool) and the task is finished as cancelled at once; a terminal task is -32602.
- Status notifications (optional in the text): each task this connection created is watched until it is terminal
  and every status change is sent as ``notifications/tasks/status`` (without related-task ``_meta``, as the text
  says), bounded by the number of live tasks the store allows per principal.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import anyio

from ...jsonrpc.envelopes import ErrorCode, InvalidParams, JSONRPCError
from ...jsonrpc.session import SessionClosedError
from ...task_store import MAX_WAIT_SECONDS, TERMINAL_STATUSES, TaskRecord, TaskStore, TaskTerminalError

__all__ = [
    "DEFAULT_RESULT_WAIT_SECONDS",
    "RELATED_TASK",
    "TASK_CANCELLED_CODE",
    "LegacyTasks",
    "legacy_status",
    "session_principal",
    "task_payload",
    "wire_task",
]

logger = logging.getLogger(__name__)

RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key that ties a message to its task (2025-11-25 "Related Task Metadata")."""

DEFAULT_RESULT_WAIT_SECONDS: Final = 300.0
"""How long one ``tasks/result`` blocks for a task still running before it answers "still running" (the client asks
again): longer than most tool calls, shorter than the idle timeouts of the usual HTTP proxies' streams."""

TASK_CANCELLED_CODE: Final = -32000
"""``tasks/result`` of a cancelled task (an implementation-defined server error: the text defines none)."""

DEFAULT_INPUT_TIMEOUT_SECONDS: Final = 600.0
"""How long the client has to answer one question of a task (an elicitation may wait on a person)."""

Ask = Callable[[str, dict[str, Any], float], Awaitable[dict[str, Any]]]
"""Send a request to the client (method, params, timeout) and return its raw result; raises ``JSONRPCError``."""
Notify = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Send a notification to the client (method, params)."""


def iso_time(epoch_seconds: float) -> str:
    """An ISO 8601 UTC timestamp (the text's ``createdAt`` / ``lastUpdatedAt``), millisecond precision."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def legacy_status(record: TaskRecord) -> str:
    """The task's status as 2025-11-25 names it: a tool result with ``isError`` is ``failed`` there."""
    if record.status == "completed" and isinstance(record.result, Mapping) and record.result.get("isError") is True:
        return "failed"
    return record.status


def failure_message(record: TaskRecord) -> str | None:
    """Why a failed task failed: its JSON-RPC error's message, or the text of its tool error (``isError``)."""
    if record.error is not None:
        return str(record.error.get("message", "")) or None
    content = (record.result or {}).get("content")
    texts = [block.get("text") for block in content or () if isinstance(block, Mapping) and block.get("type") == "text"]
    return " ".join(str(text) for text in texts if text) or None


def wire_task(record: TaskRecord) -> dict[str, Any]:
    """The 2025-11-25 ``Task`` of ``record`` (``tasks/get``, ``tasks/list``, ``tasks/cancel``, the notification)."""
    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": legacy_status(record),
        "createdAt": iso_time(record.created_at),
        "lastUpdatedAt": iso_time(record.last_updated_at),
        "ttl": record.ttl_ms,  # null: unlimited (the text: "MUST include the actual ttl")
    }
    message = record.status_message
    if message is None and task["status"] == "failed":
        message = failure_message(record)  # the text: a failed task SHOULD say why in its statusMessage
    if message is not None:
        task["statusMessage"] = message
    if record.poll_interval_ms is not None:
        task["pollInterval"] = record.poll_interval_ms
    return task


def related_meta(task_id: str) -> dict[str, Any]:
    return {RELATED_TASK: {"taskId": task_id}}


def task_payload(record: TaskRecord) -> dict[str, Any]:
    """What ``tasks/result`` answers for a terminal task: the tool's result with the related-task ``_meta`` (the
    text's MUST), or the JSON-RPC error the call ended with (raised)."""
    if record.status == "cancelled":
        raise JSONRPCError(TASK_CANCELLED_CODE, "Task was cancelled", {"taskId": record.task_id})
    if record.error is not None:
        error = record.error
        raise JSONRPCError(
            int(error.get("code", ErrorCode.INTERNAL_ERROR)), str(error.get("message", "")), error.get("data")
        )
    result = dict(record.result or {})
    result["_meta"] = {**dict(result.get("_meta") or {}), **related_meta(record.task_id)}
    return result


def not_found(task_id: str) -> InvalidParams:
    # The same answer for unknown, expired and another requestor's task: nothing to learn by guessing ids.
    return InvalidParams("Failed to retrieve task: Task not found", {"taskId": task_id})


def session_principal(auth_owner: str | None, session_id: str | None, connection_id: str) -> str:
    """Who a legacy request's tasks belong to (see the module's "Binding"): the authenticated owner, else the HTTP
    session, else the connection (stdio, in memory)."""
    if auth_owner:
        return auth_owner
    return f"session:{session_id}" if session_id else f"connection:{connection_id}"


def new_connection_id() -> str:
    """An unguessable id for a connection with no session id (the text: "cryptographically secure")."""
    return secrets.token_urlsafe(24)


class LegacyTasks:
    """The task methods of one legacy connection, over the server's store. ``ask``/``notify`` reach the client on
    this connection; ``run_in_background`` starts a watcher in a task group the connection owns (None: no status
    notifications)."""

    def __init__(
        self,
        store: TaskStore,
        ask: Ask,
        notify: Notify,
        *,
        result_wait_seconds: float = DEFAULT_RESULT_WAIT_SECONDS,
        input_timeout_seconds: float = DEFAULT_INPUT_TIMEOUT_SECONDS,
    ) -> None:
        self.store = store
        self._ask, self._notify = ask, notify
        self.result_wait_seconds = result_wait_seconds
        self.input_timeout_seconds = input_timeout_seconds

    async def _find(self, task_id: str, principal: str) -> TaskRecord:
        record = await self.store.get(task_id, principal)
        if record is None:
            raise not_found(task_id)
        return record

    # -- the methods ----------------------------------------------------------------------------------------------

    async def get(self, task_id: str, principal: str) -> dict[str, Any]:
        return wire_task(await self._find(task_id, principal))

    async def list(self, principal: str, cursor: str | None) -> dict[str, Any]:
        try:
            records, next_cursor = await self.store.list(principal, cursor)
        except ValueError:
            raise InvalidParams("Invalid cursor", {"cursor": cursor}) from None
        result: dict[str, Any] = {"tasks": [wire_task(record) for record in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def cancel(self, task_id: str, principal: str) -> dict[str, Any]:
        try:
            requested = await self.store.request_cancel(task_id, principal)
            if requested is None:
                raise not_found(task_id)
            finished = await self.store.finish(
                task_id, cancelled=True, status_message="The task was cancelled by request."
            )
        except TaskTerminalError as exc:
            status = legacy_status(exc.record)
            raise InvalidParams(
                f"Cannot cancel task: already in terminal status '{status}'", {"taskId": task_id, "status": status}
            ) from None
        if finished is None:  # expired between the two calls
            raise not_found(task_id)
        return wire_task(finished)

    async def result(self, task_id: str, principal: str) -> dict[str, Any]:
        """Block until the task is terminal (at most ``result_wait_seconds``) and answer what its call would have;
        meanwhile, ask the client the questions the task waits on."""
        record = await self._find(task_id, principal)
        with anyio.move_on_after(self.result_wait_seconds):
            while record.status not in TERMINAL_STATUSES:
                if record.status == "input_required" and record.input_requests:
                    await self._ask_client(record, principal)
                seen = record.version
                changed = await self.store.wait_for_change(task_id, seen, MAX_WAIT_SECONDS)
                if changed is None:
                    raise not_found(task_id)
                record = changed
        if record.status not in TERMINAL_STATUSES:
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR,
                f"Task still {record.status} after {self.result_wait_seconds:g} s: call tasks/result again",
                {"taskId": task_id, "status": record.status},
            )
        return task_payload(record)

    async def _ask_client(self, record: TaskRecord, principal: str) -> None:
        """Send the task's outstanding questions to the client, one after the other, and store the answers (the
        store drops an answered key from ``input_requests`` at once, so a later read never asks it again)."""
        for key, question in sorted((record.input_requests or {}).items()):
            if not isinstance(question, Mapping):
                continue
            method = str(question.get("method", ""))
            params = dict(question.get("params") or {})
            params["_meta"] = {**dict(params.get("_meta") or {}), **related_meta(record.task_id)}
            try:
                answer = await self._ask(method, params, self.input_timeout_seconds)
            except JSONRPCError as exc:
                data = {"taskId": record.task_id, "inputKey": key, "clientError": {"code": exc.code, "data": exc.data}}
                raise JSONRPCError(exc.code, f"The client refused the task's {method}: {exc.message}", data) from None
            except TimeoutError:
                raise JSONRPCError(
                    ErrorCode.INTERNAL_ERROR,
                    f"The client did not answer the task's {method} within {self.input_timeout_seconds:g} s",
                    {"taskId": record.task_id, "inputKey": key},
                ) from None
            if await self.store.add_input_responses(record.task_id, principal, {key: answer}) is None:
                raise not_found(record.task_id)

    # -- status notifications -------------------------------------------------------------------------------------

    async def watch(self, record: TaskRecord) -> None:
        """Send ``notifications/tasks/status`` for every status change of ``record``'s task until it is terminal or
        gone (run in the connection's task group; ends with it). Notifications are optional (the text): a failure
        here ends the watcher, never the connection."""
        try:
            await self._watch(record)
        except (SessionClosedError, RuntimeError):  # the connection went away: nothing more to tell
            logger.debug("task %s: status notifications stopped", record.task_id, exc_info=True)
        except Exception:  # the store failed: clients poll anyway (they MUST NOT rely on these notifications)
            logger.warning("task %s: status notifications stopped", record.task_id, exc_info=True)

    async def _watch(self, record: TaskRecord) -> None:
        shown = (legacy_status(record), record.status_message)
        while record.status not in TERMINAL_STATUSES:
            changed = await self.store.wait_for_change(record.task_id, record.version, MAX_WAIT_SECONDS)
            if changed is None:
                return  # expired
            record = changed
            status = (legacy_status(record), record.status_message)
            if status != shown:
                shown = status
                await self._notify("notifications/tasks/status", wire_task(record))
