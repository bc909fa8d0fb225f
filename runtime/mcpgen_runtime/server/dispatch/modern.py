"""The modern era (MCP 2026-07-28 and later): each request served on its own, with what its ``_meta`` declares.

Where it sits: in the ``server`` layer, under ``connection``: ``ServerConnection`` recognizes a modern request (its
``_meta`` names a modern ``io.modelcontextprotocol/protocolVersion``, or it is ``server/discover`` /
``subscriptions/listen``, which only the modern era has) and serves it through a ``ModernRequest``, a
``context.ConnectionView`` and ``handlers.HandledConnection`` that lives as long as the request. Nothing of it is
kept on the connection: the client's capabilities, identity and log level are this request's, the version is the
one it names, and no ``initialize`` is needed (over HTTP the transport hands each modern POST to a connection of its
own, which answers it and ends).

What the era changes, and where:
- dispatch through the version's generated ``SERVER_ROUTES`` (no ``initialize``, ``ping``, ``logging/setLevel``,
  ``resources/(un)subscribe``: -32601); params validated into its models, ``_meta`` included (a missing one, or one
  without ``protocolVersion`` / ``clientCapabilities``, is -32602);
- every result gets ``resultType`` ("complete") and ``_meta`` ``io.modelcontextprotocol/serverInfo``;
- ``Context.elicit`` / ``sample`` / ``list_roots`` become input requests of an ``InputRequiredResult`` (``mrtr``),
  on the methods whose route allows one (``tools/call``, ``prompts/get``, ``resources/read``); elsewhere they raise
  ``CapabilityError``, as the spec forbids ``InputRequiredResult`` on other requests;
- a capability the request's ``_meta`` did not declare is -32021 (``errors.MissingClientCapabilityError``);
- ``notifications/message`` only at or above the request's ``io.modelcontextprotocol/logLevel``, none without it;
- resource not found is -32602 (``errors.resource_not_found_code``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from types import ModuleType
from typing import Any, Final, Protocol

from pydantic import BaseModel, ValidationError

from ...jsonrpc.envelopes import ErrorCode, JSONParams, JSONRPCError, MethodNotFound
from ...jsonrpc.session import Session
from ...protocol.results import field_errors
from ...protocol.versions import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LOG_LEVEL_META,
    SERVER_INFO_META,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..authoring.context import LOG_LEVELS, CapabilityError, Context
from .bindings import bindings_for, handlers_class, served_methods, source_of, stub_for, typed_params, validated_result
from ..authoring.errors import InvalidParamsError
from .handlers import SUPPORTED_VERSIONS, fit
from .input_rounds import InputExchange, InputRequired
from ..authoring.registry import Registry
from .request_state import RequestStateCodec
from .subscriptions import Listeners

__all__ = ["MODERN_ONLY_METHODS", "SUPPORTED_VERSIONS", "ModernRequest", "unsupported_version"]

logger = logging.getLogger(__name__)

MODERN_ONLY_METHODS: Final = frozenset({"server/discover", "subscriptions/listen"})


def unsupported_version(requested: str) -> JSONRPCError:
    """-32022 UnsupportedProtocolVersion, with the versions this server supports and the one requested."""
    return JSONRPCError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_VERSIONS), "requested": requested},
    )


def _owner(context: Context[Any]) -> str | None:
    """Who made the request: its access token's ``owner``, None when the server is not protected."""
    identity = context.auth
    return identity.owner if identity is not None else None


class ServingConnection(Protocol):
    """What a ``ModernRequest`` uses of the ``connection.ServerConnection`` it came in on."""

    @property
    def server(self) -> Registry: ...

    @property
    def lifespan_state(self) -> Any: ...

    @property
    def request_states(self) -> RequestStateCodec: ...

    @property
    def session(self) -> Session: ...

    @property
    def listeners(self) -> Listeners: ...


class ModernRequest:
    """One modern request: what it declared, and the connection view its handlers and ``Context`` use."""

    def __init__(self, connection: ServingConnection, version: str, meta: Mapping[str, Any] | None) -> None:
        self.connection = connection
        self.server = connection.server
        self.protocol_version = version
        self.bindings: ModuleType = bindings_for(version)
        self.capabilities: dict[str, Any] = fit(self.bindings.ServerCapabilities, self.server.capabilities())
        meta = meta or {}
        capabilities, info = meta.get(CLIENT_CAPABILITIES_META), meta.get(CLIENT_INFO_META)
        # Validated with the params later; until then (middleware) only what has the right shape is believed.
        self.client_capabilities: dict[str, Any] = dict(capabilities) if isinstance(capabilities, Mapping) else {}
        self.client_info: dict[str, Any] = dict(info) if isinstance(info, Mapping) else {}
        level = meta.get(LOG_LEVEL_META)
        self.log_level: str | None = level if level in LOG_LEVELS else None
        self.subscriptions: set[str] = set()  # resources/subscribe is not a method of this era
        self.lifespan_state = connection.lifespan_state
        self.exchange: InputExchange | None = None

    # -- dispatch -------------------------------------------------------------------------------------------------

    def route(self, method: str) -> Any:
        """The route of ``method`` if this request's version serves it, else -32601."""
        stub = stub_for(self.protocol_version)
        route = stub.SERVER_ROUTES.get(method)
        handlers = handlers_class(self.protocol_version)(self)
        if route is None or method not in served_methods(
            stub, handlers, self.capabilities, bool(self.server.completions)
        ):
            raise MethodNotFound(method)
        return route

    async def dispatch(self, method: str, params: JSONParams, context: Context[Any]) -> dict[str, Any]:
        route = self.route(method)
        typed = typed_params(route, params)
        if route.input_required_result is not None and isinstance(params, dict):
            # The spec: bind the state to the authenticated principal (see mrtr.py); read only if a state is used.
            self.exchange = InputExchange(self.connection.request_states, method, params, partial(_owner, context))
        handler = getattr(handlers_class(self.protocol_version)(self), route.handler)
        try:
            returned = await handler(typed, context)
        except InputRequired:
            if self.exchange is None or not self.exchange.requested:
                raise
            try:
                interim = self.exchange.input_required_result()
            except ValueError as exc:
                logger.error("%s: %s", method, exc)
                raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "Internal error: the request state is too large") from None
            return self.finish(route.input_required_result, interim, "the InputRequiredResult", "input_required")
        return self.finish(route.result_type, returned, source_of(route, typed))

    def finish(self, model: Any, returned: Any, source: str, result_type: str = "complete") -> dict[str, Any]:
        """``returned`` with ``resultType`` and ``_meta`` serverInfo, validated as ``model``."""
        if isinstance(returned, BaseModel):
            data: dict[str, Any] = returned.model_dump(mode="json", by_alias=True, exclude_unset=True)
        elif isinstance(returned, Mapping):
            data = dict(returned)
        else:
            return validated_result(model, returned, source, self.protocol_version)  # names the wrong type
        data.setdefault("resultType", result_type)
        meta = data.get("_meta")
        data["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), SERVER_INFO_META: self.server_info()}
        return validated_result(model, data, source, self.protocol_version)

    def server_info(self) -> dict[str, Any]:
        server = self.server
        info = {"name": server.name, "version": server.version, **({"title": server.title} if server.title else {})}
        return fit(self.bindings.Implementation, info)

    # -- the connection view (context.ConnectionView, handlers.HandledConnection) ---------------------------------

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """``notifications/message`` only if this request asked for logs, at or above its level."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        if self.log_level is None or "logging" not in self.capabilities:
            return
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await self.connection.session.notify("notifications/message", params)

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """The answer recorded for this question (``mrtr``), or ``InputRequired`` to ask it. ``timeout`` does not
        apply: the client answers in its own time, by retrying."""
        if self.exchange is None:
            raise CapabilityError(
                f"{method} cannot be asked while serving this request: in MCP {self.protocol_version} only tools/call,"
                " prompts/get and resources/read may ask the client for input"
            )
        key = self.exchange.next_key(method, input_key)
        raw = self.exchange.answer(key)
        if raw is None:
            raise self.exchange.ask(key, method, params)
        try:
            return self.bindings.parse_result(method, raw)
        except ValidationError as exc:
            model = self.bindings.RESULT_TYPES[method].__name__
            raise InvalidParamsError(
                f"Invalid params: inputResponses[{key!r}] is not a valid {model}", {"errors": field_errors(exc)}
            ) from None

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        """``Context.read_resource`` in this era: ``resources/read`` answered by this server, without input rounds."""
        route = stub_for(self.protocol_version).SERVER_ROUTES["resources/read"]
        meta = context.meta or {}
        typed = typed_params(route, {"uri": uri, "_meta": meta})
        inner = ModernRequest(self.connection, self.protocol_version, meta)
        raw = await getattr(handlers_class(self.protocol_version)(inner), route.handler)(typed, context)
        return self.bindings.parse_result(
            "resources/read", self.finish(route.result_type, raw, f"the resource {uri!r}")
        )

    async def listen(self, requested: Mapping[str, Any], context: Context[Any]) -> Any:
        return await self.connection.listeners.listen(requested, self.capabilities, context.request_id)
