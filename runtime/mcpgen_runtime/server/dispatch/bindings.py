"""What both eras' dispatch shares: the generated modules of a version, the handler class derived from its stub,
params validation into its models and result validation against them.

Where it sits: in the ``server`` layer, above ``handlers`` and below ``connection`` (the handshake era) and
``modern`` (the per-request era), which both dispatch through a version's ``SERVER_ROUTES``.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_bindings import MODULES

from ...jsonrpc.envelopes import ErrorCode, InvalidParams, JSONParams, JSONRPCError
from ...protocol.results import ResultValidationError, ValidResult, as_result, field_errors
from ..authoring.definitions import validation_details
from .handlers import Handlers

__all__ = [
    "bindings_for",
    "declared",
    "handlers_class",
    "served_methods",
    "source_of",
    "stub_for",
    "typed_params",
    "validated_result",
]

logger = logging.getLogger(__name__)


@functools.cache
def bindings_for(version: str) -> ModuleType:
    return importlib.import_module(MODULES[version])


@functools.cache
def stub_for(version: str) -> ModuleType:
    """The generated server stub of ``version``: ``ServerHandlers``, ``SERVER_ROUTES``, ``implemented``."""
    return importlib.import_module(MODULES[version] + ".server")


@functools.cache
def handlers_class(version: str) -> type[Handlers]:
    # The generated stub is the base (its routes name our methods; `implemented()` checks the overrides).
    stub = stub_for(version).ServerHandlers
    return type(f"Handlers_{version.replace('-', '_')}", (Handlers, stub), {})


@functools.cache
def _adapter(params_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(params_type)


def declared(capabilities: Mapping[str, Any], path: str | None) -> bool:
    """Whether a dotted capability path (a route's ``capability``) is declared in ``capabilities``."""
    node: Any = capabilities
    for part in (path or "").split(".") if path else ():
        # Present and not null/false: an empty object ({} for logging, completions) declares the capability.
        if not isinstance(node, Mapping) or node.get(part) in (None, False):
            return False
        node = node[part]
    return True


def served_methods(
    stub: ModuleType, handlers: Handlers, capabilities: Mapping[str, Any], completions: bool
) -> frozenset[str]:
    """The methods answered: implemented, with their capability declared; completion/complete (no capability in
    2024-11-05) only if a completion is registered."""
    implemented = _IMPLEMENTED.get(type(handlers))
    if implemented is None:  # what a handlers class overrides is fixed: asked once per class, not per request
        implemented = _IMPLEMENTED[type(handlers)] = stub.implemented(handlers)
    return frozenset(
        method
        for method in implemented
        if declared(capabilities, stub.SERVER_ROUTES[method].capability)
        and (method != "completion/complete" or completions)
    )


_IMPLEMENTED: dict[type, frozenset[str]] = {}
"""handlers class -> the request methods it implements; bounded by the classes ``handlers_class`` makes (one per
version)."""


def source_of(route: Any, params: Any) -> str:
    """Whose result it is, for error messages: the handler, and the tool, prompt or resource it served."""
    target = getattr(params, "name", None) or getattr(params, "uri", None)
    return f"the result of {route.handler!r}" + (f" for {target!r}" if isinstance(target, str) else "")


def typed_params(route: Any, params: JSONParams) -> Any:
    """``params`` validated into the route's params model (None when absent and optional); -32602 otherwise."""
    if params is None and route.params_required:
        raise InvalidParams(f"Invalid params: {route.method} requires params")
    if params is not None and not isinstance(params, dict):
        raise InvalidParams("Invalid params: params must be an object")
    try:
        if params is None:
            return None
        params_type = route.params_type
        if isinstance(params_type, type) and issubclass(params_type, BaseModel):
            # A model (nearly every route): its own validator, as model_validate, without the TypeAdapter's frames.
            return params_type.__pydantic_validator__.validate_python(params)
        return _adapter(params_type).validate_python(params)
    except ValidationError as exc:
        raise InvalidParams(f"Invalid params for {route.method}", validation_details(exc)) from None


def validated_result(model: Any, returned: Any, source: str | Callable[[], str], version: str) -> dict[str, Any]:
    """``returned`` validated as ``model`` (a result model of ``version``), dumped as JSON. An invalid result is our
    side's bug, not the client's: -32603, with the field paths for whoever debugs it. ``source`` (whose result it
    is, for that error) may be a function giving it: it is needed only when the result is wrong."""
    if type(returned) is ValidResult:
        return returned  # the runtime's own, valid as it is (see protocol.results.ValidResult)
    try:
        if type(returned) is dict:
            # What the handlers build, nearly every time: straight to the model's validator (as_result would copy it).
            try:
                result = model.__pydantic_validator__.validate_python(returned)
            except ValidationError as exc:
                raise ResultValidationError(_named(source), model, field_errors(exc)) from None
        else:
            result = as_result(model, returned, source=_named(source))
    except ResultValidationError as exc:
        logger.error("%s (MCP %s)", exc, version or "initialize")
        raise JSONRPCError(
            ErrorCode.INTERNAL_ERROR, f"Internal error: {exc.summary}", {"errors": exc.details}
        ) from None
    dumped: dict[str, Any] = result.model_dump(mode="json")
    return dumped


def _named(source: str | Callable[[], str]) -> str:
    return source if isinstance(source, str) else source()
