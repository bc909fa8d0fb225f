"""Malformed input is refused through the real CLI: exit code 2, a message naming the file and the
JSON pointer of the broken spot, and nothing written.

Every case (tests/bad_input_cases.py) builds its own spec directory with exactly one thing broken, runs
`mcpgen --spec-dir ... generate --out OUT` (or `ir`/`versions`), and checks that OUT, pre-populated with a sentinel
and a previous tree, is byte-for-byte unchanged and that no staging/backup directory was left beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_input_cases import CASES, MCPGEN, PREVIOUS_TREE, SCHEMA, Case, defs
from spec_fixtures import REPO_ROOT, VERSION, minimal_schema, snapshot_tree, write_spec_dir

# -- running ----------------------------------------------------------------------------------------


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """tmp_path/parent/out holding PREVIOUS_TREE; parent holds nothing else."""
    out = tmp_path / "parent" / "out"
    for relative, text in PREVIOUS_TREE.items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        (out / relative).write_text(text, encoding="utf-8")
    return out


def _full_args(spec: Path, args: tuple[str, ...], out: Path) -> list[str]:
    tail = [*args, "--out", str(out)] if args[0] == "generate" else list(args)
    return ["--spec-dir", str(spec), *tail]


def assert_refused(code: int, stderr: str, stdout: str, where: str, message: str, exact: bool) -> None:
    assert "Traceback" not in stderr + stdout, stderr
    assert code == 2, f"exit code {code}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    prefix = f"error: {where}" + (": " if exact else "")
    matching = [line for line in errors if line.startswith(prefix)]
    assert matching, f"no error line starts with {prefix!r}:\n{stderr}"
    assert any(message in line for line in matching), f"{message!r} not in {matching}"
    assert "nothing was written" in stderr
    assert stdout == "", stdout


def assert_untouched(out: Path, before: dict[str, bytes]) -> None:
    assert snapshot_tree(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"], "staging/backup dirs left beside the output"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_bad_input_is_refused(case: Case, tmp_path: Path, out_dir: Path) -> None:
    spec = tmp_path / "spec"
    case.build(spec)
    before = snapshot_tree(out_dir)
    result = CliRunner().invoke(main, _full_args(spec, case.args, out_dir))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert_refused(result.exit_code, result.stderr, result.stdout, case.where, case.message, case.exact)
    assert_untouched(out_dir, before)


def test_case_count() -> None:
    assert len(CASES) >= 25


def test_the_unbroken_fixture_generates(tmp_path: Path, out_dir: Path) -> None:
    """Each case breaks one thing in a schema that is otherwise accepted (both dialects)."""
    for defs_key in ("$defs", "definitions"):
        spec = write_spec_dir(tmp_path / f"spec-{defs_key}", minimal_schema(defs_key))
        result = CliRunner().invoke(main, _full_args(spec, ("generate",), out_dir))
        assert result.exit_code == 0, result.output
    assert (out_dir / "SENTINEL.txt").is_file()
    assert not (out_dir / f"mcp_bindings/v{VERSION.replace('-', '_')}/stale.py").exists()


def test_every_problem_is_reported_in_one_run(tmp_path: Path, out_dir: Path) -> None:
    schema = minimal_schema()
    defs(schema)["CallToolRequestParams"]["properties"]["name"]["type"] = "strng"
    defs(schema)["Level"] = {"enum": []}
    spec = write_spec_dir(tmp_path / "spec", schema)
    before = snapshot_tree(out_dir)
    result = CliRunner().invoke(main, _full_args(spec, ("generate",), out_dir))
    assert result.exit_code == 2, result.output
    assert f"error: {SCHEMA}#/$defs/CallToolRequestParams/properties/name/type: unknown type" in result.stderr
    assert f"error: {SCHEMA}#/$defs/Level/enum: 'enum' must be a non-empty array" in result.stderr
    assert "2 problem(s) in the input; nothing was written." in result.stderr
    assert_untouched(out_dir, before)


def test_an_error_in_one_version_blocks_every_version(tmp_path: Path, out_dir: Path) -> None:
    spec = write_spec_dir(tmp_path / "spec")
    broken = minimal_schema()
    broken["$defs"]["Level"] = {"enum": [1.5]}
    write_spec_dir(tmp_path / "other", broken, version="2099-02-02")
    text = (tmp_path / "other" / "2099-02-02" / "schema.json").read_text()
    (spec / "2099-02-02").mkdir()
    (spec / "2099-02-02" / "schema.json").write_text(text)
    manifest = json.loads((spec / "manifest.json").read_text())
    manifest["files"].update(json.loads((tmp_path / "other" / "manifest.json").read_text())["files"])
    (spec / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot_tree(out_dir)
    result = CliRunner().invoke(main, _full_args(spec, ("generate",), out_dir))
    assert_refused(
        result.exit_code, result.stderr, result.stdout, "spec/2099-02-02/schema.json#/$defs/Level/enum", "1.5", True
    )
    assert_untouched(out_dir, before)


# -- through the installed console script -------------------------------------------------------------

SUBPROCESS_CASES = ["invalid-json", "hash-mismatch", "dangling-ref", "patch-old-value-no-longer-matches"]


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SUBPROCESS_CASES], ids=lambda c: c.id)
def test_bad_input_is_refused_by_the_console_script(case: Case, tmp_path: Path, out_dir: Path) -> None:
    assert MCPGEN.is_file(), MCPGEN
    spec = tmp_path / "spec"
    case.build(spec)
    before = snapshot_tree(out_dir)
    completed = subprocess.run(
        [str(MCPGEN), *_full_args(spec, case.args, out_dir)], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120
    )
    assert_refused(completed.returncode, completed.stderr, completed.stdout, case.where, case.message, case.exact)
    assert_untouched(out_dir, before)
