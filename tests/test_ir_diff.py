"""`mcpgen diff` and CHANGES.md: goldens on small schemas, known facts of the real schemas, the CLI.

Goldens live in tests/golden_diff/<case>/ (see golden_diff_support.py); after an intended change to
mcpgen/pipeline/ir_diff.py, rewrite them with `python tests/golden_diff_support.py --update` and review the diff.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpgen.cli import main
from mcpgen.cli.diff import diff as diff_command
from mcpgen.ir import ArrayType, LiteralType, MapType, PrimitiveType, RefType, UnionType, VersionIR
from mcpgen.pipeline.build import build_version_ir
from mcpgen.pipeline.ir_diff import IRDiff, description_change, diff_irs, render_changes, render_json, render_type

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_diff_support import UPDATE_COMMAND, case_dirs, diff_case, read_expected

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
CHANGES_MD = ROOT / "generated" / "mcp_bindings" / "CHANGES.md"
CASES = {case.name: case for case in case_dirs()}


# -- goldens --------------------------------------------------------------------------------------


def test_golden_cases_exist() -> None:
    assert {"methods_and_pairings", "fields_enums_unions", "identical"} <= set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_diff_matches_golden(name: str) -> None:
    actual, expected = diff_case(CASES[name]), read_expected(CASES[name])
    if actual == expected:
        return
    lines: list[str] = []
    for file_name in sorted(set(actual) | set(expected)):
        lines += difflib.unified_diff(
            expected.get(file_name, "").splitlines(keepends=True),
            actual.get(file_name, "").splitlines(keepends=True),
            fromfile=f"tests/golden_diff/{name}/{file_name}",
            tofile=f"now/{file_name}",
        )
    pytest.fail(
        f"diff golden case {name!r} differs:\n{''.join(lines)}\nIf intended, update with: {UPDATE_COMMAND}",
        pytrace=False,
    )


# -- pure functions -------------------------------------------------------------------------------


def test_render_type_is_readable() -> None:
    assert render_type(ArrayType(RefType("ContentBlock"))) == "array<ContentBlock>"
    assert render_type(PrimitiveType("string", format="uri")) == "string<uri>"
    assert render_type(PrimitiveType("number", minimum=0, maximum=1)) == "number<minimum=0, maximum=1>"
    assert render_type(MapType(UnionType((PrimitiveType("string"), PrimitiveType("integer"))))) == (
        "map<string, string | integer>"
    )
    assert render_type(LiteralType(("a", 1, True))) == '"a" | 1 | true'


def test_description_whitespace_is_ignored_and_changes_are_one_line() -> None:
    assert description_change("A  tool\nthat  runs.", "A tool that\n runs.") is None
    assert description_change(None, "") is None
    change = description_change("Same first line.\nOld second.\nThird.", "Same first line.\nNew second.\nThird.")
    assert change is not None and (change.old, change.new) == ("Old second.", "New second.")
    long = description_change("x", "y" * 500)
    assert long is not None and len(long.new) <= 80 and long.new.endswith("…")


# -- the real schemas -----------------------------------------------------------------------------


@functools.cache
def real_ir(version: str) -> VersionIR:
    return build_version_ir(SPEC, version)


@functools.cache
def real_diff(old: str, new: str) -> IRDiff:
    return diff_irs(real_ir(old), real_ir(new))


def test_2025_06_18_adds_elicitation() -> None:
    diff = real_diff("2025-03-26", "2025-06-18")
    added = {m.method: m for m in diff.methods_added}
    assert "elicitation/create" in added and added["elicitation/create"].direction == "server_to_client"
    assert real_ir("2025-06-18").method("elicitation/create").kind == "request"  # the fact, checked against the IRs
    with pytest.raises(KeyError):
        real_ir("2025-03-26").method("elicitation/create")
    assert any(p.method == "elicitation/create" and p.result == "ElicitResult" for p in diff.pairings_added)


def test_2026_07_28_is_stateless() -> None:
    diff = real_diff("2025-11-25", "2026-07-28")
    removed = {m.method for m in diff.methods_removed}
    added = {m.method for m in diff.methods_added}
    assert {"initialize", "ping", "logging/setLevel"} <= removed
    assert {"server/discover", "subscriptions/listen"} <= added
    for method in ("initialize", "ping", "logging/setLevel"):  # the facts, checked against the IRs
        real_ir("2025-11-25").method(method)
        with pytest.raises(KeyError):
            real_ir("2026-07-28").method(method)
    assert any(p.method == "initialize" for p in diff.pairings_removed)


def test_2025_03_26_adds_audio_content() -> None:
    diff = real_diff("2024-11-05", "2025-03-26")
    assert "AudioContent" in {d.name for d in diff.definitions_added}
    with pytest.raises(KeyError):
        real_ir("2024-11-05").definition("AudioContent")
    assert real_ir("2025-03-26").definition("AudioContent").kind == "object"


def test_a_version_does_not_differ_from_itself() -> None:
    assert real_diff("2025-06-18", "2025-06-18").is_empty()


def test_json_round_trips() -> None:
    diff = real_diff("2025-11-25", "2026-07-28")
    assert json.loads(render_json(diff)) == json.loads(json.dumps(dataclasses.asdict(diff)))


def test_everything_is_sorted() -> None:
    diff = real_diff("2025-06-18", "2025-11-25")
    for names in (
        [m.method for m in diff.methods_added],
        [m.method for m in diff.methods_changed],
        [d.name for d in diff.definitions_added],
        [d.name for d in diff.definitions_changed],
        *([f.name for f in d.fields_changed] for d in diff.definitions_changed),
    ):
        assert names == sorted(names)


# -- the CLI --------------------------------------------------------------------------------------


def run(*args: str) -> Result:
    if "diff" not in main.commands:
        main.add_command(diff_command)
    return CliRunner().invoke(main, ["diff", *args])


@pytest.mark.parametrize("output_format", ["text", "markdown", "json"])
def test_cli_diff_prints_each_format(output_format: str) -> None:
    result = run("2025-03-26", "2025-06-18", "--format", output_format)
    assert result.exit_code == 0, result.output
    assert "elicitation/create" in result.stdout
    if output_format == "json":
        assert json.loads(result.stdout)["new_version"] == "2025-06-18"


def test_cli_diff_unknown_version_is_bad_input() -> None:
    result = run("2025-03-26", "1999-01-01")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: spec/1999-01-01/schema.json#: unknown version '1999-01-01'")
    assert result.stdout == ""


# -- CHANGES.md -----------------------------------------------------------------------------------


def _sections(markdown: str) -> dict[str, str]:
    """{"OLD → NEW": body} of each `## OLD → NEW` section."""
    parts = markdown.split("\n## ")[1:]
    return {part.split("\n", 1)[0]: part for part in parts}


def test_changes_md_lists_elicitation_under_its_version() -> None:
    text = CHANGES_MD.read_text(encoding="utf-8")
    assert text.startswith("<!-- Code generated by mcpgen ") and text.splitlines()[0].endswith("DO NOT EDIT. -->")
    sections = _sections(text)
    assert list(sections) == [
        "2024-11-05 → 2025-03-26",
        "2025-03-26 → 2025-06-18",
        "2025-06-18 → 2025-11-25",
        "2025-11-25 → 2026-07-28",
        "2026-07-28 → draft",
    ]
    assert "- added `elicitation/create`" in sections["2025-03-26 → 2025-06-18"]
    assert "elicitation/create" not in sections["2024-11-05 → 2025-03-26"]


def test_render_changes_needs_no_pair_for_one_version() -> None:
    assert "## " not in render_changes([real_ir("draft")])
