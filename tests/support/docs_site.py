"""The documentation site built as CI builds it (``mkdocs build --strict``), for the tests that read it
(tests/test_docs_build.py) or open it in a browser (tests/test_docs_browser.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

__all__ = ["BUILD_TIMEOUT", "build_site"]

REPO: Final = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT: Final = 600.0  # seconds for one build (about 5 s on CI's 2 cores)


def build_site(directory: Path) -> Path:
    """Build the site into ``directory`` with ``--strict``; a failed build is an assertion naming what mkdocs said."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(directory)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        # mkdocs 1.6 prints a banner about a future 2.0 on every run: not a warning about this site.
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return directory
