"""The generated parts of the reference pages, read from the code so that they cannot drift from it.

A page asks for a part with a marker line, ``<!-- mcpgen:NAME ARGUMENT -->``; ``hooks/reference.py`` (the mkdocs
hook) replaces the marker with ``render(NAME, ARGUMENT, page_path)`` at build time. tests/test_docs_build.py imports
this module too, to compare the built pages with the code.

- ``cli``: ``mcpgen --help`` and every subcommand's help, recursively (click, at a fixed width).
- ``settings``: every module-level ``DEFAULT_*`` / ``MAX_*`` constant of mcpgen_runtime and of the generator, with
  its value and what the code says about it, then the keyword defaults of the calls a user configures
  (``settings_page``, over ``code_constants``, which reads the constants from the source).
- ``errors``: the JSON-RPC and MCP error codes: the generated ``ErrorCode`` enum of every protocol version and
  extension, the runtime's ``ErrorCode``, and the runtime's module-level constants that hold an error code.
- ``include PATH``: a Markdown file of the repository (a version's INTERFACES.md, CHANGELOG.md), with its
  repository-relative links rewritten for the page.
- ``extension PACKAGE``: a generated extension package's methods, error codes and models (extensions have no
  INTERFACES.md).
- ``api MODULE``: one mkdocstrings directive (``::: path``) for each name of a module's ``__all__``, at the module
  that defines it: for a package that loads its names lazily (``__getattr__``), which mkdocstrings, reading the
  source, cannot see through.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import posixpath
import re
from dataclasses import dataclass
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any

from code_constants import Constant, cell, module_constants
from settings_page import settings_reference

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- mcpgen:(?P<name>[a-z]+)(?: (?P<argument>\S+))? -->$", re.MULTILINE)
CLI_WIDTH = 80

# -- markers ------------------------------------------------------------------------------------------------------


def expand(markdown: str, page_path: str) -> str:
    """``markdown`` with every marker replaced by its generated text; ``page_path`` is the page's path under docs/."""
    return MARKER.sub(lambda match: render(match["name"], match["argument"], page_path), markdown)


def render(name: str, argument: str | None, page_path: str) -> str:
    if name == "cli":
        return cli_reference()
    if name == "settings":
        return settings_reference()
    if name == "errors":
        return errors_reference()
    if name == "include" and argument:
        return include(argument, page_path)
    if name == "extension" and argument:
        return extension_reference(argument)
    if name == "api" and argument:
        return api_directives(argument)
    raise ValueError(f"unknown mcpgen marker {name!r} {argument!r} in {page_path}")


# -- CLI ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # ("mcpgen", "spec", "fetch")
    help: str  # the --help text, as the terminal shows it at CLI_WIDTH columns


def cli_commands() -> list[Command]:
    """``mcpgen`` and every subcommand, depth first in the order ``mcpgen --help`` lists them."""
    import click

    from mcpgen.cli import main

    found: list[Command] = []

    def walk(command: click.Command, parent: click.Context | None, name: str) -> None:
        context = click.Context(
            command, info_name=name, parent=parent, terminal_width=CLI_WIDTH, max_content_width=CLI_WIDTH
        )
        path = (*(parent.command_path.split() if parent else ()), name)
        found.append(Command(path, command.get_help(context).rstrip()))
        if isinstance(command, click.Group):
            for child in command.list_commands(context):
                sub = command.get_command(context, child)
                if sub is not None and not sub.hidden:
                    walk(sub, context, child)

    walk(main, None, "mcpgen")
    return found


def cli_reference() -> str:
    parts: list[str] = []
    for command in cli_commands():
        level = "#" * min(len(command.path) + 1, 4)
        parts.append(f"{level} `{' '.join(command.path)}`\n\n```text\n{command.help}\n```\n")
    return "\n".join(parts)


# -- errors -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCodeEntry:
    code: int
    name: str
    where: str  # the versions, or the module
    doc: str


BINDINGS = REPO / "generated" / "mcp_bindings"


def binding_versions() -> list[str]:
    """The generated version packages (``v2024_11_05`` ..., ``draft``), oldest first, draft last."""
    names = [path.parent.name for path in BINDINGS.glob("*/INTERFACES.md")]
    return sorted(names, key=lambda name: (name == "draft", name))


def binding_extensions() -> list[str]:
    return sorted(path.parent.name for path in (BINDINGS / "extensions").glob("*/__init__.py"))


def enum_docs(enum: type[IntEnum]) -> dict[str, str]:
    """The attribute docstrings of an enum's members (read from its source)."""
    tree = ast.parse(inspect.getsource(enum))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for index, statement in enumerate(body):
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            following = body[index + 1] if index + 1 < len(body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.targets[0].id] = inspect.cleandoc(following.value.value)
    return docs


def protocol_error_codes() -> list[ErrorCodeEntry]:
    """Each code of the generated ``ErrorCode`` enums once, with the versions that define it."""
    seen: dict[tuple[int, str], tuple[list[str], str]] = {}
    sources = [(version, f"mcp_bindings.{version}") for version in binding_versions()]
    sources += [(f"extension {name}", f"mcp_bindings.extensions.{name}") for name in binding_extensions()]
    for label, module in sources:
        enum = importlib.import_module(module).ErrorCode
        docs = enum_docs(enum)
        for member in enum:
            entry = seen.setdefault((int(member), member.name), ([], docs.get(member.name, "")))
            entry[0].append(label)
    return [
        ErrorCodeEntry(code, name, versions_text(labels), doc)
        for (code, name), (labels, doc) in sorted(seen.items(), key=lambda item: (-item[0][0], item[0][1]))
    ]


def versions_text(labels: list[str]) -> str:
    versions = [label for label in binding_versions() if label in labels]
    rest = [label for label in labels if label not in versions]
    all_versions = binding_versions()
    if versions == all_versions:
        text = "all versions"
    elif versions and versions == all_versions[all_versions.index(versions[0]) :]:
        text = f"{label_of(versions[0])} and later"
    else:
        text = ", ".join(label_of(version) for version in versions)
    return ", ".join(filter(None, [text, *rest]))


def label_of(package: str) -> str:
    return package if package == "draft" else package[1:].replace("_", "-")


def runtime_error_constants() -> list[Constant]:
    """Module-level constants of mcpgen_runtime that hold a JSON-RPC error code (an int from -32999 to -32000)."""

    def is_code(name: str, value: ast.expr) -> bool:
        if not name.isupper() or not isinstance(value, ast.UnaryOp) or not isinstance(value.op, ast.USub):
            return False
        operand = value.operand
        return isinstance(operand, ast.Constant) and isinstance(operand.value, int) and 32000 <= operand.value <= 32999

    return [c for c in module_constants(is_code) if c.module.startswith("mcpgen_runtime")]


def errors_reference() -> str:
    from mcpgen_runtime.jsonrpc import ErrorCode

    parts = [
        "## Protocol error codes\n",
        "The `ErrorCode` enum of each generated version (`from mcp_bindings.v2026_07_28 import ErrorCode`), "
        "from the schema and the specification text.\n",
        "| Code | Name | Defined in | Meaning |\n|---|---|---|---|",
    ]
    for entry in protocol_error_codes():
        parts.append(f"| `{entry.code}` | `{entry.name}` | {entry.where} | {cell(entry.doc) or '—'} |")
    parts += [
        "",
        "## The runtime's `ErrorCode`\n",
        "`mcpgen_runtime.ErrorCode` (an `IntEnum`, equal to the plain ints on the wire and to the generated "
        "members): JSON-RPC's codes plus the two the official SDKs use.\n",
        "| Code | Name |\n|---|---|",
    ]
    for member in sorted(ErrorCode, key=lambda m: -int(m)):
        parts.append(f"| `{int(member)}` | `{member.name}` |")
    parts += [
        "",
        "## Codes the runtime answers with\n",
        "Module-level constants of `mcpgen_runtime` that hold an error code, with what the code says about " "them.\n",
        "| Code | Constant | Module | What it is |\n|---|---|---|---|",
    ]
    for constant in sorted(runtime_error_constants(), key=lambda c: (-int(c.value), c.module, c.name)):
        parts.append(f"| `{constant.value}` | `{constant.name}` | `{constant.module}` | {cell(constant.doc) or '—'} |")
    parts += [
        "",
        "## What a handler raises\n",
        "From the docstring of `mcpgen_runtime.server.authoring.errors` (import the exceptions from "
        "`mcpgen_runtime.server`):\n",
        handler_errors(),
        "",
    ]
    return "\n".join(parts)


def handler_errors() -> str:
    """The module docstring of the server's deliberate errors, without its closing note on where it sits."""
    doc = inspect.cleandoc(importlib.import_module("mcpgen_runtime.server.authoring.errors").__doc__ or "")
    paragraphs = [p for p in doc.split("\n\n") if not p.startswith("Where it sits")]
    return "\n\n".join(paragraphs)


# -- API directives -----------------------------------------------------------------------------------------------


def defining_module(package: Any, name: str) -> str:
    """Where a public name of ``package`` is defined: its ``__module__``, or for a constant the submodule that its
    lazy table (``_LAZY``) names, or the package itself."""
    value = getattr(package, name)
    if (inspect.isclass(value) or inspect.isfunction(value)) and value.__module__.startswith(package.__name__):
        return str(value.__module__)
    lazy = getattr(package, "_LAZY", {})
    return f"{package.__name__}.{lazy[name]}" if name in lazy else str(package.__name__)


def api_directives(module_name: str) -> str:
    package = importlib.import_module(module_name)
    parts = [f"## `{module_name}`\n", inspect.cleandoc(package.__doc__ or ""), ""]
    for name in package.__all__:
        parts += [
            f"::: {defining_module(package, name)}.{name}",
            "    options:",
            "      show_root_full_path: false",
            "      heading_level: 3",
            "",
        ]
    return "\n".join(parts)


# -- included files -----------------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def include(repo_path: str, page_path: str) -> str:
    """A repository file's Markdown; a relative link into docs/ is rewritten relative to the page, a relative link
    to anything else of the repository (a source file: the site has no repository link) becomes its text and path."""
    source = REPO / repo_path
    text = source.read_text(encoding="utf-8")
    source_dir = posixpath.dirname(repo_path)
    page_dir = posixpath.dirname(page_path)

    def rewrite(match: re.Match[str]) -> str:
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#", target):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(source_dir, path))
        if resolved.startswith("docs/"):
            relative = posixpath.relpath(resolved.removeprefix("docs/"), page_dir or ".")
            return f"[{match['text']}]({relative}{'#' + anchor if anchor else ''})"
        return f"{match['text']} (`{resolved}`)"

    text = re.sub(r"\A<!--.*?-->\n", "", text, flags=re.DOTALL)  # the "generated, do not edit" banner
    return LINK.sub(rewrite, text)


# -- extensions ---------------------------------------------------------------------------------------------------


def extension_reference(package: str) -> str:
    module = importlib.import_module(f"mcp_bindings.extensions.{package}")
    methods = importlib.import_module(f"mcp_bindings.extensions.{package}.methods")
    models = importlib.import_module(f"mcp_bindings.extensions.{package}.models")
    doc = inspect.cleandoc(module.__doc__ or "")
    parts = [
        f"Import with `from mcp_bindings.extensions.{package} import ...`. Extension "
        f"`{module.EXTENSION_ID}`, revision `{module.REVISION}`, on MCP {module.BASE_PROTOCOL_VERSION}.\n",
        doc,
        "",
    ]
    groups = (
        ("Requests a client sends", "CLIENT_REQUESTS"),
        ("Requests a server sends", "SERVER_REQUESTS"),
        ("Notifications a client sends", "CLIENT_NOTIFICATIONS"),
        ("Notifications a server sends", "SERVER_NOTIFICATIONS"),
    )
    parts.append("## Methods\n\n| Method | Constant | Sent by |\n|---|---|---|")
    for title, attribute in groups:
        for method in sorted(getattr(methods, attribute), key=str):
            parts.append(f"| `{method.value}` | `Method.{method.name}` | {title.split(' a ')[1].split()[0]} |")
    parts.append("\n## Error codes\n\n| Code | Name | Meaning |\n|---|---|---|")
    docs = enum_docs(methods.ErrorCode)
    for member in sorted(methods.ErrorCode, key=lambda m: -int(m)):
        parts.append(f"| `{int(member)}` | `{member.name}` | {cell(docs.get(member.name, '')) or '—'} |")
    parts.append("\n## Models\n\nEach class of `models`, with its fields as they are named on the wire.\n")
    parts.append("| Name | Fields (wire names) or values |\n|---|---|")
    for name in sorted(models.__all__):
        parts.append(f"| `{name}` | {cell(model_summary(getattr(models, name)))} |")
    parts.append("")
    return "\n".join(parts)


def model_summary(item: Any) -> str:
    """A pydantic model's fields by their wire names, an enum's values, or what a type alias stands for."""
    fields = getattr(item, "model_fields", None)
    if inspect.isclass(item) and isinstance(fields, dict):
        return ", ".join(f"`{field.alias or field_name}`" for field_name, field in fields.items()) or "—"
    if inspect.isclass(item) and issubclass(item, Enum):
        return ", ".join(f"`{member.value}`" for member in item)
    value = getattr(item, "__value__", item)  # a TypeAliasType: what it stands for
    text = re.sub(r"\b[\w.]+\.(\w+)", r"\1", str(value))  # typing.Union, mcp_bindings...models.X: the last part
    text = re.sub(r"ForwardRef\('(\w+)'\)", r"\1", text)
    text = re.sub(r"^Annotated\[(.*), FieldInfo\(.*\)\]$", r"\1", text)  # a discriminated union's discriminator
    if text.startswith("Union[") and text.endswith("]"):
        text = " | ".join(f"`{part}`" for part in top_level_items(text[len("Union[") : -1]))
        return text.replace("`Literal['", "`'").replace("']`", "'`")
    return f"`{text}`"


def top_level_items(text: str) -> list[str]:
    """``A, B[C, D], E`` split at the commas outside brackets."""
    items, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:index].strip())
            start = index + 1
    return [*items, text[start:].strip()]


if __name__ == "__main__":  # print one part: python docs/hooks/reference_pages.py settings
    import sys

    print(render(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, os.environ.get("PAGE", "reference/x.md")))
