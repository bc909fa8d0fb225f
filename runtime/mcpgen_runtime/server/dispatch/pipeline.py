"""The one request pipeline of both eras: a request's ``Context``, the server's middleware chain, then the era's
endpoint (which routes through the version's handler table, ``generated.handlers_class``) and the answer.

Where it sits: in the ``server`` layer, above ``authoring.middleware`` (``run_chain``) and under the two eras'
dispatch: ``connection.ServerConnection`` runs a legacy request through it with its own endpoint (the negotiated
version's routes, ``initialize``), and ``modern.serve_modern`` a modern one with the request's version's routes.
What flows, in either era (see CONTRIBUTING.md, "How a request flows")::

    transport -> era dispatch -> run_request: Context -> middleware... -> endpoint -> handler table -> answer
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...jsonrpc.context import RequestContext
from ...jsonrpc.envelopes import JSONParams
from ..authoring.context import ConnectionView, Context
from ..authoring.middleware import IncomingRequest, Middleware, run_chain

__all__ = ["Endpoint", "Finish", "run_request"]

Endpoint = Callable[[str, JSONParams, Context[Any]], Awaitable[dict[str, Any]]]
"""The era's end of the pipeline: routes the request to its handler and returns the validated result (JSON)."""
Finish = Callable[[IncomingRequest[Any], Any], dict[str, Any]]
"""Validates a result a middleware returned itself, as the era validates a handler's (see ``middleware``)."""


async def run_request(
    middleware: Sequence[Middleware],
    view: ConnectionView,
    method: str,
    params: JSONParams,
    request: RequestContext,
    endpoint: Endpoint,
    finish: Finish,
) -> dict[str, Any]:
    """Serve one request: its ``Context`` (over ``view``, the connection view of its era), through ``middleware``
    (the first outermost) to ``endpoint``; the result as sent."""
    context: Context[Any] = Context(view, request)
    if not middleware:
        return await endpoint(method, params, context)

    async def call_endpoint(incoming: IncomingRequest[Any]) -> dict[str, Any]:
        return await endpoint(incoming.method, incoming.params, incoming.context)

    return await run_chain(middleware, IncomingRequest(method, params, context), call_endpoint, finish)
