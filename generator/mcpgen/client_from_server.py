"""`mcpgen client-from-server`: a typed Python client module generated from what a live MCP server says it has.

Where it sits: beside the bindings pipeline, not in it. ``fetch_snapshot`` connects with ``mcpgen.runtime.Client``
(stdio or streamable HTTP) and lists every tool; ``build_schema_document`` merges each tool's ``inputSchema`` and
``outputSchema`` into one JSON Schema document under names we choose; datamodel-code-generator turns that into
pydantic v2 models; ``client_module_render`` writes the client class that calls the tools through those models;
``formatting`` (black) owns the layout; ``write_atomically`` puts the file in place. ``cli_client`` is the command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
import warnings
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from . import __version__
from .client_module_render import (
    RESERVED_METHODS,
    ToolBinding,
    assemble_module,
    class_name_for_server,
    parse_models,
    pascal_identifier,
    snake_identifier,
)
from .formatting import FormatError, format_files

if TYPE_CHECKING:  # the runtime (and with it every version's bindings) is imported when a client connects
    from .runtime import Client, SubprocessStream

# Our pointers into the merged document; a tool's own "$defs"/"definitions" are hoisted next to its root schema.
DEFINITIONS_KEYS = ("$defs", "definitions")


class ClientGenerationError(Exception):
    """Bad input (a server that cannot be reached or started, a schema that cannot be turned into models): the
    message is one line and names what failed."""


@dataclass(frozen=True, slots=True)
class ServerTarget:
    """Where the server is: a stdio command (argv) or a streamable HTTP URL; exactly one is set."""

    command: tuple[str, ...] | None = None
    url: str | None = None

    def describe(self) -> str:
        return (
            f"the server at {self.url}"
            if self.url is not None
            else f"the server command {shlex.join(self.command or ())!r}"
        )


@dataclass(frozen=True, slots=True)
class ServerSnapshot:
    """What the generated module is made from: the server's identity, the negotiated protocol version and every
    tool exactly as sent (wire names)."""

    name: str
    version: str
    protocol_version: str
    tools: tuple[dict[str, Any], ...]

    @property
    def tools_sha256(self) -> str:
        # Canonical JSON, so the digest changes only when what the server lists changes.
        canonical = json.dumps(list(self.tools), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# -- talking to the server -----------------------------------------------------------------------------------------


async def fetch_snapshot(target: ServerTarget, timeout: float = 30.0) -> ServerSnapshot:
    """Connect, initialize, list every tool (all pages) and disconnect. Any failure, including no answer within
    ``timeout`` seconds, raises ``ClientGenerationError`` with one line saying what went wrong."""
    stderr_source: list[SubprocessStream] = []
    try:
        with anyio.fail_after(timeout):
            async with _connect(target, stderr_source) as client:
                tools = await client.tools()
                info = client.server_info
                return ServerSnapshot(
                    name=info.name,
                    version=info.version,
                    protocol_version=client.protocol_version,
                    tools=tuple(tool.model_dump(mode="json", by_alias=True) for tool in tools),
                )
    except TimeoutError:
        raise ClientGenerationError(f"{target.describe()} did not answer within {timeout:g}s") from None
    except Exception as exc:  # connection refused, no such command, a child that died, a bad URL, ...
        detail = _leaf_message(exc)
        stderr = _last_stderr_line(stderr_source)
        suffix = f" (its stderr: {stderr})" if stderr and stderr not in detail else ""
        raise ClientGenerationError(f"cannot talk to {target.describe()}: {detail}{suffix}") from exc


@asynccontextmanager
async def _connect(target: ServerTarget, stderr_source: list[SubprocessStream]) -> AsyncIterator[Client]:
    from .runtime import Client, open_subprocess_stream  # not at import: `mcpgen --help` stays fast

    info = {"name": "mcpgen-client-from-server", "version": __version__}
    if target.url is not None:
        async with Client.connect_http(target.url, client_info=info) as client:
            yield client
        return
    assert target.command is not None
    if not target.command:
        raise ClientGenerationError("the server command is empty")
    # Captured, so that a server that dies on start is reported by its last words rather than a traceback flood.
    async with open_subprocess_stream(target.command, os.environ.copy(), capture_stderr=True) as stream:
        stderr_source.append(stream)
        async with Client.connect(stream, client_info=info) as client:
            yield client


def _leaf_message(exc: BaseException) -> str:
    # Task groups wrap the real cause in (nested) exception groups; the first leaf is the one worth reading.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _last_stderr_line(sources: Sequence[SubprocessStream]) -> str:
    for stream in sources:
        lines = [line.strip() for line in stream.stderr_output.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return ""


# -- schemas -> one JSON Schema document -> models -----------------------------------------------------------------


def bind_tools(tools: Sequence[Mapping[str, Any]]) -> list[ToolBinding]:
    """Give every tool a unique method name and unique model names (``GetForecastInput``/``...Output``)."""
    taken_methods: set[str] = set(RESERVED_METHODS)
    taken_classes: set[str] = set()
    bindings = []
    for tool in tools:
        name = str(tool["name"])
        method = snake_identifier(name, taken_methods)
        stem = pascal_identifier(method, taken_classes, suffixes=("Input", "Output"))
        bindings.append(
            ToolBinding(
                name=name,
                method=method,
                description=str(tool.get("description") or tool.get("title") or ""),
                input_class=f"{stem}Input",
                output_class=f"{stem}Output" if isinstance(tool.get("outputSchema"), Mapping) else None,
            )
        )
    return bindings


def build_schema_document(tools: Sequence[Mapping[str, Any]], bindings: Sequence[ToolBinding]) -> dict[str, Any]:
    """One document whose ``$defs`` are every tool's input and output schema under its binding's class name, and
    their own definitions hoisted as ``<ClassName><Definition>``, with every local ``$ref`` rewritten to match."""
    definitions: dict[str, Any] = {}
    # Every root name is reserved first, so that no hoisted definition can take a later tool's class name.
    taken = {name for binding in bindings for name in (binding.input_class, binding.output_class) if name}
    for tool, binding in zip(tools, bindings, strict=True):
        _add_schema(definitions, binding.input_class, tool.get("inputSchema"), taken)
        if binding.output_class is not None:
            _add_schema(definitions, binding.output_class, tool.get("outputSchema"), taken)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": definitions}


def _add_schema(definitions: dict[str, Any], root_name: str, schema: object, taken: set[str]) -> None:
    if not isinstance(schema, Mapping):
        schema = {"type": "object"}  # a tool must send an object schema; do not let one bad tool stop the rest
    hoisted: dict[str, str] = {}
    for key in DEFINITIONS_KEYS:
        inner = schema.get(key)
        if isinstance(inner, Mapping):
            for name in inner:
                hoisted[f"#/{key}/{name}"] = pascal_identifier(
                    f"{root_name}_{snake_identifier(str(name), set())}", taken
                )
    root = {key: value for key, value in schema.items() if key not in DEFINITIONS_KEYS}
    definitions[root_name] = _rewrite_refs(root, root_name, hoisted)
    for key in DEFINITIONS_KEYS:
        inner = schema.get(key)
        if isinstance(inner, Mapping):
            for name, sub in inner.items():
                definitions[hoisted[f"#/{key}/{name}"]] = _rewrite_refs(sub, root_name, hoisted)


def _rewrite_refs(node: object, root_name: str, hoisted: Mapping[str, str]) -> Any:
    if isinstance(node, list):
        return [_rewrite_refs(item, root_name, hoisted) for item in node]
    if not isinstance(node, Mapping):
        return node
    rewritten = {key: _rewrite_refs(value, root_name, hoisted) for key, value in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        rewritten["$ref"] = _rewrite_ref(ref, root_name, hoisted)
    return rewritten


def _rewrite_ref(ref: str, root_name: str, hoisted: Mapping[str, str]) -> str:
    # JSON pointers are relative to the tool's schema root, which now lives at #/$defs/<root_name>.
    for old, new in hoisted.items():
        if ref == old or ref.startswith(old + "/"):
            return f"#/$defs/{new}{ref[len(old):]}"
    pointer = ref[1:]
    return f"#/$defs/{root_name}{pointer if pointer.startswith('/') or not pointer else '/' + pointer}"


def generate_models(document: Mapping[str, Any]) -> str:
    """datamodel-code-generator (0.89) on the merged document: pydantic v2 models for Python 3.11, one class per
    ``$defs`` entry named by its key, models accepting field names as well as wire aliases."""
    try:
        from datamodel_code_generator import Error, LiteralType, PythonVersion, generate
        from datamodel_code_generator.enums import DataModelType, InputFileType, NamingStrategy
    except ImportError as exc:  # a dev dependency of mcpgen, needed only by this command
        raise ClientGenerationError(
            f"client-from-server needs datamodel-code-generator (pip install datamodel-code-generator): {exc}"
        ) from exc
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecation notices are about its CLI defaults, not our input
            source = generate(
                dict(document),
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_311,
                formatters=[],  # black runs once over the whole module
                disable_timestamp=True,
                skip_root_model=True,  # the document's root is only a container for $defs
                use_title_as_name=False,  # class names are the $defs keys we chose, never a schema's title
                naming_strategy=NamingStrategy.ParentPrefixed,
                enum_field_as_literal=LiteralType.All,  # Literal keyword types; no enum classes shared across tools
                strict_nullable=True,  # null only where the schema allows it
                snake_case_field=True,
                allow_population_by_field_name=True,  # keyword arguments use field names, the wire uses aliases
                use_annotated=True,  # defaults as plain assignments, which type checkers read without a plugin
                use_union_operator=True,
                use_standard_collections=True,
                use_schema_description=True,
                use_field_description=True,
            )
    except Error as exc:
        raise ClientGenerationError(f"the tool schemas cannot be turned into models: {exc}") from exc
    if not isinstance(source, str):
        raise ClientGenerationError("datamodel-code-generator returned several modules; expected one")
    return source


# -- the module ----------------------------------------------------------------------------------------------------


def render_client_module(snapshot: ServerSnapshot, class_name: str | None = None) -> str:
    """The complete, black-formatted source of the typed client module for ``snapshot``."""
    bindings = bind_tools(snapshot.tools)
    models_source = generate_models(build_schema_document(snapshot.tools, bindings)) if bindings else ""
    models = parse_models(models_source)
    for binding in bindings:
        for expected in (binding.input_class, binding.output_class):
            if expected is not None and expected not in models.classes:
                raise ClientGenerationError(
                    f"tool {binding.name!r}: datamodel-code-generator did not produce the class {expected}"
                )
    class_name = class_name or class_name_for_server(snapshot.name)
    if class_name in models.classes:
        raise ClientGenerationError(f"the class name {class_name} is also a model's; choose another with --class-name")
    header = (
        f"# Code generated by mcpgen {__version__} from {_one_line(snapshot.name)} {_one_line(snapshot.version)} "
        f"(tools/list sha256 {snapshot.tools_sha256}). DO NOT EDIT."
    )
    source = assemble_module(
        header=header,
        server_name=snapshot.name,
        protocol_version=snapshot.protocol_version,
        class_name=class_name,
        bindings=bindings,
        models=models,
    )
    try:
        return format_files({"client.py": source}, use_cache=False)["client.py"]
    except FormatError as exc:  # our own rendering produced bad Python: a bug, reported as such
        raise ClientGenerationError(f"internal error: the generated module does not parse: {exc}") from exc


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "?"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, so a reader (or a failed run)
    never sees half a module."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False) as handle:
        handle.write(text)
    try:
        os.replace(handle.name, path)
    except OSError:
        Path(handle.name).unlink(missing_ok=True)
        raise
