"""What serving the modern era takes of a server, derived once rather than per request: ``VersionServing`` (what a
server serves in one modern version: its bindings, handler class, fitted capabilities, routes and ``serverInfo``,
rebuilt when ``Registry.serving_key`` changes), ``ModernServing`` (one per run of the server: the versions served,
the middleware, the lifespan state, the ``_meta`` values validated so far), and how a result is finished for a
version (``finished_result``: ``resultType`` and ``_meta`` serverInfo added, validated into the version's model).

Where it sits: in the ``server`` layer, under ``modern`` (the general one-call dispatch of a modern request) and
``direct_call`` (its direct lane), which both serve with what is here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from ...protocol.results import ValidResult
from ...versions import SERVER_INFO_META
from ..authoring.definitions import validation_details
from ..authoring.middleware import Middleware
from ..authoring.registry import Registry
from ..tasks.engine import TaskEngine
from .generated import bindings_for, handlers_class, served_methods, stub_for
from .handlers import Handlers, fit
from .request_meta import ValidatedMetas, meta_model
from .request_state import RequestStateCodec
from .validation import validated_result

__all__ = ["ModernServing", "VersionServing", "completed_result", "finished_result"]

logger = logging.getLogger(__name__)


class VersionServing:
    """What a server serves in one modern version, derived once from what is registered
    (``Registry.serving_key``) rather than per request: the version's bindings and handler class, the server
    capabilities fitted to it, the routes of the methods it serves, and its ``serverInfo``. Read only."""

    __slots__ = (
        "bindings",
        "capabilities",
        "handlers",
        "key",
        "routes",
        "server_info",
        "server_info_valid",
        "stub",
        "tools_call",
    )

    def __init__(self, server: Registry, version: str, key: tuple[Any, ...]) -> None:
        self.key = key
        self.bindings: ModuleType = bindings_for(version)
        self.stub: ModuleType = stub_for(version)
        self.handlers: type[Handlers] = handlers_class(version)
        self.capabilities: dict[str, Any] = fit(self.bindings.ServerCapabilities, server.capabilities())
        served = served_methods(
            self.stub, self.handlers(cast(Any, _Probe(server))), self.capabilities, bool(server.completions)
        )
        self.routes: dict[str, Any] = {m: r for m, r in self.stub.SERVER_ROUTES.items() if m in served}
        # tools/call's route and the model of its _meta, if served (what the direct lane reads per request).
        route = self.routes.get("tools/call")
        model = meta_model(route.params_type) if route is not None else None
        self.tools_call: tuple[Any, type[BaseModel]] | None = (route, model) if model is not None else None
        info = {"name": server.name, "version": server.version, **({"title": server.title} if server.title else {})}
        self.server_info: dict[str, Any] = fit(self.bindings.Implementation, info)
        try:  # checked once here, so that a result built valid by the runtime (ValidResult) needs no validation
            self.bindings.Implementation.model_validate(self.server_info)
            self.server_info_valid = True
        except ValidationError as exc:  # answered by validation, with the field paths, when a result carries it
            logger.debug("serverInfo is not valid: %s", validation_details(exc))
            self.server_info_valid = False


class _Probe:
    """The connection a handlers instance is made over when only its class matters (``served_methods`` asks which
    methods the class overrides): ``Handlers.__init__`` reads ``server``, nothing else is used."""

    __slots__ = ("server",)

    def __init__(self, server: Registry) -> None:
        self.server = server


class ModernServing:
    """What serving a modern request takes of the server: what it serves, its middleware, the state its lifespan
    yielded for this run, and the codec of ``requestState`` (MRTR); one per run of the server (per connection over
    a stream), with each version's ``VersionServing`` cached for as long as what is registered stays the same."""

    __slots__ = ("_versions", "lanes", "lifespan_state", "metas", "middleware", "request_states", "server", "tasks")

    def __init__(
        self, server: Registry, middleware: Sequence[Middleware], lifespan_state: Any, request_states: RequestStateCodec
    ) -> None:
        self.server, self.middleware = server, middleware
        self.lifespan_state, self.request_states = lifespan_state, request_states
        self._versions: dict[str, VersionServing] = {}
        self.metas = ValidatedMetas()  # the requests' _meta values validated so far (request_meta)
        # The server's task engine (a ``Server`` has one; a bare ``Registry`` served in tests has none: no tasks).
        self.tasks: TaskEngine | None = getattr(server, "task_engine", None)
        # The direct lane's cache (``direct_call.ToolLanes``), made by the first request that may take it; kept
        # here so that it lasts as long as what it was derived from.
        self.lanes: Any = None

    def version(self, version: str) -> VersionServing:
        """``version``'s ``VersionServing``, rebuilt when a tool, resource, prompt, completion, hook or the
        server's identity changed since it was made (a tool added at run time is served and listed at once)."""
        key = self.server.serving_key()
        served = self._versions.get(version)
        if served is None or served.key != key:
            served = self._versions[version] = VersionServing(self.server, version, key)
        return served


def finished_result(
    served: VersionServing,
    version: str,
    model: Any,
    returned: Any,
    source: str | Callable[[], str],
    result_type: str = "complete",
) -> dict[str, Any]:
    """``returned`` with ``resultType`` and ``_meta`` serverInfo, validated as ``model`` of ``version`` (``source``:
    whose it is, or a function giving it, for the error when it is not valid)."""
    if type(returned) is ValidResult and served.server_info_valid:
        return completed_result(served, returned, result_type)
    if isinstance(returned, BaseModel):
        data = returned.model_dump(mode="json", by_alias=True, exclude_unset=True)
    elif isinstance(returned, Mapping):
        data = dict(returned)
    else:
        return validated_result(model, returned, source, version)  # names the wrong type
    data.setdefault("resultType", result_type)
    meta = data.get("_meta")
    data["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), SERVER_INFO_META: served.server_info}
    return validated_result(model, data, source, version)


def completed_result(served: VersionServing, returned: ValidResult, result_type: str) -> dict[str, Any]:
    """``finished_result`` of a result the runtime built in a shape valid for every version (a tool's plain text),
    when what is added is valid too (serverInfo was checked when cached): answered as it is, like the legacy era
    answers it, with ``resultType`` and ``_meta`` serverInfo added in place (a ``ValidResult`` is built for one
    answer: ``ToolDef.call`` makes a new one per call, and nothing has seen it yet)."""
    server_info = served.server_info
    returned.setdefault("resultType", result_type)
    meta = returned.get("_meta")
    returned["_meta"] = {**meta, SERVER_INFO_META: server_info} if meta else {SERVER_INFO_META: server_info}
    return returned
