"""A modern request's ``_meta``, validated once per distinct value rather than once per request.

Where it sits: in the ``server`` layer, under ``modern`` (its ``ModernServing`` holds one ``ValidatedMetas`` for the
run) and beside ``validation`` (``typed_params``). Every request of the modern era carries its ``_meta`` (protocol
version, client capabilities, client info, log level), and a client sends the same one request after request:
validating it into the version's ``RequestMetaObject`` was a third of what validating a small ``tools/call``'s params
cost, and the whole of what made that cost more than a legacy request's. So a ``_meta`` equal to one validated
before is handed to the params' validator as that model instance, which pydantic takes as it is; anything else (a
new ``_meta``, one with a ``progressToken``, which differs per request, or an invalid one) is validated as before,
so an invalid ``_meta`` is still -32602 with the same field paths.

"Equal" is stricter than ``==``: ``1 == 1.0 == True`` in Python, but not to a strict model (``listChanged: 1`` is
not a boolean), so the cached value also records the type of each number and boolean in it, and a value with a
number or boolean inside a list is not cached at all. The instances are shared by the requests that sent the same
``_meta``: read only, like the rest of what is cached per version (``VersionServing``).
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from ...jsonrpc.envelopes import JSONParams
from .validation import typed_params

__all__ = ["MAX_CACHED_METAS", "ValidatedMetas", "meta_model", "typed_modern_params"]

MAX_CACHED_METAS: Final = 8
"""Distinct ``_meta`` values kept (the oldest goes first): one client sends one; a server behind HTTP that many
clients share looks through at most this many (a dict comparison each) before it validates a new one."""

_Path = tuple[str, ...]


class _Entry:
    __slots__ = ("model", "raw", "scalars", "valid")

    def __init__(self, model: type[BaseModel], raw: dict[str, Any], scalars: list[tuple[_Path, type]], valid: Any):
        self.model, self.raw, self.scalars, self.valid = model, raw, scalars, valid

    def matches(self, model: type[BaseModel], meta: dict[str, Any]) -> bool:
        if self.model is not model or self.raw != meta:
            return False
        for path, kind in self.scalars:  # == said equal: only numbers and booleans can differ in type
            value: Any = meta
            for key in path:
                value = value[key]
            if type(value) is not kind:
                return False
        return True


def _scalars(value: Any, path: _Path, found: list[tuple[_Path, type]]) -> bool:
    """Record the path and type of each number and boolean in ``value`` (JSON) in ``found``; False when it cannot
    be cached: a number or boolean inside a list (a position is not a key: not tracked), or a type not JSON's."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _scalars(item, (*path, key), found) for key, item in value.items())
    if kind is list:
        inside: list[tuple[_Path, type]] = []
        return all(_scalars(item, path, inside) for item in value) and not inside
    if kind is str or value is None:
        return True
    if kind is int or kind is float or kind is bool:
        found.append((path, kind))
        return True
    return False


class ValidatedMetas:
    """The ``_meta`` values validated so far (at most ``MAX_CACHED_METAS``), each with its model instance."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[_Entry] = []

    def get(self, model: type[BaseModel], meta: dict[str, Any]) -> Any:
        """The instance of ``model`` validated from a ``_meta`` equal to ``meta`` (types included), else None."""
        for entry in self._entries:  # (matches' first test inline: this runs for every modern request)
            if entry.model is model and entry.raw == meta and (not entry.scalars or entry.matches(model, meta)):
                return entry.valid
        return None

    def validated(self, model: type[BaseModel], meta: dict[str, Any]) -> Any:
        """``meta`` as an instance of ``model``: the cached one, or validated now (and cached when it can be);
        ``ValidationError`` when it is not valid (never cached)."""
        valid = self.get(model, meta)
        if valid is not None:
            return valid
        valid = model.__pydantic_validator__.validate_python(meta)
        scalars: list[tuple[_Path, type]] = []
        if _scalars(meta, (), scalars):
            entries = self._entries
            if len(entries) >= MAX_CACHED_METAS:
                del entries[0]
            # A copy: the request's own dict is the handler's (Context.meta), which may change it afterwards.
            entries.append(_Entry(model, copy.deepcopy(meta), scalars, valid))
        return valid

    def __len__(self) -> int:
        return len(self._entries)


@functools.cache  # bounded by the generated params models
def meta_model(params_type: Any) -> type[BaseModel] | None:
    """The model of ``params_type``'s ``_meta`` field when it is a pydantic model (every modern params model: the
    version's ``RequestMetaObject``), else None."""
    if not (isinstance(params_type, type) and issubclass(params_type, BaseModel)):
        return None
    field = params_type.model_fields.get("meta")
    if field is None or field.alias != "_meta":
        return None
    model = field.annotation
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def typed_modern_params(route: Any, params: JSONParams, metas: ValidatedMetas) -> Any:
    """``validation.typed_params`` of a modern request, its ``_meta`` taken from ``metas`` when validated before."""
    if type(params) is dict:
        meta = params.get("_meta")
        if type(meta) is dict and "progressToken" not in meta:
            model = meta_model(route.params_type)
            if model is not None:
                try:
                    valid = metas.validated(model, meta)
                    # A model instance is taken as it is (strict models do not revalidate instances).
                    return route.params_type.__pydantic_validator__.validate_python({**params, "_meta": valid})
                except ValidationError:
                    pass  # validated again below, as any request's params, for the error and its field paths
    return typed_params(route, params)
