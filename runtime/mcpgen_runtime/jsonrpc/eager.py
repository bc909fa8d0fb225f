"""A request's handler started at once, in the caller's task, before anything is set up to track it: ``Started``.

Where it sits: in the ``jsonrpc`` layer, under ``session`` (``Session.answer_eagerly`` runs a handler's first step
here) and ``execution`` (which goes on with one that suspended), beside ``answers`` (whose ``TaskScope`` it adopts).

Why: most requests of a plain tool finish without ever suspending (an ``async def`` that computes and returns).
Tracking such a request (its id registered for the peer's cancellation, an in-flight slot, a cancel scope, its
``RequestContext``, the HTTP POST's response stream and disconnect watch) cost more than the tool. None of it can
matter to a request that finishes before anything else runs: no cancellation, no disconnect and no other request can
reach it, since the event loop runs nothing else meanwhile. So its first step runs at once (as Python 3.12's eager
tasks do); if that finishes it, it is answered, untracked. If it suspends, it is tracked then, exactly as if it had
been from the start (nothing else has run since), and goes on where it stopped, in the same task (``resumed``).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine, Generator
from typing import Any

from .answers import JobScope, TaskScope, anyio_scope

__all__ = ["Started", "first_step", "resumed"]


class Started:
    """A handler whose first step ran and suspended: its coroutine, what it yielded to the event loop, and the
    innermost anyio cancel scope of the task when it started (what its own scopes, entered during that step, are
    inside of)."""

    __slots__ = ("coro", "outer", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any], yielded: Any, outer: object) -> None:
        self.coro, self.yielded, self.outer = coro, yielded, outer

    def adopted_by(self, scope: JobScope) -> None:
        """``scope`` (just entered) now tracks the request: a shielded anyio scope the handler entered during its
        first step is one ``scope`` must see (a ``TaskScope`` looks for shields only inside its outer scope)."""
        if isinstance(scope, TaskScope):
            scope.adopt_outer(self.outer)

    async def handler(self, *_: Any) -> Any:
        """The rest of the handler, in place of the handler itself (whatever it is called with: a
        ``RequestHandler`` for ``answers.call_handler``, a modern handler for the HTTP exchange)."""
        return await resumed(self.coro, self.yielded)

    def close(self) -> None:
        """Abandon it (never resumed): its ``finally`` blocks run now."""
        self.coro.close()


def first_step(coro: Coroutine[Any, Any, Any], task: asyncio.Task[Any]) -> tuple[bool, Any]:
    """Run ``coro`` in ``task`` (the running asyncio task: the caller has it) until it first suspends: (True, what
    it returned), or (False, ``Started``) when it suspended; what it raised is raised."""
    outer = anyio_scope(task)
    try:
        yielded = coro.send(None)
    except StopIteration as done:
        return True, done.value
    return False, Started(coro, yielded, outer)


@types.coroutine
def resumed(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on with ``coro``, suspended at ``yielded``, in the awaiting task: what the event loop sends or throws in
    is passed on to it (a cancellation included), what it yields is passed out (``yield from`` for a coroutine
    that has already started)."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation, or what the loop throws in: the handler's to handle
            try:
                yielded = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration as done:
                return done.value
