"""Turning a plain Python function into an MCP tool: ``ToolDef``, its schemas, and its result as a ``CallToolResult``.

Where it sits: in the ``server`` layer, beside ``definitions`` (resources, prompts, completions, and the helpers every
kind of definition shares, which it uses) and under ``registry`` (whose ``tool()`` decorator builds a ``ToolDef``).

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

import inspect
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from ...protocol.meta import checked_meta
from ...protocol.results import ValidResult
from .context import Context
from .definitions import (
    AnyFunction,
    Namespace,
    call_function,
    content_blocks,
    description_of,
    json_value,
    validation_details,
)
from .errors import ProtocolError, ToolError
from .signatures import (
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

__all__ = ["TASK_SUPPORT", "FullToolResult", "TaskSupport", "ToolDef"]

logger = logging.getLogger(__name__)
TaskSupport = Literal["forbidden", "optional", "required"]
TASK_SUPPORT: tuple[str, ...] = ("forbidden", "optional", "required")


def _with_context(sig: Signature, kwargs: dict[str, Any], context: Context | None) -> dict[str, Any]:
    """``_bind`` of keyword arguments made for this call (added to, not copied)."""
    if sig.context_param is not None:
        kwargs[sig.context_param] = context
    return kwargs


@dataclass(frozen=True, slots=True)
class FullToolResult:
    """A tool's own ``CallToolResult`` (a generated model or a dict): answered as it is, once validated."""

    value: BaseModel | Mapping[str, Any]


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
        if type(value) is str and self.output_json_schema is None:
            # The commonest answer, a plain text: valid as it is in every legacy version (ValidResult).
            return ValidResult(content=[{"type": "text", "text": value}], isError=False)
        if is_call_tool_result_class(type(value)) or (self.returns_full_result and isinstance(value, Mapping)):
            return FullToolResult(value)
        if self.output_json_schema is not None:
            structured = (
                self.output.dump_python(value, mode="json", by_alias=True) if self.output else json_value(value)
            )
            if not isinstance(structured, dict):
                raise TypeError(
                    f"tool {self.name!r} returned {type(value).__name__}, not the object its outputSchema says"
                )
            # Older clients read content only: the same JSON as text (what the spec recommends).
            text = json.dumps(structured, ensure_ascii=False)
            return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}
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
