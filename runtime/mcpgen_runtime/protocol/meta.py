"""A definition's ``_meta`` (a tool's, a resource's ...: MCP's field for extension data, e.g. MCP Apps' ``ui``), checked
before it is published.

Where it sits: in the ``protocol`` layer, used by ``server.authoring`` (``Registry.tool(meta=...)`` /
``Registry.resource(meta=...)``); knows nothing but JSON, so that the client side may check what it sends the same
way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["checked_meta", "json_copy"]


def checked_meta(what: str, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``meta`` (a definition's ``_meta``, e.g. an extension's settings such as MCP Apps' ``ui``) checked and copied
    (``json_copy``), so that a mistake fails at registration, with ``TypeError`` naming ``what`` and where, rather
    than as a listing that cannot be serialised (or, for an int key that JSON would turn into a string, as a key the
    client never finds); the copy keeps a later change to the caller's dict off the wire. None and ``{}`` publish no
    ``_meta``."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise TypeError(f"{what}: meta is a mapping of str keys to JSON values (published as _meta), got {meta!r}")
    copied: dict[str, Any] = json_copy(meta, f"{what}: _meta")
    return copied or None


def json_copy(value: object, where: str) -> Any:
    """A copy of ``value`` made of JSON only (dicts with string keys, lists, strings, finite numbers, booleans,
    None; a tuple becomes a list), or ``TypeError`` saying where (``where``, then ``.key`` / ``[index]``) the first
    value that has no JSON form is. Recursive: for values a program built, not for a peer's input of any depth."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{where} is {value}, which JSON cannot carry")
        return value
    if isinstance(value, list | tuple):
        return [json_copy(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, Mapping):
        copied = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r}, not a string")
            copied[key] = json_copy(item, f"{where}.{key}")
        return copied
    raise TypeError(f"{where} is a {type(value).__name__}, which has no JSON form")
