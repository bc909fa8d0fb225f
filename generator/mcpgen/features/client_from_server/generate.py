"""`mcpgen client-from-server`: a typed Python client module generated from what a live MCP server says it has.

Where it sits: beside the bindings pipeline, not in it. ``fetch_snapshot`` connects with ``mcpgen_runtime.Client``
(stdio or streamable HTTP, auto mode: either era) and lists every tool; ``build_schema_document`` merges each tool's ``inputSchema`` and
``outputSchema`` into one JSON Schema document under names we choose; datamodel-code-generator turns that into
pydantic v2 models; ``module_render`` writes the client class that calls the tools through those models;
``pipeline.formatting`` (black) owns the layout; ``write_atomically`` puts the file in place.
``cli/client_from_server.py`` is the command.

The server is not trusted: ``schema_guard.vet_tools`` vets every tool before anything of it reaches the
generator (local ``#/...`` refs only, an allow-list of keywords, bounded sizes), the generator itself runs with
remote refs disabled, and the finished module must compile before it is written.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shlex
import tempfile
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ... import __version__
from ...pipeline.formatting import FormatError, format_files
from .module_render import (
    RESERVED_METHODS,
    ParsedModels,
    ToolBinding,
    assemble_module,
    class_name_for_server,
    parse_models,
    pascal_identifier,
    snake_identifier,
    unique_name,
)
from .schema_guard import (
    SCHEMA_LIST_KEYWORDS,
    SINGLE_SCHEMA_KEYWORDS,
    UnsafeSchemaError,
    check_protocol_version,
    check_tools_bounds,
    describe,
    one_line,
    tool_json_chars,
    vet_tools,
)

if TYPE_CHECKING:  # the runtime (and with it every version's bindings) is imported when a client connects
    from mcpgen_runtime import Client, SubprocessStream

# Our pointers into the merged document; a tool's own "$defs"/"definitions" are hoisted next to its root schema.
DEFINITIONS_KEYS = ("$defs", "definitions")
# A server that pages tools/list forever (or in one-tool pages) is cut off here, and a single frame beyond this many
# bytes ends the connection, so that neither can make us buffer without bound before the guard's limits apply.
MAX_TOOLS_PAGES = 1000
MAX_FRAME_BYTES = 64 * 1024 * 1024
# The header lists at most this many of the guard's notes (what it dropped from the schemas).
MAX_HEADER_NOTES = 50
# The name a server that does not say its own (no serverInfo in its server/discover result) is generated under.
UNNAMED_SERVER = "mcp-server"


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
        # surrogatepass: a lone surrogate (valid in JSON text, not in UTF-8) must not crash the digest.
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class GeneratedModels:
    """datamodel-code-generator's module and, for each ``$defs`` entry of the document, the class it became."""

    source: str = ""
    class_of: Mapping[str, str] = field(default_factory=dict)


# -- talking to the server -----------------------------------------------------------------------------------------


async def fetch_snapshot(target: ServerTarget, timeout: float = 30.0) -> ServerSnapshot:
    """Connect in auto mode (``server/discover``, else the ``initialize`` handshake), list every tool (all pages,
    within the guard's bounds) and disconnect. Any failure, including no answer within ``timeout`` seconds, raises
    ``ClientGenerationError`` with one line saying what went wrong."""
    stderr_source: list[SubprocessStream] = []
    try:
        with anyio.fail_after(timeout):
            async with _connect(target, stderr_source) as client:
                tools = await _list_tools(client)
                # Always there after initialize; in 2026-07-28 a server MAY leave its serverInfo out.
                info = client.server_info
                return ServerSnapshot(
                    name=info.name if info is not None else UNNAMED_SERVER,
                    version=info.version if info is not None else "",
                    protocol_version=client.protocol_version,
                    tools=tuple(tools),
                )
    except TimeoutError:
        raise ClientGenerationError(f"{target.describe()} did not answer within {timeout:g}s") from None
    except Exception as exc:  # connection refused, no such command, a child that died, a bad URL, ...
        leaf = _leaf(exc)
        if isinstance(leaf, ClientGenerationError | UnsafeSchemaError):  # our own verdict, already one line
            raise ClientGenerationError(str(leaf)) from None
        detail = _leaf_message(exc)
        stderr = _last_stderr_line(stderr_source)
        suffix = f" (its stderr: {one_line(stderr)})" if stderr and stderr not in detail else ""
        raise ClientGenerationError(f"cannot talk to {target.describe()}: {detail}{suffix}") from exc


async def _list_tools(client: Client) -> list[dict[str, Any]]:
    # Client.tools() follows nextCursor for as long as the server sends one; here every page is checked against
    # the guard's bounds as it arrives.
    bindings = client.bindings
    tools: list[dict[str, Any]] = []
    json_chars = 0
    cursor: str | None = None
    for _ in range(MAX_TOOLS_PAGES):
        result = await client.request(bindings.ListToolsRequest, None if cursor is None else _page(client, cursor))
        page = [tool.model_dump(mode="json", by_alias=True) for tool in result.tools]
        tools.extend(page)
        json_chars += sum(tool_json_chars(tool) for tool in page)
        check_tools_bounds(len(tools), json_chars)
        cursor = result.next_cursor
        if not cursor:
            return tools
    raise ClientGenerationError(f"the server is still paging tools/list after {MAX_TOOLS_PAGES} pages; refused")


def _page(client: Client, cursor: str) -> Any:
    # The params of a next page, in either era: a 2026-07-28 request's `_meta` is the connection's to fill in.
    bindings = client.bindings
    params_type = getattr(bindings, "ListToolsRequestParams", None) or bindings.PaginatedRequestParams
    return params_type(cursor=cursor)


@asynccontextmanager
async def _connect(target: ServerTarget, stderr_source: list[SubprocessStream]) -> AsyncIterator[Client]:
    from mcpgen_runtime import Client, open_subprocess_stream  # not at import: `mcpgen --help` stays fast

    info = {"name": "mcpgen-client-from-server", "version": __version__}
    if target.url is not None:
        async with Client.connect_http(target.url, client_info=info, mode="auto") as client:
            yield client
        return
    assert target.command is not None
    if not target.command:
        raise ClientGenerationError("the server command is empty")
    # Captured, so that a server that dies on start is reported by its last words rather than a traceback flood.
    async with open_subprocess_stream(
        target.command, os.environ.copy(), capture_stderr=True, max_frame_bytes=MAX_FRAME_BYTES
    ) as stream:
        stderr_source.append(stream)
        async with Client.connect(stream, client_info=info, mode="auto") as client:
            yield client


def _leaf(exc: BaseException) -> BaseException:
    # Task groups wrap the real cause in (nested) exception groups; the first leaf is the one worth reading.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _leaf_message(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = one_line(str(leaf), 300)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


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
    """One document whose ``$defs`` are every tool's input and output schema under its binding's class name, their
    own definitions hoisted as ``<ClassName><Definition>``, and every other schema a ref points at (``#/properties/x``,
    as zod-to-json-schema writes) copied out as ``<ClassName><X>``; every ``$ref`` is rewritten to name one of these
    entries. So the generator never names a class after a server-chosen pointer's last token (which could be
    ``Literal`` or another tool's input class) and never sees a pointer into a schema."""
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
    entries: dict[str, str] = {"#": root_name}  # every ref of this schema -> the $defs entry it names from now on
    copies: dict[str, Any] = {}
    for key in DEFINITIONS_KEYS:
        inner = schema.get(key)
        if isinstance(inner, Mapping):
            for name, sub in inner.items():
                entry = pascal_identifier(f"{root_name}_{snake_identifier(str(name), set())}", taken)
                entries[f"#/{key}/{_pointer_token(str(name))}"] = entry
                copies[entry] = sub
    referenced: list[str] = []

    def collect(ref: str) -> str:
        referenced.append(ref)
        return ref

    _rewrite_refs(schema, collect)
    for ref in sorted(set(referenced) - entries.keys()):
        target = _resolve_pointer(schema, ref)
        if target is None:  # the guard only lets through refs that resolve
            raise ClientGenerationError(f"internal error: the $ref {ref!r} resolves to nothing")
        last = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        entry = pascal_identifier(f"{root_name}_{snake_identifier(last, set())}", taken)
        entries[ref] = entry
        copies[entry] = target

    def rename(ref: str) -> str:
        if ref not in entries:
            raise ClientGenerationError(f"internal error: the $ref {ref!r} was not given a definition")
        return f"#/$defs/{entries[ref]}"

    definitions[root_name] = _rewrite_refs({k: v for k, v in schema.items() if k not in DEFINITIONS_KEYS}, rename)
    for entry, sub in copies.items():
        definitions[entry] = _rewrite_refs(sub, rename)


def _pointer_token(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _resolve_pointer(schema: Mapping[str, Any], ref: str) -> Any:
    node: Any = schema
    for token in ref[1:].split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _rewrite_refs(schema: object, rename: Callable[[str], str]) -> Any:
    # Walks schema positions only (the keywords the guard keeps), so that a "$ref" key inside a default value or
    # a property *named* "$ref" is left alone.
    if not isinstance(schema, Mapping):
        return schema  # true/false
    rewritten: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", *DEFINITIONS_KEYS) and isinstance(value, Mapping):
            rewritten[key] = {name: _rewrite_refs(sub, rename) for name, sub in value.items()}
        elif (key in SCHEMA_LIST_KEYWORDS or key == "items") and isinstance(value, list):
            rewritten[key] = [_rewrite_refs(sub, rename) for sub in value]
        elif key in SINGLE_SCHEMA_KEYWORDS:
            rewritten[key] = _rewrite_refs(value, rename)
        elif key == "$ref":
            if not isinstance(value, str) or not value.startswith("#"):  # the guard refuses these; never resolve one
                raise ClientGenerationError(f"internal error: a non-local $ref {value!r} reached the generator")
            rewritten[key] = rename(value)
        else:
            rewritten[key] = value
    return rewritten


def generate_models(document: Mapping[str, Any]) -> GeneratedModels:
    """datamodel-code-generator (0.89) on the merged document: pydantic v2 models for Python 3.11, one class per
    ``$defs`` entry named by its key (unless that name is taken: the generator's model metadata says which class
    each entry became), models accepting field names as well as wire aliases.

    The guard has already refused every ref but ``#/...`` (and ``_rewrite_refs`` re-checks that). As well, the
    generator runs with remote refs disabled (no http(s) fetch, no file outside its base directory) and dangling
    local refs an error. That option alone is not enough: for a dict input its base directory is the working
    directory, whose files it would still read."""
    try:
        from datamodel_code_generator import LiteralType, PythonVersion, generate
        from datamodel_code_generator.enums import DataModelType, InputFileType, NamingStrategy
    except ImportError as exc:  # a dev dependency of mcpgen, needed only by this command
        raise ClientGenerationError(
            f"client-from-server needs datamodel-code-generator (pip install datamodel-code-generator): {exc}"
        ) from exc
    try:
        with tempfile.TemporaryDirectory(prefix="mcpgen-client-") as directory, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its deprecation notices are about its CLI defaults, not our input
            metadata_path = Path(directory) / "models.json"
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
                allow_remote_refs=False,  # no http(s) fetch, no file outside the working directory
                allow_private_network=False,
                strict_refs=True,  # a dangling local ref is an error, not a silent Any
                emit_model_metadata=metadata_path,
            )
            metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
    except Exception as exc:  # its Error, and the plain exceptions some of its checks raise
        raise ClientGenerationError(
            f"the tool schemas cannot be turned into models: {type(exc).__name__}: {one_line(str(exc), 300)}"
        ) from exc
    if not isinstance(source, str):
        raise ClientGenerationError("datamodel-code-generator returned several modules; expected one")
    # A $defs entry whose name an inline model took first (tool "a" with an object property "b_input" and a tool
    # "a_input_b" both want AInputBInput) is renamed (AInputBInput1): the metadata, not the name, is the truth.
    class_of = {
        model["source_ref"].removeprefix("#/$defs/"): model["class_name"]
        for model in metadata.get("models", [])
        if model.get("source_ref", "").count("/") == 2 and model["source_ref"].startswith("#/$defs/")
    }
    return GeneratedModels(source=source, class_of=class_of)


# -- the module ----------------------------------------------------------------------------------------------------


def render_client_module(snapshot: ServerSnapshot, class_name: str | None = None) -> str:
    """The complete, black-formatted source of the typed client module for ``snapshot``. Every tool goes through
    ``schema_guard.vet_tools`` first; what it refuses raises ``ClientGenerationError``."""
    try:
        protocol_version = check_protocol_version(snapshot.protocol_version)
        vetted = vet_tools(snapshot.tools)
    except UnsafeSchemaError as exc:
        raise ClientGenerationError(str(exc)) from None
    chosen = bind_tools(vetted.tools)
    generated = generate_models(build_schema_document(vetted.tools, chosen)) if chosen else GeneratedModels()
    models = parse_models(generated.source)
    bindings = [_bind_to_generated(binding, generated.class_of, models.classes) for binding in chosen]
    _check_no_shadowed_imports(models)
    if class_name is None:  # the server's schemas may name a model like the default: then take the next free name
        class_name = unique_name(class_name_for_server(str(snapshot.name)), models.classes)
    elif class_name in models.classes:
        raise ClientGenerationError(f"the class name {class_name} is also a model's; choose another with --class-name")
    source = assemble_module(
        header=_header(snapshot, vetted.notes),
        server_name=one_line(str(snapshot.name), 100),
        protocol_version=protocol_version,
        class_name=class_name,
        bindings=bindings,
        models=models,
    )
    try:
        formatted = format_files({"client.py": source}, use_cache=False)["client.py"]
    except FormatError as exc:  # our own rendering produced bad Python: a bug, reported as such
        raise ClientGenerationError(f"internal error: the generated module does not parse: {exc}") from exc
    _check_writable_python(formatted)
    return formatted


def _bind_to_generated(binding: ToolBinding, class_of: Mapping[str, str], classes: Mapping[str, object]) -> ToolBinding:
    actual: dict[str, str | None] = {}
    for role, expected in (("input_class", binding.input_class), ("output_class", binding.output_class)):
        if expected is None:
            actual[role] = None
            continue
        generated = class_of.get(expected)
        if generated is None or generated not in classes:
            raise ClientGenerationError(
                f"tool {describe(binding.name)}: datamodel-code-generator did not produce the class {expected}"
            )
        actual[role] = generated
    return replace(
        binding, input_class=actual["input_class"] or binding.input_class, output_class=actual["output_class"]
    )


def _check_no_shadowed_imports(models: ParsedModels) -> None:
    # A class named like something the models import (Literal, BaseModel, AwareDatetime, ...) would break every
    # annotation after it. The document only names classes after our own identifiers, so this is a last check.
    imported: set[str] = set()
    for statement in ast.parse(models.imports).body if models.imports else ():
        if isinstance(statement, ast.Import | ast.ImportFrom):
            imported.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
    if clashes := sorted(imported & models.classes.keys()):
        raise ClientGenerationError(f"internal error: generated classes shadow imported names: {', '.join(clashes)}")


def _header(snapshot: ServerSnapshot, notes: Sequence[str]) -> str:
    lines = [
        f"# Code generated by mcpgen {__version__} from {one_line(str(snapshot.name), 100) or '?'} "
        f"{one_line(str(snapshot.version), 40) or '?'} (tools/list sha256 {snapshot.tools_sha256}). DO NOT EDIT."
    ]
    if notes:
        lines.append("# mcpgen left out of the server's schemas (the server still validates what it receives):")
        lines.extend(f"# - {one_line(note, 300)}" for note in notes[:MAX_HEADER_NOTES])
        if len(notes) > MAX_HEADER_NOTES:
            lines.append(f"# - ... and {len(notes) - MAX_HEADER_NOTES} more")
    return "\n".join(lines)


def _check_writable_python(source: str) -> None:
    # The last wall before the file is written: what we write must be UTF-8 and compile (compiling runs nothing).
    try:
        source.encode("utf-8")
        compile(source, "<generated client>", "exec", dont_inherit=True)
    except (UnicodeEncodeError, SyntaxError, ValueError) as exc:
        raise ClientGenerationError(
            f"internal error: the generated module would not import: {type(exc).__name__}: {one_line(str(exc))}"
        ) from None


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
