"""`mcpgen render`: render any template set (a *target*) against the IR, for languages other than Python.

Pipeline position: IR (pipeline.generate.build_irs) -> **neutral view -> render** (this module, with the shared
render.make_environment) -> format (only when the target asks for black) -> write (output.write_tree).

A target is a directory of Jinja templates plus a manifest, `target.toml` (or `target.json`), that says
which template renders to which output path, once per version (`{module}`/`{version}` placeholders) or
once for all versions. The bindings' view (pipeline/views.py) spells Python; the view built here is language
neutral: names in UPPER_SNAKE, camelCase and PascalCase, prose, and the raw IR as plain data, every
collection sorted. docs/how-to/templates.md documents the manifest and every context field.

Nothing here touches the file system except reading the target: `load_target` and `render_target`
raise TargetError (bad manifest) or render.TemplateRenderError (bad template) before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
import string
import tomllib
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from .. import __version__
from ..ir import Definition, ErrorCode, Method, VersionIR
from ..naming import snake_case
from ..pipeline.render import TemplateRenderError, header_text, latest_dated_version, make_environment
from ..pipeline.spec_loader import version_sort_key
from ..pipeline.views import ModelsView, method_constant

MANIFEST_NAMES: Final = ("target.toml", "target.json")
FORMATS: Final = ("none", "black")
PER: Final = ("version", "once")
# Placeholders an output path may use, by `per`: one file per version needs one, a shared file none.
PLACEHOLDERS: Final = {"version": frozenset({"module", "version"}), "once": frozenset[str]()}
TOP_LEVEL_KEYS: Final = frozenset({"name", "description", "format", "output"})
OUTPUT_KEYS: Final = frozenset({"template", "path", "per"})
BUILTIN_TARGETS: Final = "targets"  # under the built-in templates directory


class TargetError(Exception):
    """A template set that cannot be rendered: no manifest, a malformed one, or one naming a missing template."""

    def __init__(self, file: str, pointer: str, message: str) -> None:
        super().__init__(f"{file}#{pointer}: {message}" if pointer else f"{file}: {message}")


@dataclass(frozen=True)
class TargetOutput:
    template: str  # relative to the target directory
    path: str  # relative to --out, with placeholders
    per: Literal["version", "once"]


@dataclass(frozen=True)
class Target:
    directory: Path
    manifest: Path
    name: str
    description: str
    format: Literal["none", "black"]
    outputs: tuple[TargetOutput, ...]  # in manifest order; render sorts the files


# -- loading a target ------------------------------------------------------------------------------


def resolve_target_dir(argument: Path, templates_root: Path) -> Path:
    """`--template` is a directory, or the bare name of a built-in target (templates/targets/NAME)."""
    builtin = templates_root / BUILTIN_TARGETS / argument.name
    if not argument.exists() and len(argument.parts) == 1 and builtin.is_dir():
        return builtin
    return argument


def _read_manifest(directory: Path) -> tuple[Path, Any]:
    if not directory.is_dir():
        raise TargetError(str(directory), "", "not a directory (a template set is a directory with target.toml)")
    found = [directory / name for name in MANIFEST_NAMES if (directory / name).is_file()]
    if not found:
        raise TargetError(str(directory), "", f"no manifest: expected {' or '.join(MANIFEST_NAMES)}")
    if len(found) > 1:
        raise TargetError(str(directory), "", f"two manifests ({', '.join(MANIFEST_NAMES)}): keep one")
    path = found[0]
    try:
        text = path.read_text(encoding="utf-8")
        return path, tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise TargetError(str(path), "", f"cannot read the manifest: {error}") from None


def _relative_path(value: str) -> bool:
    """A forward-slash path inside the directory: no root, no `..`, no empty or `.` parts."""
    parts = value.split("/")
    return bool(value) and "\\" not in value and all(part not in ("", ".", "..") for part in parts)


def _string(data: dict[str, Any], key: str, file: str, pointer: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or not value:
        raise TargetError(file, f"{pointer}/{key}", f"expected a non-empty string, got {value!r}")
    return value


def _placeholders(path: str, file: str, pointer: str) -> set[str]:
    try:
        fields = list(string.Formatter().parse(path))
    except ValueError as error:
        raise TargetError(file, pointer, f"bad placeholder in {path!r}: {error}") from None
    names = set()
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        if spec or conversion:
            raise TargetError(file, pointer, f"placeholder {{{name}}} in {path!r} takes no format or conversion")
        names.add(name)
    return names


def _output(entry: Any, index: int, directory: Path, file: str) -> TargetOutput:
    pointer = f"/output/{index}"
    if not isinstance(entry, dict):
        raise TargetError(file, pointer, "expected a table with template, path and per")
    unknown = sorted(set(entry) - OUTPUT_KEYS)
    if unknown:
        raise TargetError(
            file, pointer, f"unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(OUTPUT_KEYS))}"
        )
    template = _string(entry, "template", file, pointer)
    if not _relative_path(template) or not (directory / template).is_file():
        raise TargetError(file, f"{pointer}/template", f"unknown template {template!r}: no such file in {directory}")
    path = _string(entry, "path", file, pointer)
    per = _string(entry, "per", file, pointer)
    if per not in PER:
        raise TargetError(file, f"{pointer}/per", f"expected one of {', '.join(PER)}, got {per!r}")
    used = _placeholders(path, file, f"{pointer}/path")
    allowed = PLACEHOLDERS[per]
    if used - allowed:
        hint = ", ".join("{" + name + "}" for name in sorted(allowed)) or "none"
        raise TargetError(file, f"{pointer}/path", f"unknown placeholder(s) in {path!r}; per = {per!r} allows {hint}")
    if per == "version" and not used:
        raise TargetError(file, f"{pointer}/path", f"{path!r} needs {{module}} or {{version}}: one file per version")
    if not _relative_path(path):
        raise TargetError(file, f"{pointer}/path", f"{path!r} must be a relative path inside --out")
    return TargetOutput(template, path, "version" if per == "version" else "once")


def load_target(directory: Path) -> Target:
    manifest, data = _read_manifest(directory)
    file = str(manifest)
    if not isinstance(data, dict):
        raise TargetError(file, "", "expected a table (TOML) or an object (JSON) at the top")
    unknown = sorted(set(data) - TOP_LEVEL_KEYS)
    if unknown:
        raise TargetError(
            file, "", f"unknown key(s) {', '.join(unknown)}; expected {', '.join(sorted(TOP_LEVEL_KEYS))}"
        )
    fmt = _string(data, "format", file, "", "none")
    if fmt not in FORMATS:
        raise TargetError(file, "/format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    entries = data.get("output")
    if not isinstance(entries, list) or not entries:
        raise TargetError(file, "/output", "expected a non-empty list of outputs ([[output]] tables)")
    outputs = tuple(_output(entry, index, directory, file) for index, entry in enumerate(entries))
    return Target(
        directory=directory,
        manifest=manifest,
        name=_string(data, "name", file, "", directory.resolve().name),
        description=_string(data, "description", file, "", "(no description)"),
        format="black" if fmt == "black" else "none",
        outputs=outputs,
    )


# -- the language-neutral view ---------------------------------------------------------------------


def camel_case(snake: str) -> str:
    """tools_call -> toolsCall; CLIENT_REQUESTS -> clientRequests."""
    first, *rest = snake.lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


def pascal_case(snake: str) -> str:
    """tools_call -> ToolsCall; INVALID_PARAMS -> InvalidParams."""
    return "".join(word.capitalize() for word in snake.lower().split("_"))


def summary(text: str | None) -> str:
    """The first paragraph, on one line ("" without a description)."""
    return " ".join((text or "").strip().split("\n\n", 1)[0].split())


@dataclass(frozen=True)
class NeutralAlternative:
    type: str  # the result definition a request may get instead of its usual one
    key: str  # the result property that tells it apart
    value: str | None  # what `key` equals; None: its presence is enough
    reason: str


@dataclass(frozen=True)
class NeutralMethod:
    method: str  # the wire name, tools/call
    constant: str  # TOOLS_CALL
    camel: str  # toolsCall
    pascal: str  # ToolsCall
    kind: str  # request | notification
    direction: str  # client_to_server | server_to_client | both
    delivery: str  # jsonrpc | input_request (inside InputRequiredResult, 2026-07-28)
    message_type: str  # the request or notification definition
    params_type: str | None
    result_type: str | None  # requests only
    result_rule: str | None
    alternatives: tuple[NeutralAlternative, ...]
    capability: str | None  # dotted wire path, see ir.Method.capability
    summary: str
    description: str


@dataclass(frozen=True)
class NeutralMethodSet:
    name: str  # CLIENT_REQUESTS
    camel: str  # clientRequests
    pascal: str  # ClientRequests
    description: str
    methods: tuple[str, ...]  # wire names, sorted
    constants: tuple[str, ...]  # the same methods as UPPER_SNAKE constants, sorted


@dataclass(frozen=True)
class NeutralField:
    name: str  # the wire name
    required: bool
    type: dict[str, Any]  # the IR type expression as plain data, tagged by `kind`
    summary: str
    description: str


@dataclass(frozen=True)
class NeutralDefinition:
    name: str
    kind: str  # object | union | enum | const | alias
    role: str  # request | notification | result | none
    inline: bool  # named by mcpgen from its position, not by the schema
    pointer: str
    fields: tuple[NeutralField, ...]  # objects only, sorted by wire name
    type: dict[str, Any] | None  # unions, enums, consts, aliases
    summary: str
    description: str


@dataclass(frozen=True)
class NeutralErrorCode:
    name: str  # INVALID_PARAMS
    camel: str  # invalidParams
    pascal: str  # InvalidParams
    code: int
    source: str
    summary: str
    description: str


@dataclass(frozen=True)
class NeutralView:
    methods: tuple[NeutralMethod, ...]  # sorted by wire name
    requests: tuple[NeutralMethod, ...]
    notifications: tuple[NeutralMethod, ...]
    method_sets: tuple[NeutralMethodSet, ...]  # sorted by name
    definitions: tuple[NeutralDefinition, ...]  # sorted by name
    error_codes: tuple[NeutralErrorCode, ...]  # sorted by name


@dataclass(frozen=True)
class NeutralVersion:
    version: str
    module: str
    schema_path: str
    schema_sha256: str
    latest: bool


METHOD_SET_DESCRIPTIONS: Final = {
    "CLIENT_NOTIFICATIONS": "Notifications the client sends.",
    "CLIENT_REQUESTS": "Requests the client sends to the server.",
    "INPUT_REQUESTS": "Server requests that travel inside an InputRequiredResult, not as JSON-RPC requests.",
    "SERVER_NOTIFICATIONS": "Notifications the server sends.",
    "SERVER_REQUESTS": "Requests the server sends to the client.",
}


def _method(method: Method) -> NeutralMethod:
    snake = snake_case(method.method)
    return NeutralMethod(
        method=method.method,
        constant=method_constant(method.method),
        camel=camel_case(snake),
        pascal=pascal_case(snake),
        kind=method.kind,
        direction=method.direction,
        delivery=method.delivery,
        message_type=method.message_type,
        params_type=method.params_type,
        result_type=method.result_type,
        result_rule=method.result_rule,
        alternatives=tuple(NeutralAlternative(a.type, a.key, a.value, a.reason) for a in method.alternatives),
        capability=method.capability,
        summary=summary(method.description),
        description=method.description or "",
    )


def _definition(definition: Definition) -> NeutralDefinition:
    fields = tuple(
        NeutralField(f.wire_name, f.required, dataclasses.asdict(f.type), summary(f.description), f.description or "")
        for f in sorted(definition.fields, key=lambda f: f.wire_name)
    )
    return NeutralDefinition(
        name=definition.name,
        kind=definition.kind,
        role=definition.role,
        inline=definition.inline,
        pointer=definition.pointer,
        fields=fields,
        type=dataclasses.asdict(definition.type) if definition.type is not None else None,
        summary=summary(definition.description),
        description=definition.description or "",
    )


def _error_code(code: ErrorCode) -> NeutralErrorCode:
    return NeutralErrorCode(
        code.name,
        camel_case(code.name),
        pascal_case(code.name),
        code.code,
        code.source,
        summary(code.description),
        code.description,
    )


def neutral_view(ir: VersionIR) -> NeutralView:
    methods = tuple(sorted((_method(m) for m in ir.methods), key=lambda m: m.method))
    by_constant = {m.constant: m.method for m in methods}
    # The per-direction rule is the Python backend's (pipeline/views.py), so both targets agree on membership.
    sets = tuple(
        NeutralMethodSet(
            name,
            camel_case(name),
            pascal_case(name),
            METHOD_SET_DESCRIPTIONS.get(name, ""),
            tuple(sorted(by_constant[c] for c in constants)),
            tuple(sorted(constants)),
        )
        for name, constants in sorted(ModelsView(ir).method_sets().items())
    )
    return NeutralView(
        methods=methods,
        requests=tuple(m for m in methods if m.kind == "request"),
        notifications=tuple(m for m in methods if m.kind == "notification"),
        method_sets=sets,
        definitions=tuple(_definition(d) for d in sorted(ir.definitions, key=lambda d: d.name)),
        error_codes=tuple(sorted((_error_code(c) for c in ir.error_codes), key=lambda c: c.name)),
    )


# -- rendering -------------------------------------------------------------------------------------


def render_target(target: Target, irs: list[VersionIR], manifest_sha256: str) -> dict[str, str]:
    """{path relative to --out: text} for every output of `target`, for the versions in `irs`.

    `manifest_sha256` is that of spec/manifest.json, the provenance of the once-for-all-versions files.
    Raises TemplateRenderError for a template that does not load or render, TargetError when two
    outputs land on the same path."""
    environment = make_environment([target.directory])
    ordered = sorted(irs, key=lambda ir: version_sort_key(ir.version))
    latest = latest_dated_version([ir.version for ir in ordered]) if ordered else ""
    versions = tuple(
        NeutralVersion(ir.version, ir.module, ir.schema_path, ir.schema_sha256, ir.version == latest) for ir in ordered
    )
    views = {ir.version: neutral_view(ir) for ir in ordered}
    plain = {ir.version: dataclasses.asdict(ir) for ir in ordered}
    shared: dict[str, Any] = {
        "target": target.name,
        "generator_version": __version__,
        "versions": versions,
        "latest": latest,
    }
    files: dict[str, str] = {}

    def emit(output: TargetOutput, path: str, context: dict[str, Any]) -> None:
        if path in files:
            raise TargetError(str(target.manifest), "/output", f"two outputs render to the same path {path!r}")
        try:
            files[path] = environment.get_template(output.template).render(context)
        except Exception as error:  # jinja2's errors, and whatever a filter raises on a template's bad call
            raise TemplateRenderError(_describe(target.directory, output.template, error)) from None

    for output in target.outputs:
        if output.per == "once":
            context = shared | {
                "header": header_text("spec/manifest.json", manifest_sha256),
                "irs": plain,
                "views": views,
            }
            emit(output, output.path, context)
            continue
        for ir in ordered:
            context = shared | {
                "header": header_text(ir.schema_path, ir.schema_sha256),
                "version": ir.version,
                "module": ir.module,
                "schema_path": ir.schema_path,
                "schema_sha256": ir.schema_sha256,
                "ir": plain[ir.version],
                "ir_object": ir,
                "view": views[ir.version],
            }
            emit(output, output.path.format(module=ir.module, version=ir.version), context)
    return dict(sorted(files.items()))


def _describe(directory: Path, template: str, error: Exception) -> str:
    """`file:line: Error: message`, the line found in jinja's rewritten traceback when the error has none."""
    filename, lineno = getattr(error, "filename", None), getattr(error, "lineno", None)
    if lineno is None:
        root = str(directory.resolve())
        frames = [
            f for f in traceback.extract_tb(error.__traceback__) if str(Path(f.filename).resolve()).startswith(root)
        ]
        if frames:
            filename, lineno = frames[-1].filename, frames[-1].lineno
    where = f"{filename or template}:{lineno}" if lineno else template
    message = getattr(error, "message", None) or str(error)
    return f"{where}: {type(error).__name__}: {message}"
