"""The task engine: runs a tool call in the background as a task kept in a ``TaskStore``, in either era.

Where it sits: ``server.tasks``, above ``authoring`` (it runs what the author registered, through a body the
dispatch hands it) and below ``dispatch`` (which decides when a call becomes a task and speaks the tasks/* methods
of its era). It knows records and anyio, not wire shapes.

A task's life here:
- ``launch`` creates the record (durable on return: the store's ``create``) before the handle is sent, then runs the
  body in the engine's task group, owned by the server's run (``running``: entered with the lifespan, so tasks stop
  when the server stops). A deferred task (``@server.tool(..., deferred_task=True)``) runs its body first in the
  request, where it may ask for input by multi round-trip, and is created when it calls ``Context.start_task()``.
- At most ``max_running`` bodies run at once; the others wait (status ``working``) for a slot, and past
  ``max_tasks`` launched and unfinished, ``launch`` refuses (-32603, try later) rather than queue without end.
- While a body runs, a guard renews the task's lease every ``lease_seconds / 3`` (owner: this worker's id) and
  watches the store (``wait_for_change``, bounded): a cancel request, from this worker or another, cancels the body
  within that interval; input responses left by a ``tasks/update`` (possibly on another worker) are handed to the
  questions waiting for them; a task gone from the store (TTL) cancels the body.
- The body's outcome finishes the task: its result (a tool's ``isError`` result is ``completed`` too), a JSON-RPC
  error (``failed``), or ``cancelled``. Any other exception is ``failed`` with -32603 (logged with its traceback).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from ...jsonrpc.envelopes import ErrorCode, JSONRPCError
from ...task_store import TaskRecord, TaskStore, TaskTerminalError, TaskTooLargeError

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "DEFAULT_MAX_RUNNING_TASKS",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_POLL_INTERVAL_MS",
    "MIN_TTL_MS",
    "TaskEngine",
    "TaskRun",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_RUNNING_TASKS: Final = 32  # bodies running at once in one process
DEFAULT_MAX_TASKS: Final = 1000  # launched and not finished (running or waiting for a slot) in one process
DEFAULT_LEASE_SECONDS: Final = 15.0  # a task whose worker stops renewing is failed this long after (scale-out)
DEFAULT_POLL_INTERVAL_MS: Final = 500  # what pollIntervalMs tells clients
# The least ttl a client's asked one gets (2025-11-25: "Receivers MAY override the requested ttl"): a task asked with
# ttl 0 would be gone before its handle reached the client, its tool cancelled unrun, a handle to nothing.
MIN_TTL_MS: Final = 1_000
SHUTDOWN_SECONDS: Final = 5.0  # marking the unfinished tasks failed when the server stops, at most this long
INPUT_PREFIXES: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

Body = Callable[["TaskRun"], Awaitable[dict[str, Any]]]


def error_object(exc: JSONRPCError) -> dict[str, Any]:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error


class TaskRun:
    """One task as its body sees it (the connection view of a tool running as a task holds one): its id once
    started, the questions it asks the client, its status message, and whether it was asked to stop."""

    def __init__(self, engine: TaskEngine, template: TaskRecord, deferred: bool) -> None:
        self.engine = engine
        self.template = template
        self.deferred = deferred
        self.record: TaskRecord | None = None  # set when the task exists in the store
        self.started = anyio.Event()  # the task exists (or the body ended before it did)
        self.early_outcome: tuple[dict[str, Any] | None, BaseException | None] | None = None
        self._pending: dict[str, dict[str, Any]] = {}  # key -> request, asked and not answered
        self._answers: dict[str, Any] = {}
        self._answered = anyio.Event()
        self._keys_used: set[str] = set()
        self._calls = 0
        self.cancel_requested = False
        self.body_scope: anyio.CancelScope | None = None

    @property
    def task_id(self) -> str | None:
        return None if self.record is None else self.record.task_id

    async def start(self, status_message: str | None = None) -> TaskRecord:
        """Create the task in the store (durable on return). Raises ``JSONRPCError`` when the store refuses it."""
        if self.record is not None:
            return self.record
        template = self.template
        if status_message is not None:
            template.status_message = status_message
        self.record = await self.engine.create(template)
        self.started.set()
        return self.record

    async def set_status(self, message: str | None) -> None:
        """The task's ``statusMessage`` (shown on tasks/get); nothing before the task exists."""
        if self.record is None:
            return
        with contextlib.suppress(TaskTerminalError):
            await self.engine.store.update(self.record.task_id, status_message=message)

    def next_key(self, method: str, given: str | None) -> str:
        """A key unique over the task's life (the spec forbids reusing one): the author's, or ``elicitation-3``..."""
        self._calls += 1
        key = given if given is not None else f"{INPUT_PREFIXES.get(method, 'input')}-{self._calls}"
        if key in self._keys_used:
            raise ValueError(f"input key {key!r} was used already in this task; each question needs its own key")
        self._keys_used.add(key)
        return key

    async def ask(self, method: str, params: dict[str, Any], input_key: str | None = None) -> Any:
        """Put a request to the client in the task's ``inputRequests`` (status ``input_required``) and wait for its
        answer (a ``tasks/update``, or the legacy era's bridge); the raw answer JSON. Bounded by the task's TTL:
        when the task is gone, the body is cancelled."""
        assert self.record is not None, "ask() before the task started"
        key = self.next_key(method, input_key)
        self._pending[key] = {"method": method, "params": params}
        await self._publish_pending()
        while key not in self._answers:
            answered = self._answered
            await answered.wait()
        self._pending.pop(key, None)
        return self._answers.pop(key)

    async def _publish_pending(self) -> None:
        assert self.record is not None
        await self.collect_answers()
        pending = {k: v for k, v in self._pending.items() if k not in self._answers}
        with contextlib.suppress(TaskTerminalError):
            if pending:
                await self.engine.store.update(self.record.task_id, status="input_required", input_requests=pending)

    async def collect_answers(self) -> None:
        """Take the answers left in the store and wake the questions waiting for them."""
        if self.record is None:
            return
        taken = await self.engine.store.take_input_responses(self.record.task_id)
        if taken:
            self._answers.update({k: v for k, v in taken.items() if k in self._pending})
            self._answered.set()
            self._answered = anyio.Event()

    def cancel(self) -> None:
        self.cancel_requested = True
        if self.body_scope is not None:
            self.body_scope.cancel()


class TaskEngine:
    """Runs tasks against a ``TaskStore``; one per ``Server``, active while the server runs (``running``)."""

    def __init__(
        self,
        store: TaskStore,
        *,
        worker_id: str | None = None,
        max_running: int = DEFAULT_MAX_RUNNING_TASKS,
        max_tasks: int = DEFAULT_MAX_TASKS,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
    ) -> None:
        if max_running < 1 or max_tasks < max_running or lease_seconds <= 0 or poll_interval_ms < 1:
            raise ValueError("task engine bounds must be positive, and max_tasks at least max_running")
        self.store = store
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:12]}"
        self.max_running, self.max_tasks = max_running, max_tasks
        self.lease_seconds = lease_seconds
        self.poll_interval_ms = poll_interval_ms
        self._group: TaskGroup | None = None
        self._slots: anyio.Semaphore | None = None
        self._runs: dict[int, TaskRun] = {}
        self._claimed = False  # a run owns the engine's task group (see running)

    @property
    def active(self) -> bool:
        return self._group is not None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The engine's part of a server run: its task group, and the sweep that fails tasks whose worker died
        (their lease ran out). On exit, the unfinished tasks are cancelled and marked failed (bounded). A run
        entering while the engine runs joins it (nothing to do): the first one owns the task group."""
        if self._claimed:
            yield
            return
        self._claimed = True
        self._slots = anyio.Semaphore(self.max_running)
        raised: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                group.start_soon(self._sweep_expired_leases)
                try:
                    yield
                except Exception as exc:
                    # Out of the group, then raised as itself: through the task group, the run's own exception
                    # would come out wrapped in an ExceptionGroup.
                    raised = exc
                finally:
                    self._group = None
                    group.cancel_scope.cancel()
            if raised is not None:
                raise raised
        finally:
            self._group = None
            self._claimed = False
            self._runs.clear()

    async def _sweep_expired_leases(self) -> None:
        while True:
            await anyio.sleep(self.lease_seconds)
            try:
                failed = await self.store.fail_expired_leases()
            except Exception:  # a store outage must not end the server: the next sweep tries again
                logger.warning("sweeping expired task leases failed", exc_info=True)
                continue
            for record in failed:
                logger.warning("task %s failed: its worker %s stopped renewing its lease", record.task_id, record.owner)

    async def create(self, template: TaskRecord) -> TaskRecord:
        record = TaskRecord(**{**vars(template), "task_id": str(uuid.uuid4())})
        record.poll_interval_ms = record.poll_interval_ms or self.poll_interval_ms
        record.owner = self.worker_id
        record.lease_expires_at = time.time() + self.lease_seconds
        try:
            return await self.store.create(record)
        except TaskTooLargeError as exc:
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, f"Invalid params: {exc}") from None
        except Exception as exc:  # TaskLimitError, or the store is down: the request fails, the server goes on
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Cannot create the task: {exc}") from None

    async def launch(
        self,
        body: Body,
        *,
        principal: str | None,
        protocol_version: str,
        request: dict[str, Any],
        ttl_ms: int | None = None,
        deferred: bool = False,
    ) -> TaskRecord | dict[str, Any]:
        """Run ``body`` as a task: the created record (the handle to answer with), or, for a deferred task whose
        body ended before it started a task, that body's result (or its exception, raised here)."""
        group = self._group
        if group is None:
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "Internal error: the server is not running tasks")
        if len(self._runs) >= self.max_tasks:
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "Server busy: too many tasks in progress; try again later")
        template = TaskRecord(
            task_id="", principal=principal, protocol_version=protocol_version, request=request, ttl_ms=ttl_ms
        )
        run = TaskRun(self, template, deferred)
        if not deferred:
            await run.start()
        self._runs[id(run)] = run
        group.start_soon(self._run, run, body)
        await run.started.wait()
        if run.record is not None:
            return run.record
        assert run.early_outcome is not None
        result, error = run.early_outcome
        if error is not None:
            raise error
        assert result is not None
        return result

    async def _run(self, run: TaskRun, body: Body) -> None:
        assert self._slots is not None
        try:
            async with self._slots:
                await self._run_body(run, body)
        except anyio.get_cancelled_exc_class():
            # The server stops (its run's task group is cancelled): the task ends failed now, rather than after its
            # lease, so that a client polling another worker (or after a restart, with Redis) learns it at once.
            if run.record is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_SECONDS):
                    stopped = {"code": ErrorCode.INTERNAL_ERROR, "message": "the server stopped before the task ended"}
                    await self._finish(run.record.task_id, None, stopped, cancelled=False)
            raise
        finally:
            self._runs.pop(id(run), None)
            if not run.started.is_set():
                run.early_outcome = run.early_outcome or (None, JSONRPCError(ErrorCode.INTERNAL_ERROR, "Task ended"))
                run.started.set()

    async def _run_body(self, run: TaskRun, body: Body) -> None:
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        async with anyio.create_task_group() as guards:
            guards.start_soon(self._guard, run)
            with anyio.CancelScope() as scope:
                run.body_scope = scope
                try:
                    result = await body(run)
                except JSONRPCError as exc:
                    error = error_object(exc)
                    if run.record is None:
                        run.early_outcome = (None, exc)
                except Exception as exc:
                    if run.record is None:
                        run.early_outcome = (None, exc)
                    else:
                        logger.exception("task %s failed", run.task_id)
                        error = {"code": ErrorCode.INTERNAL_ERROR, "message": f"Internal error: {exc}"}
                except BaseException as exc:  # InputRequired of a deferred task's multi round-trip prelude
                    if run.record is not None or isinstance(exc, anyio.get_cancelled_exc_class()):
                        raise
                    run.early_outcome = (None, exc)
            guards.cancel_scope.cancel()
            if run.record is None:
                if run.early_outcome is None:
                    run.early_outcome = (result, None)
                run.started.set()
                return
            with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_SECONDS):
                await self._finish(run.record.task_id, result, error, cancelled=scope.cancelled_caught)

    async def _finish(
        self, task_id: str, result: dict[str, Any] | None, error: dict[str, Any] | None, *, cancelled: bool
    ) -> None:
        try:
            if cancelled:
                await self.store.finish(task_id, cancelled=True)
            elif error is not None:
                await self.store.finish(task_id, error=error)
            else:
                try:
                    await self.store.finish(task_id, result=result or {"content": []})
                except TaskTooLargeError as exc:
                    await self.store.finish(task_id, error={"code": ErrorCode.INTERNAL_ERROR, "message": str(exc)})
        except TaskTerminalError:
            pass  # finished elsewhere already (cancelled, or failed by a lease sweep): that outcome stands
        except Exception:
            logger.warning("task %s: its outcome could not be stored", task_id, exc_info=True)

    async def _guard(self, run: TaskRun) -> None:
        """Renew the lease and watch the store while the body runs (see the module docstring)."""
        await run.started.wait()
        if run.record is None:
            return
        task_id, version = run.record.task_id, run.record.version
        interval = self.lease_seconds / 3
        renew_at = time.monotonic() + interval
        while True:
            try:
                record = await self.store.wait_for_change(task_id, version, max(0.05, renew_at - time.monotonic()))
                if record is None or record.is_terminal or record.cancel_requested:
                    run.cancel()
                    return
                version = record.version
                if record.input_responses:
                    await run.collect_answers()
                if time.monotonic() >= renew_at:
                    await self.store.renew_lease(task_id, self.worker_id, self.lease_seconds)
                    renew_at = time.monotonic() + interval
            except TaskTerminalError:
                run.cancel()
                return
            except Exception:  # a store hiccup: try again after a pause, the lease has room for it
                logger.warning("task %s: watching the store failed", task_id, exc_info=True)
                await anyio.sleep(min(1.0, interval))

    def ttl_ms_for(self, requested: Any) -> int | None:
        """A client's asked ttl as the store takes it: an int of ms, at least ``MIN_TTL_MS`` (the store then clamps
        it to its maximum), or None for the store's default when none, a negative one or not a number is asked
        (the store's own rule for a negative ttl, which a 0 here used to bypass)."""
        if isinstance(requested, int | float) and not isinstance(requested, bool) and math.isfinite(requested):
            return None if requested < 0 else max(MIN_TTL_MS, int(requested))
        return None
