"""Turning plain Python functions into MCP tools, resources, resource templates, prompts and completions.

Where it sits: in the ``server`` layer, under ``registry`` (whose ``tool()`` / ``resource()`` / ``prompt()`` /
``completion()`` decorators build the definitions here) and above ``signatures`` (what a function takes and
returns, its schemas and its ``Context`` parameter, all checked at registration) and ``errors`` (what a function
raises on purpose). Nothing here knows about connections or protocol versions: a definition describes itself as
version-neutral wire dicts and turns a function's return value into wire dicts; ``handlers`` fit those to the
negotiated version's models.

Schemas come from signatures through pydantic: the arguments of a tool become a generated model whose JSON schema
is the ``inputSchema`` and which validates incoming ``arguments``; a structured return annotation (see
``signatures`` for the rule and ``structured_output``) becomes the ``outputSchema``. A tool may instead be given
its schemas as JSON (``input_schema=`` / ``output_schema=``, see ``ToolDef.build``): published verbatim.

A tool may also build its whole ``CallToolResult`` itself (``FullToolResult``): it returns a generated
``CallToolResult`` model (of any version), or it is annotated ``-> CallToolResult`` (any version's generated class,
alone or in a union such as ``v2025_06_18.CallToolResult | dict[str, Any]``) and returns that model or a dict. Only
the annotation makes a dict a whole result, so ``-> dict[str, Any]`` stays structured output. Either way the value
is validated against the negotiated version's ``CallToolResult`` as it is (not fitted); an invalid one is answered
-32603 with the field paths, and logged.

A tool that raises ``errors.ToolError`` answers ``isError: true`` with its content (logged at INFO); any other
exception answers ``isError: true`` with its message and is logged with its traceback; ``errors.ProtocolError``
(``InvalidParamsError``, ``ResourceNotFoundError``) is answered as the JSON-RPC error it is, by ``handlers``.
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack
from urllib.parse import unquote

import anyio.to_thread
from pydantic import BaseModel, TypeAdapter, ValidationError

from ...protocol.meta import checked_meta
from ...protocol.results import ValidResult, field_errors
from .caching import CacheHint
from .context import Context
from .errors import ProtocolError, ToolError
from .signatures import (
    AnyFunction,
    Signature,
    arguments_model,
    arguments_schema,
    auto_structured,
    function_label,
    inspect_function,
    is_call_tool_result_class,
    object_typed,
    output_adapter,
    returns_full_result,
)

__all__ = [
    "TASK_SUPPORT",
    "AnyFunction",
    "CompletionDef",
    "FullToolResult",
    "PromptDef",
    "ResourceDef",
    "ResourceTemplateDef",
    "TaskSupport",
    "ToolDef",
    "call_function",
    "content_blocks",
    "description_of",
    "validation_details",
]

logger = logging.getLogger(__name__)
Namespace = Mapping[str, Any] | None  # the scope a decorator ran in (see signatures.inspect_function)
TaskSupport = Literal["forbidden", "optional", "required"]
TASK_SUPPORT: tuple[str, ...] = ("forbidden", "optional", "required")


def description_of(fn: AnyFunction, given: str | None = None) -> str | None:
    """``given``, else the function's docstring."""
    if given is not None:
        return given
    doc = inspect.getdoc(fn)
    return doc.strip() if doc else None


def validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    """A ValidationError as JSON data: where and what, never the offending input (it may be large or private)."""
    return field_errors(exc)


async def call_function(fn: AnyFunction, kwargs: dict[str, Any]) -> Any:
    """Call a registered function: coroutine functions are awaited, plain ones run in a worker thread so that
    blocking code cannot stall the connection (they can reach the event loop through ``anyio.from_thread``)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    result = await anyio.to_thread.run_sync(functools.partial(fn, **kwargs))
    if inspect.isawaitable(result):
        # A sync wrapper around an async function (e.g. a decorated coroutine).
        return await result
    return result


def _bind(sig: Signature, values: Mapping[str, Any], context: Context | None) -> dict[str, Any]:
    kwargs = dict(values)
    if sig.context_param is not None:
        kwargs[sig.context_param] = context
    return kwargs


def _with_context(sig: Signature, kwargs: dict[str, Any], context: Context | None) -> dict[str, Any]:
    """``_bind`` of keyword arguments made for this call (added to, not copied)."""
    if sig.context_param is not None:
        kwargs[sig.context_param] = context
    return kwargs


# -- content -----------------------------------------------------------------------------------------------------


def _to_json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    return TypeAdapter(type(value)).dump_python(value, mode="json")


def content_blocks(value: Any) -> list[dict[str, Any]]:
    """A function's return value as MCP content blocks: str -> text; a content model or a dict with a ``type`` is
    passed through; None -> no content; a list/tuple -> its items in order; anything else -> its JSON as text."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json", by_alias=True)
        if "type" in dumped:
            return [dumped]
        return [{"type": "text", "text": json.dumps(dumped, ensure_ascii=False)}]
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return [value]
    if isinstance(value, list | tuple):
        return [block for item in value for block in content_blocks(item)]
    return [{"type": "text", "text": json.dumps(_to_json(value), ensure_ascii=False)}]


@dataclass(frozen=True, slots=True)
class FullToolResult:
    """A tool's own ``CallToolResult`` (a generated model or a dict): answered as it is, once validated."""

    value: BaseModel | Mapping[str, Any]


# -- definitions -------------------------------------------------------------------------------------------------


@dataclass
class ToolDef:
    fn: AnyFunction
    name: str
    title: str | None
    description: str | None
    annotations: dict[str, Any] | None
    sig: Signature = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)
    output: TypeAdapter[Any] | None = field(repr=False)  # dumps a structured value; None: plain JSON (or none)
    input_json_schema: dict[str, Any] = field(default_factory=dict, repr=False)  # the published inputSchema
    output_json_schema: dict[str, Any] | None = field(default=None, repr=False)  # outputSchema: structured output
    returns_full_result: bool = field(default=False, repr=False)  # annotated -> CallToolResult: a dict is one too
    # Whether a call may run as a task (the spec's words, 2025-11-25 ``execution.taskSupport``): "forbidden" (never),
    # "optional" (when the client asks or declares tasks), "required" (always; -32021 / -32601 for a client without).
    task_support: TaskSupport = "forbidden"
    # A task created only when the function calls ``Context.start_task()``: what it asks before runs in the request.
    deferred_task: bool = False
    meta: dict[str, Any] | None = field(default=None, repr=False)  # the listing's ``_meta`` (checked_meta)

    @classmethod
    def build(
        cls,
        fn: AnyFunction,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        localns: Namespace = None,
    ) -> ToolDef:
        """Describe ``fn`` as a tool; everything that cannot be described fails here, with a ``TypeError``.

        ``structured_output``: None applies the automatic rule (``signatures``: a pydantic model, TypedDict,
        dataclass or ``dict[str, T]`` return annotation; not a bare ``dict``), True forces structured output (any
        object-typed annotation), False never.

        ``input_schema`` / ``output_schema``: JSON schemas (``"type": "object"``) published verbatim instead of the
        derived ones (``$schema``, ``$defs``, any 2020-12 keyword). Arguments are still validated and converted by
        the signature, with pydantic: the schema is the clients' contract, the signature the function's; every
        required parameter must be a property of ``input_schema`` and, unless the function takes ``**kwargs`` (which
        then receives the other arguments exactly as they arrive), every property a parameter. Nothing is validated
        against the hand-written schemas themselves (that would need a JSON Schema validator, which the runtime does
        not depend on). With ``output_schema`` the output is structured: the return value's JSON (which must be an
        object) is the ``structuredContent``. ``meta``: the tool's ``_meta`` in ``tools/list`` (``checked_meta``)."""
        label = function_label(fn)
        published_meta = checked_meta(label, meta)
        sig = inspect_function(fn, localns, var_keyword=input_schema is not None)
        arguments = arguments_model(fn, sig, "Arguments")
        if input_schema is None:
            published_input = arguments_schema(fn, sig, arguments)
        else:
            published_input = _hand_written(label, "input_schema", input_schema)
            _check_properties(label, sig, arguments, published_input)
        hint = sig.return_hint
        full_result = returns_full_result(hint)
        output: TypeAdapter[Any] | None = None
        if output_schema is not None:
            if structured_output is False:
                raise TypeError(f"{label}: output_schema= makes the output structured; drop structured_output=False")
            published_output: dict[str, Any] | None = _hand_written(label, "output_schema", output_schema)
        else:
            if sig.unresolved_return is not None and structured_output is not False:
                raise TypeError(
                    f"{label}: the return annotation {hint!r} cannot be resolved ({sig.unresolved_return}); define or "
                    "import it at module level, or pass structured_output=False"
                )
            if full_result and structured_output:
                raise TypeError(f"{label}: a tool that returns its own CallToolResult has no structured output")
            structured = auto_structured(hint) if structured_output is None else structured_output
            if structured and not object_typed(hint):
                raise TypeError(
                    f"{label}: structured_output=True needs a return annotation that is a JSON object (a pydantic "
                    "model, TypedDict, dataclass or dict), or output_schema="
                )
            output, published_output = output_adapter(fn, hint) if structured else (None, None)
        return cls(
            fn,
            fn.__name__ if name is None else name,
            title,
            description_of(fn, description),
            dict(annotations) if annotations else None,
            sig,
            arguments,
            output,
            published_input,
            published_output,
            full_result,
            meta=published_meta,
        )

    def describe(self) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list``, with every field a newer version may know."""
        tool: dict[str, Any] = {"name": self.name, "inputSchema": self.input_json_schema}
        if self.title is not None:
            tool["title"] = self.title
        if self.description is not None:
            tool["description"] = self.description
        if self.annotations:
            tool["annotations"] = self.annotations
        if self.output_json_schema is not None:
            tool["outputSchema"] = self.output_json_schema
        if self.task_support != "forbidden":  # absent means forbidden: the listings of plain tools stay as they were
            tool["execution"] = {"taskSupport": self.task_support}
        if self.meta is not None:
            tool["_meta"] = self.meta
        return tool

    def __post_init__(self) -> None:
        # Looked up once, not per call (the per-request path of every tools/call).
        self._is_coroutine = inspect.iscoroutinefunction(self.fn)
        self._argument_names = tuple(self.arguments.model_fields)

    def _kwargs(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        given: Mapping[str, Any] = arguments if type(arguments) is dict else dict(arguments or {})
        rest: dict[str, Any] = {}
        if self.sig.var_keyword is not None:
            # **kwargs takes what the signature does not name, unvalidated; the named ones are validated as usual.
            given = dict(given)
            rest = {key: given.pop(key) for key in list(given) if key not in self.arguments.model_fields}
        values = self.arguments.__pydantic_validator__.validate_python(given)  # model_validate, minus its frames
        if not rest:
            return {name: getattr(values, name) for name in self._argument_names}
        return {**rest, **{name: getattr(values, name) for name in self._argument_names}}

    async def call(
        self, arguments: Mapping[str, Any] | None, context: Context | None
    ) -> dict[str, Any] | FullToolResult:
        """Run the tool: a ``CallToolResult`` dict, or the tool's own result (``FullToolResult``). Bad arguments and
        exceptions raised by the tool become results with ``isError: true`` (the model can read and correct them),
        for every protocol version; ``ProtocolError`` goes on to be the request's JSON-RPC error."""
        try:
            kwargs = _with_context(self.sig, self._kwargs(arguments), context)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(d['loc']) or '(arguments)'}: {d['msg']}" for d in validation_details(exc))
            return _tool_error(f"Invalid arguments for tool {self.name!r}: {problems}")
        try:
            value = await self.fn(**kwargs) if self._is_coroutine else await call_function(self.fn, kwargs)
        except ProtocolError:
            raise
        except ToolError as exc:
            # Raised on purpose: the tool's own report, without a traceback.
            logger.info("tool %r answered isError: %s", self.name, exc)
            return {"content": content_blocks(exc.content), "isError": True}
        except Exception as exc:
            # The message is the tool's own report; the traceback stays on the server.
            logger.exception("tool %r failed", self.name)
            return _tool_error(str(exc) or type(exc).__name__)
        if is_call_tool_result_class(type(value)) or (self.returns_full_result and isinstance(value, Mapping)):
            return FullToolResult(value)
        if self.output_json_schema is not None:
            structured = self.output.dump_python(value, mode="json", by_alias=True) if self.output else _to_json(value)
            if not isinstance(structured, dict):
                raise TypeError(
                    f"tool {self.name!r} returned {type(value).__name__}, not the object its outputSchema says"
                )
            # Older clients read content only: the same JSON as text (what the spec recommends).
            text = json.dumps(structured, ensure_ascii=False)
            return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}
        if type(value) is str:
            # The commonest answer, a plain text: valid as it is in every legacy version (ValidResult).
            return ValidResult(content=[{"type": "text", "text": value}], isError=False)
        return {"content": content_blocks(value), "isError": False}


def _hand_written(label: str, which: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A hand-written schema, checked (MCP requires ``"type": "object"``) and copied through JSON."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise TypeError(f'{label}: {which} must be a JSON schema with "type": "object" (MCP requires it)')
    try:
        copied: dict[str, Any] = json.loads(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{label}: {which} is not JSON ({exc})") from None
    return copied


def _check_properties(label: str, sig: Signature, arguments: type[BaseModel], schema: Mapping[str, Any]) -> None:
    """A hand-written ``inputSchema`` and the signature must agree on the names, or calls could never succeed."""
    properties = schema.get("properties")
    if properties is None:
        return
    if not isinstance(properties, Mapping):
        raise TypeError(f"{label}: the properties of input_schema must be an object")
    for name, info in arguments.model_fields.items():
        if info.is_required() and name not in properties:
            raise TypeError(f"{label}: parameter {name!r} is required, but input_schema has no property {name!r}")
    unknown = sorted(name for name in properties if name not in arguments.model_fields)
    if unknown and sig.var_keyword is None:
        raise TypeError(
            f"{label}: input_schema has properties that are not parameters: {', '.join(unknown)} (add them, or "
            "**kwargs to receive them as they arrive)"
        )


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class ResourceInfo(TypedDict):
    """What ``@server.resource`` says of a resource or a template besides its function and URI."""

    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    cache: CacheHint | None
    meta: dict[str, Any] | None  # its ``_meta`` in the listing, already checked (``checked_meta``)


@dataclass
class ResourceDef:
    """A static resource: one URI, read by calling the function with no arguments (except the context)."""

    fn: AnyFunction
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    sig: Signature = field(repr=False)
    cache: CacheHint | None = field(default=None, repr=False)  # None: the server's hint for resources/read
    meta: dict[str, Any] | None = field(default=None, repr=False)  # the listing's ``_meta`` (not the read's)

    @classmethod
    def build(
        cls, fn: AnyFunction, uri: str, *, localns: Namespace = None, **info: Unpack[ResourceInfo]
    ) -> ResourceDef:
        sig = inspect_function(fn, localns)
        if sig.params:
            raise TypeError(f"{function_label(fn)}: a static resource takes no arguments (only a Context)")
        return cls(fn, uri, sig=sig, **info)

    def describe(self) -> dict[str, Any]:
        return _describe_resource({"uri": self.uri}, self.name, self.title, self.description, self.mime_type, self.meta)

    async def read(self, uri: str, context: Context | None) -> list[dict[str, Any]]:
        value = await call_function(self.fn, _bind(self.sig, {}, context))
        return resource_contents(uri, value, self.mime_type)


# RFC 6570 level 1 ({var}: one path segment) plus reserved expansion ({+var}: may contain "/").
_TEMPLATE_VAR = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class ResourceTemplateDef:
    """A resource template: URIs matching ``uri_template``, read by calling the function with the bound variables."""

    fn: AnyFunction
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    sig: Signature = field(repr=False)
    variables: tuple[str, ...] = field(repr=False)
    pattern: re.Pattern[str] = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)
    cache: CacheHint | None = field(default=None, repr=False)  # None: the server's hint for resources/read
    meta: dict[str, Any] | None = field(default=None, repr=False)  # the listing's ``_meta`` (not the read's)

    @classmethod
    def build(
        cls, fn: AnyFunction, uri_template: str, *, localns: Namespace = None, **info: Unpack[ResourceInfo]
    ) -> ResourceTemplateDef:
        sig = inspect_function(fn, localns)
        variables: list[str] = []
        regex, last = "", 0
        for match in _TEMPLATE_VAR.finditer(uri_template):
            regex += re.escape(uri_template[last : match.start()])
            regex += f"(?P<{match.group(2)}>{'.+' if match.group(1) else '[^/]+'})"
            variables.append(match.group(2))
            last = match.end()
        regex += re.escape(uri_template[last:])
        names = {p.name for p in sig.params}
        if set(variables) != names:
            raise TypeError(
                f"{function_label(fn)}: parameters {sorted(names)} must match the variables of {uri_template!r}: "
                f"{sorted(variables)}"
            )
        arguments = arguments_model(fn, sig, "Variables")
        arguments_schema(fn, sig, arguments)  # a variable of a type without a schema fails now, by name
        return cls(
            fn,
            uri_template,
            sig=sig,
            variables=tuple(variables),
            pattern=re.compile(f"^{regex}$"),
            arguments=arguments,
            **info,
        )

    def describe(self) -> dict[str, Any]:
        return _describe_resource(
            {"uriTemplate": self.uri_template}, self.name, self.title, self.description, self.mime_type, self.meta
        )

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.match(uri)
        return {name: unquote(value) for name, value in found.groupdict().items()} if found else None

    async def read(self, uri: str, variables: dict[str, str], context: Context | None) -> list[dict[str, Any]]:
        # Variables are strings in the URI; the function's annotations say what to convert them to (lax mode).
        values = self.arguments.model_validate(variables)
        kwargs = _bind(self.sig, {name: getattr(values, name) for name in self.variables}, context)
        return resource_contents(uri, await call_function(self.fn, kwargs), self.mime_type)


def _describe_resource(
    base: dict[str, Any],
    name: str,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    meta: dict[str, Any] | None,
) -> dict[str, Any]:
    described = {**base, "name": name}
    if title is not None:
        described["title"] = title
    if description is not None:
        described["description"] = description
    if mime_type is not None:
        described["mimeType"] = mime_type
    if meta is not None:
        described["_meta"] = meta
    return described


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """A read function's return value as ``contents``: str -> text, bytes -> base64 blob, a dict or model with
    ``text`` / ``blob`` -> as is (``uri`` filled in), a list -> each item."""
    if isinstance(value, list | tuple):
        return [item for element in value for item in resource_contents(uri, element, mime_type)]
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict) and ("text" in value or "blob" in value):
        return [{"uri": uri, **({"mimeType": mime_type} if mime_type else {}), **value}]
    if isinstance(value, bytes | bytearray | memoryview):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [{"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}]
    text = value if isinstance(value, str) else json.dumps(_to_json(value), ensure_ascii=False)
    return [
        {
            "uri": uri,
            "mimeType": mime_type or ("text/plain" if isinstance(value, str) else "application/json"),
            "text": text,
        }
    ]


@dataclass
class PromptDef:
    fn: AnyFunction
    name: str
    title: str | None
    description: str | None
    sig: Signature = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)

    @classmethod
    def build(
        cls,
        fn: AnyFunction,
        name: str | None,
        title: str | None,
        description: str | None,
        *,
        localns: Namespace = None,
    ) -> PromptDef:
        sig = inspect_function(fn, localns)
        arguments = arguments_model(fn, sig, "Args")
        arguments_schema(fn, sig, arguments)  # an argument of a type without a schema fails now, by name
        return cls(fn, fn.__name__ if name is None else name, title, description_of(fn, description), sig, arguments)

    def describe(self) -> dict[str, Any]:
        prompt: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            prompt["title"] = self.title
        if self.description is not None:
            prompt["description"] = self.description
        arguments = []
        for name, info in self.arguments.model_fields.items():
            argument: dict[str, Any] = {"name": name, "required": info.is_required()}
            if info.description:
                argument["description"] = info.description
            arguments.append(argument)
        if arguments:
            prompt["arguments"] = arguments
        return prompt

    async def render(self, arguments: Mapping[str, str] | None, context: Context | None) -> dict[str, Any]:
        """The ``GetPromptResult`` dict. Raises ``ValidationError`` for missing or malformed arguments (the server
        answers -32602: unlike tool errors, a prompt's caller is the application, not the model)."""
        values = self.arguments.model_validate(dict(arguments or {}))
        kwargs = _bind(self.sig, {name: getattr(values, name) for name in type(values).model_fields}, context)
        value = await call_function(self.fn, kwargs)
        result: dict[str, Any] = {"messages": prompt_messages(value)}
        if self.description is not None:
            result["description"] = self.description
        return result


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """A prompt function's return value as messages: str -> one user message; a dict / model with ``role`` -> as is;
    a list -> each item."""
    if isinstance(value, list | tuple):
        return [message for item in value for message in prompt_messages(item)]
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict) and "role" in value:
        content = value.get("content")
        if isinstance(content, str):
            value = {**value, "content": {"type": "text", "text": content}}
        return [value]
    blocks = content_blocks(value)
    return [{"role": "user", "content": block} for block in blocks]


@dataclass
class CompletionDef:
    """Completes one argument of a prompt (``ref/prompt``) or one variable of a resource template (``ref/resource``).
    The function takes the partial value and, optionally, a second parameter with the other arguments already
    chosen (``context.arguments``, 2025-06-18 and later); it returns the candidate values."""

    fn: AnyFunction
    sig: Signature = field(repr=False)

    @classmethod
    def build(cls, fn: AnyFunction, *, localns: Namespace = None) -> CompletionDef:
        sig = inspect_function(fn, localns)
        if not 1 <= len(sig.params) <= 2:
            raise TypeError(f"{function_label(fn)}: a completion takes (value) or (value, arguments)")
        return cls(fn, sig)

    async def complete(self, value: str, arguments: dict[str, str], context: Context | None) -> dict[str, Any]:
        args: Sequence[Any] = (value, arguments)[: len(self.sig.params)]
        kwargs = {param.name: arg for param, arg in zip(self.sig.params, args, strict=True)}
        found = [str(v) for v in await call_function(self.fn, _bind(self.sig, kwargs, context))]
        # The spec caps a completion at 100 values; say how many there were.
        completion: dict[str, Any] = {"values": found[:100], "total": len(found), "hasMore": len(found) > 100}
        return completion
