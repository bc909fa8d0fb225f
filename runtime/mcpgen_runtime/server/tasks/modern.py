"""The 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on the wire: when a tools/call
becomes a task, the ``CreateTaskResult`` it answers, and the ``tasks/get`` / ``tasks/update`` / ``tasks/cancel``
methods. Shapes are built here from ``TaskRecord`` (plain JSON: the extension's bindings are not needed to answer).

Where it sits: ``server.tasks``, beside ``engine``; ``dispatch.modern`` calls it (it adds ``resultType`` "complete"
and ``_meta`` serverInfo to what these functions return, except the ``CreateTaskResult``, whose ``resultType`` is
"task").

Decisions the text leaves to the server (the spec: "The server is the sole decider"):
- A tool registered ``task="required"`` always runs as a task, and a client whose request does not declare the
  extension gets -32021 with ``data.requiredCapabilities``; ``task="optional"`` runs as a task exactly when the
  request declares the extension (else as a plain call); ``task="forbidden"`` (the default) never does. The legacy
  ``params.task`` hint of a 2025-11-25 client is ignored in this era (tolerated, never promotes a tool).
- Every tasks/* request must declare the extension in its ``_meta`` client capabilities (-32021 otherwise, as the
  text requires for non-declaring clients).
- A task belongs to the principal that created it (the access token's owner; None unauthenticated): another
  principal's task is unknown (-32602), so a task id is no capability by itself on a protected server.
- ``tasks/cancel`` on a terminal task acks (idempotent, as the text's "eventually consistent" cancel reads);
  ``tasks/update`` on one acks too, and ignores its responses (the text: ignore responses to keys not outstanding).
- ``tasks/result`` and ``tasks/list`` are -32601: the extension removed them (the 2025-11-25 core had them).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ...jsonrpc.envelopes import InvalidParams, JSONParams, JSONRPCError, MethodNotFound
from ...task_store import TaskRecord, TaskTerminalError, TaskTooLargeError
from ...versions import MISSING_REQUIRED_CLIENT_CAPABILITY
from .engine import TaskEngine

__all__ = [
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "answer_task_method",
    "create_task_result",
    "declares_tasks",
    "detailed_task",
    "missing_tasks_extension",
    "runs_as_task",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
TASK_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
REMOVED_METHODS: Final = frozenset({"tasks/result", "tasks/list"})  # the 2025-11-25 core's, gone in the extension


def declares_tasks(client_capabilities: Mapping[str, Any]) -> bool:
    """Whether a request's client capabilities declare the extension (``extensions`` names it, any settings)."""
    extensions = client_capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(TASKS_EXTENSION), Mapping)


def missing_tasks_extension(method: str) -> JSONRPCError:
    return JSONRPCError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {method} needs the {TASKS_EXTENSION} extension declared",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def runs_as_task(task_support: str, client_capabilities: Mapping[str, Any], tool_name: str) -> bool:
    """Whether a tools/call of a tool with this ``task_support`` runs as a task (see the module docstring);
    -32021 for a required one the request does not declare the extension for."""
    if task_support == "forbidden":
        return False
    if declares_tasks(client_capabilities):
        return True
    if task_support == "required":
        raise missing_tasks_extension(f"tools/call of {tool_name!r}")
    return False


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(record: TaskRecord) -> dict[str, Any]:
    """The extension's ``Task``: what every shape of a task carries."""
    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": _iso(record.created_at),
        "lastUpdatedAt": _iso(record.last_updated_at),
        "ttlMs": record.ttl_ms,
    }
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    if record.poll_interval_ms is not None:
        task["pollIntervalMs"] = record.poll_interval_ms
    return task


def create_task_result(record: TaskRecord) -> dict[str, Any]:
    """``CreateTaskResult`` (``Result & Task``, flat): the handle a tools/call answers with."""
    return {**task_fields(record), "resultType": "task"}


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """``DetailedTask``: the task with what its status inlines (tasks/get, notifications/tasks)."""
    task = task_fields(record)
    if record.status == "input_required":
        task["inputRequests"] = dict(record.input_requests or {})
    elif record.status == "completed":
        task["result"] = record.result if record.result is not None else {"content": []}
    elif record.status == "failed":
        task["error"] = record.error if record.error is not None else {"code": -32603, "message": "Task failed"}
    return task


def _task_id(params: JSONParams) -> str:
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("Invalid params: taskId must be a non-empty string")
    return task_id


def _unknown(task_id: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: unknown task {task_id!r}")


async def answer_task_method(
    engine: TaskEngine, method: str, params: JSONParams, principal: str | None, declared: bool
) -> dict[str, Any]:
    """The result of ``tasks/get`` / ``tasks/update`` / ``tasks/cancel`` (without ``resultType`` and ``_meta``,
    which the dispatch adds); -32601 for the removed ``tasks/result`` / ``tasks/list``."""
    if method not in TASK_METHODS:
        raise MethodNotFound(method)
    if not declared:
        raise missing_tasks_extension(method)
    task_id = _task_id(params)
    store = engine.store
    if method == "tasks/get":
        record = await store.get(task_id, principal)
        if record is None:
            raise _unknown(task_id)
        return detailed_task(record)
    if method == "tasks/update":
        assert isinstance(params, dict)
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise InvalidParams("Invalid params: inputResponses must be an object")
        try:
            if await store.add_input_responses(task_id, principal, responses) is None:
                raise _unknown(task_id)
        except TaskTerminalError:
            pass  # nothing is outstanding on a finished task: the responses are ignored, the update acked
        except TaskTooLargeError as exc:
            raise InvalidParams(f"Invalid params: {exc}") from None
        return {}
    try:
        if await store.request_cancel(task_id, principal) is None:
            raise _unknown(task_id)
    except TaskTerminalError:
        pass  # idempotent: cancelling a finished task acks, and its outcome stands
    return {}
