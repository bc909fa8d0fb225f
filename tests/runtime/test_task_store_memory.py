"""The contract of ``mcpgen_runtime.task_store.TaskStore``, run on ``InMemoryTaskStore`` here. The tests live in
``TaskStoreContract``: a Redis test module imports the class and overrides the ``make_store`` fixture (a factory
taking the store's bounds as keyword arguments), so both stores pass the same tests.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from mcpgen_runtime.task_store import (
    DEFAULT_TTL_MS,
    MAX_TTL_MS,
    InMemoryTaskStore,
    TaskLimitError,
    TaskRecord,
    TaskStore,
    TaskTerminalError,
    TaskTooLargeError,
)

pytestmark = pytest.mark.anyio

MakeStore = Callable[..., TaskStore]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def new_record(principal: str | None = "alice", **fields: Any) -> TaskRecord:
    return TaskRecord(task_id=uuid.uuid4().hex, principal=principal, protocol_version="2026-07-28", **fields)


class TaskStoreContract:
    """What every TaskStore does. Subclasses provide ``make_store``."""

    async def test_a_created_task_is_read_back_by_its_principal_only(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record(request={"name": "slow", "arguments": {"n": 1}}))
        assert created.status == "working" and created.version >= 1 and created.created_at > 0
        assert created.ttl_ms == DEFAULT_TTL_MS
        got = await store.get(created.task_id, "alice")
        assert got is not None and got.request == {"name": "slow", "arguments": {"n": 1}}
        assert await store.get(created.task_id, "bob") is None
        assert await store.get(created.task_id, None) is None
        assert await store.get("no-such-task", "alice") is None

    async def test_unauthenticated_tasks_belong_to_the_none_principal(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record(principal=None))
        assert await store.get(created.task_id, None) is not None
        assert await store.get(created.task_id, "alice") is None

    async def test_ttl_is_clamped_and_an_expired_task_is_gone(self, make_store: MakeStore) -> None:
        store = make_store()
        long = await store.create(new_record(ttl_ms=MAX_TTL_MS * 10))
        assert long.ttl_ms == MAX_TTL_MS
        short = await store.create(new_record(ttl_ms=150))
        assert short.ttl_ms == 150
        await anyio.sleep(0.3)
        assert await store.get(short.task_id, "alice") is None
        assert await store.update(short.task_id, status_message="late") is None
        assert await store.get(long.task_id, "alice") is not None

    async def test_the_per_principal_limit_counts_live_tasks(self, make_store: MakeStore) -> None:
        store = make_store(max_tasks_per_principal=2)
        first = await store.create(new_record())
        await store.create(new_record())
        with pytest.raises(TaskLimitError):
            await store.create(new_record())
        await store.create(new_record(principal="bob"))  # another principal has its own budget
        await store.finish(first.task_id, result={"content": []})
        await store.create(new_record())  # a finished task no longer counts

    async def test_update_changes_fields_and_bumps_the_version(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record())
        updated = await store.update(
            created.task_id, status="input_required", status_message="need a name", input_requests={"k": {"m": 1}}
        )
        assert updated is not None and updated.version > created.version
        assert updated.status == "input_required" and updated.input_requests == {"k": {"m": 1}}
        with pytest.raises(ValueError):
            await store.update(created.task_id, status="completed")
        with pytest.raises(ValueError):
            await store.update(created.task_id, principal="mallory")

    async def test_finish_outcomes_and_terminal_tasks_do_not_move(self, make_store: MakeStore) -> None:
        store = make_store()
        done = await store.create(new_record())
        finished = await store.finish(done.task_id, result={"content": [], "isError": True})
        assert (
            finished is not None
            and finished.status == "completed"
            and finished.result
            == {
                "content": [],
                "isError": True,
            }
        )
        failed = await store.create(new_record())
        record = await store.finish(failed.task_id, error={"code": -32603, "message": "boom"})
        assert record is not None and record.status == "failed" and record.error == {"code": -32603, "message": "boom"}
        cancelled = await store.create(new_record())
        record = await store.finish(cancelled.task_id, cancelled=True)
        assert record is not None and record.status == "cancelled"
        for task_id in (done.task_id, failed.task_id, cancelled.task_id):
            with pytest.raises(TaskTerminalError):
                await store.update(task_id, status_message="again")
            with pytest.raises(TaskTerminalError):
                await store.finish(task_id, cancelled=True)
            with pytest.raises(TaskTerminalError):
                await store.request_cancel(task_id, "alice")
        with pytest.raises(ValueError):
            await store.finish(done.task_id, result={}, error={"code": 1, "message": "x"})
        assert await store.finish("no-such-task", cancelled=True) is None

    async def test_a_result_over_the_limit_is_refused_and_the_task_left_as_it_was(self, make_store: MakeStore) -> None:
        store = make_store(max_result_bytes=1000)
        created = await store.create(new_record())
        with pytest.raises(TaskTooLargeError):
            await store.finish(created.task_id, result={"content": [{"type": "text", "text": "x" * 2000}]})
        still = await store.get(created.task_id, "alice")
        assert still is not None and still.status == "working"
        record = await store.finish(created.task_id, error={"code": -32603, "message": "result too large"})
        assert record is not None and record.status == "failed"

    async def test_cancel_requests_are_flags_for_the_owner_principal(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record())
        assert await store.request_cancel(created.task_id, "bob") is None
        flagged = await store.request_cancel(created.task_id, "alice")
        assert flagged is not None and flagged.cancel_requested and flagged.status == "working"

    async def test_input_responses_are_merged_then_taken_once(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record())
        asked = {"a": {"method": "elicitation/create"}, "b": {"method": "elicitation/create"}}
        await store.update(created.task_id, status="input_required", input_requests=asked)
        assert await store.add_input_responses(created.task_id, "bob", {"a": {}}) is None
        partial = await store.add_input_responses(created.task_id, "alice", {"a": {"action": "accept"}, "zz": {}})
        assert (
            partial is not None and partial.status == "input_required" and partial.input_requests == {"b": asked["b"]}
        )
        done = await store.add_input_responses(created.task_id, "alice", {"b": {"action": "decline"}, "a": {"x": 1}})
        assert done is not None and done.status == "working" and not done.input_requests
        taken = await store.take_input_responses(created.task_id)
        assert taken == {"a": {"action": "accept"}, "b": {"action": "decline"}}  # "zz" never asked, "a" answered once
        assert await store.take_input_responses(created.task_id) == {}
        assert await store.take_input_responses("no-such-task") == {}

    async def test_expired_leases_fail_their_tasks(self, make_store: MakeStore) -> None:
        store = make_store()
        abandoned = await store.create(new_record())
        alive = await store.create(new_record())
        unleased = await store.create(new_record())
        await store.renew_lease(abandoned.task_id, "worker-1", 0.05)
        leased = await store.renew_lease(alive.task_id, "worker-2", 60)
        assert leased is not None and leased.owner == "worker-2"
        failed = await store.fail_expired_leases(time.time() + 1)
        assert [record.task_id for record in failed] == [abandoned.task_id]
        record = await store.get(abandoned.task_id, "alice")
        assert record is not None and record.status == "failed" and record.error is not None
        assert "worker-1" in str(record.error)
        for task_id in (alive.task_id, unleased.task_id):
            other = await store.get(task_id, "alice")
            assert other is not None and other.status == "working"
        with pytest.raises(TaskTerminalError):
            await store.renew_lease(abandoned.task_id, "worker-1", 10)

    async def test_list_pages_through_the_principals_tasks_oldest_first(self, make_store: MakeStore) -> None:
        store = make_store()
        ids = [(await store.create(new_record())).task_id for _ in range(5)]
        await store.create(new_record(principal="bob"))
        seen: list[str] = []
        cursor = None
        for _ in range(10):
            page, cursor = await store.list("alice", cursor, 2)
            assert len(page) <= 2
            seen += [record.task_id for record in page]
            if cursor is None:
                break
        assert seen == ids
        with pytest.raises(ValueError):
            await store.list("alice", "not-a-cursor", 2)

    async def test_wait_for_change_wakes_on_a_change_and_is_bounded(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record())
        started = time.monotonic()
        same = await store.wait_for_change(created.task_id, created.version, 0.2)
        assert same is not None and same.version == created.version
        assert 0.15 < time.monotonic() - started < 2
        assert (await store.wait_for_change(created.task_id, created.version - 1, 5)) is not None  # at once
        woken: list[TaskRecord | None] = []

        async def waiter() -> None:
            woken.append(await store.wait_for_change(created.task_id, created.version, 5))

        async with anyio.create_task_group() as group:
            group.start_soon(waiter)
            await anyio.sleep(0.05)
            await store.update(created.task_id, status_message="half way")
        assert woken and woken[0] is not None and woken[0].status_message == "half way"
        assert await store.wait_for_change("no-such-task", 0, 0.1) is None

    async def test_records_round_trip_through_json(self, make_store: MakeStore) -> None:
        store = make_store()
        created = await store.create(new_record(result=None, poll_interval_ms=500))
        assert TaskRecord.from_json(created.to_json()) == created
        with pytest.raises(ValueError):
            TaskRecord.from_json('{"status": "sleeping"}')


class TestInMemoryTaskStore(TaskStoreContract):
    @pytest.fixture
    def make_store(self) -> MakeStore:
        return InMemoryTaskStore

    async def test_bounds_are_checked(self) -> None:
        with pytest.raises(ValueError):
            InMemoryTaskStore(max_tasks_per_principal=0)
        with pytest.raises(ValueError):
            InMemoryTaskStore(default_ttl_ms=10, max_ttl_ms=5)
