"""Golden cases, sqlc style: tests/golden/<case>/schema.json next to the tree it generates.

Each case directory holds one small schema exercising one construct (and, optionally, `overlay.json`, the case's
spec/overlay/versions.json), and `expected/`, the
`mcp_bindings` package mcpgen generates from it (the case name is the version label, so the
subpackage is `mcp_bindings.<case>`). tests/test_golden.py checks that a fresh generation equals
`expected/` byte for byte; after an intended change, rewrite every expected tree with

    nox -s update_golden            (or: python tests/golden_support.py --update)

and review the diff like any other change.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
TEMPLATES = ROOT / "templates"
SCHEMA_NAME = "schema.json"
OVERLAY_NAME = "overlay.json"
EXPECTED_NAME = "expected"
UPDATE_COMMAND = "nox -s update_golden (or: python tests/golden_support.py --update)"
# Fixed provenance, so the manifest (whose sha256 the package header prints) is the same everywhere.
GOLDEN_REPOSITORY = "mcpgen/tests-golden"
GOLDEN_COMMIT = "0" * 40
IGNORED_PARTS = ("__pycache__",)


def case_dirs() -> list[Path]:
    """Every golden case directory (one with a schema.json), sorted by name."""
    return sorted(path.parent for path in GOLDEN_DIR.glob(f"*/{SCHEMA_NAME}"))


def build_spec_dir(case_dir: Path, tmp: Path) -> Path:
    """A spec directory under `tmp` vendoring the case's schema as version `<case name>`."""
    version = case_dir.name
    spec = tmp / "spec"
    (spec / version).mkdir(parents=True, exist_ok=True)
    data = (case_dir / SCHEMA_NAME).read_bytes()
    (spec / version / SCHEMA_NAME).write_bytes(data)
    manifest = {
        "files": {
            f"{version}/{SCHEMA_NAME}": {
                "sha256": hashlib.sha256(data).hexdigest(),
                "repository": GOLDEN_REPOSITORY,
                "commit": GOLDEN_COMMIT,
                "upstream_path": f"tests/golden/{version}/{SCHEMA_NAME}",
            }
        }
    }
    (spec / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    overlay = case_dir / OVERLAY_NAME
    if overlay.is_file():  # the case's version facts (spec/overlay/versions.json): generates protocol_facts.py
        (spec / "overlay").mkdir()
        shutil.copyfile(overlay, spec / "overlay" / "versions.json")
    return spec


def generate_case(case_dir: Path) -> dict[str, str]:
    """{path relative to expected/: text} that mcpgen generates from the case's schema now."""
    from mcpgen.pipeline.generate import GenerationRequest, generate_files
    from mcpgen.pipeline.spec_loader import ProjectPaths

    with tempfile.TemporaryDirectory(prefix="mcpgen-golden-") as tmp:
        spec = build_spec_dir(case_dir, Path(tmp))
        paths = ProjectPaths(spec=spec, templates=TEMPLATES, generated=Path(tmp) / "generated")
        return generate_files(GenerationRequest(paths))


def read_expected(case_dir: Path) -> dict[str, str]:
    """{path relative to expected/: text} as committed."""
    expected = case_dir / EXPECTED_NAME
    if not expected.is_dir():
        return {}
    files = {}
    for path in sorted(expected.rglob("*")):
        if path.is_file() and not any(part in IGNORED_PARTS for part in path.parts):
            files[path.relative_to(expected).as_posix()] = path.read_bytes().decode("utf-8")
    return files


def write_expected(case_dir: Path, files: dict[str, str]) -> None:
    """Replace the case's expected/ tree with `files` (delete, then write)."""
    expected = case_dir / EXPECTED_NAME
    if expected.exists():
        shutil.rmtree(expected)
    for relative, text in sorted(files.items()):
        target = expected / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))  # bytes as generated: no newline translation


def update_all_goldens() -> list[str]:
    """Regenerate every case's expected/ tree; returns the names of the cases that changed."""
    changed = []
    for case_dir in case_dirs():
        files = generate_case(case_dir)
        if read_expected(case_dir) != files:
            changed.append(case_dir.name)
        write_expected(case_dir, files)
    return changed


def main(argv: list[str]) -> int:
    if argv != ["--update"]:
        print(f"usage: python {Path(__file__).relative_to(ROOT)} --update", file=sys.stderr)
        return 2
    changed = update_all_goldens()
    cases = case_dirs()
    print(f"{len(cases)} golden case(s) regenerated; changed: {', '.join(changed) if changed else 'none'}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "generator"))  # harmless when mcpgen is installed (editable)
    sys.exit(main(sys.argv[1:]))
