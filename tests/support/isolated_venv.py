"""A pinned set of PyPI packages in a virtual environment of its own, for a test that runs an independent peer (a
library whose dependencies must not meet the project's own, e.g. another MCP SDK) in a subprocess.

``isolated_venv(name, requirements)`` creates ``<cache>/venv-<name>`` once (cache: ``MCPGEN_VENV_CACHE``, else
``$XDG_CACHE_HOME/mcpgen`` or ``~/.cache/mcpgen``) and reuses it while its recorded requirements match, as the
conformance harness does with its npm suite:

- a file lock beside it keeps concurrent test sessions from installing into the same directory;
- the venv is built where it will be used (console scripts and ``pyvenv.cfg`` hold absolute paths, so it cannot be
  built elsewhere and renamed), and a marker file holding the requirements is written last: a half-built venv (an
  install killed or timed out) has no marker and is rebuilt from scratch;
- the install is bounded (``INSTALL_TIMEOUT``) and cannot prompt (no stdin).

An install that fails or times out skips the test with a ``support.system.MISSING_PROGRAM`` reason naming the
requirements and pip's last words, so tests/conftest.py lists it under NOT TESTED and fails the run under CI, where
PyPI is reachable and a skip can only be a broken install.

``run_script(python, source, folder, *args, timeout=...)`` runs a peer's script (Python source, written into
``folder``) with such a venv's python, bounded, and returns the JSON events it printed, one a line.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from support.system import MISSING_PROGRAM

# Total seconds for one venv's creation plus its pip install (about 20 s for fastmcp with a warm pip cache).
INSTALL_TIMEOUT: Final = 300.0
MARKER: Final = "mcpgen-requirements.txt"


def cache_root() -> Path:
    if configured := os.environ.get("MCPGEN_VENV_CACHE"):
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpgen"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _wanted(requirements: Sequence[str]) -> str:
    # Python's version is part of what is pinned: a venv built on another interpreter is rebuilt.
    return "\n".join([f"# python {sys.version_info.major}.{sys.version_info.minor}", *requirements]) + "\n"


def _ready(venv: Path, wanted: str) -> bool:
    try:
        return (venv / MARKER).read_text(encoding="utf-8") == wanted and venv_python(venv).is_file()
    except OSError:
        return False


def _skip(requirements: Sequence[str], why: str) -> None:
    pytest.skip(f"{MISSING_PROGRAM} {' '.join(requirements)} in its own venv ({why}; PyPI is needed once)")


def isolated_venv(name: str, requirements: Sequence[str], timeout: float = INSTALL_TIMEOUT) -> Path:
    """The python of ``<cache>/venv-<name>`` with exactly ``requirements`` installed (built on first use, within
    ``timeout`` seconds in all, the wait for another session's lock excepted)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"venv-{name}"
    wanted = _wanted(requirements)
    with open(root / f".venv-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _ready(venv, wanted):
            return venv_python(venv)
        shutil.rmtree(venv, ignore_errors=True)  # a half-built venv or one of other pins
        commands = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv_python(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
        ]
        env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        deadline = time.monotonic() + timeout
        for command in commands:
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=max(1.0, deadline - time.monotonic()),
                    stdin=subprocess.DEVNULL,
                    env=env,
                )
            except subprocess.TimeoutExpired:
                shutil.rmtree(venv, ignore_errors=True)
                _skip(requirements, f"{' '.join(command[1:4])} did not finish within {timeout:.0f}s")
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                last = " | ".join(line for line in done.stderr.strip().splitlines()[-3:] if line.strip())
                _skip(requirements, f"{' '.join(command[1:4])} exited {done.returncode}: {last[-600:]}")
        (venv / MARKER).write_text(wanted, encoding="utf-8")
        return venv_python(venv)


async def run_script(
    python: Path, source: str, folder: Path, *args: str, timeout: float, name: str = "peer_script.py"
) -> list[dict[str, Any]]:
    """Write ``source`` to ``folder / name`` and run it with ``python`` and ``args``, within ``timeout`` seconds in
    all; the JSON objects it printed, one a line, in order (other lines are ignored: a library may print). A
    nonzero exit fails the test with the script's output and the end of its stderr."""
    script = folder / name
    script.write_text(source, encoding="utf-8")
    with anyio.fail_after(timeout):
        done = await anyio.run_process([str(python), str(script), *args], check=False)
    output, errors = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, f"{name} failed (exit {done.returncode}):\n{output}\n{errors[-4000:]}"
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]
