"""A server's lifespan: the resources its handlers share (a database pool, a client...), started once per run of
the server and stopped when the run ends, whatever ended it.

Where it sits: in the ``server`` layer, below ``server`` (``Server(lifespan=...)``, ``Server.running()``) and
beside ``context`` (which hands the state to handlers as ``Context.lifespan_state``); it knows nothing of MCP.

A lifespan is ``lifespan(server) -> AsyncContextManager[T]`` (usually an ``@asynccontextmanager`` function); what
it yields is the state, of type ``T``. ``LifespanRunner.run()`` enters it: the first run owns it and the runs that
start while it is entered join it (``serve_http`` owns it and each HTTP session joins; ``serve_stream`` alone owns
it for its one connection). The owner leaves last: its exit waits for the runs that joined to end, so the lifespan
is exited by the task that entered it (anyio requires that of task groups and cancel scopes inside it). Startup
errors become ``LifespanError`` (the server does not start); the exit runs shielded from cancellation, bounded by
``SHUTDOWN_TIMEOUT``, so that a cancelled server (Ctrl-C, a test's task group) still closes what it opened.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Final, Generic, TypeAlias

import anyio
from typing_extensions import TypeVar

__all__ = ["SHUTDOWN_TIMEOUT", "Lifespan", "LifespanError", "LifespanRunner", "StateT"]

logger = logging.getLogger(__name__)

# The type of a server's lifespan state; a bare ``Server`` / ``Context`` means ``Any`` (no lifespan, or untyped).
StateT = TypeVar("StateT", default=Any)

# What ``Server(lifespan=...)`` takes: called with the server, it returns the context manager to enter.
Lifespan: TypeAlias = Callable[[Any], AbstractAsyncContextManager[StateT]]

# How long a lifespan's exit may take once the run is over (it runs shielded from the run's cancellation).
SHUTDOWN_TIMEOUT: Final = 30.0


class LifespanError(RuntimeError):
    """The server's lifespan failed to start (``__cause__`` is its exception): the server does not serve."""


class LifespanRunner(Generic[StateT]):
    """Enters one lifespan for the runs of a server that overlap (see the module docstring)."""

    def __init__(self, name: str, enter: Callable[[], AbstractAsyncContextManager[StateT]] | None) -> None:
        """``name``: the server's, for error messages. ``enter``: makes the context manager to enter (None: the
        server has no lifespan, and its state is None)."""
        self._name = name
        self._enter = enter
        self._claimed = False  # a run owns the lifespan: it is starting, running, or stopping
        self._ready = False  # started and not yet stopping: runs may join
        self._started = anyio.Event()  # set once the owner's startup is over (successfully or not)
        self._users = 0  # runs that joined and have not ended
        self._idle = anyio.Event()
        self._state: Any = None

    @property
    def running(self) -> bool:
        return self._ready

    @property
    def state(self) -> StateT:
        """What the lifespan yielded. RuntimeError outside a run (there is no state then)."""
        if not self._ready:
            raise RuntimeError(f"server {self._name!r} is not running: its lifespan state exists only while it serves")
        state: StateT = self._state
        return state

    @asynccontextmanager
    async def run(self) -> AsyncIterator[StateT]:
        """One run of the server: the lifespan is entered here unless a run has it already (then this one joins)."""
        if self._claimed:
            async with self._join() as state:
                yield state
        else:
            async with self._own() as state:
                yield state

    def join_running(self) -> bool:
        """Join the run in progress, if one is started and not stopping (then ``leave`` must follow, in a
        ``finally``): what ``run()`` does when it joins, without an async context manager, for the one-call
        requests (a modern request) that find the server running nearly every time. False: nothing was joined."""
        if not self._ready:
            return False
        self._users += 1
        return True

    def leave(self) -> None:
        """End a run joined by ``join_running``."""
        self._users -= 1
        if not self._users:
            self._idle.set()

    @asynccontextmanager
    async def _join(self) -> AsyncIterator[StateT]:
        if not self._ready:
            await self._started.wait()
            if not self._ready:
                raise LifespanError(f"the lifespan of server {self._name!r} failed to start (see the first run)")
        self._users += 1
        try:
            yield self._state
        finally:
            self._users -= 1
            if not self._users:
                self._idle.set()

    @asynccontextmanager
    async def _own(self) -> AsyncIterator[StateT]:
        self._claimed, self._started, self._idle = True, anyio.Event(), anyio.Event()
        stack = AsyncExitStack()
        try:
            try:
                if self._enter is not None:
                    self._state = await stack.enter_async_context(self._enter())
            except Exception as exc:
                raise LifespanError(f"the lifespan of server {self._name!r} failed to start: {exc!r}") from exc
            self._ready = True
            self._started.set()
            try:
                yield self._state
                await self._wait_for_joined_runs()
            except BaseException as exc:
                self._ready = False
                if await self._exit(stack, exc):
                    return
                raise
            self._ready = False
            await self._exit(stack, None)
        finally:
            self._ready, self._claimed, self._state = False, False, None
            self._started.set()  # runs waiting to join a startup that failed give up

    async def _exit(self, stack: AsyncExitStack, exc: BaseException | None) -> bool:
        """Exit the lifespan, shielded and bounded; True if it suppressed ``exc`` (what the run raised)."""
        suppressed = False
        with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT) as timer:
            if exc is None:
                await stack.aclose()
            else:
                suppressed = bool(await stack.__aexit__(type(exc), exc, exc.__traceback__))
        if timer.cancelled_caught:
            logger.warning("the lifespan of server %r did not stop within %s s", self._name, SHUTDOWN_TIMEOUT)
        return suppressed

    async def _wait_for_joined_runs(self) -> None:
        # Not shielded: when the owner is cancelled, so (in practice) are the runs that joined, and it leaves now.
        while self._users:
            await self._idle.wait()
            self._idle = anyio.Event()
