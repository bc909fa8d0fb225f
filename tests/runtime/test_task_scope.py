"""mcpgen_runtime.jsonrpc.answers.TaskScope: the cancel scope of a request handled inline in a transport's task (the
streamable HTTP server's POST task). It must cancel the handler, end that cancellation at its exit, and leave every
other cancellation of the task alone; the HTTP tests check the same through real servers (disconnects,
notifications/cancelled), these check the edge cases directly on asyncio tasks."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from mcpgen_runtime.jsonrpc.answers import TaskScope

pytestmark = pytest.mark.anyio

WAIT = 5.0


async def test_cancel_interrupts_the_handler_and_ends_at_the_scope() -> None:
    started, seen = asyncio.Event(), []
    scope = TaskScope()

    async def handler_task() -> str:
        with scope:
            started.set()
            try:
                await asyncio.sleep(WAIT)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
        await asyncio.sleep(0)  # the task goes on after the scope: no cancellation left over
        return "went on"

    task = asyncio.create_task(handler_task())
    await started.wait()
    scope.cancel()
    scope.cancel()  # twice is once
    assert await asyncio.wait_for(task, WAIT) == "went on"
    assert seen == ["cancelled"] and scope.cancel_called and task.cancelling() == 0


async def test_a_handler_that_swallows_the_cancellation_leaves_nothing_behind() -> None:
    started = asyncio.Event()
    scope = TaskScope()

    async def handler_task() -> str:
        with scope:
            started.set()
            try:
                await asyncio.sleep(WAIT)
            except asyncio.CancelledError:
                pass
            await asyncio.sleep(0)  # delivered once, not again at the next await (unlike anyio's scopes)
        await asyncio.sleep(0.01)
        return "done"

    task = asyncio.create_task(handler_task())
    await started.wait()
    scope.cancel()
    assert await asyncio.wait_for(task, WAIT) == "done"
    assert task.cancelling() == 0


async def test_another_cancellation_of_the_task_goes_through() -> None:
    started = asyncio.Event()
    scope = TaskScope()

    async def handler_task() -> None:
        with scope:
            started.set()
            await asyncio.sleep(WAIT)

    task = asyncio.create_task(handler_task())
    await started.wait()
    scope.cancel()
    task.cancel()  # e.g. the server shutting down cancels the HTTP request's task too
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)


async def test_an_outside_cancellation_alone_is_not_swallowed() -> None:
    started = asyncio.Event()
    scope = TaskScope()

    async def handler_task() -> None:
        with scope:
            started.set()
            await asyncio.sleep(WAIT)

    task = asyncio.create_task(handler_task())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    assert not scope.cancel_called


async def test_cancel_from_inside_only_marks_the_scope() -> None:
    scope = TaskScope()
    with scope:
        scope.cancel()  # the running task itself: it reads cancel_called; nothing is thrown at its next await
        await asyncio.sleep(0)
    assert scope.cancel_called
    assert TaskScope.available()


async def test_an_anyio_shield_in_the_handler_holds_the_cancellation_until_it_ends() -> None:
    started, log = asyncio.Event(), []
    scope = TaskScope()

    async def handler_task() -> None:
        with scope:
            with anyio.CancelScope(shield=True):  # e.g. a write that must finish even if the request is cancelled
                started.set()
                await asyncio.sleep(0.05)
                log.append("shielded part done")
            try:
                await asyncio.sleep(WAIT)
            except asyncio.CancelledError:
                log.append("cancelled after the shield")
                raise
        log.append("went on")

    task = asyncio.create_task(handler_task())
    await started.wait()
    scope.cancel()
    await asyncio.wait_for(task, WAIT)
    assert log == ["shielded part done", "cancelled after the shield", "went on"]
