"""Every shell block of the docs (```bash, ```sh, ```shell, ```console in docs/**/*.md, docs/hooks aside) runs and
exits 0, unless the line before its fence (blank lines aside) is ``<!-- not run: REASON -->``: it needs a browser,
the network, a long-lived server, Redis...

Each block runs in a fresh temporary directory with the venv's bin first on PATH (``mcpgen`` and ``python`` are the
venv's) and ``MCPGEN_REPO`` set to this checkout, within 120 s. A ```bash, ```sh or ```shell block runs whole under
``bash -e -o pipefail``; a ```console block runs its ``$ `` lines (the rest is output, shown not checked), a line
ending in ``\\`` continuing on the next. One test per block, its id ``page.md:LINE``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.code_blocks import RUN_TIMEOUT, Block, fenced_blocks

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
NOT_PAGES = ("hooks",)
SCRIPT_LANGUAGES = frozenset({"bash", "sh", "shell"})
SESSION_LANGUAGES = frozenset({"console", "shell-session"})
PROMPT = "$ "


def docs_pages() -> list[Path]:
    return sorted(page for page in DOCS.rglob("*.md") if page.relative_to(DOCS).parts[0] not in NOT_PAGES)


def shell_blocks() -> list[tuple[str, Block]]:
    """(``page.md:LINE``, block) of every shell block of the docs."""
    return [
        (f"{page.relative_to(DOCS).as_posix()}:{block.line}", block)
        for page in docs_pages()
        for block in fenced_blocks(page.read_text(encoding="utf-8"))
        if block.language in SCRIPT_LANGUAGES | SESSION_LANGUAGES
    ]


def commands(block: Block) -> str:
    """The script a block runs: a script block as it is, a console block's ``$ `` lines and their continuations."""
    if block.language in SCRIPT_LANGUAGES:
        return block.code
    script: list[str] = []
    continuing = False
    for line in block.code.splitlines():
        if continuing or line.startswith(PROMPT):
            script.append(line if continuing else line.removeprefix(PROMPT))
            continuing = line.endswith("\\")
    return "\n".join(script) + "\n"


BLOCKS = shell_blocks()
RUNNABLE = [(where, block) for where, block in BLOCKS if block.not_run is None]


def test_every_not_run_marker_says_why() -> None:
    unexplained = [where for where, block in BLOCKS if block.not_run == ""]
    assert not unexplained, f"<!-- not run: REASON --> with no reason: {unexplained}"


def test_every_console_block_has_a_command() -> None:
    empty = [where for where, block in RUNNABLE if not commands(block).strip()]
    assert not empty, f"shell blocks with nothing to run (a ```console block's commands start with `$ `): {empty}"


def _left_running(directory: Path) -> list[int]:
    """The processes still running from ``directory`` (their working directory is in it): what a block started and
    left behind, daemons included (they leave the block's process group)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = (entry / "cwd").readlink()
        except OSError:
            continue
        if cwd == directory or directory in cwd.parents:
            found.append(int(entry.name))
    return found


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("where", "block"), RUNNABLE, ids=[where for where, _ in RUNNABLE])
def test_every_shell_block_runs(where: str, block: Block, tmp_path: Path) -> None:
    bin_directory = Path(sys.executable).parent
    environment = {
        **os.environ,
        "PATH": f"{bin_directory}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(bin_directory.parent),
        "MCPGEN_REPO": str(REPO),
    }
    script = commands(block)
    directory = tmp_path.resolve()
    # A session of its own, so that a timeout stops everything the block started, not only bash.
    shell = subprocess.Popen(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=directory,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = shell.communicate(timeout=RUN_TIMEOUT)
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        stdout, stderr = shell.communicate()
        timed_out = True
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(shell.pid, signal.SIGKILL)
        left = _left_running(directory)
        _stop(left)
    mark = "mark it <!-- not run: REASON --> if it cannot run in a test"
    assert not timed_out, f"{where} ran over {RUN_TIMEOUT} s ({mark}):\n$ {script}\n{stdout}\n{stderr}"
    assert shell.returncode == 0, f"{where} exited {shell.returncode} ({mark}):\n$ {script}\n{stdout}\n{stderr}"
    assert not left, f"{where} left processes running ({mark}, or stop them in the block): {left}"
