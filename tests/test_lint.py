"""The lint session's checks, run as tests so that CI enforces them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ["generator", "runtime", "tests", "bench", "docs/hooks", "noxfile.py"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_clean() -> None:
    completed = _run("ruff", "check", *CODE)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_black_is_clean_on_hand_written_code() -> None:
    completed = _run("black", "--check", *CODE)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_generated_code_is_black_stable() -> None:
    # The format cache must never hand back something black would still change.
    completed = _run("black", "--check", "--line-length", "120", "generated")
    assert completed.returncode == 0, completed.stdout + completed.stderr
