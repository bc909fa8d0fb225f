"""Turning plain Python functions into MCP tools, resources, resource templates, prompts and completions.

Where it sits: in the ``server`` layer, under ``registry`` (whose ``tool()`` / ``resource()`` / ``prompt()`` /
``completion()`` decorators build the definitions here) and above ``context`` (the ``Context`` a function may ask
for, recognised by its annotation). Nothing here knows about connections or protocol versions: a definition
describes itself as version-neutral wire dicts and turns a function's return value into wire dicts; ``handlers``
fit those to the negotiated version's models.

Schemas come from signatures through pydantic: the arguments of a tool become a generated model whose JSON schema
is the ``inputSchema`` and which validates incoming ``arguments``; a structured return annotation (a pydantic model,
a TypedDict, a dataclass or a ``dict[...]``) becomes the ``outputSchema``.

A tool may also build its whole ``CallToolResult`` itself (``FullToolResult``): it returns a generated
``CallToolResult`` model (of any version), or it is annotated ``-> CallToolResult`` (any version's generated class,
alone or in a union such as ``v2025_06_18.CallToolResult | dict[str, Any]``) and returns that model or a dict. Only
the annotation makes a dict a whole result, so ``-> dict[str, Any]`` stays structured output. Either way the value
is validated against the negotiated version's ``CallToolResult`` as it is (not fitted); an invalid one is answered
-32603 with the field paths, and logged.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin
from urllib.parse import unquote

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from typing_extensions import is_typeddict

from ..protocol.results import field_errors
from .context import Context

__all__ = [
    "CompletionDef",
    "FullToolResult",
    "PromptDef",
    "ResourceDef",
    "ResourceTemplateDef",
    "ToolDef",
    "call_function",
    "content_blocks",
    "description_of",
    "validation_details",
]

AnyFunction = Callable[..., Any]


# -- signatures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Signature:
    """What a registered function takes: its data parameters (in order) and the name of its ``Context`` one."""

    params: tuple[inspect.Parameter, ...]
    hints: dict[str, Any]
    context_param: str | None
    return_hint: Any


def _inspect(fn: AnyFunction) -> _Signature:
    signature = inspect.signature(fn)
    try:
        # Resolves `from __future__ import annotations` strings; the context parameter is found by its type.
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {name: p.annotation for name, p in signature.parameters.items() if p.annotation is not p.empty}
        if signature.return_annotation is not signature.empty:
            hints["return"] = signature.return_annotation
    context_param: str | None = None
    params: list[inspect.Parameter] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args / **kwargs cannot be described by a schema")
        hint = hints.get(name)
        if isinstance(hint, type) and issubclass(hint, Context):
            context_param = name
            continue
        params.append(param)
    return _Signature(tuple(params), hints, context_param, hints.get("return", signature.return_annotation))


def _arguments_model(fn: AnyFunction, sig: _Signature, suffix: str) -> type[BaseModel]:
    """A pydantic model with one field per data parameter: its JSON schema describes the arguments, and it
    validates (and converts) what a client sends."""
    fields: dict[str, Any] = {}
    for param in sig.params:
        annotation = sig.hints.get(param.name, Any)
        # A default may be a pydantic Field(...) (description, constraints): create_model takes either.
        fields[param.name] = (annotation, param.default if param.default is not param.empty else ...)
    name = "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", fn.__name__) if part) + suffix
    # extra="forbid": a misspelt argument is an error, not silently dropped.
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    model: type[BaseModel] = create_model(name, __config__=config, **fields)
    return model


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # The model's own title is the generated class name: noise for a client.
    schema = dict(schema)
    schema.pop("title", None)
    return schema


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


def _bind(sig: _Signature, values: Mapping[str, Any], context: Context | None) -> dict[str, Any]:
    kwargs = dict(values)
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


def _is_structured(hint: Any) -> bool:
    """Whether a return annotation describes a JSON object (what ``structuredContent`` must be)."""
    origin = get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        return not _is_content_model(origin) and not _is_call_tool_result_class(origin)
    if is_typeddict(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        return True
    return origin in (dict, Mapping)


def _is_content_model(cls: type[BaseModel]) -> bool:
    # A generated content block (TextContent, ImageContent, ...) is content, not structured output.
    return "type" in cls.model_fields and cls.__module__.startswith("mcp_bindings.")


def _is_call_tool_result_class(cls: object) -> bool:
    """A generated ``CallToolResult`` of any version (the versions' classes are distinct, so match by origin)."""
    return isinstance(cls, type) and cls.__name__ == "CallToolResult" and cls.__module__.startswith("mcp_bindings.")


def _returns_full_result(hint: Any) -> bool:
    """Whether a return annotation says the tool builds its whole ``CallToolResult`` (alone or in a union)."""
    arms = typing.get_args(hint) if get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return any(_is_call_tool_result_class(arm) for arm in arms)


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
    sig: _Signature = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)
    output: TypeAdapter[Any] | None = field(repr=False)
    returns_full_result: bool = field(default=False, repr=False)  # annotated -> CallToolResult: a dict is one too

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
    ) -> ToolDef:
        sig = _inspect(fn)
        full_result = _returns_full_result(sig.return_hint)
        if full_result and structured_output:
            raise TypeError(f"{fn.__name__}: a tool that returns its own CallToolResult has no structured output")
        structured = _is_structured(sig.return_hint) if structured_output is None else structured_output
        if structured and not _is_structured(sig.return_hint):
            raise TypeError(f"{fn.__name__}: structured_output needs an object-typed return annotation")
        output = TypeAdapter(sig.return_hint) if structured else None
        return cls(
            fn,
            name or fn.__name__,
            title,
            description_of(fn, description),
            dict(annotations) if annotations else None,
            sig,
            _arguments_model(fn, sig, "Arguments"),
            output,
            full_result,
        )

    def describe(self) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list``, with every field a newer version may know."""
        tool: dict[str, Any] = {"name": self.name, "inputSchema": _clean_schema(self.arguments.model_json_schema())}
        if self.title is not None:
            tool["title"] = self.title
        if self.description is not None:
            tool["description"] = self.description
        if self.annotations:
            tool["annotations"] = self.annotations
        if self.output is not None:
            tool["outputSchema"] = _clean_schema(self.output.json_schema())
        return tool

    async def call(
        self, arguments: Mapping[str, Any] | None, context: Context | None
    ) -> dict[str, Any] | FullToolResult:
        """Run the tool: a ``CallToolResult`` dict, or the tool's own result (``FullToolResult``). Bad arguments and
        exceptions raised by the tool become results with ``isError: true`` (the model can read and correct them),
        for every protocol version."""
        try:
            values = self.arguments.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(d['loc']) or '(arguments)'}: {d['msg']}" for d in validation_details(exc))
            return _tool_error(f"Invalid arguments for tool {self.name!r}: {problems}")
        kwargs = _bind(self.sig, {name: getattr(values, name) for name in type(values).model_fields}, context)
        try:
            value = await call_function(self.fn, kwargs)
        except Exception as exc:
            # The message is the tool's own report; the traceback stays on the server.
            return _tool_error(str(exc) or type(exc).__name__)
        if _is_call_tool_result_class(type(value)) or (self.returns_full_result and isinstance(value, Mapping)):
            return FullToolResult(value)
        if self.output is not None:
            structured = self.output.dump_python(value, mode="json", by_alias=True)
            # Older clients read content only: the same JSON as text (what the spec recommends).
            text = json.dumps(structured, ensure_ascii=False)
            return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}
        return {"content": content_blocks(value), "isError": False}


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


@dataclass
class ResourceDef:
    """A static resource: one URI, read by calling the function with no arguments (except the context)."""

    fn: AnyFunction
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    sig: _Signature = field(repr=False)

    @classmethod
    def build(cls, fn: AnyFunction, uri: str, **info: Any) -> ResourceDef:
        sig = _inspect(fn)
        if sig.params:
            raise TypeError(f"{fn.__name__}: a static resource takes no arguments (only a Context)")
        return cls(fn, uri, sig=sig, **info)

    def describe(self) -> dict[str, Any]:
        return _describe_resource({"uri": self.uri}, self.name, self.title, self.description, self.mime_type)

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
    sig: _Signature = field(repr=False)
    variables: tuple[str, ...] = field(repr=False)
    pattern: re.Pattern[str] = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)

    @classmethod
    def build(cls, fn: AnyFunction, uri_template: str, **info: Any) -> ResourceTemplateDef:
        sig = _inspect(fn)
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
                f"{fn.__name__}: parameters {sorted(names)} must match the variables of {uri_template!r}: "
                f"{sorted(variables)}"
            )
        return cls(
            fn,
            uri_template,
            sig=sig,
            variables=tuple(variables),
            pattern=re.compile(f"^{regex}$"),
            arguments=_arguments_model(fn, sig, "Variables"),
            **info,
        )

    def describe(self) -> dict[str, Any]:
        return _describe_resource(
            {"uriTemplate": self.uri_template}, self.name, self.title, self.description, self.mime_type
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
    base: dict[str, Any], name: str, title: str | None, description: str | None, mime_type: str | None
) -> dict[str, Any]:
    described = {**base, "name": name}
    if title is not None:
        described["title"] = title
    if description is not None:
        described["description"] = description
    if mime_type is not None:
        described["mimeType"] = mime_type
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
    sig: _Signature = field(repr=False)
    arguments: type[BaseModel] = field(repr=False)

    @classmethod
    def build(cls, fn: AnyFunction, name: str | None, title: str | None, description: str | None) -> PromptDef:
        sig = _inspect(fn)
        return cls(
            fn, name or fn.__name__, title, description_of(fn, description), sig, _arguments_model(fn, sig, "Args")
        )

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
    sig: _Signature = field(repr=False)

    @classmethod
    def build(cls, fn: AnyFunction) -> CompletionDef:
        sig = _inspect(fn)
        if not 1 <= len(sig.params) <= 2:
            raise TypeError(f"{fn.__name__}: a completion takes (value) or (value, arguments)")
        return cls(fn, sig)

    async def complete(self, value: str, arguments: dict[str, str], context: Context | None) -> dict[str, Any]:
        args: Sequence[Any] = (value, arguments)[: len(self.sig.params)]
        kwargs = {param.name: arg for param, arg in zip(self.sig.params, args, strict=True)}
        found = [str(v) for v in await call_function(self.fn, _bind(self.sig, kwargs, context))]
        # The spec caps a completion at 100 values; say how many there were.
        completion: dict[str, Any] = {"values": found[:100], "total": len(found), "hasMore": len(found) > 100}
        return completion
