"""The MCP request handlers, written once for every protocol version: the handler table both eras dispatch to.

Where it sits: in the ``server`` layer, between ``authoring.registry`` (what they answer from) and the two eras'
dispatch (``connection`` for the legacy era, ``modern`` for the modern one). ``generated.handlers_class`` derives,
per version, a class from ``Handlers`` and that version's generated ``ServerHandlers`` stub (so the stub's
``SERVER_ROUTES`` name these methods and its ``implemented()`` sees them as overrides); ``validation`` validates
params into the version's models before they are called, and what they return into the version's result models
(``protocol.results.as_result``) before it is dumped. The handlers build results as dicts from the ``authoring``
definitions and fit them to the version (dropping fields it does not have); a tool's own ``CallToolResult``
(``authoring.FullToolResult``) is passed through unfitted, to be validated as it is. What they use of the
request's connection view (a legacy ``ServerConnection`` or a ``ModernRequest``) is the ``HandledConnection``
protocol below, so that this module imports neither.

The handlers that call registered functions answer an ``errors.ProtocolError`` the function raised on purpose as
that JSON-RPC error (``ResourceNotFoundError`` with the negotiated version's code) and log it at INFO, without a
traceback; any other exception goes on to the session, which answers -32603 and logs the traceback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from ...jsonrpc.envelopes import InvalidParams, JSONRPCError, MethodNotFound
from ...protocol.results import ValidResult
from ...versions import SUPPORTED_VERSIONS_NEWEST_FIRST, is_modern
from ..authoring.caching import CacheHint
from ..authoring.context import Context
from ..authoring.definitions import call_function, validation_details
from ..authoring.errors import RESOURCE_NOT_FOUND, ProtocolError, ResourceNotFoundError, resource_not_found_code
from ..authoring.registry import Registry
from ..authoring.tool_definition import FullToolResult, ToolDef
from ..tasks.legacy import LegacyTasks
from .tool_headers import annotated_parameters, check_param_headers

__all__ = ["RESOURCE_NOT_FOUND", "HandledConnection", "Handlers", "fit", "protocol_error_answer", "tool_result"]

logger = logging.getLogger(__name__)

H = TypeVar("H", bound="Handlers")
Handler = Callable[[H, Any, Context], Awaitable[Any]]


def _answers_protocol_errors(method: Handler[H]) -> Handler[H]:
    """Wrap a handler that calls registered functions: a ``ProtocolError`` they raise is logged at INFO (no
    traceback: it was raised on purpose) and answered as the JSON-RPC error it is, fitted to the version."""

    @functools.wraps(method)
    async def handler(self: H, params: Any, context: Context) -> Any:
        try:
            return await method(self, params, context)
        except ProtocolError as exc:
            target = getattr(params, "name", None) or getattr(params, "uri", None)
            raise protocol_error_answer(exc, method.__name__, target, self._not_found_code()) from None

    return handler


def protocol_error_answer(exc: ProtocolError, handler: str, target: Any, not_found_code: int) -> JSONRPCError:
    """The JSON-RPC error a ``ProtocolError`` raised by a registered function is answered with (logged at INFO, no
    traceback: it was raised on purpose): itself, or for a resource not found the version's code."""
    logger.info("%s%s answered %s: %s", handler, f" {target!r}" if target else "", exc.code, exc.message)
    if isinstance(exc, ResourceNotFoundError):
        return JSONRPCError(not_found_code, exc.message, exc.data)
    return exc


def tool_result(outcome: dict[str, Any] | FullToolResult, bindings: Any) -> Any:
    """What ``ToolDef.call`` gave, as the handler's result: the tool's own result as it is (its extra keys are
    deliberate; validated by the caller), the runtime's valid text as it is (``ValidResult``), else fitted to the
    version's ``CallToolResult``."""
    if isinstance(outcome, FullToolResult):
        return outcome.value
    if type(outcome) is ValidResult:
        return outcome  # built by the runtime, valid as it is: nothing to fit or validate (see ValidResult)
    return fit(bindings.CallToolResult, outcome)


def fit(model: Any, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without the keys ``model`` does not define: the generated models keep unknown keys (peers send
    extensions), so fields of newer versions (title, outputSchema, ...) must be dropped for older ones by hand."""
    known = wire_names(model)
    return {key: value for key, value in data.items() if key in known}


@functools.cache  # bounded by the generated model classes (a few hundred per version)
def wire_names(model: Any) -> frozenset[str]:
    """The keys ``model`` defines on the wire (a field's alias, else its name); cached: ``fit`` runs per result."""
    return frozenset(info.alias or name for name, info in model.model_fields.items())


class HandledConnection(Protocol):
    """What the handlers use of the connection view they answer on (``connection.ServerConnection``,
    ``modern.ModernRequest``): what is served and
    what was negotiated, which they read, and the client's state that ``initialize``, ``logging/setLevel`` and
    ``resources/(un)subscribe`` record."""

    @property
    def server(self) -> Registry: ...

    @property
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (during ``initialize``: of the one being chosen)."""
        ...

    @property
    def capabilities(self) -> dict[str, Any]:
        """The server capabilities, fitted to that version."""
        ...

    @property
    def subscriptions(self) -> set[str]: ...

    async def listen(self, requested: Mapping[str, Any], context: Context) -> Any:
        """Serve a ``subscriptions/listen`` request with filter ``requested`` (JSON) until it is cancelled."""
        ...

    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    log_level: str | None


class Handlers:
    """The request handlers, written once for every version: each negotiated version gets a subclass that also
    derives from that version's generated ``ServerHandlers`` (``generated.handlers_class``). Results are built
    as dicts and fitted to the version; the era's dispatch validates them into its result models."""

    def __init__(self, connection: HandledConnection) -> None:
        self.connection = connection
        self.server = connection.server

    def _result(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        return fit(getattr(self.connection.bindings, name), data)

    def _not_found_code(self) -> int:
        return resource_not_found_code(self.connection.bindings.PROTOCOL_VERSION)

    def _fitted(self, name: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        model = getattr(self.connection.bindings, name)
        return [fit(model, item) for item in items]

    async def initialize(self, params: Any, context: Context) -> Any:
        connection, server = self.connection, self.server
        connection.client_capabilities = params.capabilities.model_dump(mode="json")
        connection.client_info = params.client_info.model_dump(mode="json")
        info = {"name": server.name, "version": server.version, **({"title": server.title} if server.title else {})}
        result = {
            "protocolVersion": connection.bindings.PROTOCOL_VERSION,
            "capabilities": connection.capabilities,
            "serverInfo": fit(connection.bindings.Implementation, info),
        }
        if server.instructions is not None:
            result["instructions"] = server.instructions
        return self._result("InitializeResult", result)

    async def discover(self, params: Any, context: Context) -> Any:
        server = self.server
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS_NEWEST_FIRST),
            "capabilities": self.connection.capabilities,
            **self._cache("server/discover"),
        }
        if server.instructions is not None:
            result["instructions"] = server.instructions
        return self._result("DiscoverResult", result)

    async def subscriptions_listen(self, params: Any, context: Context) -> Any:
        requested = params.notifications.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return await self.connection.listen(requested, context)

    def _cache(self, method: str, hint: CacheHint | None = None) -> dict[str, Any]:
        """The cache hint fields (dropped by ``_result`` for versions before 2026-07-28, which have none)."""
        return (hint or self.server.cache_hints[method]).wire()

    async def ping(self, params: Any, context: Context) -> Any:
        return self._result("EmptyResult", {})

    async def set_level(self, params: Any, context: Context) -> Any:
        self.connection.log_level = params.level
        return self._result("EmptyResult", {})

    # -- tools ----------------------------------------------------------------------------------------------------

    async def list_tools(self, params: Any, context: Context) -> Any:
        tools = self._fitted("Tool", [tool.describe() for tool in self.server.tools.values()])
        return self._result("ListToolsResult", {"tools": tools, **self._cache("tools/list")})

    @_answers_protocol_errors
    async def call_tool(self, params: Any, context: Context) -> Any:
        tool = self._tool(params.name)
        if getattr(self.connection, "legacy_tasks", None) is not None:
            # 2025-11-25 with the tasks capability declared (else a params.task is ignored, as the text says).
            task_support = tool.task_support
            if getattr(params, "task", None) is not None:
                if task_support == "forbidden":  # the text: servers SHOULD answer -32601
                    raise MethodNotFound(f"tools/call as a task: tool {tool.name!r} does not run as a task")
                return await self.connection.start_task(params, context)  # type: ignore[attr-defined]
            if task_support == "required":  # the text: servers MUST answer -32601
                raise MethodNotFound(f"tools/call without a task: tool {tool.name!r} runs only as a task")
        return await self._run_tool(tool, params, context)

    @_answers_protocol_errors
    async def run_tool(self, params: Any, context: Context) -> Any:
        """``tools/call`` without deciding about tasks: what the body of a tool running as a task calls."""
        return await self._run_tool(self._tool(params.name), params, context)

    def _tool(self, name: str) -> ToolDef:
        tool = self.server.tools.get(name)
        if tool is None:
            raise InvalidParams(f"Unknown tool: {name}")
        return tool

    async def _run_tool(self, tool: ToolDef, params: Any, context: Context) -> Any:
        # Over HTTP in the modern era the x-mcp-header parameters come as Mcp-Param-* headers too: check them. The
        # era and the tool's annotations first: looking the HTTP request up costs a starlette Request.
        if (
            is_modern(self.connection.bindings.PROTOCOL_VERSION)
            and annotated_parameters(tool.input_json_schema)
            and (headers := context.headers) is not None
        ):
            check_param_headers(tool.name, tool.input_json_schema, params.arguments, headers)
        return tool_result(await tool.call(params.arguments, context), self.connection.bindings)

    # -- resources ------------------------------------------------------------------------------------------------

    async def list_resources(self, params: Any, context: Context) -> Any:
        resources = self._fitted("Resource", [r.describe() for r in self.server.resources.values()])
        return self._result("ListResourcesResult", {"resources": resources, **self._cache("resources/list")})

    async def list_resource_templates(self, params: Any, context: Context) -> Any:
        templates = self._fitted("ResourceTemplate", [t.describe() for t in self.server.templates.values()])
        cache = self._cache("resources/templates/list")
        return self._result("ListResourceTemplatesResult", {"resourceTemplates": templates, **cache})

    @_answers_protocol_errors
    async def read_resource(self, params: Any, context: Context) -> Any:
        uri: str = params.uri
        resource = self.server.resources.get(uri)
        if resource is not None:
            contents = await resource.read(uri, context)
            return self._result(
                "ReadResourceResult", {"contents": contents, **self._cache("resources/read", resource.cache)}
            )
        for template in self.server.templates.values():
            variables = template.match(uri)
            if variables is None:
                continue
            try:
                contents = await template.read(uri, variables, context)
            except ValidationError as exc:
                raise InvalidParams(f"Invalid URI for {template.uri_template}", validation_details(exc)) from None
            cache = self._cache("resources/read", template.cache)
            return self._result("ReadResourceResult", {"contents": contents, **cache})
        raise JSONRPCError(self._not_found_code(), "Resource not found", {"uri": uri})

    @_answers_protocol_errors
    async def subscribe(self, params: Any, context: Context) -> Any:
        if self.server.subscribe_hook is not None:
            # First: a hook that refuses (ResourceNotFoundError, ...) leaves no subscription behind.
            await call_function(functools.partial(self.server.subscribe_hook, params.uri), {})
        self.connection.subscriptions.add(params.uri)
        return self._result("EmptyResult", {})

    @_answers_protocol_errors
    async def unsubscribe(self, params: Any, context: Context) -> Any:
        self.connection.subscriptions.discard(params.uri)
        if self.server.unsubscribe_hook is not None:
            await call_function(functools.partial(self.server.unsubscribe_hook, params.uri), {})
        return self._result("EmptyResult", {})

    # -- prompts and completions ----------------------------------------------------------------------------------

    async def list_prompts(self, params: Any, context: Context) -> Any:
        prompts = self._fitted("Prompt", [p.describe() for p in self.server.prompts.values()])
        return self._result("ListPromptsResult", {"prompts": prompts, **self._cache("prompts/list")})

    @_answers_protocol_errors
    async def get_prompt(self, params: Any, context: Context) -> Any:
        prompt = self.server.prompts.get(params.name)
        if prompt is None:
            raise InvalidParams(f"Unknown prompt: {params.name}")
        try:
            rendered = await prompt.render(params.arguments, context)
        except ValidationError as exc:
            raise InvalidParams(f"Invalid arguments for prompt {params.name!r}", validation_details(exc)) from None
        return self._result("GetPromptResult", rendered)

    @_answers_protocol_errors
    async def complete(self, params: Any, context: Context) -> Any:
        ref = params.ref
        if ref.type == "ref/prompt":
            if ref.name not in self.server.prompts:
                raise InvalidParams(f"Unknown prompt: {ref.name}")
            key = ("ref/prompt", ref.name, params.argument.name)
        else:
            if ref.uri not in self.server.templates and ref.uri not in self.server.resources:
                raise InvalidParams(f"Unknown resource template: {ref.uri}")
            key = ("ref/resource", ref.uri, params.argument.name)
        completion = self.server.completions.get(key)
        extra = getattr(params, "context", None)
        arguments = dict(extra.arguments or {}) if extra is not None else {}
        found = (
            await completion.complete(params.argument.value, arguments, context)
            if completion is not None
            else {"values": [], "total": 0, "hasMore": False}
        )
        return self._result("CompleteResult", {"completion": found})

    # -- tasks (2025-11-25; served only when the connection declared the tasks capability) -------------------------

    def _tasks(self) -> tuple[LegacyTasks, str]:
        """The connection's tasks and the requestor they are bound to (see ``server.tasks.legacy``)."""
        tasks: LegacyTasks | None = getattr(self.connection, "legacy_tasks", None)
        if tasks is None:
            raise MethodNotFound("tasks")
        principal: str = self.connection.task_principal()  # type: ignore[attr-defined]
        return tasks, principal

    async def get_task(self, params: Any, context: Context) -> Any:
        tasks, principal = self._tasks()
        return self._result("GetTaskResult", await tasks.get(params.task_id, principal))

    async def get_task_payload(self, params: Any, context: Context) -> Any:
        tasks, principal = self._tasks()
        # Not fitted: the payload is the tool's own result (validated as the version's open GetTaskPayloadResult).
        return await tasks.result(params.task_id, principal)

    async def list_tasks(self, params: Any, context: Context) -> Any:
        tasks, principal = self._tasks()
        cursor = getattr(params, "cursor", None) if params is not None else None
        return self._result("ListTasksResult", await tasks.list(principal, cursor))

    async def cancel_task(self, params: Any, context: Context) -> Any:
        tasks, principal = self._tasks()
        return self._result("CancelTaskResult", await tasks.cancel(params.task_id, principal))
