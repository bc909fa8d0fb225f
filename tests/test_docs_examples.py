"""Every Python block of the docs (docs/*.md) runs as printed and passes `mypy --strict`, as the README's do
(tests/test_readme.py): each block is a file of its own, run in a fresh interpreter, and a ``print(...)  # text``
comment must be what that line prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.code_blocks import printed_comments, python_blocks, run_block, strict_mypy

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_blocks() -> list[tuple[str, str]]:
    """(``page.md:N``, code) of every Python block of the docs, N counted per page from 1."""
    blocks = []
    for page in sorted(DOCS.glob("*.md")):
        for number, code in enumerate(python_blocks(page.read_text(encoding="utf-8")), start=1):
            blocks.append((f"{page.name}:{number}", code))
    return blocks


BLOCKS = docs_blocks()


def _write(directory: Path, name: str, code: str) -> Path:
    path = directory / (re.sub(r"\W", "_", name) + ".py")
    path.write_text(code, encoding="utf-8")
    return path


def test_the_docs_have_python_blocks() -> None:
    assert BLOCKS, "no ```python block in docs/*.md: the pattern or the docs moved"


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_every_docs_block_runs(name: str, code: str, tmp_path: Path) -> None:
    done = run_block(_write(tmp_path, name, code))
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.splitlines() == printed_comments(code)


@pytest.mark.slow
def test_every_docs_block_type_checks_strictly(tmp_path: Path) -> None:
    done = strict_mypy([_write(tmp_path, name, code) for name, code in BLOCKS], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
