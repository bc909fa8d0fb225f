"""How much incoming work a ``Session`` takes on at once: ``Admission``, the in-flight limit with back-pressure.

Where it sits: in the ``jsonrpc`` layer, used by ``session`` (which spawns a task for every incoming request, batch
and error answer, and asks this module first through ``work`` and ``execution``). One concern with its own
invariants: the count of running work, the queue of work read but not started, and when reading must stop.

Why queue some requests instead of simply not reading: a running handler may be waiting for the peer's answer to
a request of its own (sampling, elicitation); that answer is somewhere behind the requests in the incoming stream.
So the session goes on reading (answers, cancellations and notifications are handled at once) while up to
``backlog`` requests wait their turn, and only then stops reading, so that the peer's writes block (over stdio: the
pipe fills). A peer that fills both, and then waits for all of it before answering our requests, deadlocks itself
against any bounded server; the bound is what keeps the server alive.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable
from typing import Final

import anyio

__all__ = ["DEFAULT_MAX_BATCH_SIZE", "DEFAULT_MAX_REQUESTS_IN_FLIGHT", "Admission"]

# Per session (one client). Generous for a client fanning out tool calls, small enough that a flood cannot turn
# into tens of thousands of tasks.
DEFAULT_MAX_REQUESTS_IN_FLIGHT: Final = 100
# Messages in one JSON-RPC batch (2025-03-26 only); at most the in-flight limit, so that a batch can always run.
DEFAULT_MAX_BATCH_SIZE: Final = 100


class Admission:
    """Counts the work a session runs (``weight`` per task: a batch weighs as many requests as it holds).

    ``admit`` starts work at once while fewer than ``limit`` run, else queues it (with the ``contextvars`` context it
    was read in: a transport may route the answers by a context variable it set in ``receive``, as the streamable
    HTTP server does); ``release`` starts queued work as running work ends. While ``backlog`` items wait,
    ``wait_for_room`` blocks: the session's receive loop calls it before every read. A batch is admitted whole as
    soon as anything is free, so up to ``limit + batch size - 1`` requests may run for a moment.
    """

    def __init__(self, limit: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT, backlog: int | None = None) -> None:
        if limit < 1:
            raise ValueError("the in-flight limit must be at least 1")
        self.limit = limit
        self.backlog = limit if backlog is None else max(1, backlog)
        self.running = 0
        self._waiting: deque[tuple[contextvars.Context, Callable[[], None], int]] = deque()
        self._room: anyio.Event | None = None  # made only when the reader has to wait (rarely)

    @property
    def waiting(self) -> int:
        """Work read but not started yet."""
        return len(self._waiting)

    def admit(self, weight: int, start: Callable[[], None]) -> None:
        """Run ``start()`` now if there is room (it must spawn the work, which calls ``release(weight)`` when done),
        else queue it. In order: nothing overtakes work that is already waiting."""
        if self.running < self.limit and not self._waiting:
            self.running += weight
            start()
        else:
            self._waiting.append((contextvars.copy_context(), start, weight))

    def release(self, weight: int) -> None:
        """Work of ``weight`` ended: start what waits, as far as there is room."""
        self.running -= weight
        while self._waiting and self.running < self.limit:
            context, start, queued_weight = self._waiting.popleft()
            self.running += queued_weight
            context.run(start)  # the task spawned inside inherits the context the request was read in
        if self._room is not None and len(self._waiting) < self.backlog:
            self._room.set()
            self._room = None

    async def wait_for_room(self) -> None:
        """Return once fewer than ``backlog`` items wait (at once, usually)."""
        while len(self._waiting) >= self.backlog:
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()
