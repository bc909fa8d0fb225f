"""The MCP versions the client speaks: for each, its generated package, stubs and routes (``VersionSpec``), loaded
when first used; and type aliases over the versions (``AnyClientStub``, ``AnyTool`` ...).

Where it sits: in the ``client`` layer, below every other client module; reads the version lists of
``mcpgen_runtime.versions``. ``VERSIONS`` holds the legacy versions (2024-11-05 .. 2025-11-25), the ones ``initialize``
negotiates; ``MODERN`` the modern ones (2026-07-28), adopted after ``server/discover`` or pinned (``modern``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from mcp_bindings import MODULES
from mcp_bindings import base as _base

from ..protocol.version_unions import EVERY_VERSION, VersionUnions
from ..versions import LEGACY_VERSIONS, MODERN_VERSIONS

if TYPE_CHECKING:
    import mcp_bindings.v2024_11_05 as _v1
    import mcp_bindings.v2025_03_26 as _v2
    import mcp_bindings.v2025_06_18 as _v3
    import mcp_bindings.v2025_11_25 as _v4
    import mcp_bindings.v2026_07_28 as _v5
    from mcp_bindings.v2024_11_05 import client as _c1
    from mcp_bindings.v2025_03_26 import client as _c2
    from mcp_bindings.v2025_06_18 import client as _c3
    from mcp_bindings.v2025_11_25 import client as _c4
    from mcp_bindings.v2026_07_28 import client as _c5

__all__ = [
    "MODELS_MODULE_VERSION",
    "MODERN",
    "VERSIONS",
    "AnyCallToolResult",
    "AnyClientHandlers",
    "AnyClientStub",
    "AnyGetPromptResult",
    "AnyImplementation",
    "AnyInitializeResult",
    "AnyPrompt",
    "AnyReadResourceResult",
    "AnyResource",
    "AnyResourceTemplate",
    "AnyTool",
    "VersionSpec",
    "VersionTable",
    "version_of_module",
]

# Unions over the versions the client speaks. At run time each is built on first use (see
# protocol.version_unions): building one loads every version, and a client speaks one per connection.
if TYPE_CHECKING:
    AnyClientStub: TypeAlias = _c1.ClientStub | _c2.ClientStub | _c3.ClientStub | _c4.ClientStub | _c5.ClientStub
    AnyClientHandlers: TypeAlias = (
        _c1.ClientHandlers[Any]
        | _c2.ClientHandlers[Any]
        | _c3.ClientHandlers[Any]
        | _c4.ClientHandlers[Any]
        | _c5.ClientHandlers[Any]
    )
    AnyInitializeResult: TypeAlias = (
        _v1.InitializeResult | _v2.InitializeResult | _v3.InitializeResult | _v4.InitializeResult
    )
    AnyImplementation: TypeAlias = (
        _v1.Implementation | _v2.Implementation | _v3.Implementation | _v4.Implementation | _v5.Implementation
    )
    # What `call_tool`, `get_prompt` and `read_resource` return: the complete result (the modern era's
    # InputRequiredResult is answered inside, and a task is never asked for).
    AnyCallToolResult: TypeAlias = (
        _v1.CallToolResult | _v2.CallToolResult | _v3.CallToolResult | _v4.CallToolResult | _v5.CallToolResult
    )
    AnyGetPromptResult: TypeAlias = (
        _v1.GetPromptResult | _v2.GetPromptResult | _v3.GetPromptResult | _v4.GetPromptResult | _v5.GetPromptResult
    )
    AnyReadResourceResult: TypeAlias = (
        _v1.ReadResourceResult
        | _v2.ReadResourceResult
        | _v3.ReadResourceResult
        | _v4.ReadResourceResult
        | _v5.ReadResourceResult
    )
    AnyTool: TypeAlias = _v1.Tool | _v2.Tool | _v3.Tool | _v4.Tool | _v5.Tool
    AnyPrompt: TypeAlias = _v1.Prompt | _v2.Prompt | _v3.Prompt | _v4.Prompt | _v5.Prompt
    AnyResource: TypeAlias = _v1.Resource | _v2.Resource | _v3.Resource | _v4.Resource | _v5.Resource
    AnyResourceTemplate: TypeAlias = (
        _v1.ResourceTemplate | _v2.ResourceTemplate | _v3.ResourceTemplate | _v4.ResourceTemplate | _v5.ResourceTemplate
    )
else:
    __getattr__ = VersionUnions(
        __name__,
        {
            "AnyClientStub": ("ClientStub", EVERY_VERSION, "client"),
            "AnyClientHandlers": ("ClientHandlers", EVERY_VERSION, "client"),
            "AnyInitializeResult": ("InitializeResult", LEGACY_VERSIONS, "models"),
            "AnyImplementation": ("Implementation", EVERY_VERSION, "models"),
            "AnyCallToolResult": ("CallToolResult", EVERY_VERSION, "models"),
            "AnyGetPromptResult": ("GetPromptResult", EVERY_VERSION, "models"),
            "AnyReadResourceResult": ("ReadResourceResult", EVERY_VERSION, "models"),
            "AnyTool": ("Tool", EVERY_VERSION, "models"),
            "AnyPrompt": ("Prompt", EVERY_VERSION, "models"),
            "AnyResource": ("Resource", EVERY_VERSION, "models"),
            "AnyResourceTemplate": ("ResourceTemplate", EVERY_VERSION, "models"),
        },
    )


@dataclass(frozen=True)
class VersionSpec:
    """Everything the client needs from one generated version package."""

    version: str
    package: ModuleType
    stub: type[AnyClientStub]
    handlers_base: type[Any]
    client_routes: Mapping[str, _base.Route]  # server -> client requests
    client_notification_routes: Mapping[str, _base.Route]
    server_routes: Mapping[str, _base.Route]  # client -> server requests: their `capability` gates our calls
    server_notification_routes: Mapping[str, _base.Route]


def _version_spec(version: str) -> VersionSpec:
    package = importlib.import_module(MODULES[version])
    client, server = package.client, package.server
    return VersionSpec(
        version,
        package,
        client.ClientStub,
        client.ClientHandlers,
        client.CLIENT_ROUTES,
        client.CLIENT_NOTIFICATION_ROUTES,
        server.SERVER_ROUTES,
        server.SERVER_NOTIFICATION_ROUTES,
    )


class VersionTable(Mapping[str, VersionSpec]):
    """version -> ``VersionSpec``, each built (its package's models and stubs imported) when first looked up: a
    client loads only the version it negotiates. Membership and iteration build nothing."""

    def __init__(self, versions: Sequence[str]) -> None:
        self._versions = tuple(versions)
        self._specs: dict[str, VersionSpec] = {}

    def __getitem__(self, version: str) -> VersionSpec:
        spec = self._specs.get(version)
        if spec is None:
            if version not in self._versions:
                raise KeyError(version)
            spec = self._specs[version] = _version_spec(version)
        return spec

    def __contains__(self, version: object) -> bool:
        return version in self._versions

    def __iter__(self) -> Iterator[str]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)


VERSIONS: Final = VersionTable(LEGACY_VERSIONS)
# The modern versions (no initialize: adopted after server/discover, or pinned).
MODERN: Final = VersionTable(MODERN_VERSIONS)
# A request class is defined in `<package>.models`; this says which version a class passed to send_request is from.
MODELS_MODULE_VERSION: Final = {f"{MODULES[version]}.models": version for version in (*VERSIONS, *MODERN)}


def version_of_module(module: str) -> str | None:
    """The version whose generated package ``module`` belongs to (``mcp_bindings.v2025_11_25.client`` ->
    "2025-11-25"); None for any other module."""
    package, _, _ = module.rpartition(".")
    return MODELS_MODULE_VERSION.get(f"{package}.models")
