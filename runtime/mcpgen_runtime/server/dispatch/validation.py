"""Params in, results out: a request's params validated into its version's models, and what a handler returns
validated against the version's result model and dumped as the JSON that is sent.

Where it sits: in the ``server`` layer, under both eras' dispatch (``connection`` and ``modern``) and over
``protocol.results`` (``as_result``, ``ValidResult``). A bad request is the client's error (-32602, with the field
paths); a bad result is this server's (-32603, logged with the field paths, which the client also gets).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ...jsonrpc.envelopes import ErrorCode, InvalidParams, JSONParams, JSONRPCError
from ...protocol.results import ResultValidationError, ValidResult, as_result, field_errors
from ..authoring.definitions import validation_details

__all__ = ["source_of", "typed_params", "validated_result"]

logger = logging.getLogger(__name__)


@functools.cache
def _adapter(params_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(params_type)


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
