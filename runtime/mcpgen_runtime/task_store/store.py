"""`TaskStore`: the interface every task store implements (`memory.InMemoryTaskStore` here, scaleout's
`RedisTaskStore` over Redis), and its bounds. The same contract tests run against both
(tests/support/task_store_contract.py).

Change notification is one bounded call, `wait_for_change(task_id, after_version, timeout)`: a record's `version`
grows on every stored change, and the call returns as soon as the stored version passes `after_version` (or at
once if it already has), or when `timeout` seconds pass. Memory wakes waiters with an event; Redis may use pub/sub
or poll, as long as it returns within the timeout. The engine waits on it for input responses and cancel requests,
the legacy era's blocking tasks/result and the status notifications wait on it too.
"""

from __future__ import annotations

import builtins
from typing import Any, Protocol, runtime_checkable

from .records import TaskRecord

# Documented defaults every store takes (and the server passes on).
DEFAULT_MAX_TASKS_PER_PRINCIPAL = 100  # live (non-terminal) tasks one principal may hold
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024  # a result or error, as compact JSON
DEFAULT_TTL_MS = 60 * 60 * 1000  # a task asked for without a ttl lives an hour after its creation
MAX_TTL_MS = 24 * 60 * 60 * 1000  # a longer ttl asked for is clamped to a day
DEFAULT_LIST_LIMIT = 50  # one page of list()
MAX_LIST_LIMIT = 200
MAX_WAIT_SECONDS = 60.0  # wait_for_change never waits longer, whatever it is asked


@runtime_checkable
class TaskStore(Protocol):
    """Where tasks are kept. Every call is bounded in time (a stalled backend is a fast error, not a hang).

    Calls naming a `principal` are the ones a client's request drives: a task of another principal is treated as
    unknown. The others are the engine's, for a task it runs. Every change bumps `version` and sets
    `last_updated_at`; a change to a terminal task raises `TaskTerminalError`; a change to an unknown or expired
    task returns None.
    """

    async def create(self, record: TaskRecord) -> TaskRecord:
        """Store a new task, durable on return; sets created_at/last_updated_at (now) and clamps ttl_ms (None ->
        the default, above the maximum -> the maximum). Raises `TaskLimitError` past the per-principal limit of
        live tasks. Returns the stored record."""
        ...

    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        """The task, or None when unknown, expired or another principal's."""
        ...

    async def list(
        self, principal: str | None, cursor: str | None = None, limit: int | None = None
    ) -> tuple[builtins.list[TaskRecord], str | None]:
        """The principal's tasks, oldest first, one page (limit defaults to DEFAULT_LIST_LIMIT, at most
        MAX_LIST_LIMIT) and the cursor of the next page (None after the last). Raises ValueError on a cursor this
        store did not hand out."""
        ...

    async def update(self, task_id: str, **changes: Any) -> TaskRecord | None:
        """Change fields of a non-terminal task (status to working/input_required, status_message,
        input_requests, poll_interval_ms ...); moving to a terminal status goes through `finish`."""
        ...

    async def finish(
        self,
        task_id: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        cancelled: bool = False,
        status_message: str | None = None,
    ) -> TaskRecord | None:
        """Move the task to completed (result), failed (error: a JSON-RPC error object) or cancelled; clears
        input_requests, the lease and pending input responses. A result or error over the size limit raises
        `TaskTooLargeError` and leaves the task as it was (the caller then finishes it with a short error)."""
        ...

    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        """Set cancel_requested on the principal's non-terminal task (the worker running it sees the flag and
        stops it, then calls `finish(cancelled=True)`). Raises `TaskTerminalError` if it is already terminal."""
        ...

    async def add_input_responses(
        self, task_id: str, principal: str | None, responses: dict[str, Any]
    ) -> TaskRecord | None:
        """Leave answers (key -> response JSON) for the worker running the task, atomically: only keys outstanding
        in `input_requests` are kept (the spec: others are ignored) and merged with any not yet taken; the answered
        keys leave `input_requests` at once (a tasks/get right after shows only what is still pending), and when
        none is left the status goes back to working. Unchanged (no version bump) when nothing was outstanding."""
        ...

    async def take_input_responses(self, task_id: str) -> dict[str, Any]:
        """Remove and return the answers left so far ({} when none, or the task is gone)."""
        ...

    async def renew_lease(self, task_id: str, owner: str, seconds: float) -> TaskRecord | None:
        """Set owner and lease_expires_at = now + seconds on a non-terminal task (a terminal one raises
        `TaskTerminalError`, which tells a worker its task was finished elsewhere)."""
        ...

    async def fail_expired_leases(self, now: float | None = None) -> builtins.list[TaskRecord]:
        """Fail every working/input_required task whose lease ran out before `now` (its worker died), with a
        JSON-RPC error saying so; returns the failed records."""
        ...

    async def wait_for_change(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        """The record once its version passes `after_version` (at once if it already has), or the current record
        when `timeout` (capped at MAX_WAIT_SECONDS) passes; None when the task is unknown or gone."""
        ...
