"""The session to one server and what was negotiated over it: ``Connection``, the part of ``Client`` that chooses the
era, negotiates the version and keeps the result (the version's bindings, both sides' capabilities, the
``initialize`` or ``server/discover`` result).

Where it sits: in the ``client`` layer, on top of ``jsonrpc.session.Session``; every other part of ``Client`` reads
what was negotiated from here, and sends through ``send`` (which turns the transport's own errors into
``MalformedResponseError`` and ``AuthorizationError``). How the era is chosen (``ClientSettings.mode``):

- ``"legacy"``: ``initialize`` at the newest legacy version (or exactly ``version=``), then
  ``notifications/initialized``;
- a modern version (``"2026-07-28"``): adopted at once, with no request; the server's capabilities stay unknown;
- ``"auto"`` (the default): ``server/discover`` first (``modern.probe_era``); a legacy server gets ``initialize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from ..jsonrpc.context import ProgressCallback
from ..jsonrpc.envelopes import JSONRPCError
from ..jsonrpc.session import Session
from ..transports.http.client.auth import unauthorized_challenge
from ..transports.undeliverable import undeliverable_reason
from ..versions import LATEST_LEGACY_VERSION, LEGACY_VERSIONS
from .auth.errors import AuthorizationError
from .capabilities import merge_capabilities
from .errors import ClientError, InvalidResultError, MalformedResponseError, UnsupportedVersionError
from .handlers import HandlerDispatch
from .modern import MODERN_VERSIONS, ModernState, complete_result, modern_capabilities, probe_era
from .settings import ClientSettings
from .task_info import TASKS_EXTENSION_CAPABILITIES
from .versions import MODERN, VERSIONS, VersionSpec

if TYPE_CHECKING:
    from .versions import AnyInitializeResult

__all__ = ["Connection"]


class Connection:
    """One client's session and its negotiated state (nothing is negotiated until ``negotiate`` returns)."""

    def __init__(self, settings: ClientSettings, dispatch: HandlerDispatch) -> None:
        self._settings = settings
        self._dispatch = dispatch
        self._session: Session | None = None
        self._spec: VersionSpec | None = None
        # The modern era's per-request `_meta` and what results said of the server; None in the legacy era.
        self.modern: ModernState | None = None
        self.http = False  # the stream takes Mcp-Param-* headers from us (streamable HTTP)
        self.capabilities_known = True  # False in a pinned modern mode: nothing told us the server's capabilities
        self.client_capabilities: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}  # as sent (wire names): what gating reads
        self.initialize_result: AnyInitializeResult | None = None
        self.discover_result: Any = None

    def attach(self, session: Session, *, http: bool) -> None:
        """The session the client runs (``http``: over a stream that takes ``Mcp-Param-*`` headers)."""
        self._session, self.http = session, http

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the client is not connected; use `async with Client.connect(...)`")
        return self._session

    def negotiated(self) -> VersionSpec:
        """The negotiated version's bindings and routes; ``RuntimeError`` before negotiation."""
        if self._spec is None:
            raise RuntimeError("the client is not initialized yet")
        return self._spec

    @property
    def spec(self) -> VersionSpec | None:
        """The negotiated version, or None before negotiation (the handlers then answer with their own)."""
        return self._spec

    def request_meta(self) -> dict[str, Any]:
        """The ``_meta`` a modern request carries."""
        if self.modern is None:
            raise ClientError(f"MCP {self.negotiated().version} has no per-request _meta")
        return cast(dict[str, Any], self.modern.stamp(None)["_meta"])

    # -- sending -------------------------------------------------------------------------------------------------

    async def send(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> dict[str, Any]:
        """One request as it is, and its raw result; the transport's own errors become the client's."""
        try:
            return await self.session.request(method, params, timeout=timeout, progress_callback=progress)
        except JSONRPCError as exc:
            # The transport's own "arrived but cannot be delivered" error, not one the server sent.
            reason = undeliverable_reason(exc)
            if reason is None:
                refusal = unauthorized_challenge(exc.data)
                if refusal is None:
                    raise
                raise AuthorizationError(method, refusal.status, refusal.scheme, refusal.params) from None
            raise MalformedResponseError(method, reason) from None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.session.notify(method, params)

    # -- negotiating ---------------------------------------------------------------------------------------------

    async def negotiate(self, version: str | None, initialize_timeout: float | None) -> VersionSpec:
        """Choose the era as ``mode`` says and negotiate; the negotiated version. ``version``: the legacy version
        ``initialize`` must agree on (None: any we speak)."""
        mode = self._settings.mode
        if mode == "legacy":
            await self._initialize(version, initialize_timeout)
        elif mode in MODERN_VERSIONS:
            self._adopt(mode, None)
        else:
            probed = await probe_era(self._discover_at)
            if probed is None:
                await self._initialize(None, initialize_timeout)
            else:
                self._adopt(*probed)
        return self.negotiated()

    async def _initialize(self, version: str | None, timeout: float | None) -> None:
        if version is not None and version not in VERSIONS:
            raise UnsupportedVersionError(version, LEGACY_VERSIONS)
        offered = VERSIONS[version or LATEST_LEGACY_VERSION]  # initialize offers the latest legacy version
        settings = self._settings
        self.client_capabilities = self._dispatch.capabilities(offered.client_routes, settings.capabilities)
        params = offered.package.InitializeRequestParams(
            protocol_version=offered.version,
            capabilities=offered.package.ClientCapabilities.model_validate(self.client_capabilities),
            client_info=offered.package.Implementation.model_validate(settings.client_info),
        )
        raw = await self.send("initialize", params.model_dump(mode="json"), timeout, None)
        answered = raw.get("protocolVersion")
        accepted = (version,) if version is not None else LEGACY_VERSIONS
        if answered not in accepted:
            # The spec's rule: a client that cannot speak the server's version should disconnect. The caller's
            # `async with` unwinds through the session, which closes the stream (and a stdio child with it).
            raise UnsupportedVersionError(answered, accepted)
        spec = VERSIONS[cast(str, answered)]
        try:
            result = cast("AnyInitializeResult", spec.package.parse_result("initialize", raw))
        except ValidationError as exc:
            raise InvalidResultError(f"invalid initialize result for MCP {spec.version}: {exc}") from exc
        capabilities = raw.get("capabilities")
        self.server_capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        self.initialize_result, self._spec = result, spec
        await self.notify("notifications/initialized")

    def _modern_state(self, version: str) -> ModernState:
        legacy = self._dispatch.capabilities(self._dispatch.own_routes(), {})
        capabilities = modern_capabilities(legacy, self._settings.capabilities)
        if self._settings.tasks:
            merge_capabilities(capabilities, TASKS_EXTENSION_CAPABILITIES)
        return ModernState(version, self._settings.client_info, capabilities, self._settings.log_level)

    async def _discover_at(self, version: str) -> dict[str, Any]:
        stamped = self._modern_state(version).stamp(None)
        raw = await self.send("server/discover", stamped, self._settings.discover_timeout, None)
        return complete_result("server/discover", raw)

    def _adopt(self, version: str, discover: Mapping[str, Any] | None) -> None:
        spec = MODERN[version]
        state = self._modern_state(version)
        if discover is not None:
            state.observe(discover)
            try:
                self.discover_result = spec.package.parse_result("server/discover", discover)
            except ValidationError as exc:
                raise InvalidResultError(f"invalid server/discover result for MCP {version}: {exc}") from exc
            capabilities = discover.get("capabilities")
            self.server_capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        self.capabilities_known = discover is not None
        self.modern, self._spec = state, spec
        self.client_capabilities = state.capabilities
