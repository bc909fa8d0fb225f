"""How a ``Session`` runs an incoming request's handler and answers it: ``RequestRunner``.

Where it sits: in the ``jsonrpc`` layer, under ``session``. There is one way to run a handler (``execute``: in the
request's own cancel scope, with its ``RequestContext``, the outcome turned into an answer by
``answers.call_handler``) and one way to answer it (``_run``: send the answer, release the in-flight slot, count
the task done). Where that runs is the only difference: in a task of ``request_tasks`` on asyncio, in the session's
task group on other loops, or inline in a transport's task (``run_inline``, for ``Session.dispatch_now``; or
``execute`` between ``begin_inline`` and ``end_inline``, for ``Session.answer_inline``, whose transport carries the
answer itself); a batch runs its requests side by side and answers them in one frame (``run_batch``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio

from .answers import Job, JobScope, call_handler
from .context import OutgoingSession, RequestContext, RequestHandler
from .eager import Started
from .envelopes import encode_frame
from .incoming import IncomingRequests
from .request_tasks import RequestTasks
from .work import SessionWork
from .writer import TRANSPORT_GONE, FrameWriter

__all__ = ["RequestRunner"]

logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")  # the session's log, where these were written


class RequestRunner:
    """Runs the requests ``incoming`` accepted, for ``session`` (what their ``RequestContext`` talks back
    through), with ``handler``; answers go out through ``writer``."""

    def __init__(
        self,
        session: OutgoingSession,
        handler: RequestHandler,
        *,
        answer_pings: bool,
        writer: FrameWriter,
        work: SessionWork,
        incoming: IncomingRequests,
    ) -> None:
        self._session = session
        self._handler = handler
        self._answer_pings = answer_pings
        self._writer = writer
        self._work = work
        self._incoming = incoming
        self.request_tasks: RequestTasks | None = None  # on asyncio: where requests run (see request_tasks)
        self._inline: set[JobScope] = set()  # the scopes of requests running in a transport's task

    def use_request_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        """On asyncio: requests run in tasks of their own (``request_tasks``), not in the task group."""
        self.request_tasks = RequestTasks(loop)

    def submit(self, job: Job) -> None:
        """Run a single request when the in-flight limit allows: in a task of ``request_tasks`` on asyncio, else in
        the task group."""
        self._work.admission.admit(1, lambda: self._spawn(job))

    def _spawn(self, job: Job) -> None:
        self._work.count()  # as SessionWork.spawn does
        tasks = self.request_tasks
        if tasks is not None:
            tasks.start(job.scope, self._run(job, tasks))
        else:
            tg = self._work.tg
            assert tg is not None
            tg.start_soon(self._run, job, None)

    async def run_inline(self, job: Job) -> None:
        """Run ``job`` in the calling task, the in-flight limit having room (``Session.dispatch_now`` checked)."""
        self._work.admission.running += 1  # what admit() does when there is room
        self._work.count()
        self._inline.add(job.scope)
        await self._run(job, None)

    def begin_inline(self, job: Job) -> None:
        """``job`` runs in a transport's task, its answer handed back there (``Session.answer_inline``, which calls
        ``execute`` between this and ``end_inline``): counted as ``run_inline`` counts it."""
        work = self._work
        work.admission.running += 1
        work.count()
        self._inline.add(job.scope)

    def end_inline(self, job: Job) -> None:
        self._inline.discard(job.scope)
        work = self._work
        work.admission.release(1)
        work.done()

    async def _run(self, job: Job, tasks: RequestTasks | None) -> None:
        """A request admitted and counted already, answered: in a task of ``tasks``, or else (None) in the task
        group or inline in a transport's task."""
        try:
            answer = await self.execute(job)
            if answer is not None:
                if tasks is not None:
                    tasks.answering(job.scope)
                await self._writer.send_frame(answer[1], answer[0])
        except TRANSPORT_GONE as exc:
            logger.info("could not send an answer, the stream is closed: %r", exc)
        except Exception:
            logger.exception("internal error in a session task")
        finally:
            if tasks is not None:
                tasks.finished(job.scope)
            else:
                self._inline.discard(job.scope)
            self._work.admission.release(1)
            self._work.done()

    async def run_batch(self, jobs: list[Job], immediate: list[dict[str, Any]]) -> None:
        """A batch's requests side by side, answered in one frame with ``immediate`` (answers known already)."""
        answers = list(immediate)

        async def run(job: Job) -> None:
            answer = await self.execute(job)
            if answer is not None:
                answers.append(answer[0])

        async with anyio.create_task_group() as tg:
            for job in jobs:
                tg.start_soon(run, job)
        # A batch of only notifications (or only cancelled requests) gets no answer at all, per JSON-RPC.
        if answers:
            await self._writer.send_frame(encode_frame(answers))

    async def execute(self, job: Job, started: Started | None = None) -> tuple[dict[str, Any], bytes] | None:
        """Run one request's handler; the response as (message, encoded frame), or None if the peer cancelled it.
        ``started``: its handler, started already (``eager``): it goes on in the request's scope."""
        request = job.request
        try:
            if job.scope.cancel_called:
                if started is not None:
                    started.close()
                return None  # cancelled while it waited for the in-flight limit: never started
            with job.scope:
                context = RequestContext(self._session, request.id, request.method, request.params)
                handler = self._handler
                if started is not None:
                    started.adopted_by(job.scope)
                    handler = started.handler
                response = await call_handler(handler, request, context, answer_pings=self._answer_pings)
        finally:
            # Forget the id before answering, so the peer may reuse it as soon as it has the answer.
            self._incoming.forget(job)
        if job.scope.cancel_called:
            # MCP: no response for a request the peer cancelled (even if the handler ignored the cancellation).
            return None
        return response

    def cancel_untracked(self) -> None:
        """Cancel the requests the task group does not hold: those run inline, and the request tasks."""
        for scope in list(self._inline):
            scope.cancel()
        if self.request_tasks is not None:
            self.request_tasks.cancel_all()

    async def close(self) -> None:
        """Wait for the request tasks, cancelled (what leaving the task group does for its tasks)."""
        if self.request_tasks is not None:
            await self.request_tasks.close()
