"""Reading a registered function: its parameters (the data ones, and the one that asks for the ``Context``), the
pydantic model and JSON schema of the data ones, and what its return annotation says about structured output.

Where it sits: in the ``server`` layer, above ``context`` (``Context`` is recognised by annotation) and under
``authoring`` (which builds the definitions from what is read here). It all runs at registration: a function that
cannot be described fails there, with a ``TypeError`` naming it and the parameter, never later inside ``tools/list``.

- The context parameter is the one annotated ``Context`` (or a subclass), also as ``Context | None``,
  ``Optional[Context]``, ``Annotated[Context, ...]``, and as the strings ``from __future__ import annotations`` makes
  of these (resolved in the function's module and the scope the decorator ran in; a ``Context`` imported only under
  ``TYPE_CHECKING`` is recognised by name).
- Every other parameter must have a JSON schema (``socket.socket`` has none): ``tools/list`` publishes it.
- Structured output, the automatic rule (``structured_output=None``): a return annotation that describes a JSON
  object, namely a pydantic model (not a generated content block or ``CallToolResult``), a TypedDict, a dataclass,
  or ``dict[str, T]`` / ``Mapping[str, T]``. A bare ``dict`` or ``Mapping`` (or ``dict[int, T]``) is not: it is
  what an untyped function returns as often as an object result, so only ``structured_output=True`` (which accepts
  any of these) makes it structured; ``False`` never is.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, create_model
from typing_extensions import is_typeddict

from .context import Context

__all__ = [
    "AnyFunction",
    "Signature",
    "arguments_model",
    "arguments_schema",
    "auto_structured",
    "clean_schema",
    "function_label",
    "inspect_function",
    "is_call_tool_result_class",
    "is_context_hint",
    "object_typed",
    "output_adapter",
    "returns_full_result",
]

AnyFunction = Callable[..., Any]

# extra="forbid": a misspelt argument is an error, not silently dropped. Arbitrary types are allowed so that the
# model can be built, and the JSON-schema check below reports them by name.
_ARGUMENTS_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


@dataclass(frozen=True, slots=True)
class Signature:
    """What a registered function takes: its data parameters (in order), the name of its ``Context`` one, and its
    ``**kwargs`` one (only tools with a hand-written ``input_schema`` may have one)."""

    params: tuple[inspect.Parameter, ...]
    hints: dict[str, Any]
    context_param: str | None
    return_hint: Any
    var_keyword: str | None = None
    unresolved_return: str | None = None  # why the return annotation could not be resolved, if it could not


def function_label(fn: AnyFunction) -> str:
    """How errors name a function: its qualified name (``make_server.<locals>.forecast``)."""
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _type_name(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__qualname__ if hint.__module__ == "builtins" else f"{hint.__module__}.{hint.__qualname__}"
    return repr(hint) if not isinstance(hint, str) else hint


# -- annotations -------------------------------------------------------------------------------------------------


def _resolve(
    fn: AnyFunction, signature: inspect.Signature, localns: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The annotations with ``from __future__ import annotations`` strings resolved in the function's module and
    ``localns``; those that cannot be are kept as strings, with the reason, so that one unresolvable annotation
    does not hide what the others are (a ``Context`` among them)."""
    annotations: dict[str, Any] = {
        name: param.annotation for name, param in signature.parameters.items() if param.annotation is not param.empty
    }
    if signature.return_annotation is not signature.empty:
        annotations["return"] = signature.return_annotation
    local = dict(localns) if localns is not None else None
    try:
        resolved = typing.get_type_hints(fn, localns=local, include_extras=True)
        return {name: resolved.get(name, annotation) for name, annotation in annotations.items()}, {}
    except Exception:
        pass
    globalns = getattr(inspect.unwrap(fn), "__globals__", None) or {}
    hints: dict[str, Any] = {}
    unresolved: dict[str, str] = {}
    for name, annotation in annotations.items():
        holder = types.SimpleNamespace(__annotations__={name: annotation})
        try:
            hints[name] = typing.get_type_hints(holder, globalns, local, include_extras=True)[name]
        except Exception as exc:
            hints[name] = annotation
            unresolved[name] = _first_line(exc)
    return hints, unresolved


_QUALIFIED_CONTEXT = re.compile(r"(?:[A-Za-z_]\w*\.)*Context(?:\[.*\])?", re.DOTALL)  # Context[State] too
_WRAPPER = re.compile(r"(?:(?:typing|typing_extensions)\.)?(Optional|Annotated)\[(.*)\]", re.DOTALL)


def _first_argument(text: str) -> str:
    """``X`` of ``X, metadata...`` (commas inside brackets are not separators)."""
    depth = 0
    for index, char in enumerate(text):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            return text[:index]
    return text


def _is_context_text(text: str) -> bool:
    """An annotation string that could not be resolved, read as text: ``Context``, ``mcpgen_runtime.Context``,
    ``Context[State]``, ``Context | None``, ``Optional[Context]``, ``Annotated[Context, ...]``."""
    text = text.strip()
    wrapped = _WRAPPER.fullmatch(text)
    if wrapped is not None:
        inner = wrapped.group(2)
        return _is_context_text(_first_argument(inner) if wrapped.group(1) == "Annotated" else inner)
    arms = [arm.strip() for arm in text.split("|")]
    arms = [arm for arm in arms if arm != "None"]
    return bool(arms) and all(_QUALIFIED_CONTEXT.fullmatch(arm) for arm in arms)


def is_context_hint(hint: Any) -> bool:
    """Whether an annotation asks for the ``Context``: ``Context`` (or a subclass, or ``Context[State]``), optional
    or ``Annotated``."""
    if isinstance(hint, str):
        return _is_context_text(hint)
    if isinstance(hint, typing.ForwardRef):
        return _is_context_text(hint.__forward_arg__)
    origin = get_origin(hint)
    if origin is Annotated:
        return is_context_hint(get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        arms = [arm for arm in get_args(hint) if arm is not type(None)]
        return bool(arms) and all(is_context_hint(arm) for arm in arms)
    if isinstance(origin, type) and issubclass(origin, Context):  # a subscripted generic alias
        return True
    return isinstance(hint, type) and issubclass(hint, Context)


def inspect_function(
    fn: AnyFunction, localns: Mapping[str, Any] | None = None, *, var_keyword: bool = False
) -> Signature:
    """Read ``fn``'s signature; ``localns`` is the scope the decorator ran in (for local classes named in string
    annotations). ``var_keyword``: whether a ``**kwargs`` parameter is allowed."""
    label = function_label(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{label}: its signature cannot be read ({_first_line(exc)})") from None
    hints, unresolved = _resolve(fn, signature, localns)
    context_param: str | None = None
    kwargs_param: str | None = None
    params: list[inspect.Parameter] = []
    for name, param in signature.parameters.items():
        hint = hints.get(name)
        if param.kind is param.VAR_POSITIONAL:
            raise TypeError(f"{label}: *{name} cannot be described by a schema")
        if param.kind is param.VAR_KEYWORD:
            if not var_keyword:
                raise TypeError(
                    f"{label}: **{name} cannot be described by a schema (a tool may take **kwargs when it is given "
                    "its own input_schema=)"
                )
            kwargs_param = name
            continue
        if hint is not None and is_context_hint(hint):
            if context_param is not None:
                raise TypeError(f"{label}: two Context parameters, {context_param!r} and {name!r}")
            context_param = name
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{label}: parameter {name!r} is positional-only, but arguments are passed by name")
        if name.startswith("_"):
            raise TypeError(f"{label}: parameter {name!r} starts with '_', which pydantic keeps for private fields")
        if name in unresolved:
            raise TypeError(
                f"{label}: the annotation {param.annotation!r} of parameter {name!r} cannot be resolved "
                f"({unresolved[name]}); define or import it at module level"
            )
        params.append(param)
    return_hint = hints.get("return", signature.return_annotation)
    return Signature(tuple(params), hints, context_param, return_hint, kwargs_param, unresolved.get("return"))


# -- arguments ---------------------------------------------------------------------------------------------------


def _model_name(fn: AnyFunction, suffix: str) -> str:
    name = getattr(fn, "__name__", "") or ""
    return "".join(part.capitalize() for part in re.split(r"[^0-9A-Za-z]+", name) if part) + suffix


def _fields(sig: Signature, params: tuple[inspect.Parameter, ...]) -> dict[str, Any]:
    # A default may be a pydantic Field(...) (description, constraints): create_model takes either.
    return {
        param.name: (sig.hints.get(param.name, Any), param.default if param.default is not param.empty else ...)
        for param in params
    }


def arguments_model(fn: AnyFunction, sig: Signature, suffix: str) -> type[BaseModel]:
    """A pydantic model with one field per data parameter: it validates (and converts) what a client sends, and its
    JSON schema describes the arguments (``arguments_schema``)."""
    try:
        model: type[BaseModel] = create_model(
            _model_name(fn, suffix), __config__=_ARGUMENTS_CONFIG, **_fields(sig, sig.params)
        )
    except Exception as exc:
        raise TypeError(f"{function_label(fn)}: its parameters cannot be validated ({_first_line(exc)})") from None
    return model


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema as MCP publishes it: without the generated class's title, and with a top-level
    ``$ref`` (a recursive model) inlined, since ``inputSchema`` / ``outputSchema`` must say ``"type": "object"``."""
    schema = dict(schema)
    schema.pop("title", None)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and "type" not in schema:
        target = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            del schema["$ref"]
            schema = {**target, **schema}
    return schema


def arguments_schema(fn: AnyFunction, sig: Signature, model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` (from ``arguments_model``); a parameter without one fails here, by name."""
    try:
        return clean_schema(model.model_json_schema())
    except Exception as exc:
        whole = exc
    for param in sig.params:
        try:
            single = create_model("Probe", __config__=_ARGUMENTS_CONFIG, **_fields(sig, (param,)))
            single.model_json_schema()
        except Exception as exc:
            annotation = _type_name(sig.hints.get(param.name, param.annotation))
            raise TypeError(
                f"{function_label(fn)}: parameter {param.name!r} ({annotation}) has no JSON schema "
                f"({_first_line(exc)}); annotate it with a type pydantic can describe"
            ) from None
    raise TypeError(f"{function_label(fn)}: its parameters have no JSON schema ({_first_line(whole)})") from None


# -- return annotations ------------------------------------------------------------------------------------------


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint


def _is_content_model(cls: type[BaseModel]) -> bool:
    # A generated content block (TextContent, ImageContent, ...) is content, not structured output.
    return "type" in cls.model_fields and cls.__module__.startswith("mcp_bindings.")


def is_call_tool_result_class(cls: object) -> bool:
    """A generated ``CallToolResult`` of any version (the versions' classes are distinct, so match by origin)."""
    return isinstance(cls, type) and cls.__name__ == "CallToolResult" and cls.__module__.startswith("mcp_bindings.")


def returns_full_result(hint: Any) -> bool:
    """Whether a return annotation says the tool builds its whole ``CallToolResult`` (alone or in a union)."""
    hint = _unwrap(hint)
    arms = get_args(hint) if get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return any(is_call_tool_result_class(_unwrap(arm)) for arm in arms)


def _object_class(hint: Any) -> bool:
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return not _is_content_model(hint) and not is_call_tool_result_class(hint)
    return is_typeddict(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint))


def _is_mapping(origin: Any) -> bool:
    return origin in (dict, Mapping, typing.Mapping)


def auto_structured(hint: Any) -> bool:
    """The automatic rule (``structured_output=None``): a JSON object of known shape (see the module docstring)."""
    hint = _unwrap(hint)
    if _is_mapping(get_origin(hint)):
        args = get_args(hint)
        return len(args) == 2 and args[0] is str
    return _object_class(hint)


def object_typed(hint: Any) -> bool:
    """Whether a return annotation describes a JSON object at all (what ``structured_output=True`` accepts)."""
    hint = _unwrap(hint)
    return auto_structured(hint) or _is_mapping(hint) or _is_mapping(get_origin(hint))


def output_adapter(fn: AnyFunction, hint: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    """The adapter that dumps a structured return value, and the ``outputSchema`` it publishes; a return annotation
    that has no JSON schema fails here."""
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(hint)
        schema = clean_schema(adapter.json_schema())
    except Exception as exc:
        raise TypeError(
            f"{function_label(fn)}: the return annotation {_type_name(hint)} cannot make an outputSchema "
            f"({_first_line(exc)}); use types pydantic can describe, structured_output=False, or output_schema="
        ) from None
    return adapter, schema
