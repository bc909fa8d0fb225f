"""The task store contract of ``tests/runtime/test_task_store_memory.py`` (``TaskStoreContract``) run on
``scaleout.task_store.RedisTaskStore`` over the session's redis-server (``conftest``), then what only Redis does:
two stores (two workers) seeing each other's tasks and changes, expiry by Redis itself, junk under a task's key, and
a frozen Redis costing a fast ``TaskStoreUnavailable``."""

from __future__ import annotations

import importlib.util
import os
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio
from scale_support import start_redis
from support.ports import free_port

from mcpgen_runtime.scaleout.keys import KeyLayout
from mcpgen_runtime.scaleout.redis_client import open_redis
from mcpgen_runtime.scaleout.settings import ScaleOutSettings
from mcpgen_runtime.scaleout.task_store import (
    CHANGE_POLL_INTERVAL,
    MAX_TASK_ID_LENGTH,
    RedisTaskStore,
    TaskKeys,
    TaskStoreUnavailable,
)
from mcpgen_runtime.task_store import TaskLimitError, TaskRecord, TaskTerminalError

_spec = importlib.util.spec_from_file_location(
    "task_store_contract", Path(__file__).resolve().parents[1] / "runtime" / "test_task_store_memory.py"
)
assert _spec is not None and _spec.loader is not None
contract = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = contract  # (dataclasses look their module up there)
_spec.loader.exec_module(contract)
new_record = contract.new_record

pytestmark = pytest.mark.anyio

MakeStore = Callable[..., RedisTaskStore]


@pytest.fixture
async def make_store(redis_url: str) -> AsyncIterator[MakeStore]:
    """A factory of Redis task stores sharing one key prefix (new per test), each on a client of its own, as two
    workers would be."""
    clients: list[redis.asyncio.Redis] = []
    keys = KeyLayout(f"tasks-{secrets.token_hex(4)}")
    settings = ScaleOutSettings(redis_url=redis_url, redis_timeout=2.0)

    def make(**bounds: Any) -> RedisTaskStore:
        clients.append(open_redis(settings))
        return RedisTaskStore(clients[-1], keys, deadline=settings.redis_timeout, **bounds)

    yield make
    for client in clients:
        await client.aclose()


class TestRedisTaskStore(contract.TaskStoreContract):  # type: ignore[misc,name-defined]
    """The contract, with this module's ``make_store``."""


async def test_a_task_created_on_one_worker_is_seen_and_changed_on_another(make_store: MakeStore) -> None:
    first, second = make_store(), make_store()
    created = await first.create(new_record(request={"name": "slow", "arguments": {}}))
    seen = await second.get(created.task_id, "alice")
    assert seen is not None and seen.request == {"name": "slow", "arguments": {}} and seen.version == created.version
    flagged = await second.request_cancel(created.task_id, "alice")
    assert flagged is not None and flagged.cancel_requested
    again = await first.get(created.task_id, "alice")
    assert again is not None and again.cancel_requested and again.version == flagged.version


async def test_a_waiter_wakes_on_another_workers_change_through_the_change_channel(make_store: MakeStore) -> None:
    waiting, writing = make_store(), make_store()
    created = await writing.create(new_record())
    woken: list[float] = []
    async with anyio.create_task_group() as group:
        await group.start(waiting.listen_for_changes)
        started = time.monotonic()

        async def waiter() -> None:
            record = await waiting.wait_for_change(created.task_id, created.version, 10)
            assert record is not None and record.status_message == "elsewhere"
            woken.append(time.monotonic() - started)

        group.start_soon(waiter)
        await anyio.sleep(0.05)
        await writing.update(created.task_id, status_message="elsewhere")
        with anyio.fail_after(5):
            while not woken:
                await anyio.sleep(0.01)
        group.cancel_scope.cancel()
    assert woken[0] < 0.4  # pub/sub, not the poll interval


async def test_without_the_change_channel_a_waiter_still_sees_the_change_by_polling(make_store: MakeStore) -> None:
    waiting, writing = make_store(), make_store()
    created = await writing.create(new_record())
    got: list[TaskRecord | None] = []
    started = time.monotonic()

    async def waiter() -> None:  # on a store whose listener does not run: only polling can wake it
        got.append(await waiting.wait_for_change(created.task_id, created.version, 5))

    async with anyio.create_task_group() as group:
        group.start_soon(waiter)
        await anyio.sleep(0.05)
        await writing.update(created.task_id, status_message="polled")
    assert got[0] is not None and got[0].status_message == "polled"
    assert time.monotonic() - started < 0.05 + CHANGE_POLL_INTERVAL + 0.5


async def test_redis_expires_the_task_and_every_index_forgets_it(make_store: MakeStore, redis_url: str) -> None:
    store = make_store(max_tasks_per_principal=1)
    short = await store.create(new_record(ttl_ms=100))
    keys = store.keys
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        assert 0 < await client.pttl(keys.task(short.task_id)) <= 100
        await anyio.sleep(0.25)
        assert not await client.exists(keys.task(short.task_id))
        await store.create(new_record())  # the expired one no longer counts against the limit of 1
        with pytest.raises(TaskLimitError):
            await store.create(new_record())
        page, cursor = await store.list("alice")
        assert [record.ttl_ms for record in page] == [store.default_ttl_ms] and cursor is None
        assert await client.zcard(keys.all_tasks("alice")) == 1  # listing dropped the expired id
    finally:
        await client.aclose()


async def test_two_workers_finishing_one_task_at_once_finish_it_once(make_store: MakeStore) -> None:
    stores = [make_store() for _ in range(4)]
    created = await stores[0].create(new_record())
    outcomes: list[str] = []

    async def finish(store: RedisTaskStore, n: int) -> None:
        try:
            await store.finish(created.task_id, result={"content": [], "n": n})
            outcomes.append("finished")
        except TaskTerminalError:
            outcomes.append("refused")

    async with anyio.create_task_group() as group:
        for n, store in enumerate(stores):
            group.start_soon(finish, store, n)
    assert sorted(outcomes) == ["finished", "refused", "refused", "refused"]


async def test_results_keep_their_exact_json(make_store: MakeStore) -> None:
    store = make_store()
    created = await store.create(new_record())
    result = {"content": [], "structuredContent": {"big": 2**62 + 1, "pi": 3.141592653589793, "empty": {}, "list": []}}
    await store.finish(created.task_id, result=result)
    record = await store.get(created.task_id, "alice")
    assert record is not None and record.result == result


async def test_junk_under_a_task_key_and_long_ids_are_unknown(make_store: MakeStore, redis_url: str) -> None:
    store = make_store()
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        await client.set(store.keys.task("junk"), b"\xff not json")
        await client.rpush(store.keys.task("a-list"), b"x")
        for task_id in ("junk", "a-list", "x" * (MAX_TASK_ID_LENGTH + 1)):
            assert await store.get(task_id, "alice") is None
            assert await store.update(task_id, status_message="m") is None
            assert await store.request_cancel(task_id, "alice") is None
            assert await store.take_input_responses(task_id) == {}
    finally:
        await client.aclose()
    with pytest.raises(ValueError):
        await store.create(TaskRecord(task_id="y" * (MAX_TASK_ID_LENGTH + 1), principal=None, protocol_version="v"))


async def test_principals_are_hashed_into_short_keys() -> None:
    keys = TaskKeys("p")
    long = keys.all_tasks("x" * 10_000)
    assert len(long) < 60 and keys.all_tasks(None) == "p:tasks:-" and long != keys.all_tasks("y")


async def test_a_frozen_redis_is_a_fast_error_then_the_store_recovers(tmp_path: Path) -> None:
    port = free_port()
    process = start_redis(port, tmp_path)
    settings = ScaleOutSettings(redis_url=f"redis://127.0.0.1:{port}/0", redis_timeout=0.5)
    client = open_redis(settings)
    store = RedisTaskStore(client, KeyLayout("frozen"), deadline=settings.redis_timeout)
    try:
        created = await store.create(new_record())
        os.kill(process.pid, signal.SIGSTOP)
        for call in (
            lambda: store.get(created.task_id, "alice"),
            lambda: store.update(created.task_id, status_message="m"),
            lambda: store.create(new_record()),
            lambda: store.fail_expired_leases(),
            lambda: store.wait_for_change(created.task_id, created.version, 0.2),
        ):
            started = time.monotonic()
            with pytest.raises(TaskStoreUnavailable):
                await call()
            assert time.monotonic() - started < 2.0
        os.kill(process.pid, signal.SIGCONT)
        with anyio.fail_after(10):
            while True:
                try:
                    record = await store.get(created.task_id, "alice")
                    break
                except TaskStoreUnavailable:
                    await anyio.sleep(0.1)
        assert record is not None and record.task_id == created.task_id
    finally:
        os.kill(process.pid, signal.SIGCONT)
        await client.aclose()
        process.terminate()
        process.wait(10)
