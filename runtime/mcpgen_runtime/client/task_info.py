"""What the client knows of one task at one moment, the same in both eras: ``TaskInfo``, read from the wire shapes
of MCP 2025-11-25 (core tasks: ``{task: {..., ttl, pollInterval}}`` and ``tasks/get``) and of the 2026-07-28
extension ``io.modelcontextprotocol/tasks`` (``CreateTaskResult`` / ``DetailedTask``: ``ttlMs``, ``pollIntervalMs``
and, inline, ``result`` / ``error`` / ``inputRequests``).

Where it sits: in the ``client`` layer, below ``tasks`` (which sends the requests); pure functions over JSON, so a
malformed answer is a plain unit test. One era-neutral snapshot rather than each era's model: the two eras name the
same facts differently (``ttl`` vs ``ttlMs``), and code that follows a task should not care which era it speaks.
A shape that is not a task (no string ``taskId``, an unknown ``status``) raises ``InvalidResultError``: the caller
cannot poll what it cannot name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from .errors import InvalidResultError

__all__ = [
    "TASKS_EXTENSION",
    "TASKS_EXTENSION_CAPABILITIES",
    "TASK_RESULT_TYPE",
    "TASK_STATUS_NOTIFICATION",
    "TERMINAL_STATUSES",
    "TaskInfo",
    "TaskStatus",
    "declares_tasks_extension",
    "legacy_task_info",
    "modern_task_info",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
# What a 2026-07-28 request declares in its `_meta` client capabilities to allow the server to answer with a task.
TASKS_EXTENSION_CAPABILITIES: Final[Mapping[str, Any]] = {"extensions": {TASKS_EXTENSION: {}}}
# The extension's status notification (2026-07-28, on a subscriptions/listen stream).
TASK_STATUS_NOTIFICATION: Final = "notifications/tasks"
# The `resultType` of a 2026-07-28 CreateTaskResult.
TASK_RESULT_TYPE: Final = "task"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
_STATUSES: Final = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """One task's state as the server last described it. ``task_id`` is None only for a handle whose server
    answered the call at once (2026-07-28: the server decides), which is then ``completed``. ``ttl_ms`` None:
    unlimited (or, for such a handle, none). ``result`` (completed: the call's result as JSON), ``error``
    (failed: the JSON-RPC error object) and ``input_requests`` (input_required: key -> request) are only sent
    inline by 2026-07-28 servers; in 2025-11-25 the result comes from ``tasks/result``."""

    task_id: str | None
    status: TaskStatus
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Completed, failed or cancelled: the status will not change again."""
        return self.status in TERMINAL_STATUSES


def _optional_int(raw: Mapping[str, Any], key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidResultError(f"{where}: {key} must be a non-negative number of milliseconds, not {value!r}")
    return int(value)


def _optional_str(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidResultError(f"{where}: {key} must be a string, not {value!r}")
    return value


def _optional_object(raw: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, dict):
        raise InvalidResultError(f"{where}: {key} must be an object, not {type(value).__name__}")
    return value


def _task_info(raw: object, where: str, ttl_key: str, poll_key: str) -> TaskInfo:
    if not isinstance(raw, Mapping):
        raise InvalidResultError(f"{where}: a task must be an object, not {type(raw).__name__}")
    task_id, status = raw.get("taskId"), raw.get("status")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidResultError(f"{where}: the task has no taskId string")
    if status not in _STATUSES:
        raise InvalidResultError(f"{where}: task {task_id!r} has the unknown status {status!r}")
    info = TaskInfo(
        task_id=task_id,
        status=cast(TaskStatus, status),
        status_message=_optional_str(raw, "statusMessage", where),
        created_at=_optional_str(raw, "createdAt", where),
        last_updated_at=_optional_str(raw, "lastUpdatedAt", where),
        ttl_ms=_optional_int(raw, ttl_key, where),
        poll_interval_ms=_optional_int(raw, poll_key, where),
        result=_optional_object(raw, "result", where),
        error=_optional_object(raw, "error", where),
        input_requests=_optional_object(raw, "inputRequests", where),
    )
    # What each status must carry inline (extension "Task Status"); without it the client could not go on.
    if info.status == "failed" and ttl_key == "ttlMs" and info.error is None:
        raise InvalidResultError(f"{where}: failed task {task_id!r} carries no error")
    if info.status == "completed" and ttl_key == "ttlMs" and info.result is None:
        raise InvalidResultError(f"{where}: completed task {task_id!r} carries no result")
    return info


def modern_task_info(raw: object, where: str) -> TaskInfo:
    """A 2026-07-28 ``CreateTaskResult``, ``tasks/get`` result or ``notifications/tasks`` params (``DetailedTask``:
    the task's fields at the top level)."""
    return _task_info(raw, where, "ttlMs", "pollIntervalMs")


def legacy_task_info(raw: object, where: str) -> TaskInfo:
    """A 2025-11-25 ``Task``: the ``task`` member of ``CreateTaskResult``, a ``tasks/get`` or ``tasks/cancel``
    result, or ``notifications/tasks/status`` params."""
    return _task_info(raw, where, "ttl", "pollInterval")


def declares_tasks_extension(capabilities: Mapping[str, Any]) -> bool:
    """Whether client capabilities (as a modern request's ``_meta`` carries them) declare the tasks extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and extensions.get(TASKS_EXTENSION) is not None
