"""The modern era (MCP 2026-07-28 and later): each request served on its own, as one call, with what its ``_meta``
declares.

Where it sits: in the ``server`` layer, beside ``connection`` (the legacy era) and over ``pipeline`` (the
middleware chain both eras share). ``serve_modern`` is the one-call dispatch of a modern request: over streamable
HTTP the transport calls ``Server.serve_modern`` (``answer_http``) for each modern POST; over stdio (any long-lived
stream) ``connection.ServerConnection`` recognizes a modern request (``recognize``: its ``_meta`` names a modern
``io.modelcontextprotocol/protocolVersion``, or it is ``server/discover`` / ``subscriptions/listen``, which only
the modern era has) and hands it to the same function. Either way no ``Session`` or connection is made for it: its
connection view, a ``ModernRequest``, lives as long as the request. The client's capabilities, identity and log
level are this request's, the version is the one it names, and no ``initialize`` is needed.

What the era changes, and where:
- dispatch through the version's generated ``SERVER_ROUTES`` (no ``initialize``, ``ping``, ``logging/setLevel``,
  ``resources/(un)subscribe``: -32601); params validated into its models, ``_meta`` included (a missing one, or one
  without ``protocolVersion`` / ``clientCapabilities``, is -32602); a version this server does not know is -32022;
- every result gets ``resultType`` ("complete") and ``_meta`` ``io.modelcontextprotocol/serverInfo``;
- ``Context.elicit`` / ``sample`` / ``list_roots`` become input requests of an ``InputRequiredResult``
  (``input_rounds``), on the methods whose route allows one (``tools/call``, ``prompts/get``, ``resources/read``);
  elsewhere they raise ``CapabilityError``, as the spec forbids ``InputRequiredResult`` on other requests;
- a capability the request's ``_meta`` did not declare is -32021 (``errors.MissingClientCapabilityError``);
- ``notifications/message`` only at or above the request's ``io.modelcontextprotocol/logLevel``, none without it;
- resource not found is -32602 (``errors.resource_not_found_code``);
- ``subscriptions/listen`` is served by the ``subscriptions.Listeners`` it is given: the connection's over stdio,
  one of its own over HTTP (registered with the server for change notifications while it lasts).

What a request costs (it should cost no more than a legacy one): what the server serves in a version is derived once
(``VersionServing``, rebuilt when ``Registry.serving_key`` changes) in a ``ModernServing`` that lasts the run; per
request there is a ``ModernRequest``, its ``Context`` and handlers object, an ``InputExchange`` only if input is
asked, and no reference cycle among them (each would wait for the cyclic GC, whose pauses made the p99); a tool's
plain text (``ValidResult``) is answered without re-validation, as in the legacy era; a ``_meta`` equal to one
validated before is not validated again (``request_meta``); without middleware, no ``run_request`` frame.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableSet
from functools import partial
from types import ModuleType
from typing import Any, Protocol

from pydantic import ValidationError

from ...jsonrpc.answers import call_handler
from ...jsonrpc.context import PING, OutgoingSession, ProgressCallback, RequestContext, SessionClosedError
from ...jsonrpc.envelopes import ErrorCode, InvalidParams, JSONParams, JSONRPCError, MethodNotFound, Request
from ...protocol.results import ValidResult, field_errors
from ...versions import (
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    LATEST_MODERN_VERSION,
    LEGACY_VERSIONS,
    LOG_LEVEL_META,
    MODERN_ONLY_METHODS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_META,
    SERVER_INFO_META,
    SUPPORTED_VERSIONS_NEWEST_FIRST,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..authoring.context import LOG_LEVELS, CapabilityError, Context
from ..authoring.errors import InputRequired, InvalidParamsError
from ..authoring.middleware import IncomingRequest
from ..tasks.engine import TaskEngine, TaskRun
from ..tasks.modern import (
    TASK_METHODS,
    answer_task_method,
    create_task_result,
    declares_tasks,
    missing_tasks_extension,
    runs_as_task,
)
from .extension_methods import answer_extension_method, extension_method
from .generated import not_initialized
from .input_rounds import InputExchange
from .modern_serving import ModernServing, VersionServing, completed_result, finished_result
from .outgoing import client_answer, log_message, read_own_resource
from .pipeline import run_request
from .request_meta import typed_modern_params
from .subscriptions import MAX_WATCHED_TASKS, Audience, Listeners, ListenOnly, TaskWatch
from .validation import source_of

__all__ = ["ExchangeIO", "ModernRequest", "ModernServing", "VersionServing", "answer_http", "recognize"]
__all__ += ["serve_modern", "unsupported_version"]

logger = logging.getLogger(__name__)

LISTEN_METHOD = "subscriptions/listen"


def unsupported_version(requested: str) -> JSONRPCError:
    """-32022 UnsupportedProtocolVersion, with the versions this server supports and the one requested."""
    return JSONRPCError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_VERSIONS_NEWEST_FIRST), "requested": requested},
    )


def recognize(method: str, params: JSONParams) -> tuple[str, Mapping[str, Any] | None] | None:
    """(version, ``_meta``) when this request belongs to the modern era, None for the legacy era; -32022 for a
    version this server does not speak, -32602 for a version that is not a string."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    requested = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, dict) else None
    if requested is None:
        # Methods only the modern era has are modern requests even without _meta (which they then lack: -32602).
        return (LATEST_MODERN_VERSION, None) if method in MODERN_ONLY_METHODS else None
    if not isinstance(requested, str):
        raise InvalidParams(f"Invalid params: _meta {PROTOCOL_VERSION_META} must be a string")
    if requested in MODERN_VERSIONS:
        return requested, meta
    if requested in LEGACY_VERSIONS and method not in MODERN_ONLY_METHODS:
        return None  # a legacy client that names its version in _meta too
    raise unsupported_version(requested)


def _owner_in(scope: Mapping[str, Any] | None) -> str | None:
    """Who made the request carried by the POST of ``scope``: its access token's ``owner`` (what ``Context.auth``
    reads), None when the server is not protected or there is no HTTP request. From the scope, not the ``Context``:
    an ``InputExchange`` holding the context would close a reference cycle (context -> request -> exchange)."""
    if scope is None:
        return None
    from ...transports.http.server.auth import AUTH_SCOPE_KEY  # an HTTP request: the transport is loaded already

    identity = scope.get(AUTH_SCOPE_KEY)
    return identity.owner if identity is not None else None


def _object_in(meta: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """A copy of the object at ``key`` of a request's ``_meta``; empty when there is none, or it is not an object."""
    value = meta.get(key) if meta else None
    return dict(value) if isinstance(value, Mapping) else {}


class ModernRequest:
    """One modern request: what it declared, and the connection view its handlers and ``Context`` use
    (``context.ConnectionView``, ``handlers.HandledConnection``). It holds nothing that holds it back (no
    ``Context``, no handlers), so that it is freed as soon as the request is answered, without the cyclic GC."""

    __slots__ = (
        "_client_capabilities",
        "_client_info",
        "_input",
        "_listeners",
        "_meta",
        "_outlet",
        "bindings",
        "capabilities",
        "exchange",
        "http_scope",
        "log_level",
        "protocol_version",
        "served",
        "server",
        "serving",
        "task_run",
    )

    def __init__(
        self,
        serving: ModernServing,
        version: str,
        meta: Mapping[str, Any] | None,
        *,
        outlet: OutgoingSession,
        listeners: Listeners | None = None,
        http_scope: Mapping[str, Any] | None = None,
    ) -> None:
        """``outlet``: where its notifications go (the connection's session, or the HTTP exchange); ``listeners``:
        what serves it if it is a ``subscriptions/listen``; ``http_scope``: the POST that carried it, if any."""
        self.serving = serving
        self.server = serving.server
        self.protocol_version = version
        self.served = served = serving.version(version)
        self.bindings: ModuleType = served.bindings
        self.capabilities: dict[str, Any] = served.capabilities  # the version's, shared: read only
        # The client's capabilities and identity: made from the _meta when first asked for (most requests never
        # ask); the log level now (every notifications/message consults it).
        self._meta = meta
        self._client_capabilities: dict[str, Any] | None = None
        self._client_info: dict[str, Any] | None = None
        level = meta.get(LOG_LEVEL_META) if meta else None
        self.log_level: str | None = level if level is not None and level in LOG_LEVELS else None
        self.http_scope = http_scope
        # The questions of a request that may ask the client for input, made when the handler first asks (or at
        # once when the request carries answers or a state to check): most such requests never ask.
        self.exchange: InputExchange | None = None
        self._input: tuple[str, dict[str, Any]] | None = None  # (method, params) of a request that may ask
        self._outlet, self._listeners = outlet, listeners
        self.task_run: TaskRun | None = None  # set when this tools/call runs as a task (Context's task methods)

    @property
    def lifespan_state(self) -> Any:
        return self.serving.lifespan_state

    # Validated with the params later; until then (middleware) only what has the right shape is believed.
    @property
    def client_capabilities(self) -> dict[str, Any]:
        if self._client_capabilities is None:
            self._client_capabilities = _object_in(self._meta, CLIENT_CAPABILITIES_META)
        return self._client_capabilities

    @client_capabilities.setter
    def client_capabilities(self, value: dict[str, Any]) -> None:
        self._client_capabilities = value

    @property
    def client_info(self) -> dict[str, Any]:
        if self._client_info is None:
            self._client_info = _object_in(self._meta, CLIENT_INFO_META)
        return self._client_info

    @client_info.setter
    def client_info(self, value: dict[str, Any]) -> None:
        self._client_info = value

    @property
    def subscriptions(self) -> set[str]:
        """Always empty: resources/subscribe is not a method of this era (a new set, so no request sees another's)."""
        return set()

    # -- dispatch -------------------------------------------------------------------------------------------------

    def route(self, method: str) -> Any:
        """The route of ``method`` if this request's version serves it, else -32601."""
        route = self.served.routes.get(method)
        if route is None:
            raise MethodNotFound(method)
        return route

    async def dispatch(self, method: str, params: JSONParams, context: Context[Any]) -> dict[str, Any]:
        """The pipeline's endpoint: the handler of ``method`` in this version's table; its result finished."""
        route = self.served.routes.get(method)
        if route is None:
            if method in TASK_METHODS and self.serving.tasks is not None:
                return self._task_answer(await self._answer_task_method(method, params))
            if (extension := extension_method(self.server, self.capabilities, method)) is not None:
                meta_model, metas = self.bindings.RequestMetaObject, self.serving.metas
                answer = await answer_extension_method(extension, method, params, context, meta_model, metas)
                return self._task_answer(answer)
            raise MethodNotFound(method)
        typed = typed_modern_params(route, params, self.serving.metas)
        if route.input_required_result is not None and isinstance(params, dict):
            self._input = (method, params)
            if "requestState" in params or "inputResponses" in params:
                self._exchange()  # a state not valid for this request is -32602 even if the handler asks nothing
        handler = getattr(self.served.handlers(self), route.handler)
        try:
            if method == "tools/call" and self.serving.tasks is not None:
                tool = self.server.tools.get(typed.name)
                if tool is not None and runs_as_task(tool.task_support, self.client_capabilities, tool.name):
                    return await self._call_as_task(self.serving.tasks, handler, route, typed, context, tool)
            returned = await handler(typed, context)
        except InputRequired:
            if self.exchange is None or not self.exchange.requested:
                raise
            try:
                interim = self.exchange.input_required_result()
            except ValueError as exc:
                logger.error("%s: %s", method, exc)
                raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "Internal error: the request state is too large") from None
            return self.finish(route.input_required_result, interim, "the InputRequiredResult", "input_required")
        if type(returned) is ValidResult and self.served.server_info_valid:
            return completed_result(self.served, returned, "complete")  # a tool's plain text: no source to name
        return self.finish(route.result_type, returned, partial(source_of, route, typed))  # named only if wrong

    # -- tasks (the io.modelcontextprotocol/tasks extension: server.tasks.modern) ---------------------------------

    async def _call_as_task(
        self, engine: TaskEngine, handler: Any, route: Any, typed: Any, context: Context[Any], tool: Any
    ) -> dict[str, Any]:
        """Run a tools/call as a task: answered with its ``CreateTaskResult`` once the task is stored; the tool
        runs in the engine, this request's view (``task_run``) sending its questions to the task's inputRequests.
        A deferred tool's body runs in the request's multi round-trip rounds until it starts its task."""

        async def body(run: TaskRun) -> dict[str, Any]:
            self.task_run = run
            returned = await handler(typed, context)
            return self.finish(route.result_type, returned, partial(source_of, route, typed))

        outcome = await engine.launch(
            body,
            principal=_owner_in(self.http_scope),
            protocol_version=self.protocol_version,
            request={"method": "tools/call", "name": tool.name, "arguments": typed.arguments},
            deferred=tool.deferred_task,
        )
        if isinstance(outcome, dict):
            return outcome  # a deferred tool that finished without starting a task: its plain result
        return self._task_answer(create_task_result(outcome), "task")

    async def _answer_task_method(self, method: str, params: JSONParams) -> dict[str, Any]:
        assert self.serving.tasks is not None
        declared = declares_tasks(self.client_capabilities)
        return await answer_task_method(self.serving.tasks, method, params, _owner_in(self.http_scope), declared)

    def _task_answer(self, data: dict[str, Any], result_type: str = "complete") -> dict[str, Any]:
        """A result with no model of this version (a tasks result, built from the record, valid by construction; an
        extension method's) with ``resultType`` and ``_meta`` serverInfo (after the result's own ``_meta``)."""
        data.setdefault("resultType", result_type)
        meta = data.get("_meta")
        data["_meta"] = {**(meta if isinstance(meta, Mapping) else {}), SERVER_INFO_META: self.served.server_info}
        return data

    def _exchange(self) -> InputExchange:
        """This request's ``InputExchange``, made on first use. The spec: the state is bound to the authenticated
        principal (see ``input_rounds``), read from the POST's scope only when a state is checked or sealed."""
        exchange = self.exchange
        if exchange is None:
            assert self._input is not None
            method, params = self._input
            exchange = InputExchange(self.serving.request_states, method, params, partial(_owner_in, self.http_scope))
            self.exchange = exchange
        return exchange

    def finish_middleware_result(self, incoming: IncomingRequest[Any], value: Any) -> dict[str, Any]:
        """A result a middleware returned itself, finished like a handler's (see ``middleware``)."""
        if incoming.method not in self.served.routes and isinstance(value, Mapping):
            if extension_method(self.server, self.capabilities, incoming.method) is not None:
                return self._task_answer(dict(value))
        route = self.route(incoming.method)
        return self.finish(route.result_type, value, f"a middleware's result for {incoming.method}")

    def finish(
        self, model: Any, returned: Any, source: str | Callable[[], str], result_type: str = "complete"
    ) -> dict[str, Any]:
        """``returned`` with ``resultType`` and ``_meta`` serverInfo, validated as ``model`` (``source``: whose it is,
        or a function giving it, for the error when it is not valid)."""
        return finished_result(self.served, self.protocol_version, model, returned, source, result_type)

    def server_info(self) -> dict[str, Any]:
        return self.served.server_info

    # -- the connection view (context.ConnectionView, handlers.HandledConnection) ---------------------------------

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """``notifications/message`` only if this request asked for logs, at or above its level."""
        if self.task_run is not None and self.task_run.record is not None:
            return  # the tasks extension: no notifications/message for a task (its request was answered already)
        params = log_message(level, data, logger_name, self.log_level)
        if params is not None and self.log_level is not None and "logging" in self.capabilities:
            await self._outlet.notify("notifications/message", params)

    async def request_client(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None, input_key: str | None = None
    ) -> Any:
        """The answer recorded for this question (``input_rounds``), or ``InputRequired`` to ask it. ``timeout``
        does not apply: the client answers in its own time, by retrying."""
        run = self.task_run
        if run is not None and run.record is not None:
            raw = await run.ask(method, params, input_key)  # the task waits in input_required for tasks/update

            def invalid_answer(model: str, exc: ValidationError) -> Exception:
                message = f"Invalid params: the answer to {method} is not a valid {model}"
                return InvalidParamsError(message, {"errors": field_errors(exc)})

            return client_answer(self.bindings, method, raw, invalid_answer)
        if self._input is None:
            raise CapabilityError(
                f"{method} cannot be asked while serving this request: in MCP {self.protocol_version} only tools/call,"
                " prompts/get and resources/read may ask the client for input"
            )
        exchange = self._exchange()
        key = exchange.next_key(method, input_key)
        raw = exchange.answer(key)
        if raw is None:
            raise exchange.ask(key, method, params)

        def invalid(model: str, exc: ValidationError) -> Exception:
            message = f"Invalid params: inputResponses[{key!r}] is not a valid {model}"
            return InvalidParamsError(message, {"errors": field_errors(exc)})

        return client_answer(self.bindings, method, raw, invalid)

    async def read_resource(self, uri: str, context: Context[Any]) -> Any:
        """``Context.read_resource`` in this era: ``resources/read`` answered by this server, without input rounds."""
        meta = context.meta or {}
        inner = ModernRequest(
            self.serving, self.protocol_version, meta, outlet=self._outlet, http_scope=self.http_scope
        )
        handlers = self.served.handlers(inner)
        return await read_own_resource(handlers, self.served.stub, {"uri": uri, "_meta": meta}, context, self.finish)

    async def listen(self, requested: Mapping[str, Any], context: Context[Any]) -> Any:
        if self._listeners is None:
            raise MethodNotFound(LISTEN_METHOD)
        watch = await self._task_watch(requested.get("taskIds"))
        return await self._listeners.listen(requested, self.capabilities, context.request_id, watch)

    async def _task_watch(self, task_ids: Any) -> TaskWatch | None:
        """The tasks a listen request asked to follow (``notifications.taskIds``): -32021 without the extension
        declared (its text requires it), -32602 for a malformed or too long list; agreed to are the ids of the
        requester's tasks that exist (others are left out of the acknowledgment, as the text allows)."""
        if task_ids is None:
            return None
        if not declares_tasks(self.client_capabilities):
            raise missing_tasks_extension("subscriptions/listen with taskIds")
        if not isinstance(task_ids, list) or not all(isinstance(task_id, str) for task_id in task_ids):
            raise InvalidParams("Invalid params: notifications.taskIds must be a list of strings")
        if len(task_ids) > MAX_WATCHED_TASKS:
            raise InvalidParams(f"Invalid params: at most {MAX_WATCHED_TASKS} taskIds per listen request")
        engine = self.serving.tasks
        if engine is None:
            return TaskWatch(None, [])
        principal = _owner_in(self.http_scope)
        known = [task_id for task_id in dict.fromkeys(task_ids) if await engine.store.get(task_id, principal)]
        return TaskWatch(engine.store, known)


async def serve_modern(
    serving: ModernServing,
    version: str,
    meta: Mapping[str, Any] | None,
    method: str,
    params: JSONParams,
    request: RequestContext,
    *,
    listeners: Listeners | None,
    http_scope: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Serve one modern request (recognized as of ``version``, with ``meta``): its ``ModernRequest``, the
    middleware, the version's handler table; the result (JSON-RPC errors raised). Notifications go to
    ``request.session``."""
    modern = ModernRequest(serving, version, meta, outlet=request.session, listeners=listeners, http_scope=http_scope)
    if not serving.middleware:  # what run_request does then, one call less
        return await modern.dispatch(method, params, Context(modern, request))
    return await run_request(
        serving.middleware, modern, method, params, request, modern.dispatch, modern.finish_middleware_result
    )


class ExchangeIO(Protocol):
    """What a modern request uses of its HTTP exchange (``transports.http.server.modern.ModernCall``): the POST's
    ASGI scope, and the response to send notifications on."""

    @property
    def scope(self) -> Mapping[str, Any]: ...

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None: ...


class _ExchangeOutlet:
    """``jsonrpc.context.OutgoingSession`` over one HTTP exchange: notifications go on its response; there are no
    server->client requests in this era (questions are input requests, ``input_rounds``)."""

    __slots__ = ("_io",)

    def __init__(self, io: ExchangeIO) -> None:
        self._io = io

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        raise SessionClosedError(f"no server->client requests in a modern HTTP exchange ({method})")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._io.notify(method, params)


async def answer_http(
    serving: ModernServing, request: Request, io: ExchangeIO, audiences: MutableSet[Audience]
) -> tuple[dict[str, Any], bytes]:
    """One modern request over HTTP, as one call (``transports.http.server.modern.ModernHandler``): served by
    ``serve_modern`` in the caller's task, its response as (message, frame). A ``subscriptions/listen`` request
    gets ``Listeners`` of its own, among ``audiences`` (the server's change notifications) while it lasts."""
    outlet = _ExchangeOutlet(io)
    context = RequestContext(outlet, request.id, request.method, request.params)
    listeners: Listeners | None = None
    audience: ListenOnly | None = None
    if request.method == LISTEN_METHOD:
        listeners = Listeners(serving.server, lambda: outlet)
        audience = ListenOnly(listeners)
        audiences.add(audience)
    try:
        serve = partial(_serve_http, serving, listeners, io.scope)
        return await call_handler(serve, request, context, answer_pings=False)
    finally:
        if audience is not None:
            audiences.discard(audience)


async def _serve_http(
    serving: ModernServing,
    listeners: Listeners | None,
    scope: Mapping[str, Any],
    method: str,
    params: JSONParams,
    request: RequestContext,
) -> dict[str, Any]:
    recognized = recognize(method, params)
    if recognized is None:
        # The body names a legacy version the headers agree with, but no session carries it: as a connection that
        # was never initialized answers.
        if method == PING:
            return {}
        raise not_initialized(method)
    version, meta = recognized
    return await serve_modern(serving, version, meta, method, params, request, listeners=listeners, http_scope=scope)
