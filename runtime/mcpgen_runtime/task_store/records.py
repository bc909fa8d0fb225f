"""What a task is, as stored: `TaskRecord`, plain JSON so that any store (memory, Redis) can hold it, and the errors
every store raises. Nothing here knows either era's wire shape: the server turns a record into the 2026-07-28
extension's `DetailedTask` or the 2025-11-25 `Task`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal, cast

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TASK_STATUSES: frozenset[str] = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
# Once here a task never moves again: every store refuses a change out of these.
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})


@dataclass
class TaskRecord:
    """One task. Times are epoch seconds (float) except the two the wire speaks in milliseconds.

    `principal` is the authenticated subject that created the task, or None for an unauthenticated caller: a task is
    visible only to the same principal. `version` grows by one on every stored change (stores set it; watchers wait
    for it to pass a value they saw). `input_requests` maps a key to a server-to-client request (JSON) the task waits
    on; `input_responses` holds the answers a `tasks/update` left for the worker running the task (which may be
    another worker than the one that took the update). `owner` is the worker id running the task and
    `lease_expires_at` the time past which, unrenewed, the task is failed as abandoned.
    """

    task_id: str
    principal: str | None
    protocol_version: str
    method: str = "tools/call"
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float = 0.0
    last_updated_at: float = 0.0
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None
    input_responses: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    lease_expires_at: float | None = None
    cancel_requested: bool = False
    # What started the task (tool name, arguments...), kept so a later reader (another worker, the legacy era's
    # tasks/list) can say what it is; the stores never look inside.
    request: dict[str, Any] | None = None
    version: int = 0

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def expires_at(self) -> float | None:
        """When the task is gone (created_at + ttl), or None for a task kept until its store drops it."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskRecord:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("status") not in TASK_STATUSES:
            raise ValueError("not a stored task record")
        known = {f.name for f in dataclasses.fields(cls)}
        # Fields a newer writer added are ignored, so a rolling upgrade can read records of either version.
        return cls(**{key: value for key, value in cast(dict[str, Any], data).items() if key in known})


class TaskStoreError(Exception):
    """Base of what a task store raises on purpose."""


class TaskLimitError(TaskStoreError):
    """The principal already has as many live (non-terminal) tasks as the store allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"too many tasks in progress (limit {limit}); wait for some to finish")
        self.limit = limit


class TaskTooLargeError(TaskStoreError):
    """A result (or error) larger than the store keeps. The task is failed instead, with a short error."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"task result of {size} bytes is over the {limit}-byte limit")
        self.size = size
        self.limit = limit


class TaskTerminalError(TaskStoreError):
    """A change to a task that already reached a terminal status (completed, failed, cancelled)."""

    def __init__(self, record: TaskRecord) -> None:
        super().__init__(f"task {record.task_id} is already {record.status}")
        self.record = record
