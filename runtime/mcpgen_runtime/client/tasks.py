"""Tool calls that run as tasks, on the client side, in either era: ``Tasks`` (the part of ``Client`` that starts
and follows them) and ``TaskHandle`` (one task: ``status()``, ``result()``, ``cancel()``).

Where it sits: in the ``client`` layer, on top of ``requests`` (it sends through ``RequestPath``: gating, the modern
``_meta``, parsing) and ``handlers`` (the input a task asks for is answered by the same ``ClientHandlers`` as any
other); ``task_info`` reads the wire shapes. The eras differ in every message, so each step names both:

- **2026-07-28, extension ``io.modelcontextprotocol/tasks``** (ext-tasks specification/draft/tasks.md). The server
  decides whether a ``tools/call`` becomes a task; it may only do so when the request's ``_meta`` client
  capabilities declare the extension, and ``tasks/get`` / ``tasks/update`` / ``tasks/cancel`` must declare it
  too. So every request sent here declares it, whatever ``Client(tasks=...)`` says (capabilities are per request in
  this era); ``Client(tasks=True)`` declares it on every other request as well, and ``call_tool`` then follows a
  task the server chose to make (the text's "MUST be prepared to handle either result"). Without ``tasks=True`` a
  task answer to a request that did not declare the extension is the server's error (``InvalidResultError``).
  ``result()`` polls ``tasks/get`` at the server's ``pollIntervalMs``, answers ``inputRequests`` with the
  handlers and sends them with ``tasks/update`` (each key once: the text's deduplication), and returns the inline
  ``result`` of a completed task; a failed task raises its JSON-RPC ``error``, as the call itself would have.
  Over streamable HTTP the ``tasks/*`` requests carry ``Mcp-Name: <taskId>`` (the transport's
  ``headers.NAME_PARAMS``).
- **2025-11-25, core tasks** (basic/utilities/tasks.mdx). The client asks: ``tools/call`` with ``params.task``
  (``{"ttl": ms}``), only when the server declared ``tasks.requests.tools.call`` (``CapabilityError`` otherwise,
  nothing sent). ``result()`` waits in ``tasks/result``, which blocks until the task ends; the server's
  elicitation or sampling requests of an ``input_required`` task arrive as ordinary server -> client requests
  meanwhile and are answered by the handlers. ``status()`` is ``tasks/get``; ``cancel()`` is ``tasks/cancel``
  (gated by ``tasks.cancel``). With ``Client(tasks=True)`` ``call_tool`` runs a tool whose ``execution.taskSupport``
  is ``"required"`` as a task (the text's "clients MUST invoke the tool as a task") and returns its result.

Bounds: ``result(timeout=...)`` has a total deadline (None: the client's ``request_timeout``; ``math.inf``: none);
each request inside it is bounded by what remains. Poll intervals are the server's, clamped to
[``DEFAULT_MIN_POLL_INTERVAL``, ``DEFAULT_MAX_POLL_INTERVAL``] (a server naming 0 ms must not make a busy loop,
one naming a day must not hide the end for a day), ``DEFAULT_POLL_INTERVAL`` when it names none. A task's rounds
of ``inputRequests`` are bounded by the client's ``max_input_rounds`` (``InputRequiredError``). Running out of time
raises ``TimeoutError`` and leaves the task running on the server: ``cancel()`` ends it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import anyio

from ..jsonrpc.context import ProgressCallback
from ..jsonrpc.envelopes import JSONRPCError
from .capabilities import has_path
from .connection import Connection
from .errors import CapabilityError, ClientError, InvalidResultError, TaskCancelledError
from .handlers import HandlerDispatch
from .input_required import InputRequiredError, answer_input_requests
from .modern import complete_result
from .requests import RequestPath
from .settings import ClientSettings
from .task_info import (
    TASK_RESULT_TYPE,
    TASKS_EXTENSION_CAPABILITIES,
    TaskInfo,
    declares_tasks_extension,
    legacy_task_info,
    modern_task_info,
)

if TYPE_CHECKING:
    from .versions import AnyCallToolResult

__all__ = [
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_MIN_POLL_INTERVAL",
    "DEFAULT_POLL_INTERVAL",
    "TaskHandle",
    "TaskPolling",
    "Tasks",
]

# Seconds between two tasks/get of one task at least / at most, whatever pollIntervalMs says, and when it says
# nothing. The floor keeps a server that names 0 from turning the wait into a busy loop; the ceiling keeps one that
# names an hour from hiding a finished task for an hour (the text lets servers rate-limit faster polls, so the
# ceiling is the only departure from "SHOULD respect pollIntervalMs", and only for long intervals).
DEFAULT_MIN_POLL_INTERVAL: Final = 0.05
DEFAULT_MAX_POLL_INTERVAL: Final = 10.0
DEFAULT_POLL_INTERVAL: Final = 0.5


@dataclass(frozen=True, slots=True)
class TaskPolling:
    """How often ``TaskHandle.result`` asks ``tasks/get`` (seconds; see the module's bounds)."""

    min_interval: float = DEFAULT_MIN_POLL_INTERVAL
    max_interval: float = DEFAULT_MAX_POLL_INTERVAL
    default_interval: float = DEFAULT_POLL_INTERVAL

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.default_interval <= self.max_interval:
            raise ValueError("poll intervals must satisfy 0 < min_interval <= default_interval <= max_interval")

    def interval(self, info: TaskInfo) -> float:
        if info.poll_interval_ms is None:
            return self.default_interval
        return min(max(info.poll_interval_ms / 1000, self.min_interval), self.max_interval)


class Tasks:
    """Starting and following tasks over one client's connection (see the module for each era)."""

    def __init__(
        self,
        connection: Connection,
        settings: ClientSettings,
        requests: RequestPath,
        dispatch: HandlerDispatch,
        polling: TaskPolling | None = None,
    ) -> None:
        self._connection = connection
        self._settings = settings
        self._requests = requests
        self._dispatch = dispatch
        self.polling = polling or TaskPolling()

    @property
    def modern(self) -> bool:
        return self._connection.modern is not None

    # -- starting ----------------------------------------------------------------------------------------------

    async def start_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        ttl_ms: int | None,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> TaskHandle:
        """``tools/call`` as a task: the handle of the task the server made, or of the result it gave at once."""
        if ttl_ms is not None and (isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0):
            raise ValueError(f"ttl_ms must be a non-negative int of milliseconds, not {ttl_ms!r}")
        params: dict[str, Any] = {"name": name, **({"arguments": dict(arguments)} if arguments is not None else {})}
        if self.modern:
            # The 2026-07-28 server decides; the request only says we can take a task (ttl is the server's too).
            raw = await self._requests.gated_call("tools/call", params, timeout, progress, TASKS_EXTENSION_CAPABILITIES)
            return self.handle_for_call(raw, declared=True)
        capability = "tasks.requests.tools.call"
        if not self.server_declares(capability):
            raise CapabilityError("tools/call", capability)  # 2025-11-25: "MUST NOT attempt to use task augmentation"
        params["task"] = {"ttl": ttl_ms} if ttl_ms is not None else {}
        raw = await self._requests.gated_call("tools/call", params, timeout, progress)
        if "task" not in raw:
            # A receiver that does not support tasks for this request processes it normally (basic/utilities/tasks
            # "Task Support and Handling"): the result is here already.
            return TaskHandle(self, TaskInfo(None, "completed", result=raw))
        return TaskHandle(self, legacy_task_info(raw["task"], "tools/call"))

    def handle_for_call(self, raw: dict[str, Any], *, declared: bool) -> TaskHandle:
        """The handle of a modern ``tools/call`` answer (``declared``: whether that request declared the
        extension; a task answer to one that did not is the server's error)."""
        result_type = raw.get("resultType")
        if result_type == TASK_RESULT_TYPE:
            if not declared:
                raise InvalidResultError(
                    "tools/call answered with a task although the request did not declare the tasks extension"
                )
            return TaskHandle(self, modern_task_info(raw, "tools/call"))
        if result_type != "complete":
            raise InvalidResultError(f"tools/call answered with resultType {result_type!r}, not a result or a task")
        return TaskHandle(self, TaskInfo(None, "completed", result=raw))

    async def handle(self, task_id: str, *, timeout: float | None = None) -> TaskHandle:
        """A handle for a task started earlier (its id kept, e.g. across a restart), with its current status."""
        handle = TaskHandle(self, TaskInfo(task_id, "working"))
        await handle.status(timeout=timeout)
        return handle

    # -- what call_tool needs ------------------------------------------------------------------------------------

    def declares_extension(self) -> bool:
        """Whether this client's modern requests declare the tasks extension (``Client(tasks=True)``)."""
        state = self._connection.modern
        return state is not None and declares_tasks_extension(state.capabilities)

    def runs_as_task(self, tool: Any) -> bool:
        """Whether ``call_tool`` runs this 2025-11-25 tool as a task: it requires one, and the server takes them."""
        execution = getattr(tool, "execution", None)
        required = getattr(execution, "task_support", None) == "required"
        return required and self.server_declares("tasks.requests.tools.call")

    def server_declares(self, capability: str) -> bool:
        return has_path(self._connection.server_capabilities, capability)

    # -- the requests ------------------------------------------------------------------------------------------

    async def send(self, method: str, params: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """One ``tasks/*`` request: in 2026-07-28 declaring the extension (a server refuses the others with -32021)."""
        if self.modern:
            return await self._requests.gated_call(method, params, timeout, None, TASKS_EXTENSION_CAPABILITIES)
        return await self._requests.gated_call(method, params, timeout, None)

    def task_info(self, raw: object, method: str) -> TaskInfo:
        return modern_task_info(raw, method) if self.modern else legacy_task_info(raw, method)

    async def answer_inputs(self, task_id: str, requests: dict[str, Any]) -> dict[str, Any]:
        """The handlers' answers to a task's outstanding input requests (2026-07-28 ``inputRequests``)."""
        package = self._connection.negotiated().package

        async def answer(key: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
            try:
                return await self._dispatch.answer_input(method, params, package)
            except LookupError as exc:
                raise InputRequiredError("tasks/update", f"task {task_id!r}: {exc}", 0) from None

        return await answer_input_requests("tasks/update", requests, answer, 0)

    def complete(self, raw: Mapping[str, Any]) -> AnyCallToolResult:
        """A task's final ``tools/call`` result as the negotiated version's ``CallToolResult``."""
        result = complete_result("tools/call", dict(raw)) if self.modern else dict(raw)
        parsed = self._requests.parse("tools/call", result)
        expected = self._connection.negotiated().package.CallToolResult
        if not isinstance(parsed, expected):
            raise InvalidResultError(
                f"a task's tools/call result parsed as {type(parsed).__name__}, not CallToolResult"
            )
        return cast("AnyCallToolResult", parsed)

    def deadline(self, timeout: float | None) -> float:
        if timeout is None:
            timeout = self._settings.request_timeout
        return math.inf if timeout is None else anyio.current_time() + timeout

    def until(self, deadline: float) -> float:
        """The seconds left until ``deadline`` (``math.inf`` for none), as a ``timeout``."""
        return max(deadline - anyio.current_time(), 0.0)

    def max_input_rounds(self) -> int:
        return self._settings.max_input_rounds

    def request_timeout(self, deadline: float, *, whole_wait: bool = False) -> float:
        """The timeout of one request inside a wait that must end by ``deadline``: what remains, and no more than
        the client's ``request_timeout`` unless the request is the ``whole_wait`` (2025-11-25 ``tasks/result``,
        which lasts as long as the task: only the caller's deadline bounds it)."""
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise TimeoutError("the task did not end in time")
        own = self._settings.request_timeout
        return remaining if own is None or whole_wait else min(own, remaining)


class TaskHandle:
    """One task (make it with ``Client.start_tool_task`` or ``Client.task(task_id)``). ``info`` is the state last
    seen; ``task_id`` is None when the server answered the call at once (2026-07-28: its choice), and the handle is
    then completed with that result."""

    def __init__(self, tasks: Tasks, info: TaskInfo) -> None:
        self._tasks = tasks
        self.info = info
        self._answered: set[str] = set()  # inputRequests keys already sent with tasks/update (never twice)
        self._input_rounds = 0
        self._final: dict[str, Any] | None = None  # 2025-11-25: what tasks/result returned

    @property
    def task_id(self) -> str | None:
        return self.info.task_id

    def __repr__(self) -> str:
        return f"TaskHandle(task_id={self.task_id!r}, status={self.info.status!r})"

    async def status(self, *, timeout: float | None = None) -> TaskInfo:
        """``tasks/get``: the task's state now (``info`` is updated); the handle of an at-once answer just returns
        its ``info``."""
        if self.task_id is None:
            return self.info
        raw = await self._tasks.send("tasks/get", {"taskId": self.task_id}, timeout)
        self.info = self._tasks.task_info(raw, "tasks/get")
        if self.info.task_id != self.task_id:
            raise InvalidResultError(f"tasks/get for {self.task_id!r} answered about task {self.info.task_id!r}")
        return self.info

    async def cancel(self, *, timeout: float | None = None) -> None:
        """``tasks/cancel``. In 2026-07-28 the server only acknowledges (the task may still end otherwise: call
        ``status()`` or ``result()`` to see); in 2025-11-25 it answers with the task, now cancelled (``info``).
        Nothing is sent for the handle of an at-once answer, which has nothing left to cancel."""
        if self.task_id is None:
            return
        if not self._tasks.modern and not self._tasks.server_declares("tasks.cancel"):
            raise CapabilityError("tasks/cancel", "tasks.cancel")
        raw = await self._tasks.send("tasks/cancel", {"taskId": self.task_id}, timeout)
        if not self._tasks.modern:
            self.info = legacy_task_info(raw, "tasks/cancel")

    async def result(self, *, timeout: float | None = None) -> AnyCallToolResult:
        """The call's ``CallToolResult`` once the task ends, waiting at most ``timeout`` seconds in all (None: the
        client's ``request_timeout``; ``math.inf``: no limit; ``TimeoutError`` leaves the task running). A failed
        task raises its ``JSONRPCError``, a cancelled one ``TaskCancelledError``."""
        deadline = self._tasks.deadline(timeout)
        if self._final is not None:
            return self._tasks.complete(self._final)
        if self.info.result is not None and self.info.status == "completed":
            return self._tasks.complete(self.info.result)
        if self.task_id is None:  # an at-once answer always carries its result (above)
            raise ClientError("the handle has neither a task nor a result")
        if self._tasks.modern:
            return await self._poll_modern(self.task_id, deadline)
        return await self._wait_legacy(self.task_id, deadline)

    async def _poll_modern(self, task_id: str, deadline: float) -> AnyCallToolResult:
        tasks = self._tasks
        info = self.info
        while True:
            if info.status == "completed" and info.result is not None:
                return tasks.complete(info.result)
            if info.status == "failed":
                error = info.error or {}
                raise JSONRPCError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
            if info.status == "cancelled":
                raise TaskCancelledError(task_id, info.status_message)
            if info.status == "input_required" and info.input_requests:
                await self._answer(task_id, info.input_requests, deadline)
            else:
                # Sleep no longer than the deadline allows; the next tasks/get then raises TimeoutError.
                pause = min(tasks.polling.interval(info), max(deadline - anyio.current_time(), 0))
                await anyio.sleep(pause)
            info = await self.status(timeout=tasks.request_timeout(deadline))

    async def _answer(self, task_id: str, requests: dict[str, Any], deadline: float) -> None:
        # A key already answered may still be listed until the server takes the update in ("eventually
        # consistent"): it is not answered again, and the client just polls on.
        new = {key: request for key, request in requests.items() if key not in self._answered}
        if not new:
            await anyio.sleep(min(self._tasks.polling.min_interval, max(deadline - anyio.current_time(), 0)))
            return
        self._input_rounds += 1
        if self._input_rounds > self._tasks.max_input_rounds():
            raise InputRequiredError(
                "tasks/update",
                f"task {task_id!r} still asked for input after {self._tasks.max_input_rounds()} rounds",
                self._input_rounds,
            )
        with anyio.fail_after(max(deadline - anyio.current_time(), 0)):
            responses = await self._tasks.answer_inputs(task_id, new)
        params = {"taskId": task_id, "inputResponses": responses}
        await self._tasks.send("tasks/update", params, self._tasks.request_timeout(deadline))
        self._answered.update(new)

    async def _wait_legacy(self, task_id: str, deadline: float) -> AnyCallToolResult:
        tasks = self._tasks
        while True:
            try:
                raw = await tasks.send(
                    "tasks/result", {"taskId": task_id}, tasks.request_timeout(deadline, whole_wait=True)
                )
            except JSONRPCError as exc:
                # tasks/result answers a failed task with the call's own error, a cancelled one with whatever error
                # the server chose, and a server that bounds its own wait may give up on a running task: which of
                # these it was, tasks/get tells.
                try:
                    info = await self.status(timeout=tasks.request_timeout(deadline))
                except (JSONRPCError, ClientError, TimeoutError):
                    raise exc from None
                if info.status == "cancelled":
                    raise TaskCancelledError(task_id, info.status_message) from exc
                if info.terminal:
                    raise
                continue  # still running: wait in tasks/result again (the caller's deadline bounds the loop)
            self._final = raw
            return tasks.complete(raw)
