"""Turning plain Python functions into MCP resources, resource templates, prompts and completions, and what every
kind of definition shares (a function called, its return value as content blocks, validation errors as details).

Where it sits: in the ``server`` layer, under ``registry`` (whose ``tool()`` / ``resource()`` / ``prompt()`` /
``completion()`` decorators build the definitions here) and above ``signatures`` (what a function takes and
returns, its schemas and its ``Context`` parameter, all checked at registration) and ``errors`` (what a function
raises on purpose). Nothing here knows about connections or protocol versions: a definition describes itself as
version-neutral wire dicts and turns a function's return value into wire dicts; ``handlers`` fit those to the
negotiated version's models.

Tools are ``tool_definition.ToolDef``, built on the helpers here (``call_function``, ``content_blocks``).
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
from typing import Any, TypedDict, Unpack
from urllib.parse import unquote

import anyio.to_thread
from pydantic import BaseModel, TypeAdapter, ValidationError

from ...protocol.results import field_errors
from .caching import CacheHint
from .context import Context
from .signatures import (
    AnyFunction,
    Signature,
    arguments_model,
    arguments_schema,
    function_label,
    inspect_function,
)

__all__ = [
    "AnyFunction",
    "CompletionDef",
    "Namespace",
    "PromptDef",
    "ResourceDef",
    "ResourceTemplateDef",
    "call_function",
    "content_blocks",
    "description_of",
    "json_value",
    "validation_details",
]

logger = logging.getLogger(__name__)
Namespace = Mapping[str, Any] | None  # the scope a decorator ran in (see signatures.inspect_function)


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


# -- content -----------------------------------------------------------------------------------------------------


def json_value(value: Any) -> Any:
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
    return [{"type": "text", "text": json.dumps(json_value(value), ensure_ascii=False)}]


# -- definitions -------------------------------------------------------------------------------------------------


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
    text = value if isinstance(value, str) else json.dumps(json_value(value), ensure_ascii=False)
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
