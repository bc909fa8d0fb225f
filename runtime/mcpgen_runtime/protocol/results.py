"""Results handed over by user code (or a peer) as the negotiated version's result model, with errors that say where.

Where it sits: in the ``protocol`` layer, used by ``server`` (what a handler or a tool returns, and what the client
answers to ``Context.sample`` / ``Context.elicit``) and ``client`` (what a ``ClientHandlers`` method returns). The
rule on both sides: where a result model is expected, a handler may return that model, a model of another MCP
version or any pydantic model (dumped by wire name, unset fields left out), or a plain dict; each is validated with
the negotiated version's model. So a user whose bindings are wrong about some field is never stuck: a dict goes
through the same validation as the model would, and the error names the field, not just "Internal error".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["ResultValidationError", "ValidResult", "as_result", "field_errors"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class ValidResult(dict[str, Any]):
    """A result the runtime built itself in a shape that is valid, as it is, for the result model of every handshake
    era version (e.g. a tool's text answered as one text block): answered without validating it into the model and
    dumping it again, which cost more than the rest of a small ``tools/call``. (The modern era adds ``resultType`` and
    ``_meta`` serverInfo to it in place, unvalidated too: both are valid by construction, serverInfo checked once per
    version when it is cached.) Only for JSON the runtime fully controls, built for one answer (never shared or
    kept: it is finished in place); anything a user's code returned goes through ``as_result``."""

    __slots__ = ()


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """A ValidationError as JSON data: where and what, never the offending input (it may be large or private)."""
    return [
        {"loc": [str(part) for part in error["loc"]], "msg": error["msg"], "type": error["type"]}
        for error in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def _version_of(model: type[BaseModel]) -> str:
    # Generated models live in mcp_bindings.v2025_06_18.models: the version is the package name.
    package = model.__module__.split(".")
    if len(package) > 1 and package[0] == "mcp_bindings" and package[1].startswith("v"):
        return "MCP " + package[1][1:].replace("_", "-")
    return model.__module__


class ResultValidationError(ValueError):
    """A result that does not validate as the model it must be: ``source`` says whose it is (a handler, a tool,
    the peer's answer to a method), ``details`` the failing field paths (``loc``, ``msg``, ``type``)."""

    def __init__(self, source: str, model: type[BaseModel], details: list[dict[str, Any]]) -> None:
        self.source = source
        self.model_name = model.__name__
        self.version = _version_of(model)
        self.details = details
        self.summary = f"{source} is not a valid {self.model_name} for {self.version}"
        paths = "; ".join(f"{'.'.join(d['loc']) or '(result)'}: {d['msg']}" for d in details)
        super().__init__(f"{self.summary}: {paths}")


def as_result(model: type[ModelT], value: object, *, source: str) -> ModelT:
    """``value`` as an instance of ``model``: returned as is when it already is one, else validated (a pydantic
    model through its wire-name dump, a mapping directly). Raises ``ResultValidationError`` naming ``source`` and
    the failing fields, or ``TypeError`` for a value that is neither a model nor a mapping."""
    if isinstance(value, model):
        return value
    if isinstance(value, BaseModel):
        # Another version's model (or the official SDK's): its wire form is what counts, and unset optional
        # fields must stay absent (our strict models reject an explicit null where the schema has none).
        data: Any = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    elif isinstance(value, Mapping):
        data = dict(value)
    else:
        raise TypeError(f"{source} is a {type(value).__name__}, not a {model.__name__} or a dict")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ResultValidationError(source, model, field_errors(exc)) from None
