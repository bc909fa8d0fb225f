"""A ``Session``'s requests, each way: an incoming one (``Job``) and how it is answered (the handler's outcome as a
response, message and frame, or the error it becomes when the handler fails), an outgoing one waiting for its
answer (``Pending``), and the handlers a session has when given none.

Where it sits: in the ``jsonrpc`` layer, under the session's parts (``execution``, ``outgoing``): plain pieces that
need nothing of a session's state. Its ``TaskScope`` reads anyio's private state: a fast path (``safe_mode``).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Protocol

import anyio

from ..safe_mode import fast_path, require
from .context import PING, RequestContext, RequestHandler
from .envelopes import (
    ErrorCode,
    ErrorResponse,
    JSONParams,
    JSONRPCError,
    MethodNotFound,
    Request,
    RequestId,
    Response,
    encode_frame,
    error_response,
    success_response,
)

__all__ = [
    "Job",
    "JobScope",
    "Pending",
    "TaskDeadline",
    "TaskScope",
    "anyio_scope",
    "call_handler",
    "deliver_response",
    "failure_answer",
    "ignore_notification",
    "method_not_found",
    "result_answer",
]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


class JobScope(Protocol):
    """What a session needs of the scope a request's handler runs in: ``anyio.CancelScope``, or ``TaskScope``."""

    @property
    def cancel_called(self) -> bool: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


class TaskScope:
    """The cancel scope of a request whose handler runs inline in a transport's task on asyncio (see
    ``Session.dispatch_now``): ``cancel`` cancels that task, asyncio's way, and the exit swallows that cancellation
    and only that one (the ``asyncio.timeout`` pattern: ``Task.uncancel`` against the count at entry).

    Why not ``anyio.CancelScope``: entering and leaving one costs two ``current_task`` look-ups and anyio's per-task
    bookkeeping, which for a task that serves one HTTP request is created and dropped every time; that was a few
    per cent of the server's CPU per request. What is kept of anyio's semantics: an ``anyio.CancelScope(shield=True)``
    the handler is in when the cancellation comes delays it until the handler has left the shielded block (anyio's
    own bookkeeping is read for that, only then). The difference: the cancellation is delivered once (at the await
    the handler is suspended in), not again at every later await inside the scope as anyio does; a handler that
    swallows it may go on, and its answer is dropped as before (``cancel_called``)."""

    __slots__ = ("_cancelled", "_cancelling", "_loop", "_outer", "_task", "cancel_called")

    def __init__(self, task: asyncio.Task[Any] | None = None, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """``task``: the task that will enter it, if the caller has it at hand; else ``loop``, the loop it runs on,
        if the caller knows it (else it is looked up: a system call, for the pid)."""
        self.cancel_called = False
        self._cancelled = False  # the task was cancelled by this scope
        self._task: asyncio.Task[Any] | None = task
        self._loop = loop
        self._cancelling = 0
        self._outer: object = None  # the innermost anyio cancel scope of the task at entry

    @staticmethod
    def available() -> bool:
        """Whether the running event loop is asyncio's (the only one TaskScope works on) and this anyio keeps its
        per-task state where TaskScope can see shields. Whether sessions use it is ``ANYIO_SHIELD_STATE.active``
        too (the self-check, and safe mode): otherwise they use ``anyio.CancelScope`` itself, so a future anyio
        layout costs speed, never the shield semantics."""
        if _ANYIO_TASK_STATES is None:
            return False
        return _on_asyncio()

    def __enter__(self) -> TaskScope:
        task = self._task or asyncio.current_task(self._loop)
        assert task is not None, "TaskScope is entered in an asyncio task"
        self._task, self._cancelling = task, task.cancelling()
        self._outer = anyio_scope(task)
        return self

    def adopt_outer(self, outer: object) -> None:
        """Look for shields inside ``outer`` rather than inside the task's innermost anyio scope at entry: for a
        handler that started before the scope was entered (``eager.Started``), and may be in scopes of its own."""
        self._outer = outer

    def cancel(self) -> None:
        if not self.cancel_called:
            self.cancel_called = True
            self._deliver()

    def _deliver(self) -> None:
        task = self._task
        # Not the task itself (it is running, not suspended at an await of the handler): it sees cancel_called.
        if task is None or self._cancelled or task is asyncio.current_task():
            return
        if _shielded(task, self._outer):
            asyncio.get_running_loop().call_later(_SHIELD_RECHECK, self._deliver)
            return
        task.cancel()
        self._cancelled = True

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        task, self._task = self._task, None
        if task is None or not self._cancelled:
            return None
        # Ours was the one cancellation (nobody else cancelled the task meanwhile): it ends here.
        remaining = task.uncancel()
        return exc_type is not None and issubclass(exc_type, asyncio.CancelledError) and remaining <= self._cancelling


# How often a cancellation held back by an anyio shield looks again whether the handler has left it.
_SHIELD_RECHECK: Final = 0.005


def anyio_scope(task: asyncio.Task[Any]) -> object:
    """The innermost anyio cancel scope ``task`` is in, from anyio's own bookkeeping (None when it has none, or when
    this anyio keeps it elsewhere: then shields are not seen)."""
    state = _ANYIO_TASK_STATES.get(task) if _ANYIO_TASK_STATES is not None else None
    return getattr(state, "cancel_scope", None)


def _shielded(task: asyncio.Task[Any], outer: object) -> bool:
    """Whether ``task`` is in a shielded anyio cancel scope entered since ``outer`` was its innermost one."""
    scope = anyio_scope(task)
    while scope is not None and scope is not outer:
        if getattr(scope, "_shield", False):
            return True
        scope = getattr(scope, "_parent_scope", None)
    return False


_ANYIO_TASK_STATES: Mapping[asyncio.Task[Any], object] | None
try:  # anyio's per-task state on asyncio (private: read only, and only to see shields; see TaskScope)
    from anyio._backends._asyncio import _task_states as _ANYIO_TASK_STATES
except ImportError:  # another anyio layout: the self-check below fails and sessions use anyio.CancelScope
    _ANYIO_TASK_STATES = None


def _on_asyncio() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running asyncio loop (trio, or none)
        return False


def _check_shield_state() -> None:
    """TaskScope's self-check: what ``_shielded`` reads of anyio's private state (``_task_states``, a scope's
    ``_shield`` and ``_parent_scope``) sees a shield, stops at the scope it started from, and sees nothing once the
    shield is left. In a loop of its own in a thread (once per process, a few ms): the probe enters anyio scopes,
    which must not touch the caller's task (its scopes may be cancelled already), and asyncio.run cannot start
    while another loop runs in this thread."""
    require(_ANYIO_TASK_STATES is not None, "anyio._backends._asyncio._task_states is gone")

    async def probe() -> None:
        task = asyncio.current_task()
        require(task is not None, "no asyncio task")
        assert task is not None
        _probe_shield_state(task)

    with ThreadPoolExecutor(1, thread_name_prefix="mcpgen-self-check") as pool:
        pool.submit(asyncio.run, probe()).result()


def _probe_shield_state(task: asyncio.Task[Any]) -> None:
    outer = anyio_scope(task)
    require(not _shielded(task, outer), "a shield seen where none was entered")
    with anyio.CancelScope(shield=True) as shield:
        require(anyio_scope(task) is shield, "the task's innermost anyio scope is not where TaskScope looks")
        require(_shielded(task, outer), "a shielded scope is not seen as shielded")
        with anyio.CancelScope() as inner:
            require(anyio_scope(task) is inner, "a nested anyio scope is not seen")
            require(_shielded(task, outer), "a shield around a nested scope is not seen (the parent link)")
            require(not _shielded(task, shield), "the walk does not stop at the scope it started from")
        with anyio.CancelScope():
            pass
    require(anyio_scope(task) is outer, "the task's scope after leaving the shield is not the one before")
    with anyio.CancelScope():
        require(not _shielded(task, outer), "an unshielded scope is seen as shielded")


ANYIO_SHIELD_STATE: Final = fast_path(
    "anyio-shield-state",
    relies_on="anyio._backends._asyncio._task_states and CancelScope._shield/_parent_scope",
    check=_check_shield_state,
)


class TaskDeadline:
    """``anyio.fail_after(timeout)`` for the task that enters it, on asyncio: at the deadline the task is cancelled
    (asyncio's way) and the exit turns that cancellation, and only that one, into ``TimeoutError``. ``timeout`` None
    or infinite: no deadline. What ``asyncio.timeout`` does, as a plain context manager (a session's request waits
    in a ``with`` block); one timer, where anyio's deadline scope also looks the task up on entry and exit, which
    was a good part of a client's CPU per call."""

    __slots__ = ("_cancelling", "_expired", "_task", "_timer", "timeout")

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._expired = False
        self._task: asyncio.Task[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._cancelling = 0

    def __enter__(self) -> TaskDeadline:
        timeout = self.timeout
        if timeout is not None and not math.isinf(timeout):
            task = asyncio.current_task()
            assert task is not None, "TaskDeadline is entered in an asyncio task"
            self._task, self._cancelling = task, task.cancelling()
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(loop.time() + max(timeout, 0.0), self._expire)
        return self

    def _expire(self) -> None:
        assert self._task is not None
        self._expired = True
        self._task.cancel()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if self._timer is not None:
            self._timer.cancel()
        if not self._expired:
            return None
        assert self._task is not None
        if self._task.uncancel() <= self._cancelling and exc_type is not None:
            if issubclass(exc_type, asyncio.CancelledError):
                raise TimeoutError from exc
        return None


@dataclass(frozen=True, slots=True)
class Primitives:
    """What a session makes per request, by event loop: the scope of a request handled inline (``dispatch_now``),
    the deadline of an outgoing request, and the event its answer sets. On asyncio, ``TaskScope``,
    ``TaskDeadline`` and ``asyncio.Event`` (anyio's versions look the task or the backend up each time, which for
    a client was a good part of its CPU per call); anyio's anywhere else."""

    inline_scope: Callable[[], JobScope]
    deadline: Callable[[float | None], AbstractContextManager[Any]]
    event: Callable[[], anyio.Event | asyncio.Event]

    @staticmethod
    def for_running_loop() -> Primitives:
        if not _on_asyncio():
            return ANYIO
        # TaskScope reads anyio's private state (a fast path, see safe_mode); without it anyio's own scope, which
        # is correct in a transport's task too. TaskDeadline and asyncio.Event use public asyncio only.
        return _ASYNCIO if ANYIO_SHIELD_STATE.active else _ASYNCIO_PUBLIC


ANYIO: Final = Primitives(anyio.CancelScope, anyio.fail_after, anyio.Event)
_ASYNCIO: Final = Primitives(TaskScope, TaskDeadline, asyncio.Event)
_ASYNCIO_PUBLIC: Final = Primitives(anyio.CancelScope, TaskDeadline, asyncio.Event)


@dataclass(slots=True)
class Job:
    """An accepted incoming request; ``scope`` is what ``notifications/cancelled`` cancels."""

    request: Request
    scope: JobScope


@dataclass(slots=True)
class Pending:
    """An outgoing request waiting for its response."""

    # anyio.Event, or asyncio.Event on asyncio (the session's choice: anyio's wrapper costs a backend look-up per
    # request, and its wait a second await); either has is_set, set and wait.
    event: anyio.Event | asyncio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    # How many notifications had been queued when the response arrived: the caller waits until those are handled,
    # so a progress notification the peer sent before its answer reaches the callback before the call returns.
    notifications_before: int = 0

    def resolve(self, result: dict[str, Any] | None = None, error: BaseException | None = None) -> None:
        if not self.event.is_set():
            self.result, self.error = result, error
            self.event.set()


async def method_not_found(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    raise MethodNotFound(method)


async def ignore_notification(method: str, params: JSONParams) -> None:
    logger.debug("notification %r ignored (no notification handler)", method)


async def call_handler(
    handler: RequestHandler, request: Request, context: RequestContext, *, answer_pings: bool
) -> tuple[dict[str, Any], bytes]:
    """Run ``handler`` for ``request``: the response as (message, encoded frame). A ``JSONRPCError`` becomes that
    error; any other exception is logged and answered -32603 (the peer learns nothing of it)."""
    try:
        if request.method == PING and answer_pings:
            result: Any = {}
        else:
            result = await handler(request.method, request.params, context)
        return result_answer(request, result)
    except Exception as exc:
        return failure_answer(request, exc)


def result_answer(request: Request, result: Any) -> tuple[dict[str, Any], bytes]:
    """The response to ``request`` whose handler returned ``result``, as (message, encoded frame); raises when it
    cannot be one (not a dict, or not JSON), for ``failure_answer`` to answer."""
    if not isinstance(result, dict):
        raise TypeError(f"request handler returned {type(result).__name__}, not dict")
    message = success_response(request.id, result)
    return message, encode_frame(message)


def failure_answer(request: Request, exc: Exception) -> tuple[dict[str, Any], bytes]:
    """The response to ``request`` whose handler raised ``exc`` (see ``call_handler``): a ``JSONRPCError`` is that
    error; anything else is logged and answered -32603, as is an error whose data is not JSON."""
    if isinstance(exc, JSONRPCError):
        message = error_response(request.id, exc.code, exc.message, exc.data)
        try:
            return message, encode_frame(message)
        except (TypeError, ValueError):
            logger.exception("error data of %r is not JSON-serializable", request.method)
    else:
        # Log the details here; the peer only learns that something failed (no exception text, no traceback).
        logger.exception("request handler for %r (id %r) failed", request.method, request.id, exc_info=exc)
    message = error_response(request.id, ErrorCode.INTERNAL_ERROR, "Internal error")
    return message, encode_frame(message)


def deliver_response(
    pending_requests: Mapping[RequestId, Pending], message: Response | ErrorResponse, notifications_queued: int
) -> None:
    """Resolve the outgoing request ``message`` answers (``notifications_queued``: how many notifications the
    session had queued when it arrived, see ``Pending.notifications_before``); log and drop one nobody waits for."""
    if isinstance(message, ErrorResponse) and message.id is None:
        logger.warning("peer reported an error it could not tie to a request: %s %s", message.code, message.message)
        return
    pending = pending_requests.get(message.id) if message.id is not None else None
    if pending is None:
        logger.info("ignoring a response to unknown request id %r", message.id)
        return
    pending.notifications_before = notifications_queued
    if isinstance(message, ErrorResponse):
        pending.resolve(error=JSONRPCError(message.code, message.message, message.data))
    elif isinstance(message.result, dict):
        pending.resolve(result=message.result)
    else:
        pending.resolve(
            error=JSONRPCError(ErrorCode.INTERNAL_ERROR, "Malformed response from peer: result is not an object")
        )
