"""Stage 3b: render every output file of the bindings to text.

Pipeline position: IR -> views -> **render** -> format -> write or check.

`render_version` and `render_package` return `{relative path: text}` and touch no file: formatting,
writing, `--check` and diffs consume those dicts, so nothing renders twice (generate.generate_files hands
each version to the formatter as soon as it is rendered). Templates are searched in the user's directory
first (`--templates DIR`), then in the built-in templates/bindings/.
"""

from __future__ import annotations

import dataclasses
import json
import traceback
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache

from .. import __version__
from ..errors import TOO_DEEP_FOR_MCPGEN, SpecError
from ..ir import ExtensionIR, ProtocolFacts, VersionIR
from ..naming import escape_unprintable
from .formatting import CHUNK_MARKER, default_cache_dir
from .spec_loader import module_name_for
from .stub_views import CLIENT_MODULE, SERVER_MODULE, StubsView
from .views import BASE, ModelsView, python_string


def python_literal(value: Any) -> str:
    return python_string(value) if isinstance(value, str) else repr(value)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"not JSON data: {type(value).__name__}")


def json_literal(value: Any, indent: int | None = None) -> str:
    """JSON text of plain data or dataclasses, keys as given (views insert them in a fixed order). Unlike
    Jinja's `tojson` it does not HTML-escape, so a JSON string is also a valid JavaScript string literal."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_plain)


def comment_text(text: str | None) -> str:
    """Prose on one line that cannot end the comment it is printed in (`*/`, `-->`), unprintable characters escaped
    (`escape_unprintable`: NUL, ESC, U+2028 and the like read as `\\x00`, `\\x1b`, `\\u2028`)."""
    return escape_unprintable(" ".join((text or "").split())).replace("*/", "*\\/").replace("-->", "--\\>")


FILTERS = {"pystr": python_string, "pyrepr": python_literal, "json": json_literal, "comment": comment_text}


class TemplateUnreadable(jinja2.TemplateError):
    """A template file exists but cannot be read as text (not UTF-8, no permission)."""


class _TemplateLoader(jinja2.FileSystemLoader):
    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        try:
            return super().get_source(environment, template)
        except jinja2.TemplateNotFound:  # an OSError subclass too, and already a clear message
            raise
        except (OSError, UnicodeDecodeError) as error:
            raise TemplateUnreadable(f"{template} cannot be read as UTF-8 text: {error}") from None


class _TemplateBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's compiled templates, kept between runs (compiling the bindings' templates was about a fifth of
    a run served by the format cache). An entry is checked against its template's source; one that cannot
    be written only costs speed. Bounded by the number of templates ever used (one file each)."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except OSError:
            pass  # unreadable: compiled again

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    cache_dir = default_cache_dir()
    if cache_dir is None:
        return None
    # Compiled code also depends on the Environment's options (set here) and on jinja's version: both in the name.
    return _TemplateBytecodeCache(str(cache_dir.parent / f"templates-{__version__}-jinja{jinja2.__version__}-v1"))


def make_environment(template_dirs: list[Path]) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=_TemplateLoader([str(path) for path in template_dirs]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=_bytecode_cache(),
    )
    environment.filters.update(FILTERS)
    environment.globals["chunk"] = CHUNK_MARKER  # see formatting.split_chunks
    return environment


class TemplateRenderError(Exception):
    """A template failed to load or render; names the template (usually a user's --templates)."""


def describe_template_error(name: str, error: Exception) -> str:
    """`file:line: Error: message` for any exception out of a template, so a user's template that divides
    by zero or includes itself is reported like a syntax error, not as a traceback. The file and line of a
    runtime error come from the innermost frame Jinja rewrote to point into a template."""
    if isinstance(error, jinja2.TemplateSyntaxError):
        return f"{error.filename or name}:{error.lineno}: {error.message}"
    if isinstance(error, TemplateUnreadable):  # it names the file; a traceback line would be Jinja's loader
        return str(error)
    where = name
    for frame, line in traceback.walk_tb(error.__traceback__):
        if "__jinja_exception__" in frame.f_globals:  # how jinja2.debug marks a template's frame
            where = f"{frame.f_code.co_filename}:{line}"
    hint = " (does a template include, import or extend itself?)" if isinstance(error, RecursionError) else ""
    message = error.message if isinstance(error, jinja2.TemplateError) else str(error)
    return f"{where}: {type(error).__name__}: {message}{hint}"


def render_template(environment: jinja2.Environment, name: str, context: dict[str, Any]) -> str:
    """One template rendered, or TemplateRenderError naming the template (and line) whatever went wrong."""
    try:
        return environment.get_template(name).render(context)
    except Exception as error:  # Jinja's own errors, and whatever a template's expression raises (1/0, [].pop())
        raise TemplateRenderError(describe_template_error(name, error)) from None


def header_text(source: str, sha256: str) -> str:
    """The one-line provenance every generated file starts with, in that file's comment syntax."""
    return f"Code generated by mcpgen {__version__} from {source} (sha256 {sha256}). DO NOT EDIT."


def _header(source: str, sha256: str) -> dict[str, str]:
    return {"generator_version": __version__, "source": source, "source_sha256": sha256}


def render_version(environment: jinja2.Environment, ir: VersionIR) -> dict[str, str]:
    try:
        return _render_version(environment, ir)
    except RecursionError:  # from the views (a template's own recursion is a TemplateRenderError)
        raise SpecError(ir.schema_path, "", TOO_DEEP_FOR_MCPGEN) from None


def _render_version(environment: jinja2.Environment, ir: VersionIR) -> dict[str, str]:
    view = ModelsView(ir)
    methods = view.methods()
    header = _header(ir.schema_path, ir.schema_sha256)
    context: dict[str, Any] = {
        "header": header,
        "header_text": header_text(ir.schema_path, ir.schema_sha256),
        "external_imports": (),
        "version": ir.version,
        "version_literal": python_string(ir.version),
        "module": ir.module,
        "schema_path": ir.schema_path,
        "patches": ir.patches,
        "base": BASE,
        "names": view.names,
        "imports": view.imports(),
        "exported": view.exported_names(),
        "methods_exported": view.methods_exports(),
        "interfaces_exported": view.interfaces_exports(),
        "package_exports": view.package_exports(),
        "aliases": view.aliases(),
        "classes": view.classes(),
        "result_pairs": view.result_assignments(),
        "methods": methods,
        "requests": tuple(m for m in methods if m.kind == "request"),
        "notifications": tuple(m for m in methods if m.kind == "notification"),
        "method_sets": view.method_sets(),
        "error_codes": ir.error_codes,
        "parse_helpers": view.parse_helpers(),
        "jsonrpc": view.jsonrpc_shapes(),
        "slots": ir.union_slots,
        "slot_notes": view.slot_notes(),
    }
    prefix = f"mcp_bindings/{ir.module}/"
    stubs: dict[str, str] = {}
    stub_view = StubsView(ir, view.types, view.sender_fields)
    stub_modules = stub_view.modules()
    context.update(
        stub_modules=stub_modules,
        server_notes=stub_view.server_notes(),
        submodules=(*(module for module, _names in view.package_exports()), *(s.module for s in stub_modules)),
    )
    if stub_view.has_stubs():
        context.update(
            server_module=SERVER_MODULE,
            client_module=CLIENT_MODULE,
            requests_in=stub_view.stub_methods("request", "client_to_server", ""),
            notifications_in=stub_view.stub_methods("notification", "client_to_server", "on_"),
            client_notes=stub_view.client_notes(),
        )
        stubs[prefix + "server.py"] = render_template(environment, "server.py.j2", context)
        context.update(
            requests_out=stub_view.stub_methods("request", "client_to_server", ""),
            notifications_out=stub_view.stub_methods("notification", "client_to_server", "notify_"),
            paginations=stub_view.paginations(),
            requests_in=stub_view.stub_methods("request", "server_to_client", ""),
            notifications_in=stub_view.stub_methods("notification", "server_to_client", "on_"),
        )
        stubs[prefix + "client.py"] = render_template(environment, "client.py.j2", context)
    return stubs | {
        prefix + "__init__.py": render_template(environment, "version_init.py.j2", context),
        prefix + "models.py": render_template(environment, "models.py.j2", context),
        prefix + "methods.py": render_template(environment, "methods.py.j2", context),
        prefix + "interfaces.py": render_template(environment, "interfaces.py.j2", context),
        prefix + "INTERFACES.md": render_template(environment, "INTERFACES.md.j2", context),
    }


EXTENSIONS_PACKAGE = "mcp_bindings/extensions/"


def render_extension(environment: jinja2.Environment, extension: ExtensionIR) -> dict[str, str]:
    """mcp_bindings/extensions/<name>/: models.py (its own definitions; the base version's copies imported from that
    version's models), methods.py and __init__.py, with the version templates where they fit."""
    ir = extension.version
    view = ModelsView(ir)
    context: dict[str, Any] = {
        "header": _header(ir.schema_path, ir.schema_sha256),
        "version": f"extension {ir.version}",
        "base": BASE,
        "names": view.names,
        "imports": view.imports(),
        "external_imports": ((f"mcp_bindings.{extension.base_module}.models", extension.shared),),
        "exported": view.exported_names(),
        "methods_exported": view.methods_exports(),
        "aliases": view.aliases(),
        "classes": view.classes(),
        # A request's RESULT is a class; GetTaskResult is a union of one class per status (parse it with a TypeAdapter).
        "result_pairs": tuple(pair for pair in view.result_assignments() if view.definitions[pair[1]].kind == "object"),
        "methods": view.methods(),
        "method_sets": view.method_sets(),
        "error_codes": ir.error_codes,
        "extension": extension,
        "identifier_literal": python_string(extension.identifier),
        "revision_literal": python_string(extension.revision),
        "base_version_literal": python_string(extension.base_version),
    }
    prefix = f"{EXTENSIONS_PACKAGE}{extension.name}/"
    return {
        prefix + "__init__.py": render_template(environment, "extension_init.py.j2", context),
        prefix + "models.py": render_template(environment, "models.py.j2", context),
        prefix + "methods.py": render_template(environment, "methods.py.j2", context),
    }


def render_extensions_package(
    environment: jinja2.Environment, extensions: list[ExtensionIR], manifest_sha256: str
) -> dict[str, str]:
    """mcp_bindings/extensions/__init__.py: which extension identifier is which subpackage."""
    context = {
        "header": _header("spec/manifest.json", manifest_sha256),
        "extensions": [
            (python_string(e.identifier), python_string(f"mcp_bindings.extensions.{e.name}"), e.name)
            for e in sorted(extensions, key=lambda e: e.identifier)
        ],
    }
    return {EXTENSIONS_PACKAGE + "__init__.py": render_template(environment, "extensions_init.py.j2", context)}


def render_package(environment: jinja2.Environment, all_versions: list[str], manifest_sha256: str) -> dict[str, str]:
    """The version-independent files: mcp_bindings/__init__.py, base.py, latest.py, py.typed, and the
    distribution's pyproject.toml beside the package (the bindings install on their own: `pip install ./generated`)."""
    latest = latest_dated_version(all_versions)
    versions = [
        {"literal": python_string(v), "module_literal": python_string(f"mcp_bindings.{module_name_for(v)}")}
        for v in all_versions
    ]
    context = {
        "header": _header("spec/manifest.json", manifest_sha256),
        "versions": versions,
        "latest": latest,
        "latest_literal": python_string(latest),
        "module": module_name_for(latest),
    }
    distribution = {
        **context,
        "distribution_version_literal": json_literal(__version__),
        "dependencies": [json_literal(dependency) for dependency in BINDINGS_DEPENDENCIES],
        "versions_summary": f"{all_versions[0]} to {all_versions[-1]}",
    }
    return {
        DISTRIBUTION_FILE: render_template(environment, "pyproject.toml.j2", distribution),
        "mcp_bindings/__init__.py": render_template(environment, "package_init.py.j2", context),
        "mcp_bindings/base.py": render_template(environment, "base.py.j2", context),
        "mcp_bindings/latest.py": render_template(environment, "latest.py.j2", context),
        "mcp_bindings/py.typed": "",
    }


FACTS_PATH = "mcp_bindings/protocol_facts.py"


def frozenset_literal(members: tuple[str, ...] | list[str]) -> str:
    """`frozenset({"a", "b"})`, sorted; `frozenset()` when empty (`frozenset({})` would be a set of a dict's keys)."""
    return f"frozenset({{{', '.join(python_string(m) for m in sorted(members))}}})" if members else "frozenset()"


def render_facts(environment: jinja2.Environment, facts: ProtocolFacts) -> dict[str, str]:
    """mcp_bindings/protocol_facts.py: the version facts as plain data (see pipeline/version_facts.py)."""
    served = facts.served
    latest = {era: version.version for version in served for era in (version.era,)}  # served is oldest first

    def by_version(attribute: str) -> list[tuple[str, str]]:
        return [(v.version, frozenset_literal(getattr(v, attribute))) for v in served]

    context = {
        "header": _header(facts.overlay_path, facts.overlay_sha256),
        "overlay_path": facts.overlay_path,
        "served": served,
        "legacy": [v.version for v in served if v.era == "legacy"],
        "modern": [v.version for v in served if v.era == "modern"],
        "unserved": facts.unserved,
        "latest": sorted(latest.items()),
        "batches": frozenset_literal([v.version for v in served if v.json_rpc_batches]),
        "priming": frozenset_literal([v.version for v in served if v.sse_priming_events]),
        "progress_messages": frozenset_literal([v.version for v in served if v.progress_messages]),
        "client_requests": by_version("client_requests"),
        "server_requests": by_version("server_requests"),
        "client_notifications": by_version("client_notifications"),
        "server_notifications": by_version("server_notifications"),
        "input_requests": by_version("input_requests"),
        "modern_only_methods": frozenset_literal(facts.modern_only_methods),
        "meta_keys": facts.meta_keys,
        "error_codes": facts.error_codes,
    }
    return {FACTS_PATH: render_template(environment, "protocol_facts.py.j2", context)}


# The distribution of the generated bindings: its metadata file, and all it needs at run time.
DISTRIBUTION_FILE = "pyproject.toml"
BINDINGS_DEPENDENCIES = ("pydantic>=2.11,<3", "typing_extensions>=4.12")


def latest_dated_version(versions: list[str]) -> str:
    dated = [version for version in versions if version[:1].isdigit()]
    return max(dated) if dated else versions[-1]
