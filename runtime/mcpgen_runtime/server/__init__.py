"""The typed MCP server side: ``Server`` and everything between its decorators and the JSON-RPC session.

Holds, bottom up: ``context`` (``Context``, what a registered function can do for its request; the
``ConnectionView`` it needs of a connection), ``authoring`` (functions -> tool, resource, template, prompt and
completion definitions), ``registry`` (``Registry``: what a server serves, and the decorators that fill it),
``handlers`` (the MCP request handlers, written once for every version; the ``HandledConnection`` they need),
``connection`` (``ServerConnection``: one client, version negotiation, dispatch) and ``server`` (``Server``: a
registry that serves its connections over stdio or streamable HTTP). Beside them: ``lifespan`` (the shared state
started once per run, below ``context``), ``elicitation`` (typed elicitation outcomes, below ``context``) and
``middleware`` (``IncomingRequest``, the chain ``connection`` runs; above ``context``).

May import: ``jsonrpc`` (the session), ``transports`` (stdio and ``http_session``, which needs neither starlette
nor uvicorn, eagerly; ``http_server`` only inside ``Server.serve_http``, so that stdio servers do not import
starlette and uvicorn), ``protocol`` (result validation), the standard library, anyio, pydantic and ``mcp_bindings``; never ``client`` (the two sides share only
what is below them). The list above is the dependency order inside the layer.
This package re-exports the names a server author needs.
"""

from .connection import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, ServerConnection
from .context import (
    LOG_LEVELS,
    AnyCreateMessageResult,
    AnyElicitResult,
    AnyReadResourceResult,
    AnyRoot,
    CapabilityError,
    Context,
    InvalidClientResultError,
)
from .elicitation import Accepted, Cancelled, Declined, ElicitOutcome
from .errors import InvalidParamsError, ProtocolError, ResourceNotFoundError, ToolError
from .lifespan import Lifespan, LifespanError
from .middleware import CallNext, IncomingRequest, Middleware
from .registry import Registry
from .server import Server

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LOG_LEVELS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Accepted",
    "AnyCreateMessageResult",
    "AnyElicitResult",
    "AnyReadResourceResult",
    "AnyRoot",
    "CallNext",
    "Cancelled",
    "CapabilityError",
    "Context",
    "Declined",
    "ElicitOutcome",
    "IncomingRequest",
    "InvalidClientResultError",
    "InvalidParamsError",
    "Lifespan",
    "LifespanError",
    "Middleware",
    "ProtocolError",
    "Registry",
    "ResourceNotFoundError",
    "Server",
    "ServerConnection",
    "ToolError",
]
