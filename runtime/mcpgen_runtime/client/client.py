"""The typed MCP client: a ``Session`` that speaks one negotiated MCP version through the generated bindings.

Where it sits: in the ``client`` layer, on top of ``jsonrpc.session.Session`` (JSON-RPC ids, cancellation, progress,
ping) and any ``MessageStream`` (``transports``: stdio, streamable HTTP); below user code, which calls the generated
``ClientStub`` of the negotiated version (``client.api`` / ``client.stub(...)``). ``Client`` implements
``mcp_bindings.base.Peer``: every stub call comes through ``send_request``, which is where version checks,
capability gating, timeouts and result parsing happen.

What a misbehaving server can do to a call is bounded: every request has a timeout (``DEFAULT_REQUEST_TIMEOUT``,
300 s, unless configured); an answer that arrives but cannot be delivered (damaged JSON, over a size limit, an
``id`` without ``result`` or ``error``) raises ``MalformedResponseError`` at once where the transport can tell whose
answer it was (``transports.delivery``: always over HTTP; over stdio when the id can be read); list walks stop on a
repeated cursor and after ``max_pages`` pages (``PaginationError``).

Server -> client requests (sampling, elicitation, roots) are answered by a user subclass of a generated
``ClientHandlers`` through that version's ``CLIENT_ROUTES``. A handler returns the result model or a plain dict
(annotate it ``-> Any`` or ``-> dict[str, Any]`` with an ignore, since the stub says model); either is validated
against the negotiated version's result model (``protocol.results.as_result``), and one that does not validate is
answered -32603 with the field paths, and logged. ``client_support`` holds the version registry, the errors, the
defaults and the list cache.

Only the handshake-era versions are spoken (2024-11-05 .. 2025-11-25); 2026-07-28 has no ``initialize`` at all.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from mcp_bindings import base as _base

from ..jsonrpc.context import ProgressCallback, RequestContext
from ..jsonrpc.envelopes import ErrorCode, InvalidParams, JSONParams, JSONRPCError, MethodNotFound
from ..jsonrpc.session import Session
from ..jsonrpc.streams import MessageStream
from ..protocol.results import ResultValidationError, as_result
from ..transports.delivery import DEFAULT_MAX_MESSAGE_BYTES, AnswerGuard, SSEReconnect, undeliverable_reason
from ..transports.stdio import open_subprocess_stream
from .client_support import (
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    LATEST_VERSION,
    LIST_CHANGED,
    MODELS_MODULE_VERSION,
    SUPPORTED_VERSIONS,
    VERSIONS,
    AnyClientHandlers,
    AnyClientStub,
    AnyImplementation,
    AnyInitializeResult,
    AnyPrompt,
    AnyResource,
    AnyResourceTemplate,
    AnyTool,
    CapabilityError,
    ClientError,
    InvalidResultError,
    ListCache,
    MalformedResponseError,
    PaginationError,
    UnsupportedVersionError,
    VersionMismatchError,
    VersionSpec,
    has_path,
    merge_capabilities,
    set_path,
    validate_params,
)

__all__ = [
    "DEFAULT_MAX_PAGES",
    "DEFAULT_REQUEST_TIMEOUT",
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "AnyClientHandlers",
    "AnyClientStub",
    "CapabilityError",
    "Client",
    "ClientContext",
    "ClientError",
    "InvalidResultError",
    "MalformedResponseError",
    "PaginationError",
    "UnsupportedVersionError",
    "VersionMismatchError",
]

if TYPE_CHECKING:
    import httpx2  # only for the annotation: stdio clients never import it

logger = logging.getLogger(__name__)

StubT = TypeVar("StubT", bound=AnyClientStub)
T = TypeVar("T")
ParamsT = TypeVar("ParamsT")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True, slots=True)
class ClientContext:
    """The ``context`` argument of ``ClientHandlers`` methods: annotate handlers as ``ClientHandlers[ClientContext]``.
    ``request`` is the session's context of a server -> client request (None for notification hooks)."""

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


class Client:
    """A connected, initialized MCP client. Create it with ``Client.connect(stream)`` or ``Client.connect_stdio(cmd)``.

    Calls go through ``client.api``, the negotiated version's generated ``ClientStub`` (typed as the union of the
    four; narrow it with ``client.stub(v2025_11_25.client.ClientStub)``, which also takes per-call ``timeout`` and
    ``progress_callback``). ``tools()`` / ``prompts()`` / ``resources()`` / ``resource_templates()`` are cached.

    ``request_timeout`` (seconds, default ``DEFAULT_REQUEST_TIMEOUT`` = 300; None waits forever) bounds every call
    that names no timeout of its own; ``max_pages`` (default ``DEFAULT_MAX_PAGES`` = 1000) bounds the list walks.
    """

    def __init__(
        self,
        *,
        handlers: AnyClientHandlers | None = None,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> None:
        """Prefer ``connect``; this only holds the configuration. ``capabilities`` is merged over the advertised
        ones (which come from the ``handlers`` methods actually overridden); ``request_timeout`` is the default
        timeout of every request (None: wait forever); ``max_pages`` the most pages one list walk requests."""
        self._handlers = handlers
        self._handler_version = self._version_of_handlers(handlers) if handlers is not None else None
        self._implemented: frozenset[str] = (
            _base.overridden(handlers, self._handler_version.handlers_base, self._handler_version.client_routes)
            if handlers is not None and self._handler_version is not None
            else frozenset()
        )
        self._client_info = dict(client_info or {"name": "mcpgen-client", "version": "0.1.0"})
        self._extra_capabilities = dict(capabilities or {})
        self.request_timeout = request_timeout
        if max_pages < 1:
            raise ValueError(f"max_pages must be at least 1, not {max_pages}")
        self.max_pages = max_pages
        self._session: Session | None = None
        self._spec: VersionSpec | None = None
        self._api: AnyClientStub | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}  # as sent (wire names): what gating reads
        self._initialize_result: AnyInitializeResult | None = None
        self._caches: dict[str, ListCache[Any]] = {
            "tools": ListCache[AnyTool](self._fetch_tools),
            "prompts": ListCache[AnyPrompt](self._fetch_prompts),
            "resources": ListCache[AnyResource](self._fetch_resources),
            "resource_templates": ListCache[AnyResourceTemplate](self._fetch_resource_templates),
        }

    # -- connecting ------------------------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        stream: MessageStream,
        *,
        version: str | None = None,
        handlers: AnyClientHandlers | None = None,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        initialize_timeout: float | None = 30.0,
        max_pages: int = DEFAULT_MAX_PAGES,
        guard_answers: bool = True,
    ) -> AsyncIterator[Client]:
        """Run a session over ``stream``, initialize, and yield the client; the session (and stream) close on exit.

        Without ``version``, the newest supported version is offered and any supported answer is accepted; with
        it, exactly that version is offered and required. Any other answer raises ``UnsupportedVersionError``
        after the connection is closed. ``request_timeout`` and ``max_pages`` as for ``Client``. With
        ``guard_answers`` the stream is wrapped in ``transports.delivery.AnswerGuard``, which fails a call at once
        when its answer cannot be delivered (``connect_http`` turns it off: the HTTP transport does this itself).
        """
        client = cls(
            handlers=handlers,
            client_info=client_info,
            capabilities=capabilities,
            request_timeout=request_timeout,
            max_pages=max_pages,
        )
        if guard_answers:
            stream = AnswerGuard(stream)
        session = Session(stream, request_handler=client._on_request, notification_handler=client._on_notification)
        async with session:
            client._session = session
            await client._initialize(version, initialize_timeout)
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
        version: str | None = None,
        handlers: AnyClientHandlers | None = None,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        initialize_timeout: float | None = 30.0,
        max_pages: int = DEFAULT_MAX_PAGES,
    ) -> AsyncIterator[Client]:
        """Start ``command`` as a stdio server and ``connect`` to it; the child is shut down on exit (the MCP stdio
        sequence: close its stdin, then SIGTERM, then SIGKILL)."""
        async with (
            open_subprocess_stream(command, env, cwd=cwd, capture_stderr=capture_stderr) as stream,
            cls.connect(
                stream,
                version=version,
                handlers=handlers,
                client_info=client_info,
                capabilities=capabilities,
                request_timeout=request_timeout,
                initialize_timeout=initialize_timeout,
                max_pages=max_pages,
            ) as client,
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
        **options: Any,
    ) -> AsyncIterator[Client]:
        """``connect`` to a streamable HTTP server at ``url`` (e.g. http://127.0.0.1:8000/mcp); ``options`` as for
        ``connect`` (``request_timeout``, ``max_pages``, ...). The HTTP session is ended (DELETE) on exit.

        ``http_client`` (an ``httpx2.AsyncClient``) replaces the default one; ``max_message_bytes`` bounds one JSON
        body or SSE event (a larger answer fails its call with ``MalformedResponseError``); ``reconnect`` is how SSE
        streams the server closes early are resumed (``transports.delivery.SSEReconnect``: honours ``retry:``,
        capped, with a bounded number of reconnections). An exception raised in the ``async with`` body comes out
        as itself, as over stdio.
        """
        from ..transports.http_client import open_http_stream  # only HTTP clients need httpx2

        async with (
            open_http_stream(
                url,
                dict(headers) if headers else None,
                http_client=http_client,
                max_message_bytes=max_message_bytes,
                reconnect=reconnect,
            ) as stream,
            cls.connect(stream, guard_answers=False, **options) as client,
        ):
            yield client

    async def _initialize(self, version: str | None, timeout: float | None) -> None:
        if version is not None and version not in VERSIONS:
            raise UnsupportedVersionError(version, SUPPORTED_VERSIONS)
        offered = VERSIONS[version or LATEST_VERSION]
        self.client_capabilities = self._advertised_capabilities(offered)
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
            result = cast(AnyInitializeResult, spec.package.parse_result("initialize", raw))
        except ValidationError as exc:
            raise InvalidResultError(f"invalid initialize result for MCP {spec.version}: {exc}") from exc
        capabilities = raw.get("capabilities")
        self.server_capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        self._initialize_result, self._spec = result, spec
        self._api = spec.stub(self)
        await self._api.notify_initialized()

    def _advertised_capabilities(self, offered: VersionSpec) -> dict[str, Any]:
        # Advertise only what a handler really answers, and only capabilities the offered version defines.
        capabilities: dict[str, Any] = {}
        for method in sorted(self._implemented):
            route = offered.client_routes.get(method)
            if route is not None and route.capability is not None:
                set_path(capabilities, route.capability)
        if "roots" in capabilities:
            # We can send notifications/roots/list_changed (client.api.notify_roots_list_changed).
            capabilities["roots"].setdefault("listChanged", True)
        return merge_capabilities(capabilities, self._extra_capabilities)

    @staticmethod
    def _version_of_handlers(handlers: object) -> VersionSpec:
        for spec in VERSIONS.values():
            if isinstance(handlers, spec.handlers_base):
                return spec
        raise TypeError(
            f"handlers must subclass the ClientHandlers of one of MCP {', '.join(SUPPORTED_VERSIONS)}, "
            f"not {type(handlers).__name__}"
        )

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
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (``mcp_bindings.v2025_11_25`` ...)."""
        return self._negotiated().package

    @property
    def initialize_result(self) -> AnyInitializeResult:
        self._negotiated()
        assert self._initialize_result is not None
        return self._initialize_result

    @property
    def server_info(self) -> AnyImplementation:
        """The server's ``Implementation`` (name, version, ...) as the negotiated version's model."""
        return self.initialize_result.server_info

    @property
    def instructions(self) -> str | None:
        return self.initialize_result.instructions

    @property
    def api(self) -> AnyClientStub:
        """The negotiated version's generated ``ClientStub``, sending through this client."""
        self._negotiated()
        assert self._api is not None
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
        """Whether the server's capabilities allow calling ``method`` (what ``send_request`` checks)."""
        route = self._negotiated().server_routes.get(method)
        return route is not None and (route.capability is None or has_path(self.server_capabilities, route.capability))

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
        ``notifications/cancelled``, as does cancelling the calling task. Raises ``CapabilityError`` (nothing sent),
        ``JSONRPCError`` (the server's error), ``MalformedResponseError`` (an answer that cannot be used, at once),
        ``InvalidResultError`` and ``SessionClosedError``."""
        spec = self._check_version(request_type)
        method = request_type.METHOD
        route = spec.server_routes.get(method)
        if (
            route is not None
            and route.capability is not None
            and not has_path(self.server_capabilities, route.capability)
        ):
            raise CapabilityError(method, route.capability)
        raw = await self._send(
            method, self._dump(params), timeout if timeout is not None else self.request_timeout, progress_callback
        )
        try:
            return cast(ResultT, spec.package.parse_result(method, raw))
        except ValidationError as exc:
            raise InvalidResultError(f"invalid {method} result for MCP {spec.version}: {exc}") from exc

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
                raise
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

    # -- cached lists ----------------------------------------------------------------------------------------------

    async def tools(self) -> list[AnyTool]:
        """Every tool (all pages), cached until ``notifications/tools/list_changed``."""
        return cast(list[AnyTool], await self._caches["tools"].get())

    async def prompts(self) -> list[AnyPrompt]:
        """Every prompt, cached until ``notifications/prompts/list_changed``."""
        return cast(list[AnyPrompt], await self._caches["prompts"].get())

    async def resources(self) -> list[AnyResource]:
        """Every resource, cached until ``notifications/resources/list_changed``."""
        return cast(list[AnyResource], await self._caches["resources"].get())

    async def resource_templates(self) -> list[AnyResourceTemplate]:
        """Every resource template, cached until ``notifications/resources/list_changed``."""
        return cast(list[AnyResourceTemplate], await self._caches["resource_templates"].get())

    def cache(self, name: str) -> ListCache[Any]:
        """The cache behind ``tools()`` and friends ("tools", "prompts", "resources", "resource_templates")."""
        return self._caches[name]

    async def _fetch_tools(self) -> Sequence[AnyTool]:
        return await self._walk(self.api.list_all_tools)

    async def _fetch_prompts(self) -> Sequence[AnyPrompt]:
        return await self._walk(self.api.list_all_prompts)

    async def _fetch_resources(self) -> Sequence[AnyResource]:
        return await self._walk(self.api.list_all_resources)

    async def _fetch_resource_templates(self) -> Sequence[AnyResourceTemplate]:
        return await self._walk(self.api.list_all_resource_templates)

    async def _walk(self, list_all: Callable[..., Awaitable[Sequence[T]]]) -> Sequence[T]:
        """One stub walk bounded by ``max_pages``; the bindings' PaginationError (every version's stub raises the
        one in ``mcp_bindings.base``) becomes ours, a ``ClientError``."""
        try:
            return await list_all(max_pages=self.max_pages)
        except _base.PaginationError as exc:
            raise PaginationError(str(exc), exc.pages, exc.cursor) from exc

    # -- what the server sends us ----------------------------------------------------------------------------------

    async def _on_request(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        handler_version = self._handler_version
        route = handler_version.client_routes.get(method) if handler_version is not None else None
        if (
            route is None
            or method not in self._implemented
            # A method the negotiated version does not define (elicitation on 2025-03-26) is not served either.
            or (self._spec is not None and method not in self._spec.client_routes)
        ):
            raise MethodNotFound(method)
        handler: Callable[..., Any] = getattr(self._handlers, route.handler)
        returned = await handler(validate_params(route, params), ClientContext(self, method, context))
        # The answer must be valid in the negotiated version, whichever version's handlers (or a dict) produced it.
        negotiated = self._spec.client_routes[method] if self._spec is not None else route
        assert negotiated.result_type is not None  # requests always have a result type
        try:
            result = as_result(negotiated.result_type, returned, source=f"the result of {route.handler!r}")
        except ResultValidationError as exc:
            logger.error("%s", exc)
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR, f"Internal error: {exc.summary}", {"errors": exc.details}
            ) from None
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        # Caches first, so that a hook re-listing tools already sees the new list.
        for name in LIST_CHANGED.get(method, ()):
            self._caches[name].invalidate()
        handler_version = self._handler_version
        route = handler_version.client_notification_routes.get(method) if handler_version is not None else None
        if route is None:
            logger.debug("notification %r not handled", method)
            return
        try:
            typed = validate_params(route, params)
        except InvalidParams as exc:
            logger.warning("dropping %s with invalid params: %s", method, exc.data)
            return
        handler: Callable[..., Any] = getattr(self._handlers, route.handler)
        await handler(typed, ClientContext(self, method))
