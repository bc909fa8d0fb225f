"""The Python side of `mcpgen client-from-server`: names, the models' fields, and the client class around them.

Where it sits: ``generate`` fetches the tools and has datamodel-code-generator write the models; this
module chooses the identifiers (``snake_identifier``/``pascal_identifier``), reads the generated models back with
``ast`` (``parse_models``: which classes exist, their fields, whether each is required) and writes the rest of the
module (``assemble_module``): imports, ``ToolCallError`` and one typed ``async`` method per tool. black formats the
result afterwards, so the text here only has to be valid Python, not pretty.
"""

from __future__ import annotations

import ast
import keyword
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .schema_guard import display_text

# Attributes of the generated client class that no tool method may take.
RESERVED_METHODS = frozenset({"client", "connect", "connect_stdio", "connect_http"})
# The version whose content models the generated module returns and imports (``mcp_bindings.v2026_07_28``), whatever
# version a connection negotiates: the newest, so that every older version's content blocks fit it. Pinned rather
# than ``mcp_bindings.latest``, so that a module's types do not move when a newer version ships.
CONTENT_VERSION = "2026-07-28"
# The implementation signature's own parameters: a tool field of the same name cannot be a keyword argument.
RESERVED_FIELDS = frozenset({"self", "arguments", "fields"})


@dataclass(frozen=True, slots=True)
class ToolBinding:
    """One tool as the generated module names it: the real (wire) name, the method and the model classes."""

    name: str
    method: str
    description: str
    input_class: str
    output_class: str | None  # None: the tool has no outputSchema, the method returns the content list


@dataclass(frozen=True, slots=True)
class ModelField:
    name: str  # the Python name (the model accepts it as well as the wire alias)
    annotation: str  # source text, valid in the generated module
    required: bool


@dataclass(frozen=True, slots=True)
class ModelClass:
    bases: tuple[str, ...]
    fields: tuple[ModelField, ...]


@dataclass(frozen=True, slots=True)
class ParsedModels:
    """datamodel-code-generator's module taken apart: its imports (without ``__future__``), the rest, and the
    classes it defines."""

    imports: str = ""
    body: str = ""
    classes: dict[str, ModelClass] = field(default_factory=dict)

    def keyword_fields(self, class_name: str) -> tuple[ModelField, ...] | None:
        """Every field of a ``BaseModel`` subclass, inherited ones first; None when keyword arguments cannot
        describe it (a root model, an unknown base, a field named like one of our parameters)."""
        model = self.classes.get(class_name)
        if model is None:
            return None
        collected: list[ModelField] = []
        for base in model.bases:
            if base == "BaseModel":
                continue
            inherited = self.keyword_fields(base)
            if inherited is None:
                return None
            collected.extend(inherited)
        by_name = {item.name: item for item in (*collected, *model.fields)}  # a subclass field overrides
        if RESERVED_FIELDS & by_name.keys():
            return None
        return tuple(by_name.values())


# -- identifiers ---------------------------------------------------------------------------------------------------


def snake_identifier(text: str, taken: set[str]) -> str:
    """A snake_case Python identifier for ``text`` that is not in ``taken`` (and is added to it):
    ``get-forecast``/``get.forecast``/``getForecast`` -> ``get_forecast``, ``123x`` -> ``tool_123x``, ``class`` ->
    ``class_``, a second ``get_forecast`` -> ``get_forecast_2``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    split_camel = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", ascii_text)
    base = re.sub(r"[^0-9A-Za-z]+", "_", split_camel).strip("_").lower() or "tool"
    if base[0].isdigit():
        base = f"tool_{base}"
    if keyword.iskeyword(base) or keyword.issoftkeyword(base):
        base += "_"
    candidate, counter = base, 1
    while candidate in taken:
        counter += 1
        candidate = f"{base}_{counter}"
    taken.add(candidate)
    return candidate


def pascal_identifier(snake: str, taken: set[str], suffixes: Sequence[str] = ("",)) -> str:
    """The PascalCase stem of a snake_case identifier such that no ``stem + suffix`` is in ``taken`` (all of them
    are added): ``get_forecast`` -> ``GetForecast``, then ``GetForecast2``."""
    base = "".join(word[:1].upper() + word[1:] for word in snake.split("_") if word) or "Tool"
    if base[0].isdigit():
        base = f"Tool{base}"
    candidate, counter = base, 1
    while any(candidate + suffix in taken for suffix in suffixes):
        counter += 1
        candidate = f"{base}{counter}"
    taken.update(candidate + suffix for suffix in suffixes)
    return candidate


def class_name_for_server(server_name: str) -> str:
    """``weather`` -> ``WeatherClient``, ``sdk-interop`` -> ``SdkInteropClient``, ``WeatherClient`` unchanged."""
    stem = pascal_identifier(snake_identifier(server_name, set()).rstrip("_"), set())
    return stem if stem.endswith("Client") else f"{stem}Client"


def unique_name(base: str, taken: Iterable[str]) -> str:
    names, candidate = set(taken), base
    while candidate in names:
        candidate += "_"
    return candidate


# -- reading the models back ---------------------------------------------------------------------------------------


def parse_models(source: str) -> ParsedModels:
    if not source.strip():
        return ParsedModels()
    tree = ast.parse(source)
    lines = source.splitlines()
    imports: list[str] = []
    body_start = 0
    for statement in tree.body:
        if not isinstance(statement, ast.Import | ast.ImportFrom):
            break
        body_start = statement.end_lineno or statement.lineno
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            continue  # the assembled module has its own, first
        imports.append(ast.get_source_segment(source, statement) or "")
    classes = {
        statement.name: ModelClass(
            bases=tuple(ast.unparse(base) for base in statement.bases),
            fields=tuple(_fields_of(statement, source)),
        )
        for statement in tree.body
        if isinstance(statement, ast.ClassDef)
    }
    return ParsedModels(imports="\n".join(imports), body="\n".join(lines[body_start:]), classes=classes)


def _fields_of(class_def: ast.ClassDef, source: str) -> Iterable[ModelField]:
    for statement in class_def.body:
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        annotation_node = statement.annotation
        if (
            isinstance(annotation_node, ast.Subscript)
            and isinstance(annotation_node.value, ast.Name)
            and annotation_node.value.id == "Annotated"
            and isinstance(annotation_node.slice, ast.Tuple)
        ):
            # A keyword argument's type is the bare one; the Field(...) metadata belongs to the model.
            annotation_node = annotation_node.slice.elts[0]
        annotation = ast.get_source_segment(source, annotation_node) or ast.unparse(annotation_node)
        if statement.target.id == "model_config" or annotation.startswith("ClassVar"):
            continue
        yield ModelField(statement.target.id, " ".join(annotation.split()), _is_required(statement.value))


def _is_required(value: ast.expr | None) -> bool:
    if value is None:
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Field":
        if value.args:
            first = value.args[0]
            return isinstance(first, ast.Constant) and first.value is Ellipsis
        return not any(item.arg in {"default", "default_factory"} for item in value.keywords)
    return False


# -- writing the module --------------------------------------------------------------------------------------------


def docstring(text: str) -> str:
    """A triple-quoted literal of ``text`` that stays one whatever the text holds: control, format and surrogate
    characters are dropped (``display_text``: NUL does not parse, a lone surrogate cannot be written), quotes and
    backslashes escaped."""
    cleaned = "\n".join(line.rstrip() for line in display_text(text).strip().splitlines())
    escaped = cleaned.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if escaped.endswith('"'):  # it would run into the closing quotes
        escaped = escaped[:-1] + '\\"'
    return f'"""{escaped}"""'


def _method(binding: ToolBinding, models: ParsedModels) -> str:
    returns = binding.output_class or "list[_mcp.ContentBlock]"
    summary = binding.description or "(no description)"
    doc = docstring(
        f"`{binding.name}`: {summary}\n\n"
        + (
            f"Returns the tool's structuredContent as {binding.output_class}."
            if binding.output_class
            else "Returns the tool's content blocks (it declares no outputSchema)."
        )
        + "\nRaises ToolCallError when the tool reports an error."
    )
    finish = (
        f"return self._structured({binding.output_class}, {binding.name!r}, result)"
        if binding.output_class
        else "return result.content"
    )
    call = f"result = await self._call({binding.name!r}, self._arguments({binding.input_class}, arguments, fields))"
    fields = models.keyword_fields(binding.input_class)
    if fields is None:
        # Only the model form: keyword arguments cannot describe this input.
        return (
            f"async def {binding.method}(self, arguments: {binding.input_class}, /) -> {returns}:\n"
            f"    {doc}\n"
            f"    result = await self._call({binding.name!r}, arguments)\n"
            f"    {finish}\n"
        )
    # Defaults in the keyword overload are `...`: only what the caller passes reaches **fields, and so the wire.
    # (`arguments` is not positional-only in the implementation: mypy rejects `/` before **fields there.)
    keyword_parameters = "".join(
        f", {item.name}: {item.annotation}" + ("" if item.required else " = ...")
        for item in sorted(fields, key=lambda item: not item.required)
    )
    keyword_signature = f"self, *{keyword_parameters}" if keyword_parameters else "self"
    return (
        "@_typing.overload\n"
        f"async def {binding.method}(self, arguments: {binding.input_class}, /) -> {returns}: ...\n"
        "@_typing.overload\n"
        f"async def {binding.method}({keyword_signature}) -> {returns}: ...\n"
        f"async def {binding.method}(\n"
        f"    self, arguments: {binding.input_class} | None = None, **fields: _typing.Any\n"
        f") -> {returns}:\n"
        f"    {doc}\n"
        f"    {call}\n"
        f"    {finish}\n"
    )


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


def assemble_module(
    *,
    header: str,
    server_name: str,
    protocol_version: str,
    class_name: str,
    bindings: Sequence[ToolBinding],
    models: ParsedModels,
) -> str:
    """The whole module, unformatted: header, docstring, imports, models, ``ToolCallError`` and the client class.
    Our own imports are aliased with a leading underscore, which no generated model name has.

    The module does not depend on the version the server spoke when it was generated (``protocol_version``, kept
    as ``GENERATED_FROM_VERSION`` for reference): it connects in ``auto`` mode, calls tools by name
    (``Client.call_tool``, the same in both eras) and reads each result into its own models and
    ``CONTENT_VERSION``'s content blocks, whichever version the connection negotiated."""
    package = "v" + CONTENT_VERSION.replace("-", "_")
    error_name = unique_name("ToolCallError", models.classes)
    example = next((binding for binding in bindings if binding.output_class), bindings[0] if bindings else None)
    usage = (
        f'\n\n    async with {class_name}.connect(["python", "server.py"]) as client:  # or connect(url)\n'
        f"        result = await client.{example.method}(...)"
        if example
        else ""
    )
    module_doc = docstring(
        f"Typed client for the MCP server {server_name!r} (generated from it speaking MCP {protocol_version}).\n\n"
        f"A pydantic model per tool input and output, and {class_name} with one async method per tool. It connects "
        "in auto mode: MCP 2026-07-28 where the server has it, the initialize handshake where it does not; the "
        f"methods work the same in either.{usage}\n\n"
        "Generated by `mcpgen client-from-server`; regenerate it rather than editing it."
    )
    tool_names = "{" + ", ".join(f"{binding.method!r}: {binding.name!r}" for binding in bindings) + "}"
    methods = "\n\n".join(_indent(_method(binding, models)) for binding in bindings)
    return f'''{header}
{module_doc}

from __future__ import annotations

{models.imports}

import collections.abc as _abc
import contextlib as _contextlib
import shlex as _shlex
import typing as _typing

import pydantic as _pydantic

from mcp_bindings import {package} as _mcp
from mcpgen_runtime import Client as _Client
from mcpgen_runtime.client import ConnectTarget as _ConnectTarget
from mcpgen_runtime.client import InvalidResultError as _InvalidResultError

_ModelT = _typing.TypeVar("_ModelT", bound=_pydantic.BaseModel)

{models.body}


# Content blocks are read into MCP {CONTENT_VERSION}'s models whatever version the connection negotiated (every
# older version's blocks are a subset of its), so a method's return type does not depend on the server's era.
_CONTENT_BLOCKS: _pydantic.TypeAdapter[list[_mcp.ContentBlock]] = _pydantic.TypeAdapter(list[_mcp.ContentBlock])


class {error_name}(Exception):
    """A tool answered with ``isError: true``; ``content`` is what it said."""

    def __init__(self, tool: str, content: list[_mcp.ContentBlock]) -> None:
        self.tool, self.content = tool, content
        text = " ".join(block.text for block in content if isinstance(block, _mcp.TextContent))
        super().__init__(f"tool {{tool!r}} failed: {{text or 'no text content'}}")


class _ToolResult(_typing.NamedTuple):
    content: list[_mcp.ContentBlock]
    structured_content: _typing.Any


class {class_name}:
    {docstring(f"The tools of {server_name!r} as typed methods, over a connected mcpgen ``Client`` (either era).")}

    # The version the server negotiated when this module was generated (for reference: connections negotiate).
    GENERATED_FROM_VERSION: _typing.ClassVar[str] = {protocol_version!r}
    # method name -> the tool's real name
    TOOL_NAMES: _typing.ClassVar[dict[str, str]] = {tool_names}

    def __init__(self, client: _Client) -> None:
        """Wrap a connected client, of any mode and version."""
        self.client = client

    @staticmethod
    def _auto(options: dict[str, _typing.Any]) -> dict[str, _typing.Any]:
        # auto unless the caller chose: a mode, or a version (which implies its era).
        if "mode" not in options and "version" not in options:
            options["mode"] = "auto"
        return options

    @classmethod
    @_contextlib.asynccontextmanager
    async def connect(cls, target: _ConnectTarget, **options: _typing.Any) -> _abc.AsyncIterator[_typing.Self]:
        """Connect to ``target`` in auto mode: a URL, a command (a list such as ``["python", "server.py"]``), an
        in-process server or a transport's settings, as ``mcpgen_runtime.Client.connect`` takes them (and its
        ``options``: ``mode=``/``version=`` to pin an era)."""
        async with _Client.connect(target, **cls._auto(options)) as client:
            yield cls(client)

    @classmethod
    @_contextlib.asynccontextmanager
    async def connect_stdio(
        cls, command: str | _abc.Sequence[str], **options: _typing.Any
    ) -> _abc.AsyncIterator[_typing.Self]:
        """Start ``command`` (a string is split as a shell would) as a stdio server and connect to it in auto
        mode; ``options`` as for ``mcpgen_runtime.Client.connect_stdio`` (``mode=``/``version=`` to pin an era)."""
        argv = _shlex.split(command) if isinstance(command, str) else list(command)
        async with _Client.connect_stdio(argv, **cls._auto(options)) as client:
            yield cls(client)

    @classmethod
    @_contextlib.asynccontextmanager
    async def connect_http(cls, url: str, **options: _typing.Any) -> _abc.AsyncIterator[_typing.Self]:
        """Connect to the streamable HTTP endpoint ``url`` in auto mode;
        ``options`` as for ``mcpgen_runtime.Client.connect_http`` (``mode=``/``version=`` to pin an era)."""
        async with _Client.connect_http(url, **cls._auto(options)) as client:
            yield cls(client)

    @staticmethod
    def _arguments(
        model: type[_ModelT], arguments: _ModelT | None, fields: dict[str, _typing.Any]
    ) -> _ModelT:
        if arguments is None:
            return model.model_validate(fields)
        if fields:
            raise TypeError("pass the arguments model or keyword arguments, not both")
        return arguments

    async def _call(self, tool: str, arguments: _pydantic.BaseModel) -> _ToolResult:
        # exclude_unset: what the caller left out stays out of the request, so the server applies its own defaults.
        wire = arguments.model_dump(mode="json", by_alias=True, exclude_unset=True)
        # The negotiated version's CallToolResult, whichever that is: read by field, each version has these (but
        # structuredContent, absent before 2025-06-18).
        result: _typing.Any = await self.client.call_tool(tool, wire)
        try:
            content = _CONTENT_BLOCKS.validate_python(
                [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
            )
        except _pydantic.ValidationError as exc:
            raise _InvalidResultError(f"tool {{tool!r}}: content the MCP {CONTENT_VERSION} models cannot read: {{exc}}") from exc
        if result.is_error:
            raise {error_name}(tool, content)
        return _ToolResult(content, getattr(result, "structured_content", None))

    @staticmethod
    def _structured(model: type[_ModelT], tool: str, result: _ToolResult) -> _ModelT:
        if result.structured_content is None:
            raise _InvalidResultError(f"tool {{tool!r}} declares an outputSchema but sent no structuredContent")
        try:
            return model.model_validate(result.structured_content)
        except _pydantic.ValidationError as exc:
            raise _InvalidResultError(f"tool {{tool!r}}: structuredContent does not match the outputSchema: {{exc}}") from exc

{methods}
'''
