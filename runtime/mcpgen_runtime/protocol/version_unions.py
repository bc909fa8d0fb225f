"""Unions of one generated class over several MCP versions (``Root`` of 2024-11-05 | ... | 2026-07-28), the type
aliases the server and the client offer for "whatever the negotiated version answers" (``AnyRoot``, ``AnyTool``...).

Where it sits: in the ``protocol`` layer (shared by ``server`` and ``client``), on the generated ``mcp_bindings``.

Why lazily: building such a union imports every version's models (about 35 ms each), and a server or client speaks
one version per connection. So a module declares its unions for type checkers under ``TYPE_CHECKING`` and, at run
time, makes a ``VersionUnions`` its module ``__getattr__`` (PEP 562): a union is built when first read, and then is
a plain module attribute. Inside that module, name it in strings (``cast("AnyRoot", x)``): a bare global name does
not go through ``__getattr__``.
"""

from __future__ import annotations

import functools
import importlib
import operator
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_bindings import MODULES

from ..versions import SUPPORTED_VERSIONS

__all__ = ["EVERY_VERSION", "VersionUnions"]

EVERY_VERSION: tuple[str, ...] = SUPPORTED_VERSIONS
"""The versions the runtime speaks, both eras: what most unions span."""


class VersionUnions:
    """A module's ``__getattr__`` that builds its unions on first use. ``unions``: alias name -> (the class name, the
    versions that have it, and the generated sub-module that defines it: ``models``, or the stubs ``client`` and
    ``server``)."""

    def __init__(self, module: str, unions: Mapping[str, tuple[str, Sequence[str], str]]) -> None:
        self._module = module
        self._unions = dict(unions)

    def __call__(self, name: str) -> Any:
        entry = self._unions.get(name)
        if entry is None:
            raise AttributeError(f"module {self._module!r} has no attribute {name!r}")
        class_name, versions, submodule = entry
        members = (getattr(importlib.import_module(f"{MODULES[v]}.{submodule}"), class_name) for v in versions)
        union = functools.reduce(operator.or_, members)
        setattr(sys.modules[self._module], name, union)  # from now on a plain attribute: no second build
        return union
