"""The code blocks of a Markdown page, and what the tests of the README and the docs do with them: run each Python
block in a fresh interpreter and compare what it prints with its ``print(...)  # text`` comments, type-check them all
with ``mypy --strict`` under the project's configuration, and run the shell blocks.

The conventions of the docs (docs/**/*.md; tests/test_docs_examples.py and tests/test_docs_shell.py apply them):

- every ```python block of a page is written into one fresh directory for that page, in page order. A block whose
  first line is ``# file: NAME.py`` is saved as NAME.py (type-checked, not run); later blocks may import it or start
  it. Every other block is run there (fresh interpreter, no stdin, ``RUN_TIMEOUT``), and its ``print(...)  # text``
  comments must be its output, in order;
- every ```bash, ```console, ```sh or ```shell block runs in a fresh directory and must exit 0, unless the line before
  its fence (blank lines aside) is ``<!-- not run: REASON -->``.

Fences may be indented (inside a list item, an admonition or a content tab) and may carry attributes after the
language (```python title="server.py"``); the indentation is removed from the code.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "NOT_RUN",
    "Block",
    "fenced_blocks",
    "file_name",
    "printed_comments",
    "python_blocks",
    "run_block",
    "strict_mypy",
]

REPO = Path(__file__).resolve().parents[2]
OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<language>[\w+-]*)(?P<attributes>[^`]*)$")
PRINTED = re.compile(r"print\(.*\)\s+# (.+)$", re.MULTILINE)
# ``<!-- not run: REASON -->`` on the line before a shell block's fence: the block is shown, not run.
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
# The first line of a Python block that is a file for later blocks, not a block to run.
FILE_LINE = re.compile(r"^#\s*file:\s*(?P<name>\S+)\s*$")
RUN_TIMEOUT = 120  # seconds one block may take
MYPY_TIMEOUT = 600


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language (lower case, "" when none), code (indentation removed), the 1-based line
    of its opening fence, and the reason of a ``<!-- not run: REASON -->`` marker before it (None when there is
    none; "" when the marker gives no reason)."""

    language: str
    code: str
    line: int
    not_run: str | None


def fenced_blocks(markdown: str) -> list[Block]:
    """Every fenced code block of ``markdown``, in page order."""
    lines = markdown.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        opening = OPENING.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        code_lines = [
            line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]
        ]
        blocks.append(
            Block(
                language=opening["language"].lower(),
                code="".join(line + "\n" for line in code_lines),
                line=index + 1,
                not_run=_not_run_reason(lines[:index]),
            )
        )
        index = end + 1
    return blocks


def _not_run_reason(before: list[str]) -> str | None:
    for line in reversed(before):
        if line.strip():
            marker = NOT_RUN.match(line)
            return marker["reason"].strip() if marker else None
    return None


def python_blocks(markdown: str) -> list[str]:
    """The code of every ```python block, in page order."""
    return [block.code for block in fenced_blocks(markdown) if block.language == "python"]


def file_name(code: str) -> str | None:
    """NAME.py when the block's first line is ``# file: NAME.py`` (a file for later blocks), else None."""
    first = code.partition("\n")[0]
    found = FILE_LINE.match(first)
    return found["name"] if found else None


def printed_comments(code: str) -> list[str]:
    """What the block says it prints: the comment after each ``print(...)``, in order."""
    return PRINTED.findall(code)


def run_block(path: Path) -> subprocess.CompletedProcess[str]:
    """``path`` run by this interpreter from its own directory, with no stdin, within ``RUN_TIMEOUT``."""
    return subprocess.run(
        [sys.executable, str(path)],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def strict_mypy(
    files: Sequence[Path], directory: Path, cache_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` over ``files`` with the project's configuration, run from ``directory``, its cache in
    ``cache_dir`` (``directory/.mypy_cache`` by default)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(cache_dir or directory / ".mypy_cache"),
            *[str(path) for path in files],
        ],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT,
    )
