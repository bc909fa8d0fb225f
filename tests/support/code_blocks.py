"""The Python blocks of a Markdown page, and what the tests of the README and the docs do with them: run each in a
fresh interpreter and compare what it prints with its ``print(...)  # text`` comments, and type-check them all with
``mypy --strict`` under the project's configuration.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["printed_comments", "python_blocks", "run_block", "strict_mypy"]

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PRINTED = re.compile(r"print\(.*\)\s+# (.+)$", re.MULTILINE)
RUN_TIMEOUT = 120  # seconds one block may take
MYPY_TIMEOUT = 600


def python_blocks(markdown: str) -> list[str]:
    """The code of every ```python block, in page order."""
    return FENCE.findall(markdown)


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


def strict_mypy(files: Sequence[Path], directory: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` over ``files`` with the project's configuration, its cache in ``directory``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(directory / ".mypy_cache"),
            *[str(path) for path in files],
        ],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT,
    )
