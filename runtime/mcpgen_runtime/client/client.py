"""The typed MCP client: ``Client`` speaks one negotiated MCP version through the generated bindings, in either
era: the legacy one (``initialize``, 2024-11-05 .. 2025-11-25) or the modern one (2026-07-28: no handshake,
``_meta`` on every request, found with ``server/discover``; see ``modern`` for the modes).

Where it sits: in the ``client`` layer, on top of ``jsonrpc.session.Session`` (JSON-RPC ids, cancellation, progress,
ping) and any ``MessageStream`` (``transports``: stdio, streamable HTTP); below user code, which calls the generated
``ClientStub`` of the negotiated version (``client.api`` / ``client.stub(...)``) or the era-independent
conveniences (``call_tool``, ``get_prompt``, ``read_resource``, ``tools()`` ...). ``Client`` implements
``mcp_bindings.base.Peer``: every stub call comes through ``request``.

``Client`` is the public face and the place its parts are put together; each part has one job and is given what it
needs when it is made: ``ClientSettings`` (the options), ``HandlerDispatch`` (the user's handlers), ``Connection``
(the session, the era and version negotiated over it), ``RequestPath`` (gating, sending, input rounds, parsing),
``ServerLists`` (the cached lists), ``ToolHeaders`` (``x-mcp-header``), ``Subscriptions``
(``subscriptions/listen``) and ``SkillsClient`` (the skills extension, ``client.skills``). The methods here
delegate to them.

What a misbehaving server can do to a call is bounded: every request has a timeout (``DEFAULT_REQUEST_TIMEOUT``,
300 s, unless configured); an answer that arrives but cannot be delivered raises ``MalformedResponseError`` at once
where the transport can tell whose answer it was (``transports.undeliverable``); list walks stop on a repeated
cursor and after ``max_pages`` pages (``PaginationError``); an MRTR call stops after ``max_input_rounds`` rounds
(``InputRequiredError``). Server -> client requests and MRTR input requests are answered by a user subclass of a
generated ``ClientHandlers`` (``handlers.HandlerDispatch``).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack, cast

from mcp_bindings import base as _base

from ..jsonrpc.context import ProgressCallback, RequestContext
from ..jsonrpc.envelopes import JSONParams
from ..jsonrpc.session import Session
from ..transports.answer_guard import AnswerGuard
from ..transports.http.client.inbox import DEFAULT_MAX_MESSAGE_BYTES
from .capabilities import merge_capabilities
from .connection import Connection
from .errors import ClientError, InvalidResultError, VersionMismatchError
from .handlers import HandlerDispatch
from .input_required import DEFAULT_MAX_INPUT_ROUNDS
from .list_cache import ListCache
from .lists import ServerLists
from .modern import DEFAULT_DISCOVER_TIMEOUT, MODERN_VERSIONS
from .requests import RequestPath, model_params
from .settings import (
    DEFAULT_CLIENT_INFO,
    DEFAULT_INITIALIZE_TIMEOUT,
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    ClientSettings,
    Setting,
)
from .skills import SkillsClient
from .subscriptions import DEFAULT_MAX_PENDING, Subscription, Subscriptions
from .targets import HTTP, ConnectTarget, Stdio, open_target
from .task_info import TASK_RESULT_TYPE
from .tasks import TaskHandle, Tasks
from .tool_headers import ToolHeaders

__all__ = ["Client", "ClientContext"]

if TYPE_CHECKING:
    import httpx2  # only for the annotation: stdio clients never import it

    from ..transports.http.client.auth import HTTPAuth
    from ..transports.http.client.resume import SSEReconnect
    from .versions import (
        AnyCallToolResult,
        AnyClientHandlers,
        AnyClientStub,
        AnyGetPromptResult,
        AnyImplementation,
        AnyInitializeResult,
        AnyPrompt,
        AnyReadResourceResult,
        AnyResource,
        AnyResourceTemplate,
        AnyTool,
    )

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


class ClientOptions(TypedDict, total=False):
    """``Client``'s options, as keywords of every ``connect`` function (a misspelt one fails in mypy, and at run time
    with a TypeError naming it); their defaults and meaning are ``Client``'s."""

    handlers: AnyClientHandlers | None
    client_info: Mapping[str, Any] | None
    capabilities: Mapping[str, Any] | None
    request_timeout: float | None
    max_pages: int
    mode: str
    log_level: str | None
    max_input_rounds: int
    discover_timeout: float
    tasks: bool


class ConnectOptions(ClientOptions, total=False):
    """``ClientOptions`` plus the negotiation: ``version`` (a legacy version to require, which implies
    ``mode="legacy"`` when no mode is given; or a modern one: the same as ``mode=version``) and
    ``initialize_timeout`` (default ``DEFAULT_INITIALIZE_TIMEOUT``). ``mode`` defaults to ``"auto"``."""

    version: str | None
    initialize_timeout: float | None


class Client:
    """A connected MCP client. Create it with ``Client.connect(target)``: a URL, a command, an in-process ``Server``
    or a ``MessageStream`` (``targets``); ``connect_stdio`` and ``connect_http`` remain for existing code.

    Calls go through the conveniences that work in both eras, ``call_tool``, ``get_prompt``, ``read_resource``
    (typed by the negotiated version's result models) and the cached ``tools()`` / ``prompts()`` / ``resources()`` /
    ``resource_templates()``; or through ``client.api``, the negotiated version's generated ``ClientStub`` (narrow
    it with ``client.stub(v2026_07_28.client.ClientStub)``, which also takes per-call ``timeout`` and
    ``progress_callback``; in 2026-07-28 the connection fills in each request's ``_meta``).

    ``mode`` is how the era is chosen (``modern``): ``"auto"``, the default, asks ``server/discover`` and speaks
    2026-07-28 to a server that answers it, ``initialize`` to one that does not; ``"legacy"`` always sends
    ``initialize``; a modern version such as ``"2026-07-28"`` is adopted with no probe. ``request_timeout``
    (seconds, default 300; None waits forever) bounds every call that names no timeout; ``max_pages`` (default
    1000) bounds the list walks; ``max_input_rounds`` (default 10) the rounds of a multi round-trip request;
    ``log_level`` asks a modern server for ``notifications/message`` at that level or above (the legacy era has
    ``logging/setLevel`` instead); ``discover_timeout`` (default 10 s) is how long the auto mode waits for
    ``server/discover`` before taking the server for a legacy one. ``tasks`` (default False) declares the
    2026-07-28 tasks extension on every request, so that ``call_tool`` follows a task the server chooses to make,
    and in 2025-11-25 runs a tool that requires a task as one (``start_tool_task`` works either way; see ``tasks``).
    """

    # The options, read and written through to the settings the parts share (a change applies to the next call).
    request_timeout: Setting[float | None] = Setting()
    max_pages: Setting[int] = Setting()
    mode: Setting[str] = Setting()
    log_level: Setting[str | None] = Setting()
    max_input_rounds: Setting[int] = Setting()
    discover_timeout: Setting[float] = Setting()

    def __init__(
        self,
        *,
        handlers: AnyClientHandlers | None = None,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        max_pages: int = DEFAULT_MAX_PAGES,
        mode: str = "auto",
        log_level: str | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
        tasks: bool = False,
    ) -> None:
        """Prefer ``connect``; this only holds the configuration. ``capabilities`` is merged over the advertised
        ones (which come from the ``handlers`` methods actually overridden)."""
        self.settings = ClientSettings(
            dict(client_info or DEFAULT_CLIENT_INFO),
            dict(capabilities or {}),
            request_timeout=request_timeout,
            max_pages=max_pages,
            mode=mode,
            log_level=log_level,
            max_input_rounds=max_input_rounds,
            discover_timeout=discover_timeout,
            tasks=tasks,
        )
        self._dispatch = HandlerDispatch(handlers, lambda method, request: ClientContext(self, method, request))
        self._connection = Connection(self.settings, self._dispatch)
        self._tool_headers = ToolHeaders()
        # The lists are fetched through the request path, which in turn asks the lists for the tools' x-mcp-header
        # annotations: the lambda closes that loop (it runs only once both parts exist).
        self._lists = ServerLists(
            self._connection,
            self.settings,
            self._tool_headers,
            lambda method, params: self._requests.invoke(method, params, None, None),
            lambda: self.api,
        )
        self._requests = RequestPath(self._connection, self.settings, self._dispatch, self._lists)
        self._subscriptions = Subscriptions(self._connection, self._requests.call)
        self._tasks = Tasks(self._connection, self.settings, self._requests, self._dispatch)
        self._skills = SkillsClient(self._connection, self.settings, self._requests)
        self._api: AnyClientStub | None = None

    # -- connecting ------------------------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        target: ConnectTarget,
        *,
        guard_answers: bool = True,
        **options: Unpack[ConnectOptions],
    ) -> AsyncIterator[Client]:
        """Connect to ``target``, negotiate, and yield the client; everything opened is closed on exit.

        ``target`` is where the server is (``targets``): an ``http://`` or ``https://`` URL (streamable HTTP), a
        command such as ``[sys.executable, "server.py"]`` (a stdio server, started here and stopped on exit), an
        in-process ``Server`` (served in a background task: tests), a ``MessageStream`` already open, or
        ``Stdio(...)``, ``HTTP(...)`` or ``InProcess(...)`` for the transport's own settings (environment, headers,
        auth ...). Anything else raises ``TypeError`` (``ValueError`` for a ``str`` that is no URL) before anything
        starts.

        The options from ``handlers`` on are those of ``Client``. By default (``mode="auto"``) the server is asked
        ``server/discover`` and a modern one is spoken to in 2026-07-28; a legacy one gets ``initialize``.
        ``version`` (a legacy version) means ``mode="legacy"`` when no mode is given: exactly that version is
        offered and required; without it the legacy mode offers the newest legacy version and accepts any supported
        answer. A modern ``version`` is the same as ``mode=version``. Any other answer raises
        ``UnsupportedVersionError`` after the connection is closed. With ``guard_answers`` the stream is wrapped in
        ``transports.answer_guard.AnswerGuard`` (not over HTTP, whose transport does this itself). An ``auth`` with
        ``client_capabilities`` (e.g. ``EnterpriseAuthProvider``) adds them under the caller's ``capabilities``.
        """
        version = options.pop("version", None)
        initialize_timeout = options.pop("initialize_timeout", DEFAULT_INITIALIZE_TIMEOUT)
        client_options: ClientOptions = options
        if version in MODERN_VERSIONS:
            client_options["mode"], version = version, None
        elif version is not None:
            # Asking for a legacy version asks for the handshake era: no mode means the legacy one. An explicit
            # other mode contradicts it (auto could end up modern, where no such version exists).
            mode = client_options.setdefault("mode", "legacy")
            if mode != "legacy":
                raise ValueError(f"version={version!r} is a legacy version: it needs mode='legacy', not {mode!r}")
        # An auth hook whose grant needs a client capability (EnterpriseAuthProvider: the enterprise-managed
        # authorization extension) supplies it; the caller's own capabilities win where both say something.
        needed = getattr(getattr(target, "auth", None), "client_capabilities", None)
        if isinstance(needed, Mapping):
            client_options["capabilities"] = merge_capabilities(
                copy.deepcopy(dict(needed)), client_options.get("capabilities") or {}
            )
        client = cls(**client_options)  # the options are checked before anything is started
        async with open_target(target, guard_answers) as opened:
            stream = opened.stream
            http = False
            if hasattr(stream, "param_headers"):
                # The streamable HTTP client stream asks us for the Mcp-Param-* headers of each modern tools/call.
                stream.param_headers = client._tool_headers.for_call
                http = True
            if opened.guard_answers:
                stream = AnswerGuard(stream)
            session = Session(stream, request_handler=client._on_request, notification_handler=client._on_notification)
            async with session:
                client._connection.attach(session, http=http)
                spec = await client._connection.negotiate(version, initialize_timeout)
                client._api = spec.stub(client)
                yield client

    @classmethod
    def connect_stdio(
        cls,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        capture_stderr: bool = False,
        guard_answers: bool = True,
        **options: Unpack[ConnectOptions],
    ) -> AbstractAsyncContextManager[Client]:
        """Kept for existing code: ``connect(Stdio(command, env=env, cwd=cwd, capture_stderr=capture_stderr))``,
        which new code writes (or just ``connect(command)``)."""
        target = Stdio(command, env=env, cwd=cwd, capture_stderr=capture_stderr)
        return cls.connect(target, guard_answers=guard_answers, **options)

    @classmethod
    def connect_http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        reconnect: SSEReconnect | None = None,
        auth: HTTPAuth | None = None,
        **options: Unpack[ConnectOptions],
    ) -> AbstractAsyncContextManager[Client]:
        """Kept for existing code: ``connect(HTTP(url, headers=..., http_client=..., max_message_bytes=...,
        reconnect=..., auth=...))``, which new code writes (or just ``connect(url)``); see ``HTTP`` for each
        setting. An ``auth`` that cannot resolve a 401 / 403 raises ``AuthorizationError`` (as without ``auth``)."""
        target = HTTP(
            url,
            headers=headers,
            http_client=http_client,
            auth=auth,
            reconnect=reconnect,
            max_message_bytes=max_message_bytes,
        )
        return cls.connect(target, **options)

    # -- what was negotiated ---------------------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._connection.session

    @property
    def protocol_version(self) -> str:
        return self._connection.negotiated().version

    @property
    def is_modern(self) -> bool:
        """Whether the connection speaks a modern version (2026-07-28: no handshake, ``_meta`` per request)."""
        self._connection.negotiated()
        return self._connection.modern is not None

    @property
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (``mcp_bindings.v2025_11_25`` ...)."""
        return self._connection.negotiated().package

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities this client declared (in ``initialize``, or in every modern request's ``_meta``)."""
        return self._connection.client_capabilities

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's capabilities as sent (wire names): what gating reads; empty when unknown."""
        return self._connection.server_capabilities

    @property
    def initialize_result(self) -> AnyInitializeResult:
        self._connection.negotiated()
        result = self._connection.initialize_result
        if result is None:
            raise ClientError(f"MCP {self.protocol_version} has no initialize; see discover_result")
        return result

    @property
    def discover_result(self) -> Any:
        """The server's ``DiscoverResult`` (modern era, auto mode), else None."""
        return self._connection.discover_result

    @property
    def server_info(self) -> AnyImplementation | None:
        """The server's ``Implementation`` (name, version, ...) as the negotiated version's model: from
        ``initialize``, or in the modern era from the ``_meta`` of its latest result (None until one names it)."""
        state = self._connection.modern
        if state is None:
            return self.initialize_result.server_info
        info = state.server_info
        return cast("AnyImplementation", self.bindings.Implementation.model_validate(info)) if info else None

    @property
    def instructions(self) -> str | None:
        if self._connection.modern is None:
            return self.initialize_result.instructions
        return getattr(self._connection.discover_result, "instructions", None)

    @property
    def api(self) -> AnyClientStub:
        """The negotiated version's generated ``ClientStub``, sending through this client."""
        spec = self._connection.negotiated()
        if self._api is None:
            raise ClientError(f"the generated client stub of MCP {spec.version} is not available")
        return self._api

    def stub(
        self, stub_type: type[StubT], *, timeout: float | None = None, progress_callback: ProgressCallback | None = None
    ) -> StubT:
        """``client.api`` narrowed to ``stub_type`` (raising ``VersionMismatchError`` when the connection speaks
        another version), optionally bound to a ``timeout`` and a ``progress_callback`` for every call through it."""
        spec = self._connection.negotiated()
        if stub_type is not spec.stub:
            raise VersionMismatchError(f"{stub_type.__module__}.ClientStub used on an MCP {spec.version} connection")
        if timeout is None and progress_callback is None:
            return cast(StubT, self.api)
        return stub_type(_CallOptions(self, timeout, progress_callback))

    def allows(self, method: str) -> bool:
        """Whether the server's capabilities allow calling ``method`` (what ``request`` checks); True for any
        method of the version when they are unknown (a pinned modern mode)."""
        return self._requests.allows(method)

    # -- Peer: what the generated stubs send through --------------------------------------------------------------

    async def send_request(self, request_type: type[_base.Request[ParamsT, ResultT]], params: ParamsT, /) -> ResultT:
        return await self.request(request_type, params)

    async def send_notification(self, notification_type: type[_base.Notification[ParamsT]], params: ParamsT, /) -> None:
        await self._requests.notify(notification_type, params)

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
        self._requests.check_version(request_type)
        params_json = model_params(params)
        return cast(ResultT, await self._requests.invoke(request_type.METHOD, params_json, timeout, progress_callback))

    # -- calls by name, the same in both eras (no params model to build, and in 2026-07-28 no `_meta` either) -------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> AnyCallToolResult:
        """``tools/call``: the negotiated version's ``CallToolResult`` (input rounds handled, as for ``request``).
        Without ``Client(tasks=True)`` no task is asked for, and a server answering with one raises
        ``InvalidResultError``; with it, a task the server makes (2026-07-28) or the tool requires (2025-11-25) is
        followed to its result within ``timeout`` in all (``tasks``)."""
        params: dict[str, Any] = {"name": name, **({"arguments": dict(arguments)} if arguments is not None else {})}
        tasks = self._tasks
        deadline = tasks.deadline(timeout)  # a task's whole wait, its tools/call included
        handle: TaskHandle | None = None
        if tasks.modern:
            raw = await self._requests.gated_call("tools/call", params, timeout, progress_callback)
            if raw.get("resultType") == TASK_RESULT_TYPE:
                # Followed when this client declared the extension; the server's error when it did not.
                handle = tasks.handle_for_call(raw, declared=tasks.declares_extension())
            else:
                result = self._requests.parse("tools/call", raw)
        elif self.settings.tasks and tasks.runs_as_task(await self._lists.tool(name)):
            handle = await tasks.start_tool(name, arguments, ttl_ms=None, timeout=timeout, progress=progress_callback)
        else:
            result = await self._requests.invoke("tools/call", params, timeout, progress_callback)
        if handle is not None:
            return await handle.result(timeout=tasks.until(deadline))
        return cast("AnyCallToolResult", self._complete("tools/call", "CallToolResult", result))

    async def start_tool_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> TaskHandle:
        """``tools/call`` as a task, in either era: the ``TaskHandle`` to follow it (``status()``, ``result()``,
        ``cancel()``). In 2026-07-28 the server decides (the request declares the tasks extension; ``ttl_ms`` is
        not sent, the server sets it) and may answer at once: the handle is then completed, with ``task_id``
        None. In 2025-11-25 the request asks for a task with ``ttl_ms`` (``CapabilityError`` when the server did
        not declare ``tasks.requests.tools.call``). ``timeout`` bounds this request only."""
        return await self._tasks.start_tool(name, arguments, ttl_ms=ttl_ms, timeout=timeout, progress=progress_callback)

    async def task(self, task_id: str, *, timeout: float | None = None) -> TaskHandle:
        """The handle of a task started earlier (the text: clients SHOULD keep task ids to resume after a restart),
        with its current status (``tasks/get``)."""
        return await self._tasks.handle(task_id, timeout=timeout)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> AnyGetPromptResult:
        """``prompts/get``: the negotiated version's ``GetPromptResult`` (input rounds handled)."""
        params: dict[str, Any] = {"name": name, **({"arguments": dict(arguments)} if arguments is not None else {})}
        result = await self._requests.invoke("prompts/get", params, timeout, None)
        return cast("AnyGetPromptResult", self._complete("prompts/get", "GetPromptResult", result))

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> AnyReadResourceResult:
        """``resources/read``: the negotiated version's ``ReadResourceResult`` (input rounds handled)."""
        result = await self._requests.invoke("resources/read", {"uri": uri}, timeout, None)
        return cast("AnyReadResourceResult", self._complete("resources/read", "ReadResourceResult", result))

    def _complete(self, method: str, class_name: str, result: object) -> object:
        # The parsed result may be another of the method's result classes (2025-11-25's CreateTaskResult, a
        # modern InputRequiredResult): the request path answers input rounds and these calls ask for no task, so
        # anything but the complete result is the server's error, not a value to hand on under the wrong type.
        expected = getattr(self.bindings, class_name)
        if not isinstance(result, expected):
            raise InvalidResultError(
                f"{method} answered with a {type(result).__name__}, not the {class_name} that was asked for"
            )
        return result

    def request_meta(self) -> dict[str, Any]:
        """The ``_meta`` a modern request carries, as the client stamps it on every request it sends (for display
        or logging: 2026-07-28 params models need no ``_meta`` from the caller, see ``base.filled_by_sender``)."""
        return self._connection.request_meta()

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        ack_timeout: float | None = 30.0,
        max_pending: int = DEFAULT_MAX_PENDING,
        task_ids: Sequence[str] = (),
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream (modern era) for the list changes and resource updates asked for,
        and the status of the tasks ``task_ids`` (``notifications/tasks``, each a ``TaskInfo``), and yield it once
        the server acknowledged it (within ``ack_timeout`` seconds); see ``subscriptions``."""
        return self._subscriptions.listen(
            tools=tools,
            prompts=prompts,
            resources=resources,
            resource_uris=resource_uris,
            ack_timeout=ack_timeout,
            max_pending=max_pending,
            task_ids=task_ids,
        )

    # -- the cached lists ------------------------------------------------------------------------------------------

    async def tools(self) -> list[AnyTool]:
        """Every tool (all pages), cached until ``notifications/tools/list_changed`` (or, in the modern era, for
        the server's ``ttlMs``)."""
        return await self._lists.tools()

    async def prompts(self) -> list[AnyPrompt]:
        """Every prompt, cached until ``notifications/prompts/list_changed`` (modern era: or ``ttlMs``)."""
        return await self._lists.prompts()

    async def resources(self) -> list[AnyResource]:
        """Every resource, cached until ``notifications/resources/list_changed`` (modern era: or ``ttlMs``)."""
        return await self._lists.resources()

    async def resource_templates(self) -> list[AnyResourceTemplate]:
        """Every resource template, cached until ``notifications/resources/list_changed`` (modern era: or
        ``ttlMs``)."""
        return await self._lists.resource_templates()

    @property
    def skills(self) -> SkillsClient:
        """The server's skills (extension ``io.modelcontextprotocol/skills``, SEP-2640): ``list()``, ``get(uri)``,
        ``load(entry or uri)`` and the loaded skill's ``read(file)``, every fetched file verified against the listed
        entry (``client.skills``). Nothing is fetched until asked."""
        return self._skills

    def cache(self, name: str) -> ListCache[Any]:
        """The cache behind ``tools()`` and friends ("tools", "prompts", "resources", "resource_templates")."""
        return self._lists.cache(name)

    # -- what the server sends us ----------------------------------------------------------------------------------

    async def _on_request(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return await self._dispatch.answer_request(method, params, context, self._connection.spec)

    async def _on_notification(self, method: str, params: JSONParams) -> None:
        # Caches first, so that a hook re-listing tools already sees the new list.
        self._lists.on_notification(method, params)
        self._subscriptions.route(method, params)
        await self._dispatch.notify(method, params)
