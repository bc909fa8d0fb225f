"""`InMemoryTaskStore`: the default task store, one process's dict. Bounded everywhere: live tasks per principal,
the size of a result, the ttl (clamped), a page of list(), a wait. Expired tasks are dropped when next touched and
swept on every create, so memory stays bounded by live tasks plus those whose ttl has not run out.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import time
from typing import Any

import anyio

from .records import TaskLimitError, TaskRecord, TaskTerminalError
from .store import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_TASKS_PER_PRINCIPAL,
    DEFAULT_TTL_MS,
    MAX_LIST_LIMIT,
    MAX_TTL_MS,
    MAX_WAIT_SECONDS,
)
from .transitions import (
    ENGINE_FIELDS,
    abandoned_error,
    answer_input_requests,
    check_bounds,
    check_outcome,
    clamp_ttl_ms,
    finish_record,
)


class InMemoryTaskStore:
    """A `TaskStore` in this process's memory: a single server process (or tests). Records are copied in and out,
    so callers can never change a stored record by accident, as with a store that serializes."""

    def __init__(
        self,
        *,
        max_tasks_per_principal: int = DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        default_ttl_ms: int = DEFAULT_TTL_MS,
        max_ttl_ms: int = MAX_TTL_MS,
    ) -> None:
        check_bounds(max_tasks_per_principal, max_result_bytes, default_ttl_ms, max_ttl_ms)
        self.max_tasks_per_principal = max_tasks_per_principal
        self.max_result_bytes = max_result_bytes
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self._tasks: dict[str, TaskRecord] = {}  # insertion order is creation order: list() pages through it
        self._changed: dict[str, anyio.Event] = {}

    # -- helpers -----------------------------------------------------------------------------------------------

    def _live(self, task_id: str, now: float | None = None) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is None:
            return None
        expires = record.expires_at()
        if expires is not None and (time.time() if now is None else now) >= expires:
            self._drop(task_id)
            return None
        return record

    def _drop(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()  # a waiter wakes, finds the task gone and returns None

    def _sweep(self, now: float) -> None:
        for task_id in [t for t, r in self._tasks.items() if (e := r.expires_at()) is not None and now >= e]:
            self._drop(task_id)

    def _touch(self, record: TaskRecord) -> TaskRecord:
        record.version += 1
        record.last_updated_at = time.time()
        event = self._changed.pop(record.task_id, None)
        if event is not None:
            event.set()
        return dataclasses.replace(record, input_responses=dict(record.input_responses))

    @staticmethod
    def _copy(record: TaskRecord) -> TaskRecord:
        return TaskRecord.from_json(record.to_json())

    def _mutable(self, task_id: str) -> TaskRecord | None:
        record = self._live(task_id)
        if record is not None and record.is_terminal:
            raise TaskTerminalError(self._copy(record))
        return record

    # -- the TaskStore interface -------------------------------------------------------------------------------

    async def create(self, record: TaskRecord) -> TaskRecord:
        now = time.time()
        self._sweep(now)
        if record.task_id in self._tasks:
            raise ValueError(f"task {record.task_id} already exists")
        live = sum(1 for r in self._tasks.values() if r.principal == record.principal and not r.is_terminal)
        if live >= self.max_tasks_per_principal:
            raise TaskLimitError(self.max_tasks_per_principal)
        stored = self._copy(record)
        stored.created_at = stored.last_updated_at = now
        stored.ttl_ms = clamp_ttl_ms(record.ttl_ms, self.default_ttl_ms, self.max_ttl_ms)
        stored.version = 1
        self._tasks[stored.task_id] = stored
        return self._copy(stored)

    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        return self._copy(record)

    async def list(
        self, principal: str | None, cursor: str | None = None, limit: int | None = None
    ) -> tuple[builtins.list[TaskRecord], str | None]:
        page_size = min(max(1, limit or DEFAULT_LIST_LIMIT), MAX_LIST_LIMIT)
        self._sweep(time.time())
        mine = [r for r in self._tasks.values() if r.principal == principal]
        start = 0
        if cursor is not None:
            # The cursor is the id of the last task handed out: stable while tasks are added after it.
            ids = [r.task_id for r in mine]
            if cursor not in ids:
                raise ValueError("unknown or expired cursor")
            start = ids.index(cursor) + 1
        page = mine[start : start + page_size]
        next_cursor = page[-1].task_id if page and start + page_size < len(mine) else None
        return [self._copy(r) for r in page], next_cursor

    async def update(self, task_id: str, **changes: Any) -> TaskRecord | None:
        unknown = set(changes) - ENGINE_FIELDS
        if unknown:
            raise ValueError(f"update() cannot change {sorted(unknown)}")
        if changes.get("status", "working") not in ("working", "input_required"):
            raise ValueError("a terminal status is set through finish()")
        record = self._mutable(task_id)
        if record is None:
            return None
        for name, value in changes.items():
            setattr(record, name, value)
        return self._copy(self._touch(record))

    async def finish(
        self,
        task_id: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        cancelled: bool = False,
        status_message: str | None = None,
    ) -> TaskRecord | None:
        check_outcome(result, error, cancelled, self.max_result_bytes)
        record = self._mutable(task_id)
        if record is None:
            return None
        finish_record(record, result, error, status_message)
        return self._copy(self._touch(record))

    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        if record.is_terminal:
            raise TaskTerminalError(self._copy(record))
        record.cancel_requested = True
        return self._copy(self._touch(record))

    async def add_input_responses(
        self, task_id: str, principal: str | None, responses: dict[str, Any]
    ) -> TaskRecord | None:
        record = self._live(task_id)
        if record is None or record.principal != principal:
            return None
        if not answer_input_requests(record, responses, self.max_result_bytes):
            return self._copy(record)
        return self._copy(self._touch(record))

    async def take_input_responses(self, task_id: str) -> dict[str, Any]:
        record = self._live(task_id)
        if record is None or not record.input_responses:
            return {}
        taken = record.input_responses
        record.input_responses = {}
        self._touch(record)
        copied: dict[str, Any] = json.loads(json.dumps(taken))
        return copied

    async def renew_lease(self, task_id: str, owner: str, seconds: float) -> TaskRecord | None:
        record = self._mutable(task_id)
        if record is None:
            return None
        record.owner = owner
        record.lease_expires_at = time.time() + seconds
        # A renewal is not a change a watcher cares about: no version bump, no wake-up.
        return self._copy(record)

    async def fail_expired_leases(self, now: float | None = None) -> builtins.list[TaskRecord]:
        now = time.time() if now is None else now
        failed = []
        for task_id in list(self._tasks):
            record = self._live(task_id, now)
            if record is None or record.is_terminal or record.lease_expires_at is None:
                continue
            if record.lease_expires_at < now:
                finished = await self.finish(task_id, error=abandoned_error(record))
                if finished is not None:
                    failed.append(finished)
        return failed

    async def wait_for_change(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        with anyio.move_on_after(max(0.0, min(timeout, MAX_WAIT_SECONDS))):
            while True:
                record = self._live(task_id)
                if record is None:
                    return None
                if record.version > after_version:
                    return self._copy(record)
                event = self._changed.get(task_id)
                if event is None:
                    event = self._changed[task_id] = anyio.Event()
                await event.wait()
        record = self._live(task_id)
        return None if record is None else self._copy(record)
