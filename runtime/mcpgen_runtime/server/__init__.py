"""The typed MCP server side: ``Server`` and everything between its decorators and the JSON-RPC session.

Subpackages and modules, in dependency order (each may import the ones before it, never the ones after):
- ``auth/``: bearer-token protection of the HTTP endpoint (``BearerAuth``, JWT and introspection verifiers).
- ``authoring/``: what an author writes against: ``Registry`` and its decorators, the definitions built from
  functions, ``Context``, middleware, lifespan, caching hints and the errors a function raises; MCP Apps
  (``add_ui_resource``, ``app_tool``, ``client_supports_apps``, ``Csp``, ``Permissions``: ``ui://`` resources and
  the tools they render).
- ``tasks/``: long-running tool calls: the task engine (runs a tool in the background against a ``TaskStore``) and
  the tasks/* methods of either era.
- ``skills/``: agent skills served with the skills extension (SEP-2640): ``Server.add_skills`` loads a skills root,
  its ``SkillCatalog`` answers ``skills/list``, ``skills/get``, ``resources/directory/read`` and the files' reads.
- ``dispatch/``: how one request is handled in either era: the legacy ``ServerConnection`` (one ``Session`` per
  stream), the modern one-call ``serve_modern``, the shared pipeline (middleware -> handler table -> answer), input
  rounds, subscriptions.
- ``hosting/``: how a server process runs (logging, Host checks, ``run_http`` / ``run_stdio``) and its endpoint
  mounted in another ASGI app (``MCPApp``, ``mount_mcp``).
- ``server``: ``Server``, a registry that serves: its connections over stdio or streamable HTTP, the modern HTTP
  requests as one call (``serve_modern``), change notifications.
- ``runner``: ``python -m mcpgen_runtime.server.runner TARGET``, ``serve_command_line`` (a project's whole ``main()``,
  the scaffold's: the same flags), and ``create_app`` for an ASGI server's workers.

May import: ``jsonrpc`` (the session), ``transports`` (stdio and ``transports.http.server.session``, which needs
neither starlette nor uvicorn, eagerly; the rest of the HTTP server only inside ``Server.serve_http`` and
``hosting.asgi``, so that stdio servers do not import starlette and uvicorn), ``protocol`` (result validation),
``versions``, ``scaleout`` (only inside ``Server.serve_http`` and ``hosting.options``, and only with a Redis URL:
many workers sharing sessions, events and notifications through Redis), the standard library, anyio, pydantic and
``mcp_bindings``; never ``client`` (the two sides share only what is below them).
This package re-exports the names a server author needs.
"""

from typing import TYPE_CHECKING, Any

from ..versions import LATEST_LEGACY_VERSION, LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS
from .authoring import context
from .authoring.apps import Csp, Permissions, add_ui_resource, app_tool, client_supports_apps
from .authoring.caching import DEFAULT_CACHE_HINTS, CacheHint, CacheScope
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
from .authoring.registry import Registry
from .dispatch.connection import ServerConnection
from .dispatch.input_rounds import InputRequired
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
    "LATEST_LEGACY_VERSION",
    "LEGACY_VERSIONS",
    "LOG_LEVELS",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
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
    "Csp",
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
    "Permissions",
    "ProtocolError",
    "Registry",
    "RequestStateCodec",
    "ResourceNotFoundError",
    "Server",
    "ServerConnection",
    "ToolError",
    "add_ui_resource",
    "app_tool",
    "client_supports_apps",
]
