"""A version's generated code, as dispatch uses it: its bindings package, its server stub, the handler class
derived from that stub, and which of that stub's methods a server serves.

Where it sits: in the ``server`` layer, above ``handlers`` (whose ``Handlers`` every derived class extends) and
below the two eras' dispatch, ``connection`` (legacy: the negotiated version's) and ``modern`` (each request's
version), which both dispatch through a version's ``SERVER_ROUTES``. Everything is cached per version, so a server
builds a version's models only once a client uses that version.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final

from mcp_bindings import MODULES

from ...jsonrpc.envelopes import ErrorCode, JSONRPCError, MethodNotFound
from ...versions import LEGACY_VERSIONS
from .handlers import Handlers

__all__ = [
    "LEGACY_METHODS",
    "bindings_for",
    "declared",
    "handlers_class",
    "not_initialized",
    "served_methods",
    "stub_for",
]


@functools.cache
def bindings_for(version: str) -> ModuleType:
    """The generated package of ``version`` (``mcp_bindings.v2025_06_18`` ...): its models and parsers."""
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


LEGACY_METHODS: Final = frozenset(
    str(method) for version in LEGACY_VERSIONS for method in bindings_for(version).CLIENT_REQUESTS
)
"""Every request method of a legacy version: "not initialized yet" for these, "method not found" for the rest. Read
from each version's method constants (the requests a client sends, which are the server stub's routes), so that
starting a server does not build every version's models; the version a client negotiates loads its own."""


def not_initialized(method: str) -> JSONRPCError:
    """What a legacy request gets on a connection not initialized: -32600 for a method of a legacy version, else
    -32601."""
    if method in LEGACY_METHODS:
        return JSONRPCError(ErrorCode.INVALID_REQUEST, "Invalid Request: the server is not initialized")
    return MethodNotFound(method)
