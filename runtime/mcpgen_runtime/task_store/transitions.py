"""How a task record changes, whatever keeps it: the rules every `TaskStore` applies the same way (the bounds, the
ttl clamp, finishing, answering input requests, the error of an abandoned task), as plain functions on a
`TaskRecord`, so that the in-memory store and scaleout's Redis store cannot drift apart. A store brings only where
the record lives and how a change is made atomic there.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .records import TaskRecord, TaskTerminalError, TaskTooLargeError

__all__ = [
    "ABANDONED_ERROR_CODE",
    "ENGINE_FIELDS",
    "abandoned_error",
    "answer_input_requests",
    "check_bounds",
    "check_outcome",
    "clamp_ttl_ms",
    "finish_record",
    "json_size",
    "refuse_terminal",
]

# The JSON-RPC error a task gets when the worker running it stopped renewing its lease (crashed or was killed).
ABANDONED_ERROR_CODE: Final = -32603
# The fields `TaskStore.update` may change (the engine's bookkeeping); the rest move only through the other calls.
ENGINE_FIELDS: Final = frozenset(
    {"status", "status_message", "input_requests", "poll_interval_ms", "ttl_ms", "owner", "lease_expires_at", "request"}
)


def json_size(value: Any) -> int:
    """The size of ``value`` as compact JSON, in bytes: what the result limit counts."""
    return len(json.dumps(value, separators=(",", ":")).encode())


def check_bounds(max_tasks_per_principal: int, max_result_bytes: int, default_ttl_ms: int, max_ttl_ms: int) -> None:
    """A store's bounds, checked when it is made."""
    if max_tasks_per_principal < 1 or max_result_bytes < 1 or default_ttl_ms < 1 or max_ttl_ms < default_ttl_ms:
        raise ValueError("task store bounds must be positive, and max_ttl_ms at least default_ttl_ms")


def clamp_ttl_ms(ttl_ms: int | None, default_ttl_ms: int, max_ttl_ms: int) -> int:
    """The ttl a store keeps for an asked one: the default when none (or a negative one) is asked, at most the max."""
    if ttl_ms is None or ttl_ms < 0:
        return default_ttl_ms
    return min(ttl_ms, max_ttl_ms)


def abandoned_error(record: TaskRecord) -> dict[str, Any]:
    return {
        "code": ABANDONED_ERROR_CODE,
        "message": f"the worker running task {record.task_id} stopped (its lease expired)",
        "data": {"owner": record.owner},
    }


def refuse_terminal(record: TaskRecord) -> None:
    """`TaskTerminalError` (with a copy of the record) when the task has ended: a terminal task never changes."""
    if record.is_terminal:
        raise TaskTerminalError(TaskRecord.from_json(record.to_json()))


def check_outcome(
    result: dict[str, Any] | None, error: dict[str, Any] | None, cancelled: bool, max_result_bytes: int
) -> None:
    """What `finish` is given, before anything is read: exactly one outcome, and a result or error within the limit."""
    if sum((result is not None, error is not None, cancelled)) != 1:
        raise ValueError("finish() takes exactly one of result=, error= or cancelled=True")
    outcome = result if result is not None else error
    if outcome is not None and (size := json_size(outcome)) > max_result_bytes:
        raise TaskTooLargeError(size, max_result_bytes)


def finish_record(
    record: TaskRecord,
    result: dict[str, Any] | None,
    error: dict[str, Any] | None,
    status_message: str | None,
) -> None:
    """Move a live task to completed (``result``), failed (``error``) or else cancelled; what it was waiting for, its
    lease and its pending answers go with it."""
    refuse_terminal(record)
    record.status = "completed" if result is not None else "failed" if error is not None else "cancelled"
    record.result, record.error = result, error
    record.status_message = status_message
    record.input_requests = None
    record.input_responses = {}
    record.lease_expires_at = None


def answer_input_requests(record: TaskRecord, responses: dict[str, Any], max_bytes: int) -> bool:
    """Take the responses to the task's outstanding input requests (whether any was one). The spec: responses to keys
    not outstanding (never issued, answered, superseded) are ignored; a partial set leaves the task input_required
    with the rest, and once none is left it is working again (tasks/get right after says so)."""
    refuse_terminal(record)
    outstanding = record.input_requests or {}
    answered = {key: value for key, value in responses.items() if key in outstanding}
    if not answered:
        return False
    if json_size(answered) + json_size(record.input_responses) > max_bytes:
        raise TaskTooLargeError(json_size(answered), max_bytes)
    record.input_responses.update(answered)
    remaining = {key: value for key, value in outstanding.items() if key not in answered}
    record.input_requests = remaining or None
    if not remaining:
        record.status = "working"
    return True
