"""The tasks a ``Session`` runs incoming requests in on asyncio: ``RequestTasks``.

Where it sits: in the ``jsonrpc`` layer, used by ``execution`` (one concern, the life of those tasks, with its own
invariants). On other event loops the session starts request tasks in its anyio task group instead.

Why not the task group: ``TaskGroup.start_soon`` wraps every task in anyio's bookkeeping (a cancel scope, an event,
a wrapper coroutine, a done callback that costs one more turn of the loop), which over stdio was a good part of
the server's CPU per request. A request's task is started with ``loop.create_task`` here instead, and what the task
group gave is kept by hand:

- the handler still runs in the request's own anyio cancel scope (``Job.scope``: what ``notifications/cancelled``
  cancels), so its cancellation semantics are anyio's, shields included;
- when the session ends, ``cancel_all`` cancels every request as the task group's cancellation would: its scope
  (anyio delivers that again at every await until the handler is out of it, honouring shields), and a task that is
  already writing its answer (outside the handler's scope, where no shield of the handler's can be) directly;
- ``join`` waits until every task has finished, as leaving the task group did;
- each task holds a strong reference here until it ends (the loop keeps only weak ones).

What differs: a ``BaseException`` that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``) raised in a
handler goes to the event loop as asyncio's own tasks send it (both end the loop), not through the task group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import anyio

from .answers import JobScope

__all__ = ["RequestTasks"]


class _Running:
    __slots__ = ("answering", "task")

    def __init__(self) -> None:
        self.task: asyncio.Task[None] | None = None
        self.answering = False  # the handler is done and the answer is being written (outside its scope)


class RequestTasks:
    """The running request tasks of one session, by the scope of their request (``Job.scope``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._running: dict[JobScope, _Running] = {}
        self._cancelled = False  # cancel_all was called: what starts later (queued requests) starts cancelled

    def __len__(self) -> int:
        return len(self._running)

    def start(self, scope: JobScope, body: Coroutine[Any, Any, None]) -> None:
        """Run ``body`` (which calls ``answering`` and, last thing in its ``finally``, ``finished`` for ``scope``)
        in a task of its own, starting on the next turn of the loop."""
        running = _Running()
        self._running[scope] = running
        if self._cancelled:
            scope.cancel()  # as a task started in a cancelled task group would be
        running.task = self._loop.create_task(body)

    def answering(self, scope: JobScope) -> None:
        running = self._running.get(scope)
        if running is not None:
            running.answering = True

    def finished(self, scope: JobScope) -> None:
        self._running.pop(scope, None)

    def cancel_all(self) -> None:
        """Cancel every request, and any started from now on (see the module docstring); ``join`` waits for them."""
        self._cancelled = True
        for scope, running in list(self._running.items()):
            scope.cancel()
            if running.answering and running.task is not None:
                running.task.cancel()

    async def close(self) -> None:
        """``cancel_all``, then ``join``, shielded (the caller is usually being cancelled itself)."""
        self.cancel_all()
        with anyio.CancelScope(shield=True):
            await self.join()

    async def join(self) -> None:
        """Wait until every request task has ended."""
        while self._running:
            tasks = {running.task for running in self._running.values() if running.task is not None}
            if not tasks:
                return
            await asyncio.wait(tasks)
            # A task that ended without running its body (cancelled before its first step) never called finished().
            self._running = {scope: r for scope, r in self._running.items() if r.task is None or not r.task.done()}
