"""What a server serves: its name and instructions, the registered tools, resources, resource templates, prompts,
completions and subscribe hooks, and the capabilities they imply.

Where it sits: in the ``server`` layer, above ``authoring`` (the decorators build its definitions) and below
``handlers`` and ``connection`` (which answer from a ``Registry`` without knowing about the ``Server`` that owns the
connections) and ``server`` (``Server`` is a ``Registry`` that also serves). Nothing here knows about connections,
sessions or protocol versions.

Extensions add methods of their own (``serve_extension_method``): an extension method is answered by its handler,
in the eras whose capabilities declare its extension (``dispatch.extension_methods``), never instead of a method of
the protocol version the request speaks.

The decorators fail loudly, at registration: ``@server.tool`` and ``@server.prompt`` work with or without
parentheses, ``@server.resource`` without its URI raises a ``TypeError`` that says what to write; a second tool,
prompt, resource (same URI), resource template (same URI template) or completion (same target) raises
``ValueError`` unless ``replace=True``; tool names follow the spec's rules (2025-11-25 server/tools "Tool names");
a function that cannot be described (see ``signatures``) raises ``TypeError`` naming it and the parameter.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

from ...protocol.meta import checked_meta
from .caching import CacheHint, hints_with_defaults
from .definitions import (
    AnyFunction,
    CompletionDef,
    PromptDef,
    ResourceDef,
    ResourceInfo,
    ResourceTemplateDef,
    description_of,
)
from .tool_definition import TASK_SUPPORT, TaskSupport, ToolDef

__all__ = ["TOOL_NAME", "ExtensionHandler", "ExtensionMethod", "Registry"]

F = TypeVar("F", bound=AnyFunction)
K = TypeVar("K")
D = TypeVar("D")

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"  # the 2026-07-28 tasks extension's identifier
TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""What a tool name may be (MCP 2025-11-25, server/tools "Tool names"): 1 to 128 of A-Z, a-z, 0-9, _, - and ."""


ExtensionHandler = Callable[[dict[str, Any], Any], Awaitable[Mapping[str, Any]]]
"""An extension method's handler: ``(params, context)`` -> the result (JSON). ``params`` is the request's params as
sent (``{}`` when there were none), to be checked by the handler: it is a peer's input. A ``JSONRPCError`` (e.g.
``jsonrpc.envelopes.InvalidParams``) or ``ProtocolError`` it raises is the answer; the era adds what every result of
it carries (in 2026-07-28 ``resultType`` and ``_meta`` serverInfo). ``context`` is the request's ``Context``."""


@dataclass(frozen=True, slots=True)
class ExtensionMethod:
    """A method an extension adds (``Registry.serve_extension_method``): served where ``extension`` is declared."""

    extension: str
    handler: ExtensionHandler


def _defining_scope(depth: int = 2) -> dict[str, Any] | None:
    """The local names of the scope a decorator is applied in (``depth`` frames up from the caller): string
    annotations (``from __future__ import annotations``) may name classes defined there. None at module level,
    where the function's own globals are that scope."""
    frame = sys._getframe(depth)
    return None if frame.f_locals is frame.f_globals else dict(frame.f_locals)


def _add(kind: str, table: dict[K, D], key: K, definition: D, replace: bool) -> None:
    existing = table.get(key)
    if existing is not None and not replace:
        raise ValueError(
            f"{kind} {key!r} is already registered (by {_label(existing)}); pass replace=True to replace it, or give "
            "this one another name"
        )
    table[key] = definition


class ToolTable(dict[str, ToolDef]):
    """``Registry.tools``: a dict that counts its changes (``generation``), so that what is derived from every tool
    (``Registry.serves_tasks``, part of ``serving_key``, read by every modern request) is recomputed when a tool is
    added, replaced or removed, by any means, rather than walked per request (a server of 100 tools paid 6 us)."""

    __slots__ = ("generation",)

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0

    def __setitem__(self, key: str, value: ToolDef) -> None:
        super().__setitem__(key, value)
        self.generation += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.generation += 1

    def pop(self, *args: Any) -> Any:
        self.generation += 1
        return super().pop(*args)

    def popitem(self) -> tuple[str, ToolDef]:
        self.generation += 1
        return super().popitem()

    def clear(self) -> None:
        self.generation += 1
        super().clear()

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.generation += 1
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.generation += 1
        return super().setdefault(key, default)

    def __ior__(self, other: Any) -> Any:  # type: ignore[misc]  # (dict types |= by its __or__; same behaviour)
        self.generation += 1
        return super().__ior__(other)


def _label(definition: Any) -> str:
    fn = getattr(definition, "fn", None) or getattr(definition, "handler", None)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


class Registry:
    """The definitions of an MCP server, filled by the decorators; ``Server`` adds serving them."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        logging: bool = True,
        cache_hints: Mapping[str, CacheHint] | None = None,
    ) -> None:
        """``logging``: declare the logging capability (``Context.log`` sends nothing without it).
        ``cache_hints``: method -> ``CacheHint`` for ``server/discover``, the lists and ``resources/read`` (MCP
        2026-07-28 caching; the others keep ``caching.DEFAULT_CACHE_HINTS``: TTL 0, lists public, reads private)."""
        self.name, self.version, self.title, self.instructions = name, version, title, instructions
        self.logging = logging
        self.cache_hints: dict[str, CacheHint] = hints_with_defaults(cache_hints)
        self.tools: dict[str, ToolDef] = ToolTable()
        self._tasks_served: tuple[int, bool] = (-1, False)  # (tools' generation, serves_tasks then)
        self.tool_scopes: dict[str, frozenset[str]] = {}  # tool name -> scopes a call needs (server.auth)
        self.resources: dict[str, ResourceDef] = {}
        self.templates: dict[str, ResourceTemplateDef] = {}
        self.prompts: dict[str, PromptDef] = {}
        self.completions: dict[tuple[str, str, str], CompletionDef] = {}
        self.subscribe_hook: AnyFunction | None = None
        self.unsubscribe_hook: AnyFunction | None = None
        # Extension identifier -> its settings, declared under ``capabilities.extensions`` (MCP 2026-07-28; the
        # 2025-11-25 fitting drops them): see ``declare_extension``.
        self.extensions: dict[str, dict[str, Any]] = {}
        # Method -> the extension method answering it (serve_extension_method).
        self.extension_methods: dict[str, ExtensionMethod] = {}

    # -- registration ---------------------------------------------------------------------------------------------

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        replace: bool = False,
        scopes: Collection[str] | None = None,
        task: TaskSupport = "forbidden",
        deferred_task: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        replace: bool = False,
        scopes: Collection[str] | None = None,
        task: TaskSupport = "forbidden",
        deferred_task: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a tool (``@server.tool`` or ``@server.tool(...)``): name from the function (it must follow the
        spec's tool-name rules: 1-128 of ``A-Za-z0-9_.-``), description from its docstring, ``inputSchema`` from its
        parameters, ``outputSchema`` from its return annotation.

        ``structured_output``: None (default) makes the output structured when the return annotation is a pydantic
        model, a TypedDict, a dataclass or ``dict[str, T]`` (not a bare ``dict``: pass True for that); True forces
        it (any of these), False never. ``input_schema`` / ``output_schema``: JSON schemas published verbatim instead
        of the derived ones (see ``authoring.ToolDef.build`` for how arguments are then passed). ``replace``: replace
        a tool of the same name instead of raising ``ValueError``. ``scopes``: OAuth scopes a call of it needs on a
        server protected by ``server.auth.BearerAuth`` (a token without them is answered 403 ``insufficient_scope``);
        ignored by an unprotected server. ``meta``: the tool's ``_meta`` in ``tools/list`` (extension data, e.g.
        MCP Apps' ``ui``: ``authoring.apps.app_tool`` builds it): string keys and JSON values, else ``TypeError``;
        versions before 2025-06-18, which have no ``_meta`` there, list the tool without it.

        ``task``: whether a call may run as a task (the spec's ``execution.taskSupport``): "forbidden" (default),
        "optional" or "required". The same function serves both eras: in a task, ``Context.task_status(...)`` sets
        the task's status message, ``elicit`` / ``sample`` put the task in ``input_required`` until the client
        answers, and ``tasks/cancel`` cancels the function (anyio cancellation). ``deferred_task``: the function runs
        in the request (asking for input by multi round-trip in 2026-07-28) until it calls
        ``await context.start_task()``, where the task is created and the rest runs in the background.

        A tool that returns a generated ``CallToolResult``, or is annotated ``-> CallToolResult`` and returns a dict,
        answers with that whole result, validated against the negotiated version (see ``authoring``); one that
        raises ``ToolError`` answers ``isError: true`` with its content."""
        localns = _defining_scope()

        def register(fn: F) -> F:
            tool = ToolDef.build(
                fn,
                None if callable(name) else name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
                input_schema=input_schema,
                output_schema=output_schema,
                meta=meta,
                localns=localns,
            )
            if task not in TASK_SUPPORT:
                raise ValueError(f"task={task!r} ({_label(tool)}): use one of {', '.join(map(repr, TASK_SUPPORT))}")
            if deferred_task and task == "forbidden":
                raise ValueError(f"deferred_task=True ({_label(tool)}) needs task='optional' or task='required'")
            tool.task_support, tool.deferred_task = task, deferred_task
            if not isinstance(tool.name, str) or not TOOL_NAME.fullmatch(tool.name):
                raise ValueError(
                    f"tool name {tool.name!r} ({_label(tool)}): MCP tool names are 1 to 128 characters of A-Z, a-z, "
                    "0-9, '_', '-' and '.'; pass name= with one"
                )
            _add("tool", self.tools, tool.name, tool, replace)
            if scopes:
                self.tool_scopes[tool.name] = frozenset(scopes)
            else:
                self.tool_scopes.pop(tool.name, None)
            return fn

        if callable(name):  # @server.tool without parentheses
            return register(name)
        return register

    def remove_tool(self, name: str) -> None:
        del self.tools[name]
        self.tool_scopes.pop(name, None)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        cache: CacheHint | None = None,
        replace: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{variables}`` registers a resource template whose variables are bound
        to the function's parameters of the same names. ``cache``: the cache hint of its reads (default: the
        server's for ``resources/read``). ``replace``: replace the resource (template) of the same URI (template)
        instead of raising ``ValueError``. ``meta``: its ``_meta`` in ``resources/list`` (or
        ``resources/templates/list``), string keys and JSON values, else ``TypeError``; a read's contents carry
        ``_meta`` only if the function returns it (``{"text": ..., "_meta": ...}``)."""
        if not isinstance(uri, str):
            what = getattr(uri, "__name__", type(uri).__name__)
            raise TypeError(
                f'@resource needs the resource\'s URI: write @server.resource("scheme://path") (or a URI template '
                f'such as "scheme://items/{{id}}") above {what}, not @server.resource'
            )
        localns = _defining_scope()

        def register(fn: F) -> F:
            info: ResourceInfo = {
                "name": fn.__name__ if name is None else name,
                "title": title,
                "description": description_of(fn, description),
                "mime_type": mime_type,
                "cache": cache,
                "meta": checked_meta(f"resource {uri!r}", meta),
            }
            if "{" in uri:
                template = ResourceTemplateDef.build(fn, uri, localns=localns, **info)
                _add("resource template", self.templates, uri, template, replace)
            else:
                _add("resource", self.resources, uri, ResourceDef.build(fn, uri, localns=localns, **info), replace)
            return fn

        return register

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        replace: bool = False,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        replace: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a prompt (``@server.prompt`` or ``@server.prompt(...)``); its parameters are the prompt's
        arguments (required unless they have a default). ``replace``: replace a prompt of the same name instead of
        raising ``ValueError``."""
        localns = _defining_scope()

        def register(fn: F) -> F:
            prompt = PromptDef.build(fn, None if callable(name) else name, title, description, localns=localns)
            _add("prompt", self.prompts, prompt.name, prompt, replace)
            return fn

        if callable(name):  # @server.prompt without parentheses
            return register(name)
        return register

    def completion(
        self, *, argument: str, prompt: str | None = None, resource: str | None = None, replace: bool = False
    ) -> Callable[[F], F]:
        """Register the completion of ``argument`` of prompt ``prompt``, or of variable ``argument`` of the resource
        template ``resource``. The function takes ``(value)`` or ``(value, other_arguments)`` and returns values.
        ``replace``: replace the completion of the same argument instead of raising ``ValueError``."""
        if (prompt is None) == (resource is None):
            raise TypeError("completion() needs exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", resource or "", argument)
        localns = _defining_scope()

        def register(fn: F) -> F:
            _add("completion", self.completions, key, CompletionDef.build(fn, localns=localns), replace)
            return fn

        return register

    def on_subscribe(self, fn: F) -> F:
        """Called with the URI of each ``resources/subscribe``; registering it declares ``resources.subscribe``."""
        self.subscribe_hook = fn
        return fn

    def on_unsubscribe(self, fn: F) -> F:
        self.unsubscribe_hook = fn
        return fn

    # -- capabilities ---------------------------------------------------------------------------------------------

    def serving_key(self) -> tuple[Any, ...]:
        """What ``capabilities()`` and the server's identity depend on, as a value: what is derived from them (the
        modern era's fitted capabilities, served methods and ``serverInfo``, per version) is cached under it and
        rebuilt when it changes. Read from the same attributes, not counted at registration, so that a definition
        added or removed any way (the decorators, ``remove_tool``, or the public dicts themselves) is seen."""
        return (
            bool(self.tools),
            bool(self.resources or self.templates),
            self.subscribe_hook is not None or self.unsubscribe_hook is not None,
            bool(self.prompts),
            self.logging,
            bool(self.completions),
            self.name,
            self.version,
            self.title,
            self.serves_tasks(),
            # (Compared by value, never hashed; declare_extension stores a new settings dict each time.)
            tuple(self.extensions.items()),
        )

    def declare_extension(self, identifier: str, settings: Mapping[str, Any] | None = None) -> None:
        """Declare the extension ``identifier`` (``vendor/name``, e.g. ``io.modelcontextprotocol/ui``) in the server's
        capabilities, its ``settings`` inline under the identifier (SEP-2133: an empty object declares it). A second
        declaration of the same identifier replaces the first's settings."""
        if not isinstance(identifier, str) or "/" not in identifier or identifier.startswith("/"):
            raise ValueError(f"an extension identifier is 'vendor-prefix/name', got {identifier!r}")
        self.extensions[identifier] = dict(settings or {})

    def serve_extension_method(
        self, extension: str, method: str, handler: ExtensionHandler, *, replace: bool = False
    ) -> None:
        """Answer ``method`` with ``handler`` (see ``ExtensionHandler``) on requests whose version's capabilities
        declare ``extension`` (``declare_extension``): elsewhere, and for a method the request's version has
        itself, the method is what it would be without this. ``replace``: replace the handler of the same method
        instead of raising ``ValueError``."""
        if not isinstance(method, str) or not method or method.startswith(("rpc.", "notifications/")):
            raise ValueError(f"{method!r} cannot be an extension's request method")
        if not callable(handler):
            raise TypeError(f"the handler of {method} must be an async function of (params, context)")
        _add("extension method", self.extension_methods, method, ExtensionMethod(extension, handler), replace)

    def serves_tasks(self) -> bool:
        """Whether a tool may run as a task: then the tasks capability (2025-11-25) and extension (2026-07-28) are
        declared."""
        tools = self.tools
        generation = tools.generation if isinstance(tools, ToolTable) else None
        if generation is not None and self._tasks_served[0] == generation:
            return self._tasks_served[1]
        serves = any(tool.task_support != "forbidden" for tool in tools.values())
        if generation is not None:
            self._tasks_served = (generation, serves)
        return serves

    def capabilities(self) -> dict[str, Any]:
        """The capabilities derived from what is registered (version-neutral; fitted per version on initialize).
        What it reads is ``serving_key``'s: keep the two in step."""
        capabilities: dict[str, Any] = {}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            subscribe = self.subscribe_hook is not None or self.unsubscribe_hook is not None
            capabilities["resources"] = {"listChanged": True, **({"subscribe": True} if subscribe else {})}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if self.logging:
            capabilities["logging"] = {}
        if self.completions:
            capabilities["completions"] = {}
        if self.serves_tasks():
            # Each version keeps its own (the fitting drops the other): the 2025-11-25 core's ``tasks`` capability,
            # the 2026-07-28 extension under ``extensions`` (its text: an empty object declares it).
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        if self.extensions:
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **self.extensions}
        return capabilities
