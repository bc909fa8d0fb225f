"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a page missing from the nav or any
other warning fails), and its generated reference pages hold what the code has.

The reference tables are generated at build time by docs/hooks/reference_pages.py; this test finds what they must
list on its own (a regular expression over the source, click's command tree, the enums, ``__all__``) and looks for
each item in the built HTML, so a generator that silently drops something fails here.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import sys
from enum import IntEnum
from pathlib import Path

import click
import pytest
from support.docs_site import build_site

REPO = Path(__file__).resolve().parents[1]
SETTING = re.compile(r"^(?P<name>(?:DEFAULT|MAX)_[A-Z0-9_]+)\s*(?::[^=]*)?=", re.MULTILINE)
SOURCE_ROOTS = {"mcpgen_runtime": REPO / "runtime" / "mcpgen_runtime", "mcpgen": REPO / "generator" / "mcpgen"}
API_PAGES = {
    "server": ["mcpgen_runtime.server"],
    "client": ["mcpgen_runtime.client"],
    "auth": ["mcpgen_runtime.client.auth", "mcpgen_runtime.server.auth"],
    "testing": ["mcpgen_runtime.testing"],
}
BINDINGS = REPO / "generated" / "mcp_bindings"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("site"))


def page(site: Path, path: str) -> str:
    return html.unescape((site / path / "index.html").read_text(encoding="utf-8"))


def rows(text: str) -> list[str]:
    return [re.sub(r"<[^>]+>", " ", row) for row in re.findall(r"<tr>(.*?)</tr>", text, re.DOTALL)]


def test_the_site_builds_strict_with_every_page(site: Path) -> None:
    pages = {p.relative_to(REPO / "docs").with_suffix("").as_posix() for p in (REPO / "docs").rglob("*.md")}
    for name in pages:
        built = name.removesuffix("/index").removesuffix("index")
        assert (site / built / "index.html").exists() or (site / f"{name}.html").exists(), name
    assert not (site / "hooks").exists(), "docs/hooks is build code, not part of the site"


def commands() -> list[tuple[str, click.Command]]:
    from mcpgen.cli import main

    found: list[tuple[str, click.Command]] = []

    def walk(command: click.Command, path: str) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                if not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(main, "mcpgen")
    return found


def test_cli_reference_has_every_command_and_option(site: Path) -> None:
    text = page(site, "reference/cli")
    sections = re.split(r"<h[2-4] ", text)
    for path, command in commands():
        matching = [s for s in sections if re.match(rf'id="[^"]*"[^>]*>\s*<code>{re.escape(path)}</code>', s)]
        assert len(matching) == 1, f"no section for {path}"
        assert f"Usage: {path} " in matching[0]
        for parameter in command.params:
            for opt in parameter.opts if isinstance(parameter, click.Option) else ():
                assert opt in matching[0], f"{path}: {opt}"


def source_settings() -> list[tuple[str, str]]:
    found = []
    for package, root in SOURCE_ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found += [(module, m["name"]) for m in SETTING.finditer(path.read_text(encoding="utf-8"))]
    return found


def test_settings_reference_has_every_default_and_limit_with_its_value(site: Path) -> None:
    table = rows(page(site, "reference/settings"))
    settings = source_settings()
    assert len(settings) > 100  # the runtime has well over a hundred; a broken expression finds none
    for module, name in settings:
        value = getattr(importlib.import_module(module), name)
        matching = [row for row in table if f" {name} " in row and f" {module} " in row]
        assert len(matching) == 1, f"{module}.{name} not on the settings page"
        shown = str(int(value)) if isinstance(value, IntEnum) else repr(value)
        if not isinstance(value, dict):
            assert shown in matching[0], f"{module}.{name}: {shown} not in {matching[0]!r}"


@pytest.mark.parametrize(
    "dotted",
    ["mcpgen_runtime.server.Server", "mcpgen_runtime.client.Client"],
)
def test_settings_reference_has_the_constructors_keyword_defaults(site: Path, dotted: str) -> None:
    text = page(site, "reference/settings")
    module, _, name = dotted.rpartition(".")
    section = re.split(rf"<h3 [^>]*>{name}\(\.\.\.\)<", text, maxsplit=1)[1].split("</table>", 1)[0]
    table = rows(section)
    for parameter in inspect.signature(getattr(importlib.import_module(module), name)).parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY or parameter.default is not inspect.Parameter.empty:
            assert any(f" {parameter.name} " in row and repr(parameter.default) in row for row in table), parameter


def test_errors_reference_has_every_code(site: Path) -> None:
    text = page(site, "reference/errors")
    from mcpgen_runtime.jsonrpc import ErrorCode

    packages = [p.parent.name for p in BINDINGS.glob("*/INTERFACES.md")]
    packages += [f"extensions.{p.parent.name}" for p in (BINDINGS / "extensions").glob("*/__init__.py")]
    enums: list[type[IntEnum]] = [importlib.import_module(f"mcp_bindings.{p}").ErrorCode for p in packages]
    enums.append(ErrorCode)
    for enum in enums:
        for member in enum:
            assert re.search(rf"<code>{int(member)}</code>\s*</td>\s*<td><code>{member.name}</code>", text), member
    for code in ("-32800", "-32810"):  # the runtime's own, outside the enums
        assert f"<code>{code}</code>" in text


@pytest.mark.parametrize("version", sorted(p.parent.name for p in BINDINGS.glob("*/INTERFACES.md")))
def test_bindings_reference_includes_each_versions_interfaces(site: Path, version: str) -> None:
    text = page(site, f"reference/bindings/{version}")
    interfaces = (BINDINGS / version / "INTERFACES.md").read_text(encoding="utf-8")
    methods = re.findall(r"^\| `([a-z][\w/]*)` \|", interfaces, re.MULTILINE)
    assert methods
    for method in methods:
        assert f"<code>{method}</code>" in text, method


def test_bindings_reference_has_the_tasks_extension(site: Path) -> None:
    text = page(site, "reference/bindings/extensions-tasks")
    from mcp_bindings.extensions.tasks import EXTENSION_ID, Method, models

    assert EXTENSION_ID in text
    for method in Method:
        assert f"<code>{method.value}</code>" in text
    for name in models.__all__:
        assert f"<code>{name}</code>" in text


@pytest.mark.parametrize("name", sorted(API_PAGES))
def test_api_reference_documents_every_public_name(site: Path, name: str) -> None:
    text = page(site, f"reference/api/{name}")
    for module in API_PAGES[name]:
        for public in importlib.import_module(module).__all__:
            # at the package, or at the submodule that defines it (a package that loads its names lazily)
            assert re.search(rf'id="{re.escape(module)}(\.\w+)?\.{public}"', text), f"{module}.{public}"


def test_changelog_page_is_the_changelog(site: Path) -> None:
    text = page(site, "reference/changelog")
    headings = re.findall(r"^## (.+)$", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert headings
    for heading in headings:
        assert heading.strip() in re.sub(r"<[^>]+>", "", text), heading


def test_a_list_may_follow_a_paragraph_line_outside_code() -> None:
    sys.path.insert(0, str(REPO / "docs" / "hooks"))
    try:
        from markdown_lists import spaced
    finally:
        sys.path.remove(str(REPO / "docs" / "hooks"))
    text = ["Modules:", "- ``a``: one", "  more", "- ``b``", "", "```text", "Usage:", "- not a list", "```", "x"]
    assert spaced(text) == ["Modules:", "", *text[1:]]
