"""The typed MCP client: a ``Session`` that speaks one negotiated MCP version through the generated bindings, in
either era: the handshake era (``initialize``, 2024-11-05 .. 2025-11-25) or the modern one (2026-07-28: no
handshake, ``_meta`` on every request, found with ``server/discover``; see ``modern`` for the modes).

Where it sits: in the ``client`` layer, on top of ``jsonrpc.session.Session`` (JSON-RPC ids, cancellation, progress,
ping) and any ``MessageStream`` (``transports``: stdio, streamable HTTP); below user code, which calls the generated
``ClientStub`` of the negotiated version (``client.api`` / ``client.stub(...)``) or the era-independent
conveniences (``call_tool``, ``get_prompt``, ``read_resource``, ``tools()`` ...). ``Client`` implements
``mcp_bindings.base.Peer``: every stub call comes through ``request``, which is where version checks, capability
gating, the modern ``_meta``, multi round-trip requests (``input_required``), timeouts and result parsing happen.

What a misbehaving server can do to a call is bounded: every request has a timeout (``DEFAULT_REQUEST_TIMEOUT``,
300 s, unless configured); an answer that arrives but cannot be delivered raises ``MalformedResponseError`` at once
where the transport can tell whose answer it was (``transports.delivery``); list walks stop on a repeated cursor
and after ``max_pages`` pages (``PaginationError``); an MRTR call stops after ``max_input_rounds`` rounds
(``InputRequiredError``). Server -> client requests and MRTR input requests are answered by a user subclass of a
generated ``ClientHandlers`` (``handlers.HandlerDispatch``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from mcp_bindings import base as _base

from ..jsonrpc.context import ProgressCallback, RequestContext
from ..jsonrpc.envelopes import JSONParams, JSONRPCError
from ..jsonrpc.session import Session
from ..jsonrpc.streams import MessageStream
from ..transports.delivery import DEFAULT_MAX_MESSAGE_BYTES, AnswerGuard, SSEReconnect, undeliverable_reason
from ..transports.http.client.auth import unauthorized_challenge
from ..transports.stdio.ndjson import open_subprocess_stream
from .auth.errors import AuthorizationError
from .client_support import (
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    LATEST_VERSION,
    LIST_CHANGED,
    MODELS_MODULE_VERSION,
    MODERN,
    SUPPORTED_VERSIONS,
    VERSIONS,
    CapabilityError,
    ClientError,
    InvalidResultError,
    MalformedResponseError,
    UnsupportedVersionError,
    VersionMismatchError,
    VersionSpec,
    has_path,
)
from .conveniences import ConveniencesMixin
from .handlers import HandlerDispatch
from .input_required import DEFAULT_MAX_INPUT_ROUNDS, call_with_rounds
from .lists import ListsMixin
from .modern import (
    DEFAULT_DISCOVER_TIMEOUT,
    HEADER_MISMATCH,
    MODERN_VERSIONS,
    MODES,
    ModernState,
    complete_result,
    modern_capabilities,
    probe_era,
)
from .subscriptions import Subscriptions

__all__ = ["Client", "ClientContext"]

if TYPE_CHECKING:
    import httpx2  # only for the annotation: stdio clients never import it

    from ..transports.http.client.auth import HTTPAuth
    from .client_support import AnyClientHandlers, AnyClientStub, AnyImplementation, AnyInitializeResult

logger = logging.getLogger(__name__)

StubT = TypeVar("StubT", bound="AnyClientStub")
ParamsT = TypeVar("ParamsT")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True, slots=True)
class ClientContext:
    """The ``context`` argument of ``ClientHandlers`` methods: annotate handlers as ``ClientHandlers[ClientContext]``.
    ``request`` is the session's context of a server -> client request (None for notification hooks and for the
    input requests of a multi round-trip request, which arrive inside a result)."""

    client: Client
    method: str
    request: RequestContext | None = None


class _CallOptions:
    """A ``Peer`` that sends through a client with per-call options: what ``Client.stub(..., timeout=...)`` binds."""

    def __init__(self, client: Client, timeout: float | None, progress_callback: ProgressCallback | None) -> None:
        self._client, self._timeout, self._progress_callback = client, timeout, progress_callback

    async def send_request(self, request_type: type[_base.Request[ParamsT, ResultT]], params: ParamsT, /) -> ResultT:
        return await self._client.request(
            request_type, params, timeout=self._timeout, progress_callback=self._progress_callback
        )

    async def send_notification(self, notification_type: type[_base.Notification[ParamsT]], params: ParamsT, /) -> None:
        await self._client.send_notification(notification_type, params)


class Client(ConveniencesMixin, ListsMixin):
    """A connected MCP client. Create it with ``Client.connect(stream)``, ``connect_stdio(cmd)`` or ``connect_http(url)``.

    Calls go through ``client.api``, the negotiated version's generated ``ClientStub`` (narrow it with
    ``client.stub(v2025_11_25.client.ClientStub)``, which also takes per-call ``timeout`` and ``progress_callback``),
    or the conveniences that work in both eras: ``call_tool``, ``get_prompt``, ``read_resource``, and the cached
    ``tools()`` / ``prompts()`` / ``resources()`` / ``resource_templates()``.

    ``mode`` (``"legacy"``, the default; ``"auto"``; or a modern version such as ``"2026-07-28"``) is how the era
    is chosen (``modern``); ``request_timeout`` (seconds, default 300; None waits forever) bounds every call that
    names no timeout; ``max_pages`` (default 1000) bounds the list walks; ``max_input_rounds`` (default 10) the
    rounds of a multi round-trip request; ``log_level`` asks a modern server for ``notifications/message`` at that
    level or above (the handshake era has ``logging/setLevel`` instead); ``discover_timeout`` (default 10 s) is how
    long the auto mode waits for ``server/discover`` before taking the server for a legacy one.
    """

    def __init__(
        self,
        *,
        handlers: AnyClientHandlers | None = None,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        max_pages: int = DEFAULT_MAX_PAGES,
        mode: str = "legacy",
        log_level: str | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
    ) -> None:
        """Prefer ``connect``; this only holds the configuration. ``capabilities`` is merged over the advertised
        ones (which come from the ``handlers`` methods actually overridden)."""
        if mode not in MODES:
            hint = " (a handshake version: pass it as version= with mode='legacy')" if mode in VERSIONS else ""
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}{hint}")
        if max_pages < 1:
            raise ValueError(f"max_pages must be at least 1, not {max_pages}")
        if max_input_rounds < 0:
            raise ValueError(f"max_input_rounds must not be negative, not {max_input_rounds}")
        self._dispatch = HandlerDispatch(handlers, lambda method, request: ClientContext(self, method, request))
        self._client_info = dict(client_info or {"name": "mcpgen-client", "version": "0.1.0"})
        self._extra_capabilities = dict(capabilities or {})
        self.request_timeout = request_timeout
        self.max_pages = max_pages
        self.mode = mode
        self.log_level = log_level
        self.max_input_rounds = max_input_rounds
        self.discover_timeout = discover_timeout
        self._session: Session | None = None
        self._spec: VersionSpec | None = None
        self._api: AnyClientStub | None = None
        self._modern: ModernState | None = None
        self._capabilities_known = True  # False in a pinned modern mode: nothing told us the server's capabilities
        self._http = False  # the stream takes Mcp-Param-* headers from us (streamable HTTP)
        self._subscriptions = Subscriptions()
        self.client_capabilities: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}  # as sent (wire names): what gating reads
        self._initialize_result: AnyInitializeResult | None = None
        self._discover_result: Any = None
        super().__init__()

    # -- connecting ------------------------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        stream: MessageStream,
        *,
        version: str | None = None,
        initialize_timeout: float | None = 30.0,
        guard_answers: bool = True,
        **options: Any,
    ) -> AsyncIterator[Client]:
        """Run a session over ``stream``, negotiate, and yield the client; the session (and stream) close on exit.

        ``options`` are those of ``Client`` (``mode``, ``handlers``, ``request_timeout`` ...). In the legacy mode,
        without ``version`` the newest handshake version is offered and any supported answer is accepted; with it,
        exactly that version is offered and required (a modern ``version`` is the same as ``mode=version``). Any
        other answer raises ``UnsupportedVersionError`` after the connection is closed. With ``guard_answers`` the
        stream is wrapped in ``transports.delivery.AnswerGuard`` (``connect_http`` turns it off: the HTTP transport
        does this itself).
        """
        if version in MODERN_VERSIONS:
            options["mode"], version = version, None
        elif version is not None and options.get("mode", "legacy") != "legacy":
            raise ValueError(f"version={version!r} is a handshake version: it needs mode='legacy'")
        client = cls(**options)
        if hasattr(stream, "param_headers"):
            # The streamable HTTP client stream asks us for the Mcp-Param-* headers of each modern tools/call.
            stream.param_headers = client._param_headers
            client._http = True
        if guard_answers:
            stream = AnswerGuard(stream)
        session = Session(stream, request_handler=client._on_request, notification_handler=client._on_notification)
        async with session:
            client._session = session
            await client._negotiate(version, initialize_timeout)
            yield client

    @classmethod
    @asynccontextmanager
    async def connect_stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        capture_stderr: bool = False,
        **options: Any,
    ) -> AsyncIterator[Client]:
        """Start ``command`` as a stdio server and ``connect`` to it (``options`` as for ``connect``); the child is
        shut down on exit (the MCP stdio sequence: close its stdin, then SIGTERM, then SIGKILL)."""
        async with (
            open_subprocess_stream(command, env, cwd=cwd, capture_stderr=capture_stderr) as stream,
            cls.connect(stream, **options) as client,
        ):
            yield client

    @classmethod
    @asynccontextmanager
    async def connect_http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        reconnect: SSEReconnect | None = None,
        auth: HTTPAuth | None = None,
        **options: Any,
    ) -> AsyncIterator[Client]:
        """``connect`` to a streamable HTTP server at ``url`` (e.g. http://127.0.0.1:8000/mcp); ``options`` as for
        ``connect``. A handshake-era HTTP session is ended (DELETE) on exit; a modern connection has none.

        ``http_client`` (an ``httpx2.AsyncClient``) replaces the default one; ``max_message_bytes`` bounds one JSON
        body or SSE event; ``reconnect`` is how SSE streams the server closes early are resumed (handshake era only:
        2026-07-28 has no resumption). An exception raised in the ``async with`` body comes out as itself.

        ``auth`` (an ``HTTPAuth``, e.g. ``client.auth.OAuthProvider``) adds its headers to every request and is
        asked to authorize on a 401 / 403 ``insufficient_scope``; one it cannot resolve raises
        ``AuthorizationError`` (with or without ``auth``).
        """
        from ..transports.http.client.stream import open_http_stream  # only HTTP clients need httpx2

        async with (
            open_http_stream(
                url,
                dict(headers) if headers else None,
                http_client=http_client,
                max_message_bytes=max_message_bytes,
                reconnect=reconnect,
                auth=auth,
            ) as stream,
            cls.connect(stream, guard_answers=False, **options) as client,
        ):
            yield client

    async def _negotiate(self, version: str | None, initialize_timeout: float | None) -> None:
        if self.mode == "legacy":
            await self._initialize(version, initialize_timeout)
        elif self.mode in MODERN_VERSIONS:
            self._adopt(self.mode, None)
        else:
            probed = await probe_era(self._discover_at)
            if probed is None:
                await self._initialize(None, initialize_timeout)
            else:
                self._adopt(*probed)

    async def _initialize(self, version: str | None, timeout: float | None) -> None:
        if version is not None and version not in VERSIONS:
            raise UnsupportedVersionError(version, SUPPORTED_VERSIONS)
        offered = VERSIONS[version or LATEST_VERSION]
        self.client_capabilities = self._dispatch.capabilities(offered.client_routes, self._extra_capabilities)
        params = offered.package.InitializeRequestParams(
            protocol_version=offered.version,
            capabilities=offered.package.ClientCapabilities.model_validate(self.client_capabilities),
            client_info=offered.package.Implementation.model_validate(self._client_info),
        )
        raw = await self._send("initialize", params.model_dump(mode="json"), timeout, None)
        answered = raw.get("protocolVersion")
        accepted = (version,) if version is not None else SUPPORTED_VERSIONS
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
        self._initialize_result, self._spec = result, spec
        self._api = spec.stub(self)
        await self.session.notify("notifications/initialized")

    def _modern_state(self, version: str) -> ModernState:
        handshake = self._dispatch.capabilities(self._dispatch.own_routes(), {})
        capabilities = modern_capabilities(handshake, self._extra_capabilities)
        return ModernState(version, self._client_info, capabilities, self.log_level)

    async def _discover_at(self, version: str) -> dict[str, Any]:
        raw = await self._send("server/discover", self._modern_state(version).stamp(None), self.discover_timeout, None)
        return complete_result("server/discover", raw)

    def _adopt(self, version: str, discover: dict[str, Any] | None) -> None:
        spec = MODERN[version]
        state = self._modern_state(version)
        if discover is not None:
            state.observe(discover)
            try:
                self._discover_result = spec.package.parse_result("server/discover", discover)
            except ValidationError as exc:
                raise InvalidResultError(f"invalid server/discover result for MCP {version}: {exc}") from exc
            capabilities = discover.get("capabilities")
            self.server_capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        self._capabilities_known = discover is not None
        self._modern, self._spec = state, spec
        self.client_capabilities = state.capabilities
        self._api = spec.stub(self)

    # -- what was negotiated ---------------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the client is not connected; use `async with Client.connect(...)`")
        return self._session

    def _negotiated(self) -> VersionSpec:
        if self._spec is None:
            raise RuntimeError("the client is not initialized yet")
        return self._spec

    @property
    def protocol_version(self) -> str:
        return self._negotiated().version

    @property
    def is_modern(self) -> bool:
        """Whether the connection speaks a modern version (2026-07-28: no handshake, ``_meta`` per request)."""
        self._negotiated()
        return self._modern is not None

    @property
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (``mcp_bindings.v2025_11_25`` ...)."""
        return self._negotiated().package

    @property
    def initialize_result(self) -> AnyInitializeResult:
        self._negotiated()
        if self._initialize_result is None:
            raise ClientError(f"MCP {self.protocol_version} has no initialize; see discover_result")
        return self._initialize_result

    @property
    def discover_result(self) -> Any:
        """The server's ``DiscoverResult`` (modern era, auto mode), else None."""
        return self._discover_result

    @property
    def server_info(self) -> AnyImplementation | None:
        """The server's ``Implementation`` (name, version, ...) as the negotiated version's model: from
        ``initialize``, or in the modern era from the ``_meta`` of its latest result (None until one names it)."""
        if self._modern is None:
            return self.initialize_result.server_info
        info = self._modern.server_info
        return cast("AnyImplementation", self.bindings.Implementation.model_validate(info)) if info else None

    @property
    def instructions(self) -> str | None:
        if self._modern is None:
            return self.initialize_result.instructions
        return getattr(self._discover_result, "instructions", None)

    @property
    def api(self) -> AnyClientStub:
        """The negotiated version's generated ``ClientStub``, sending through this client."""
        spec = self._negotiated()
        if self._api is None:
            raise ClientError(f"the generated client stub of MCP {spec.version} is not available")
        return self._api

    def stub(
        self, stub_type: type[StubT], *, timeout: float | None = None, progress_callback: ProgressCallback | None = None
    ) -> StubT:
        """``client.api`` narrowed to ``stub_type`` (raising ``VersionMismatchError`` when the connection speaks
        another version), optionally bound to a ``timeout`` and a ``progress_callback`` for every call through it."""
        spec = self._negotiated()
        if stub_type is not spec.stub:
            raise VersionMismatchError(f"{stub_type.__module__}.ClientStub used on an MCP {spec.version} connection")
        if timeout is None and progress_callback is None:
            return cast(StubT, self.api)
        return stub_type(_CallOptions(self, timeout, progress_callback))

    def allows(self, method: str) -> bool:
        """Whether the server's capabilities allow calling ``method`` (what ``request`` checks); True for any
        method of the version when they are unknown (a pinned modern mode)."""
        route = self._negotiated().server_routes.get(method)
        if route is None:
            return False
        gated = self._capabilities_known and route.capability is not None
        return not gated or has_path(self.server_capabilities, cast(str, route.capability))

    # -- Peer: what the generated stubs send through --------------------------------------------------------------

    async def send_request(self, request_type: type[_base.Request[ParamsT, ResultT]], params: ParamsT, /) -> ResultT:
        return await self.request(request_type, params)

    async def send_notification(self, notification_type: type[_base.Notification[ParamsT]], params: ParamsT, /) -> None:
        spec = self._check_version(notification_type)
        method = notification_type.METHOD
        route = spec.server_notification_routes.get(method)
        if (
            route is not None
            and route.capability is not None
            and not has_path(self.client_capabilities, route.capability)
        ):
            # For notifications the capability is the sender's: ours.
            raise CapabilityError(method, route.capability, whose="client")
        await self.session.notify(method, self._dump(params))

    async def request(
        self,
        request_type: type[_base.Request[ParamsT, ResultT]],
        params: ParamsT,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> ResultT:
        """Send one typed request and parse its result. ``timeout`` (seconds; None: the client's
        ``request_timeout``; ``math.inf``: no limit) raises ``TimeoutError`` and tells the server with
        ``notifications/cancelled``, as does cancelling the calling task. On a modern connection the request's
        ``_meta`` is filled in, and an ``InputRequiredResult`` is answered by the handlers and the request retried
        (``InputRequiredError`` past ``max_input_rounds``). Raises ``CapabilityError`` (nothing sent),
        ``JSONRPCError`` (the server's error), ``MalformedResponseError`` (an answer that cannot be used, at once),
        ``InvalidResultError`` and ``SessionClosedError``."""
        self._check_version(request_type)
        return cast(ResultT, await self._invoke(request_type.METHOD, self._dump(params), timeout, progress_callback))

    async def _invoke(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> Any:
        """Gate, send (with MRTR on a modern connection) and parse one request as the negotiated version's model."""
        spec = self._negotiated()
        route = spec.server_routes.get(method)
        capability = route.capability if route is not None else None
        if self._capabilities_known and capability is not None and not has_path(self.server_capabilities, capability):
            raise CapabilityError(method, capability)
        timeout = timeout if timeout is not None else self.request_timeout
        if self._modern is None:  # the handshake era: sent as it is (what _call does, one call less)
            raw = await self._send(method, params, timeout, progress)
        else:
            raw = await self._call(method, params, timeout, progress)
        try:
            return spec.package.parse_result(method, raw)
        except ValidationError as exc:
            raise InvalidResultError(f"invalid {method} result for MCP {spec.version}: {exc}") from exc

    async def _call(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> dict[str, Any]:
        """The raw result of one request: as sent in the handshake era; in the modern one stamped with ``_meta``,
        completed (``resultType``, cache hints) and driven through its input rounds."""
        state = self._modern
        if state is None:
            return await self._send(method, params, timeout, progress)

        async def send(again: dict[str, Any] | None) -> dict[str, Any]:
            return await self._send_modern(state, method, again, timeout, progress)

        async def answer(input_method: str, input_params: Mapping[str, Any]) -> dict[str, Any]:
            return await self._dispatch.answer_input(input_method, input_params, self.bindings)

        # The generated route says whether the server may answer this method with InputRequiredResult.
        route = self._negotiated().server_routes.get(method)
        multi_round = route is not None and route.input_required_result is not None
        return await call_with_rounds(method, params, send, answer, self.max_input_rounds if multi_round else None)

    async def _send_modern(
        self,
        state: ModernState,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        if method == "tools/call" and self._http and isinstance(params, dict):
            await self._know_tool_headers(state, params.get("name"))
        try:
            raw = await self._send(method, state.stamp(params), timeout, progress)
        except JSONRPCError as exc:
            if exc.code != HEADER_MISMATCH or method != "tools/call" or not self._http:
                raise
            # The tool's x-mcp-header annotations may have changed: list the tools again and retry once (the spec's
            # SHOULD for a HeaderMismatch answer).
            self.cache("tools").invalidate()
            await self.tools()
            raw = await self._send(method, state.stamp(params), timeout, progress)
        result = complete_result(method, raw)
        state.observe(result)
        return result

    async def _send(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress_callback: ProgressCallback | None,
    ) -> dict[str, Any]:
        try:
            return await self.session.request(method, params, timeout=timeout, progress_callback=progress_callback)
        except JSONRPCError as exc:
            # The transport's own "arrived but cannot be delivered" error, not one the server sent.
            reason = undeliverable_reason(exc)
            if reason is None:
                refusal = unauthorized_challenge(exc.data)
                if refusal is None:
                    raise
                raise AuthorizationError(method, refusal.status, refusal.scheme, refusal.params) from None
            raise MalformedResponseError(method, reason) from None

    def _check_version(self, message_type: type[Any]) -> VersionSpec:
        spec = self._negotiated()
        version = MODELS_MODULE_VERSION.get(message_type.__module__)
        if version != spec.version:
            # Parsing the answer as another version's class would hand the caller a model its type does not match.
            raise VersionMismatchError(
                f"{message_type.__name__} is from MCP {version or message_type.__module__}, "
                f"but this connection speaks {spec.version}"
            )
        return spec

    @staticmethod
    def _dump(params: object) -> dict[str, Any] | None:
        if params is None:
            return None
        if not isinstance(params, BaseModel):
            raise TypeError(f"params must be a generated model, not {type(params).__name__}")
        return params.model_dump(mode="json")

    # -- what the server sends us ----------------------------------------------------------------------------------

    async def _on_request(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return await self._dispatch.answer_request(method, params, context, self._spec)

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        # Caches first, so that a hook re-listing tools already sees the new list.
        for name in LIST_CHANGED.get(method, ()):
            self._caches[name].invalidate()
        self._subscriptions.route(method, params)
        await self._dispatch.notify(method, params)
