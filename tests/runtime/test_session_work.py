"""``jsonrpc.work.SessionWork``'s count of running tasks: ``wait_idle`` (the shutdown grace) returns once every
counted task is done, however often the count went from 0 to 1 and back before, and no event is made for that
until someone waits (a sequential client takes the count from 0 to 1 with every request)."""

from __future__ import annotations

import anyio
import pytest

from mcpgen_runtime.jsonrpc.inflight import Admission
from mcpgen_runtime.jsonrpc.work import SessionWork

pytestmark = pytest.mark.anyio


async def test_wait_idle_waits_for_every_counted_task_and_nothing_is_made_without_a_waiter() -> None:
    work = SessionWork(Admission(4))
    for _ in range(3):  # idle -> busy -> idle, as each request of a sequential client does
        work.count()
        work.done()
    assert work.active == 0 and work._idle is None
    with anyio.fail_after(5):
        await work.wait_idle()  # nothing running: returns at once

        work.count()
        work.count()
        finished = []

        async def waiter() -> None:
            await work.wait_idle()
            finished.append(work.active)

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            work.done()
            await anyio.wait_all_tasks_blocked()
            assert finished == []  # one task still counted
            work.count()  # another starts before the last one ends: still not idle
            work.done()
            await anyio.wait_all_tasks_blocked()
            assert finished == []
            work.done()
        assert finished == [0]
        assert work._idle is None
