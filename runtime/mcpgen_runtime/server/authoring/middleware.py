"""Middleware: functions wrapped around every request a server handles (timing, auth checks, logging, ...).

Where it sits: in the ``server`` layer, above ``context`` (an ``IncomingRequest`` carries the request's
``Context``) and below ``connection`` (``ServerConnection`` runs the chain) and ``server`` (``Server.middleware``
registers them). A middleware is::

    @server.middleware
    async def timing(request: IncomingRequest, call_next: CallNext) -> Any:
        started = time.perf_counter()
        try:
            return await call_next(request)
        finally:
            logger.info("%s took %.3f s", request.method, time.perf_counter() - started)

The rules (the README repeats them):

- Order: registration order, the first registered outermost; each sees the request before the ones after it, and
  their result after them.
- What: every request the connection receives, ``initialize`` included (so a middleware can refuse a client at the
  door: over HTTP a refused initialize creates no session), unknown methods too (``call_next`` raises
  ``MethodNotFound``; a middleware may answer one itself). Not ``ping`` (the session answers it), not notifications,
  not ``Context.read_resource`` (not a request from the client).
- ``call_next(request)`` returns the result as sent: a JSON dict, already validated against the negotiated
  version. It may be called with a changed request (``dataclasses.replace(request, params=...)``).
- Short-circuit: raise a ``JSONRPCError`` (the client gets that error; ``InvalidParams``, ``MethodNotFound``, or any
  code), or return a result without calling ``call_next``: a dict or a pydantic model, validated against the
  negotiated version's result model of the method like any handler's result (an invalid one answers -32603). Any
  other exception answers -32603 (logged, not sent), as from a handler.
- ``initialize``: the connection is initialized only by ``call_next``; a middleware that answers ``initialize``
  itself without calling it gets -32603 instead, since the client would believe in a session that does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias

from ...jsonrpc.envelopes import JSONParams
from .context import Context
from .lifespan import StateT

__all__ = ["CallNext", "IncomingRequest", "Middleware", "run_chain"]


@dataclass(frozen=True, slots=True)
class IncomingRequest(Generic[StateT]):
    """A request on its way to its handler: the method, its params as received (JSON), and its ``Context`` (the one
    the handler gets: request id, ``_meta``, the client, the lifespan state, the HTTP request)."""

    method: str
    params: JSONParams
    context: Context[StateT]


# What a middleware calls to go on: the rest of the chain, then the handler; returns the result as sent.
CallNext: TypeAlias = Callable[[IncomingRequest[Any]], Awaitable[dict[str, Any]]]
# A middleware: the request and what to call next; returns the result (see the module docstring).
Middleware: TypeAlias = Callable[[IncomingRequest[Any], CallNext], Awaitable[Any]]


async def run_chain(
    middleware: Sequence[Middleware],
    request: IncomingRequest[Any],
    endpoint: CallNext,
    finish: Callable[[IncomingRequest[Any], Any], dict[str, Any]],
) -> dict[str, Any]:
    """``request`` through ``middleware`` (the first outermost) to ``endpoint``. What a middleware returns that is
    not what its ``call_next`` gave it (its own answer, or a changed one) goes through ``finish`` (validation and
    dump as the negotiated version's result), so every ``call_next`` returns a result as sent."""

    async def call(index: int, current: IncomingRequest[Any]) -> dict[str, Any]:
        if index == len(middleware):
            return await endpoint(current)
        below: list[dict[str, Any]] = []

        async def call_next(forwarded: IncomingRequest[Any]) -> dict[str, Any]:
            result = await call(index + 1, forwarded)
            below.append(result)
            return result

        value = await middleware[index](current, call_next)
        passed_through = bool(below) and value is below[-1]  # then it was validated already
        return below[-1] if passed_through else finish(current, value)

    return await call(0, request)
