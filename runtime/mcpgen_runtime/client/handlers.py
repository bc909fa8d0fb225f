"""How the client answers what the server asks of it: the requests of the legacy era (sampling, elicitation,
roots sent as JSON-RPC requests), the input requests of an MRTR round in 2026-07-28 (the same methods, inside an
``InputRequiredResult``), and the server's notifications, all through one user subclass of a generated
``ClientHandlers``.

Where it sits: in the ``client`` layer, a part of ``Client`` (which builds the ``ClientContext`` handlers receive);
``connection`` asks it what to advertise, ``requests`` has it answer the input requests of a round, and the
session's request and notification handlers reach it through ``Client``. A handler returns the result model or a plain dict; either is validated against
the negotiated version's result model (``protocol.results.as_result``), so a handler written against the 2025-11-25
bindings answers a 2026-07-28 server too, as long as what it returns is valid there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from mcp_bindings import base as _base

from ..jsonrpc.context import RequestContext
from ..jsonrpc.envelopes import ErrorCode, InvalidParams, JSONParams, JSONRPCError, MethodNotFound
from ..protocol.results import ResultValidationError, as_result
from .capabilities import merge_capabilities, set_path
from .versions import MODERN, VERSIONS, VersionSpec, version_of_module

if TYPE_CHECKING:
    from .versions import AnyClientHandlers

__all__ = ["HandlerDispatch", "validate_params"]

logger = logging.getLogger(__name__)

# (method, the session's context of a server -> client request or None) -> the handlers' `context` argument.
MakeContext = Callable[[str, RequestContext | None], Any]
# The result model of each input request of an MRTR round, by name in the negotiated (modern) package.
_INPUT_RESULTS = {
    "elicitation/create": "ElicitResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
}


_ADAPTERS: dict[int, TypeAdapter[Any]] = {}


def validate_params(route: _base.Route, params: JSONParams) -> Any:
    """Params of an incoming message as the route's typed model (None only when the method allows none)."""
    if params is None and not route.params_required:
        return None
    if not isinstance(params, dict):
        raise InvalidParams(f"Invalid params for {route.method}: expected an object")
    adapter = _ADAPTERS.get(id(route.params_type))
    if adapter is None:
        adapter = _ADAPTERS[id(route.params_type)] = TypeAdapter(route.params_type)
    try:
        return adapter.validate_python(params)
    except ValidationError as exc:
        raise InvalidParams(f"Invalid params for {route.method}", json.loads(exc.json(include_url=False))) from exc


def _version_of_handlers(handlers: object) -> VersionSpec:
    # By the module of the generated ClientHandlers it subclasses: only that version is loaded, not every one.
    for base in type(handlers).__mro__:
        version = version_of_module(base.__module__) if base.__name__ == "ClientHandlers" else None
        if version is not None:
            spec = VERSIONS[version] if version in VERSIONS else MODERN[version]
            if isinstance(handlers, spec.handlers_base):
                return spec
    raise TypeError(
        f"handlers must subclass the ClientHandlers of one of MCP {', '.join((*VERSIONS, *MODERN))}, "
        f"not {type(handlers).__name__}"
    )


class HandlerDispatch:
    """The user's ``ClientHandlers`` (or none), the methods they implement, and the dispatch to them."""

    def __init__(self, handlers: AnyClientHandlers | None, make_context: MakeContext) -> None:
        self.handlers = handlers
        self.version = _version_of_handlers(handlers) if handlers is not None else None
        self.implemented: frozenset[str] = (
            _base.overridden(handlers, self.version.handlers_base, self.version.client_routes)
            if handlers is not None and self.version is not None
            else frozenset()
        )
        self._make_context = make_context

    def capabilities(self, routes: Mapping[str, _base.Route], extra: Mapping[str, Any]) -> dict[str, Any]:
        """Advertise only what a handler really answers, and only capabilities ``routes`` (the offered version's)
        define."""
        capabilities: dict[str, Any] = {}
        for method in sorted(self.implemented):
            route = routes.get(method)
            if route is not None and route.capability is not None:
                set_path(capabilities, route.capability)
        if "roots" in capabilities:
            # We can send notifications/roots/list_changed (client.api.notify_roots_list_changed).
            capabilities["roots"].setdefault("listChanged", True)
        return merge_capabilities(capabilities, extra)

    def own_routes(self) -> Mapping[str, _base.Route]:
        return self.version.client_routes if self.version is not None else {}

    async def answer_request(
        self, method: str, params: JSONParams, context: RequestContext, negotiated: VersionSpec | None
    ) -> dict[str, Any]:
        """A server -> client request of the legacy era, answered by the handler of ``method``."""
        route = self.version.client_routes.get(method) if self.version is not None else None
        if (
            route is None
            or method not in self.implemented
            # A method the negotiated version does not define (elicitation on 2025-03-26) is not served either.
            or (negotiated is not None and method not in negotiated.client_routes)
        ):
            raise MethodNotFound(method)
        result_type = negotiated.client_routes[method].result_type if negotiated is not None else route.result_type
        return await self._run(route, params, context, result_type)

    async def answer_input(self, method: str, params: Mapping[str, Any], package: Any) -> dict[str, Any]:
        """One input request of an MRTR round, answered by the same handler as in the legacy era; raises
        ``LookupError`` when no handler answers ``method``."""
        route = self.version.client_routes.get(method) if self.version is not None else None
        if route is None or method not in self.implemented or method not in _INPUT_RESULTS:
            raise LookupError(f"the server asked for {method!r}, which no handler of this client answers")
        return await self._run(route, dict(params), None, getattr(package, _INPUT_RESULTS[method]))

    async def _run(
        self, route: _base.Route, params: JSONParams, context: RequestContext | None, result_type: Any
    ) -> dict[str, Any]:
        handler: Callable[..., Any] = getattr(self.handlers, route.handler)
        returned = await handler(validate_params(route, params), self._make_context(route.method, context))
        # The answer must be valid in the negotiated version, whichever version's handlers (or a dict) produced it.
        try:
            result = as_result(result_type, returned, source=f"the result of {route.handler!r}")
        except ResultValidationError as exc:
            logger.error("%s", exc)
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR, f"Internal error: {exc.summary}", {"errors": exc.details}
            ) from None
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped

    async def notify(self, method: str, params: JSONParams) -> None:
        """A server notification, to the handler's hook for it (if any)."""
        route = self.version.client_notification_routes.get(method) if self.version is not None else None
        if route is None:
            logger.debug("notification %r not handled", method)
            return
        try:
            typed = validate_params(route, params)
        except InvalidParams as exc:
            logger.warning("dropping %s with invalid params: %s", method, exc.data)
            return
        handler: Callable[..., Any] = getattr(self.handlers, route.handler)
        await handler(typed, self._make_context(method, None))
