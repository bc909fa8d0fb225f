"""The ``Context`` a tool, resource or prompt function receives when it declares a parameter annotated with it.

Where it sits: the bottom of the ``server`` layer. Created by the dispatch of either era (``dispatch.pipeline``)
for each incoming request and handed to the functions registered through ``authoring``; it wraps the session's
``RequestContext`` (progress, request id) and the request's connection view (negotiated version, client
capabilities, log level: a legacy ``dispatch.connection.ServerConnection`` or a ``dispatch.modern.ModernRequest``)
so that a function can talk back to the client: progress, log messages, sampling, elicitation and roots; and
reach the server's own side: its lifespan state (``Context[T].lifespan_state``, typed by the server's lifespan),
its resources (``read_resource``) and the HTTP request that carried the MCP request. What it needs of the
connection is the ``ConnectionView`` protocol below, so that ``authoring`` imports nothing of ``dispatch`` (which
builds on it).

Typed results: ``sample`` returns the negotiated version's ``CreateMessageResult``, ``list_roots`` its ``Root``
objects and ``read_resource`` its ``ReadResourceResult``, each typed as the union over the four versions
(``AnyCreateMessageResult`` ...: narrow by the discriminating fields, e.g. ``content.type == "text"``); ``elicit``
with a pydantic model returns ``Accepted[Model] | Declined | Cancelled`` (``elicitation``), with a JSON schema the
version's ``ElicitResult``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeAlias, cast, overload

import anyio
from pydantic import BaseModel, ValidationError

import mcp_bindings.v2024_11_05 as _v1
import mcp_bindings.v2025_03_26 as _v2
import mcp_bindings.v2025_06_18 as _v3
import mcp_bindings.v2025_11_25 as _v4
import mcp_bindings.v2026_07_28 as _v5

from ...jsonrpc.context import RequestContext
from ...jsonrpc.envelopes import RequestId
from ...protocol.results import ResultValidationError, field_errors
from ...protocol.version_unions import EVERY_VERSION, VersionUnions
from ...transports.http.server.session import close_sse_stream
from ...versions import PROGRESS_MESSAGE_VERSIONS, is_modern, versions_with_method
from .elicitation import ElicitOutcome, ModelT, elicit_outcome, requested_schema
from .errors import CapabilityError, InputRequired, MissingClientCapabilityError, ToolError
from .lifespan import StateT

if TYPE_CHECKING:
    from starlette.requests import Request as HTTPRequest  # only for the annotation: stdio servers never import it

    from ..auth.tokens import AccessToken

__all__ = [
    "LOG_LEVELS",
    "AnyCreateMessageResult",
    "AnyElicitResult",
    "AnyReadResourceResult",
    "AnyRoot",
    "CapabilityError",
    "ConnectionView",
    "Context",
    "InvalidClientResultError",
]

logger = logging.getLogger(__name__)

# What the client answers, as the negotiated version's models (the versions' classes are distinct). At run time
# each union is built on first use (module __getattr__ below): building it loads every version's models, which a
# server that speaks one version should not pay for when it starts.
if TYPE_CHECKING:
    AnyCreateMessageResult: TypeAlias = (
        _v1.CreateMessageResult
        | _v2.CreateMessageResult
        | _v3.CreateMessageResult
        | _v4.CreateMessageResult
        | _v5.CreateMessageResult
    )
    # elicitation exists from 2025-06-18 on
    AnyElicitResult: TypeAlias = _v3.ElicitResult | _v4.ElicitResult | _v5.ElicitResult
    AnyRoot: TypeAlias = _v1.Root | _v2.Root | _v3.Root | _v4.Root | _v5.Root
    AnyReadResourceResult: TypeAlias = (
        _v1.ReadResourceResult
        | _v2.ReadResourceResult
        | _v3.ReadResourceResult
        | _v4.ReadResourceResult
        | _v5.ReadResourceResult
    )
else:
    __getattr__ = VersionUnions(
        __name__,
        {
            "AnyCreateMessageResult": ("CreateMessageResult", EVERY_VERSION, "models"),
            "AnyElicitResult": ("ElicitResult", versions_with_method("elicitation/create"), "models"),
            "AnyRoot": ("Root", EVERY_VERSION, "models"),
            "AnyReadResourceResult": ("ReadResourceResult", EVERY_VERSION, "models"),
        },
    )

_UNKNOWN: Final = object()

# RFC 5424 severities in increasing order, as MCP names them.
LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class InvalidClientResultError(ResultValidationError, ToolError):
    """The client answered ``sampling/createMessage`` / ``elicitation/create`` with something the negotiated
    version's result model rejects (raised by ``Context.sample`` and ``Context.elicit``).

    The client's mistake, not the server's: it is logged once, at WARNING and without a traceback, where it is
    found, and it is also a ``ToolError``, so that a tool that lets it through answers ``isError`` with its message
    (logged at INFO) rather than being logged at ERROR with a traceback as a failing tool is."""

    def __init__(self, source: str, model: type[BaseModel], details: list[dict[str, Any]]) -> None:
        super().__init__(source, model, details)
        self.content = str(self)  # ToolError's: the text of the isError result


class ConnectionView(Protocol):
    """What a ``Context`` uses of the connection view it serves a request on (``dispatch.connection.ServerConnection``
    in the legacy era, ``dispatch.modern.ModernRequest`` in the modern one)."""

    @property
    def protocol_version(self) -> str:
        """The negotiated version ("" until ``initialize`` has been answered)."""
        ...

    @property
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (``mcp_bindings.v2025_06_18`` ...)."""
        ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...

    @property
    def client_info(self) -> dict[str, Any]: ...

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None: ...

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """Ask the client (``sampling/createMessage``, ``elicitation/create``, ``roots/list``) and return its answer
        as the version's result model; ``input_key`` names the question in the modern era (see ``mrtr``)."""
        ...

    @property
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded for the run this connection belongs to (None without a lifespan)."""
        ...

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        """``resources/read`` of ``uri`` answered by this server, as the negotiated version's result model."""
        ...

    @property
    def http_scope(self) -> Mapping[str, Any] | None:
        """The ASGI scope of the HTTP POST that carried the request being served (headers, client address, the
        authenticated identity; not the body); None over stdio and in memory."""
        ...


class Context(Generic[StateT]):
    """What a registered function can do for the request it is serving.

    Generic in the server's lifespan state: annotate the parameter ``Context[AppState]`` and ``lifespan_state`` is
    an ``AppState`` for the type checker (a bare ``Context`` is ``Context[Any]``)."""

    def __init__(self, connection: ConnectionView, request: RequestContext) -> None:
        self._connection = connection
        self._request = request
        self._http_request: Any = _UNKNOWN  # looked up on first use

    if not TYPE_CHECKING:

        def __class_getitem__(cls, params: object) -> type[Context]:
            # At run time Context[AppState] is Context itself: the parameter is for the type checker only, and the
            # authoring layer finds the context parameter by issubclass on its annotation.
            return cls

    # -- about the request and the connection ---------------------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        return self._request.request_id

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``_meta``, if any."""
        return self._request.meta

    @property
    def protocol_version(self) -> str:
        return self._connection.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared, as JSON: in ``initialize`` (legacy era), or in this request's
        ``_meta`` (modern era)."""
        return self._connection.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self._connection.client_info

    @property
    def connection(self) -> ConnectionView:
        """The connection view this request came in on (a ``ServerConnection`` or a ``ModernRequest``)."""
        return self._connection

    @property
    def lifespan_state(self) -> StateT:
        """What the server's lifespan yielded (``Server(lifespan=...)``), shared by every request of the run;
        None when the server has no lifespan."""
        state: StateT = self._connection.lifespan_state
        return state

    @property
    def http_request(self) -> HTTPRequest | None:
        """The HTTP request (a starlette ``Request``: headers, url, query, client address; not the body) whose POST
        carried this MCP request over streamable HTTP; None over stdio and in memory. Headers are what the client
        sent: check them, never trust them as an identity by themselves."""
        if self._http_request is _UNKNOWN:
            # Only a request over HTTP has a scope, and then starlette is loaded already.
            scope = self._connection.http_scope
            if scope is None:
                self._http_request = None
            else:
                from starlette.requests import Request

                self._http_request = Request(cast(Any, scope))  # read only: starlette's type asks for more
        request: HTTPRequest | None = self._http_request
        return request

    @property
    def auth(self) -> AccessToken | None:
        """The verified access token of the request (subject, client id, scopes, expiry, claims) when the server is
        protected (``run_http(auth=BearerAuth(...))``, see ``server.auth``); None when it is not, and over stdio."""
        scope = self._connection.http_scope
        if scope is None:
            return None
        from ...transports.http.server.auth import AUTH_SCOPE_KEY  # an HTTP request: the transport is loaded already

        identity: AccessToken | None = scope.get(AUTH_SCOPE_KEY)
        return identity

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers (case-insensitive); None when there is no HTTP request."""
        request = self.http_request
        return request.headers if request is not None else None

    # -- tasks ----------------------------------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (``@server.tool(task=...)``), None when it is not running as one."""
        run = getattr(self._connection, "task_run", None)  # set by the dispatch on a call that runs as a task
        record = getattr(run, "record", None)
        task_id: str | None = getattr(record, "task_id", None)
        return task_id

    async def task_status(self, message: str | None) -> None:
        """Set the task's ``statusMessage`` (what tasks/get shows while it works); nothing when the call is not
        running as a task, so the same function serves a plain call."""
        run = getattr(self._connection, "task_run", None)
        if run is not None:
            await run.set_status(message)

    async def start_task(self, status_message: str | None = None) -> None:
        """For a tool registered ``deferred_task=True``: create the task now and answer the request with its
        handle; the function goes on in the background. What it asked before was multi round-trip input of the
        request. Nothing when the call does not run as a task (the function then simply goes on)."""
        run = getattr(self._connection, "task_run", None)
        if run is not None:
            await run.start(status_message)

    # -- progress and logging -------------------------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for progress on this request (else nothing). In a
        task ``message`` also becomes the task's status message; the 2026-07-28 extension has no progress
        notifications, so only the status changes there, while a 2025-11-25 task's connection view relays them
        (``relays_progress``), as the text keeps the call's progress token valid for the task's life."""
        run = getattr(self._connection, "task_run", None)
        if run is not None and getattr(run, "record", None) is not None:
            if message is not None:
                await run.set_status(message)
            if not getattr(self._connection, "relays_progress", False):
                return
        if message is not None and self._connection.protocol_version not in PROGRESS_MESSAGE_VERSIONS:
            message = None  # 2024-11-05 progress notifications have no message
        # A 2025-11-25 task relays its progress with the related-task `_meta` (the text: every notification related to
        # a task MUST carry it); the task's connection view says which, a plain call's has none.
        related = getattr(self._connection, "related_meta", None)
        await self._request.report_progress(progress, total, message, related() if callable(related) else None)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` at ``level`` (one of ``LOG_LEVELS``) with any JSON ``data``.

        Dropped when the server did not declare ``logging`` or the level is below the one the client set with
        ``logging/setLevel``."""
        await self._connection.send_log(level, data, logger)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # -- the transport --------------------------------------------------------------------------------------------

    async def close_sse_stream(self) -> bool:
        """End the HTTP connection that carries this request's SSE stream, without ending the stream (SEP-1699,
        MCP 2025-11-25 "polling"): the client reconnects after the server's ``retry`` interval with GET and
        ``Last-Event-ID`` and receives what was sent meanwhile, this request's result included. Call it before long
        work so that no connection is held open for it.

        True if the connection was ended. False, and nothing done, when the client could not resume: not
        streamable HTTP, JSON answers, resumability off, or a client older than 2025-11-25 (no priming event)."""
        return await close_sse_stream()

    # -- requests to the client -----------------------------------------------------------------------------------

    async def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any] | BaseModel],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Mapping[str, Any] | None = None,
        include_context: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> AnyCreateMessageResult:
        """Ask the client's LLM for a completion (``sampling/createMessage``); returns the negotiated version's
        ``CreateMessageResult``. A str message is a user text message. Raises ``CapabilityError`` if the client did
        not declare ``sampling``, ``JSONRPCError`` if it refused, ``InvalidClientResultError`` (naming the
        fields) if its answer is not a valid ``CreateMessageResult`` of the negotiated version.

        In the modern era (2026-07-28) the question goes out as an input request of an ``InputRequiredResult``
        and the handler runs again with the answer (see ``mrtr``); ``input_key`` names it there (default: chosen by
        the runtime from the call's position)."""
        self._require("sampling", "sampling/createMessage")
        params: dict[str, Any] = {"messages": _sampling_messages(messages), "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
            "modelPreferences": dict(model_preferences) if model_preferences is not None else None,
            "includeContext": include_context,
            "metadata": dict(metadata) if metadata is not None else None,
        }
        params.update({key: value for key, value in optional.items() if value is not None})
        result = await self._connection.request_client(
            "sampling/createMessage", params, timeout=timeout, input_key=input_key
        )
        return cast("AnyCreateMessageResult", result)

    @overload
    async def elicit(
        self, message: str, schema: type[ModelT], *, timeout: float | None = None, input_key: str | None = None
    ) -> ElicitOutcome[ModelT]: ...

    @overload
    async def elicit(
        self, message: str, schema: Mapping[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> AnyElicitResult: ...

    async def elicit(
        self,
        message: str,
        schema: type[BaseModel] | Mapping[str, Any],
        *,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> ElicitOutcome[Any] | AnyElicitResult:
        """Ask the user for structured input (``elicitation/create``, 2025-06-18 and later).

        With a pydantic model (flat: primitive fields, enums, ``Literal`` choices), its fields are the
        ``requestedSchema`` and the answer is ``Accepted(data=<the model>)``, ``Declined()`` or ``Cancelled()``
        (``elicitation``); a field that cannot be asked for raises ``TypeError`` before anything is sent. With a JSON
        schema object, the negotiated version's ``ElicitResult`` (``action``, ``content``) as it came.
        Raises ``CapabilityError`` if the client did not declare ``elicitation`` or the protocol version has none,
        ``InvalidClientResultError`` (naming the fields) if the answer is not a valid ``ElicitResult`` of the
        negotiated version or an accepted answer does not fit the model. ``input_key``: see ``sample``."""
        self._require("elicitation", "elicitation/create")
        if isinstance(schema, type):
            requested = requested_schema(schema, self._connection.bindings)
        else:
            requested = dict(schema)
            requested.pop("title", None)
        params = {"message": message, "requestedSchema": requested}
        result = await self._connection.request_client(
            "elicitation/create", params, timeout=timeout, input_key=input_key
        )
        if not isinstance(schema, type):
            return cast("AnyElicitResult", result)
        try:
            return elicit_outcome(schema, result)
        except ValidationError as exc:
            source = "the client's accepted answer to elicitation/create"
            error = InvalidClientResultError(source, schema, field_errors(exc))
            logger.warning("%s", error)  # the client's mistake: one line (the class docstring)
            raise error from None

    async def list_roots(self, *, timeout: float | None = None, input_key: str | None = None) -> list[AnyRoot]:
        """The client's roots (``roots/list``): the directories or files it lets the server work on. Raises
        ``CapabilityError`` if the client did not declare ``roots``, ``InvalidClientResultError`` if its answer is
        not a valid ``ListRootsResult``. ``input_key``: see ``sample``."""
        self._require("roots", "roots/list")
        result = await self._connection.request_client("roots/list", {}, timeout=timeout, input_key=input_key)
        return list(cast("list[AnyRoot]", result.roots))

    async def gather(self, *calls: Awaitable[Any]) -> list[Any]:
        """Ask several questions at once: ``name, roots = await context.gather(context.elicit(...),
        context.list_roots())`` returns their answers in order. In the legacy era the requests run concurrently;
        in the modern era they go out together, as the input requests of one ``InputRequiredResult`` (one round),
        where awaiting them one by one would take a round each."""
        # In a task the questions wait for their answers (tasks/update), so they are asked concurrently, as in the
        # legacy era: all of them are outstanding at once.
        if is_modern(self.protocol_version) and self.task_id is None:
            answers: list[Any] = []
            missing: dict[str, dict[str, Any]] = {}
            for call in calls:
                try:
                    answers.append(await call)
                except InputRequired as needed:
                    missing.update(needed.requests)
                    answers.append(None)
            if missing:
                raise InputRequired(missing)
            return answers
        results: list[Any] = [None] * len(calls)

        async def run(index: int, call: Awaitable[Any]) -> None:
            results[index] = await call

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(run, index, call)
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        return results

    # -- this server's own resources ------------------------------------------------------------------------------

    async def read_resource(self, uri: str) -> AnyReadResourceResult:
        """Read one of this server's resources (a static one or a template match) as the client would, without
        sending anything: the negotiated version's ``ReadResourceResult`` (``contents``). Raises ``JSONRPCError``
        (-32002) for an unknown URI, -32602 for a template variable that does not convert, and whatever the
        resource's function raises."""
        result = await self._connection.read_resource(uri, self)
        return cast("AnyReadResourceResult", result)

    def _require(self, capability: str, method: str) -> None:
        if method not in self._connection.bindings.REQUEST_TYPES:
            raise CapabilityError(f"{method} does not exist in MCP {self.protocol_version}")
        if capability not in self.client_capabilities:
            if is_modern(self.protocol_version):
                raise MissingClientCapabilityError(capability, method)
            raise CapabilityError(f"the client did not declare the {capability!r} capability; cannot send {method}")


def _sampling_messages(messages: str | Sequence[str | Mapping[str, Any] | BaseModel]) -> list[dict[str, Any]]:
    items = [messages] if isinstance(messages, str) else list(messages)
    result: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            result.append({"role": "user", "content": {"type": "text", "text": item}})
        elif isinstance(item, BaseModel):
            result.append(item.model_dump(mode="json", by_alias=True))
        else:
            result.append(dict(item))
    return result
