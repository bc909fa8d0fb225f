"""Hostile input to the CLI that used to end in a traceback (exit 1), or in broken output, now refused.

The same contract as tests/test_bad_input.py, whose case runner and assertions this module reuses: exit
code 2, one `error: <file>#<pointer>: ...` line naming the spot, no traceback, and nothing written (the
output directory, pre-populated with a previous tree, is compared byte for byte before and after).

The groups: JSON that `json.loads` alone crashes on or accepts wrongly (mcpgen/json_input.py), the
manifest and patches, definitions chained deeper than Python's recursion limit, templates that raise
(generate --templates), and output directories that cannot be written. `mcpgen spec fetch` and
`mcpgen new` have their cases in tests/test_spec_fetch.py and tests/test_scaffold.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpgen.cli import main
from mcpgen.json_input import MAX_NESTING, JsonInputError, parse_json

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_input_cases import (
    MANIFEST,
    MCPGEN,
    PATCH,
    SCHEMA,
    Builder,
    Case,
    edit_manifest,
    raw_schema,
    schema_edit,
    then,
    with_patch,
)
from spec_fixtures import REPO_ROOT, VERSION, minimal_schema, sha256_hex, snapshot_tree, write_spec_dir
from test_bad_input import assert_refused, assert_untouched, out_dir

# Re-exported so that pytest finds the fixture here (an output dir holding a previous generation); listing it
# also tells linters the import is used.
__all__ = ["out_dir"]

TOO_DEEP = f"nested deeper than {MAX_NESTING} levels of objects and arrays"
RECURSION = "the definitions refer to each other too deeply for mcpgen"
MODELS = f"mcp_bindings/v{VERSION.replace('-', '_')}/models.py"


# -- schema text ------------------------------------------------------------------------------------------


def with_deep_property(levels: int, leaf: str = '{"type": "string"}') -> str:
    """The minimal schema with CallToolResult.properties.deep nesting `levels` objects, each one level of
    `properties` deeper: `deep` is at depth 5, the j-th nested `x` at depth 5 + 2j."""
    text = json.dumps(minimal_schema())
    nested = '{"type": "object", "properties": {"x": ' * levels + leaf + "}}" * levels
    anchor = '"isError": {"type": "boolean"}'
    return text.replace(anchor, f'{anchor}, "deep": {nested}')


def with_value(pointer_key: str, literal: str) -> str:
    """The minimal schema with CallToolResult.properties.n = {"type": "number", <pointer_key>: <literal>}."""
    text = json.dumps(minimal_schema())
    anchor = '"isError": {"type": "boolean"}'
    return text.replace(anchor, f'{anchor}, "n": {{"type": "number", "{pointer_key}": {literal}}}')


def schema_bytes(data: bytes) -> Builder:
    """A spec dir whose schema.json is `data` exactly (not UTF-8, say), with a matching manifest hash."""

    def build(spec: Path) -> None:
        write_spec_dir(spec)
        (spec / VERSION / "schema.json").write_bytes(data)
        manifest = json.loads((spec / "manifest.json").read_text())
        manifest["files"][f"{VERSION}/schema.json"]["sha256"] = sha256_hex(data)
        (spec / "manifest.json").write_text(json.dumps(manifest))

    return build


def definition_chain(kind: str, length: int) -> Builder:
    """A0 -> A1 -> ... -> A<length>, by `$ref` aliases or `allOf`: no nesting, but every stage that follows
    the chain recursively used to die with RecursionError."""

    def edit(schema: dict[str, Any]) -> None:
        defs = schema["$defs"]
        for index in range(length):
            target = {"$ref": f"#/$defs/A{index + 1}"}
            defs[f"A{index}"] = target if kind == "alias" else {"allOf": [target]}
        defs[f"A{length}"] = {"type": "object", "properties": {"x": {"type": "string"}}}

    return schema_edit(edit)


def stacked_patch(outer: int, inner: int) -> dict[str, Any]:
    """Two 'add' operations, the second inside the first's value: each is shallow, together too deep."""
    nested = {}
    for _ in range(outer):
        nested = {"a": nested}
    more: dict[str, Any] = {}
    for _ in range(inner):
        more = {"c": more}
    return {
        "evidence": "test",
        "operations": [
            {"op": "add", "path": "/$defs/Deep", "new": nested},
            {"op": "add", "path": "/$defs/Deep" + "/a" * (outer - 1) + "/b", "new": more},
        ],
    }


def patch_file_bytes(data: bytes) -> Builder:
    def build(spec: Path) -> None:
        write_spec_dir(spec)
        (spec / "patches" / VERSION).mkdir(parents=True)
        (spec / "patches" / VERSION / "001-fix.json").write_bytes(data)

    return build


def patch_is_a_directory(spec: Path) -> None:
    write_spec_dir(spec)
    (spec / "patches" / VERSION / "001-fix.json").mkdir(parents=True)


DEEP_POINTER = "/$defs/CallToolResult/properties/deep" + "/properties/x" * ((MAX_NESTING + 1 - 5) // 2)

CASES = [
    # -- JSON that json.loads crashed on (RecursionError, ValueError, UnicodeDecodeError) -----------------
    Case("objects-1000-deep", raw_schema(with_deep_property(1000)), f"{SCHEMA}#{DEEP_POINTER}", TOO_DEEP),
    Case(
        "arrays-100000-deep",
        raw_schema('{"$defs": {"A": {"enum": ' + "[" * 100_000 + "]" * 100_000 + "}}}"),
        f"{SCHEMA}#/$defs/A/enum" + "/0" * (MAX_NESTING - 3),
        TOO_DEEP,
    ),
    Case(
        "integer-5000-digits",
        raw_schema(with_value("maximum", "9" * 5000)),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/maximum",
        "an integer with 5000 digits (at most 4300 are accepted)",
    ),
    Case(
        "not-utf8",
        schema_bytes(b'{"$defs": {"A": {"description": "caf\xe9"}}}'),
        f"{SCHEMA}#",
        "not UTF-8 text: byte 0xe9 at offset 36 (line 1)",
    ),
    # -- JSON that json.loads accepted and that broke later (a traceback, or code that does not import) ---
    Case(
        "lone-surrogate",
        raw_schema(with_value("description", '"bad \\ud800 here"')),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/description",
        "lone surrogate",
    ),
    Case(
        "nan",
        raw_schema(with_value("maximum", "NaN")),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/maximum",
        "NaN is not JSON",
    ),
    Case(
        "infinity",
        raw_schema(with_value("minimum", "-Infinity")),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/minimum",
        "-Infinity is not JSON",
    ),
    Case(
        "float-overflow",
        raw_schema(with_value("maximum", "1e400")),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/maximum",
        "the number 1e400 is out of range",
    ),
    # -- the manifest ---------------------------------------------------------------------------------------
    Case(
        "manifest-not-utf8",
        then(write_spec_dir, lambda spec: (spec / "manifest.json").write_bytes(b'{"files": "\xff"}')),
        f"{MANIFEST}#",
        "not UTF-8 text: byte 0xff at offset 11",
        args=("versions",),
    ),
    Case(
        "manifest-a-list",
        then(write_spec_dir, lambda spec: (spec / "manifest.json").write_text("[1, 2]")),
        f"{MANIFEST}#/files",
        "the manifest needs a 'files' object",
    ),
    Case(
        "manifest-too-deep",
        then(write_spec_dir, lambda spec: (spec / "manifest.json").write_text("[" * 5000 + "]" * 5000)),
        f"{MANIFEST}#" + "/0" * MAX_NESTING,
        TOO_DEEP,
    ),
    Case(
        "manifest-absolute-name",
        edit_manifest(
            lambda m: m["files"].update({"/etc/hostname": {"sha256": "0", "repository": "r", "commit": "c"}})
        ),
        f"{MANIFEST}#/files/~1etc~1hostname",
        "a file name must be a relative path inside spec/",
    ),
    Case(
        "manifest-name-leaves-spec",
        edit_manifest(lambda m: m["files"].update({"../x/schema.json": m["files"][f"{VERSION}/schema.json"]})),
        f"{MANIFEST}#/files/..~1x~1schema.json",
        "a file name must be a relative path inside spec/",
    ),
    Case(
        "manifest-name-too-long",
        edit_manifest(lambda m: m["files"].update({"a" * 300: {"sha256": "0", "repository": "r", "commit": "c"}})),
        f"spec/{'a' * 300}#",
        "File name too long",
    ),
    # -- patches ----------------------------------------------------------------------------------------------
    Case("patch-not-utf8", patch_file_bytes(b"\xff"), f"{PATCH}#", "not UTF-8 text: byte 0xff at offset 0"),
    Case("patch-is-a-directory", patch_is_a_directory, f"{PATCH}#", "Is a directory"),
    Case(
        "patch-adds-an-array-item",
        with_patch(
            {"evidence": "test", "operations": [{"op": "add", "path": "/$defs/CallToolResult/required/5", "new": "x"}]}
        ),
        f"{PATCH}#/operations/0",
        "an array item can only be replaced, not added",
    ),
    Case(
        "patch-stacks-too-deep",
        with_patch(stacked_patch(outer=58, inner=10)),
        f"{PATCH}#/operations",
        f"the patched schema at /$defs/Deep{'/a' * 57}/b{'/c' * 4} is {TOO_DEEP}",
    ),
    # -- chains of definitions: the last-resort RecursionError guard (pipeline.build_version, render) -----
    Case("alias-chain", definition_chain("alias", 1500), f"{SCHEMA}#", RECURSION),
    Case("allof-chain", definition_chain("allof", 1500), f"{SCHEMA}#", RECURSION),
    Case("allof-chain-ir", definition_chain("allof", 1500), f"{SCHEMA}#", RECURSION, args=("ir", "--version", VERSION)),
]


def invoke(spec: Path, out: Path, *args: str) -> Result:
    tail = [*args, "--out", str(out)] if args[0] in ("generate", "render") else list(args)
    return CliRunner().invoke(main, ["--spec-dir", str(spec), *tail])


def assert_one_error_line(result: Result) -> str:
    """Exit 2, no traceback, exactly one `error:` line and otherwise only the 'nothing was written' summary."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    assert all(line in errors or "nothing was written" in line for line in lines), lines
    return errors[0]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_hostile_input_is_refused(case: Case, tmp_path: Path, out_dir: Path) -> None:
    spec = tmp_path / "spec"
    case.build(spec)
    before = snapshot_tree(out_dir)
    result = invoke(spec, out_dir, *case.args)
    assert_one_error_line(result)
    assert_refused(result.exit_code, result.stderr, result.stdout, case.where, case.message, case.exact)
    assert_untouched(out_dir, before)


# -- the nesting bound -----------------------------------------------------------------------------------------


def test_the_nesting_bound_is_exact() -> None:
    assert parse_json(b"[" * MAX_NESTING + b"]" * MAX_NESTING) is not None
    with pytest.raises(JsonInputError) as refused:
        parse_json(b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1))
    assert refused.value.pointer == "/0" * MAX_NESTING


def test_the_deepest_schema_accepted_generates_code_that_compiles(tmp_path: Path, out_dir: Path) -> None:
    # `deep` at depth 5, each level two deeper, the leaf's enum array one more: exactly MAX_NESTING.
    levels = (MAX_NESTING - 5 - 1) // 2
    spec = write_spec_dir(tmp_path / "spec", raw=with_deep_property(levels, '{"type": "string", "enum": ["a"]}'))
    result = invoke(spec, out_dir, "generate")
    assert result.exit_code == 0, result.output
    models = (out_dir / MODELS).read_text()
    compile(models, MODELS, "exec")  # CPython refuses source nested more than 200 brackets deep
    assert "deep: " in models

    one_more = write_spec_dir(
        tmp_path / "spec-deeper", raw=with_deep_property(levels + 1, '{"type": "string", "enum": ["a"]}')
    )
    assert TOO_DEEP in assert_one_error_line(invoke(one_more, out_dir, "generate"))


# -- templates (generate --templates) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x\n{{ 1 / 0 }}\n", "models.py.j2:2: ZeroDivisionError: division by zero"),
        ("{% include 'models.py.j2' %}", "models.py.j2:1: RecursionError"),
        (b"# caf\xe9\n", "models.py.j2 cannot be read as UTF-8 text"),
    ],
    ids=["raises", "includes-itself", "not-utf8"],
)
def test_a_template_that_fails_is_refused(text: str | bytes, message: str, tmp_path: Path, out_dir: Path) -> None:
    templates = tmp_path / "my-templates"
    templates.mkdir()
    path = templates / "models.py.j2"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    before = snapshot_tree(out_dir)
    spec = write_spec_dir(tmp_path / "spec")
    line = assert_one_error_line(invoke(spec, out_dir, "generate", "--templates", str(templates)))
    assert line.startswith("error: template: ") and message in line, line
    assert_untouched(out_dir, before)


# -- output directories ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["generate", "render"])
def test_an_output_directory_that_cannot_be_made_is_refused(command: str, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    spec = write_spec_dir(tmp_path / "spec")
    before = snapshot_tree(tmp_path)
    args = ("render", "--template", "typescript") if command == "render" else ("generate",)
    line = assert_one_error_line(invoke(spec, tmp_path / "a-file" / "out", *args))
    assert line.startswith(f"error: cannot write {tmp_path / 'a-file' / 'out'}: "), line
    assert snapshot_tree(tmp_path) == before


def test_generate_into_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # '.' has no name: the staging directory used to be made inside the output, and the swap failed.
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("mine\n")
    monkeypatch.chdir(work)
    result = invoke(write_spec_dir(tmp_path / "spec"), Path("."), "generate")
    assert result.exit_code == 0, result.output
    assert (work / "keep.txt").read_text() == "mine\n" and (work / MODELS).is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["spec", "work"]  # no staging left


def test_a_previous_file_that_is_not_utf8_is_replaced_and_diffed(tmp_path: Path, out_dir: Path) -> None:
    (out_dir / MODELS).write_bytes(b"# caf\xe9\n")
    spec = write_spec_dir(tmp_path / "spec")
    check = invoke(spec, out_dir, "generate", "--check")
    assert check.exit_code == 1 and "Traceback" not in check.output, check.output
    assert f"--- a/{MODELS}" in check.stdout
    result = invoke(spec, out_dir, "generate")
    assert result.exit_code == 0, result.output
    assert "class CallToolResult(" in (out_dir / MODELS).read_text(encoding="utf-8")


# -- through the installed console script -------------------------------------------------------------------------

SUBPROCESS_CASES = ["objects-1000-deep", "arrays-100000-deep", "integer-5000-digits", "not-utf8", "allof-chain"]


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SUBPROCESS_CASES], ids=lambda c: c.id)
def test_the_console_script_prints_no_traceback(case: Case, tmp_path: Path, out_dir: Path) -> None:
    assert MCPGEN.is_file(), MCPGEN
    spec = tmp_path / "spec"
    case.build(spec)
    before = snapshot_tree(out_dir)
    completed = subprocess.run(
        [str(MCPGEN), "--spec-dir", str(spec), *case.args, "--out", str(out_dir)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert_refused(completed.returncode, completed.stderr, completed.stdout, case.where, case.message, case.exact)
    assert len(completed.stderr.splitlines()) == 2, completed.stderr  # the error line and the summary
    assert_untouched(out_dir, before)
