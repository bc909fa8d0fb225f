"""Golden snapshots of `mcpgen new`: tests/golden_scaffold/<template>-<transport>/ holds the project it scaffolds
for NAME "weather" (the default protocol version, 2026-07-28), one directory per variant, byte for byte.

tests/test_scaffold.py compares a fresh scaffold with each snapshot; after an intended change to
templates/server-project/ or mcpgen/features/scaffold.py, rewrite every snapshot with

    nox -s update_golden            (or: python tests/scaffold_support.py --update)

and review the diff like any other change. The snapshots are complete projects: ruff and black check them
with the project's own pyproject.toml, and tests/golden_scaffold/conftest.py keeps pytest from collecting them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).resolve().parent / "golden_scaffold"
TEMPLATES = ROOT / "templates"
NAME = "weather"
VARIANTS = [(template, transport) for template in ("full", "minimal") for transport in ("both", "http", "stdio")]
UPDATE_COMMAND = "nox -s update_golden (or: python tests/scaffold_support.py --update)"
KEPT_FILES = ("conftest.py",)  # GOLDEN_DIR's own files, not snapshots


def variant_dir(template: str, transport: str) -> Path:
    return GOLDEN_DIR / f"{template}-{transport}"


def scaffold_variant(template: str, transport: str) -> dict[str, str]:
    """{relative path: text} that `mcpgen new weather --template T --transport X` scaffolds now."""
    from mcpgen.features.scaffold import ScaffoldRequest, render_project

    return render_project(ScaffoldRequest(NAME, template, transport), TEMPLATES)


def read_snapshot(directory: Path) -> dict[str, str]:
    """{relative path: text} as committed (caches that running tools leave behind are not part of it)."""
    if not directory.is_dir():
        return {}
    return {
        path.relative_to(directory).as_posix(): path.read_bytes().decode("utf-8")
        for path in sorted(directory.rglob("*"))
        if path.is_file() and not any(part.endswith("_cache") or part == "__pycache__" for part in path.parts)
    }


def update() -> None:
    for path in GOLDEN_DIR.iterdir() if GOLDEN_DIR.is_dir() else ():
        if path.is_dir():
            shutil.rmtree(path)
    for template, transport in VARIANTS:
        directory = variant_dir(template, transport)
        for relative, text in scaffold_variant(template, transport).items():
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("utf-8"))
        print(f"wrote {directory.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: python {Path(__file__).relative_to(ROOT)} --update")
    update()
