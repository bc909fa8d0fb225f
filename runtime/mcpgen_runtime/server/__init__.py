"""The typed MCP server side: ``Server`` and everything between its decorators and the JSON-RPC session.

Holds, bottom up: ``errors``, ``caching`` (``CacheHint``) and ``request_state`` (the signed MRTR state); ``mrtr``
(input rounds behind ``Context.elicit`` / ``sample`` / ``list_roots`` in the modern era); ``context`` (``Context``,
what a registered function can do for its request; the ``ConnectionView`` it needs of a connection); ``authoring``
(functions -> tool, resource, template, prompt and completion definitions); ``registry`` (``Registry``: what a
server serves, and the decorators that fill it); ``tool_headers`` (``Mcp-Param-*`` checks); ``handlers`` (the MCP
request handlers, written once for every version; the ``HandledConnection`` they need); ``dispatch`` (what both
eras' dispatch shares); ``subscriptions`` (``subscriptions/listen``); ``modern`` (``ModernRequest``: one request of
the 2026-07-28 era); ``connection`` (``ServerConnection``: one client, both eras, version negotiation, dispatch) and
``server`` (``Server``: a registry that serves its connections over stdio or streamable HTTP). Beside them:
``lifespan`` (the shared state started once per run, below ``context``), ``elicitation`` (typed elicitation
outcomes, below ``context``) and ``middleware`` (``IncomingRequest``, the chain ``connection`` runs; above
``context``).

May import: ``jsonrpc`` (the session), ``transports`` (stdio and ``http_session``, which needs neither starlette
nor uvicorn, eagerly; ``http_server`` only inside ``Server.serve_http``, so that stdio servers do not import
starlette and uvicorn), ``protocol`` (result validation), ``scaleout`` (only inside ``Server.serve_http`` and
``run_options``, and only with a Redis URL: many workers sharing sessions, events and notifications through Redis), the standard library, anyio, pydantic and ``mcp_bindings``; never ``client`` (the two sides share only
what is below them). The list above is the dependency order inside the layer.
This package re-exports the names a server author needs.
"""

from typing import TYPE_CHECKING, Any

from .authoring import context
from .authoring.caching import DEFAULT_CACHE_HINTS, CacheHint, CacheScope
from .dispatch.connection import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, ServerConnection
from .authoring.context import LOG_LEVELS, CapabilityError, Context, InvalidClientResultError
from .authoring.elicitation import Accepted, Cancelled, Declined, ElicitOutcome
from .authoring.errors import (
    HeaderMismatchError,
    InvalidParamsError,
    MissingClientCapabilityError,
    ProtocolError,
    ResourceNotFoundError,
    ToolError,
)
from .authoring.lifespan import Lifespan, LifespanError
from .authoring.middleware import CallNext, IncomingRequest, Middleware
from .dispatch.input_rounds import InputRequired
from .authoring.registry import Registry
from .dispatch.request_state import InvalidRequestStateError, RequestStateCodec
from .server import Server

if TYPE_CHECKING:
    from .authoring.context import AnyCreateMessageResult, AnyElicitResult, AnyReadResourceResult, AnyRoot
else:

    def __getattr__(name: str) -> Any:
        # The unions of every version's models, built on first use (see context.py): not on import.
        if name in ("AnyCreateMessageResult", "AnyElicitResult", "AnyReadResourceResult", "AnyRoot"):
            value = getattr(context, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_CACHE_HINTS",
    "LATEST_PROTOCOL_VERSION",
    "LOG_LEVELS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Accepted",
    "AnyCreateMessageResult",
    "AnyElicitResult",
    "AnyReadResourceResult",
    "AnyRoot",
    "CacheHint",
    "CacheScope",
    "CallNext",
    "Cancelled",
    "CapabilityError",
    "Context",
    "Declined",
    "ElicitOutcome",
    "HeaderMismatchError",
    "IncomingRequest",
    "InputRequired",
    "InvalidClientResultError",
    "InvalidParamsError",
    "InvalidRequestStateError",
    "Lifespan",
    "LifespanError",
    "Middleware",
    "MissingClientCapabilityError",
    "ProtocolError",
    "Registry",
    "RequestStateCodec",
    "ResourceNotFoundError",
    "Server",
    "ServerConnection",
    "ToolError",
]
