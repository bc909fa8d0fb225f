"""Helpers for tests/test_scaffold_e2e.py: bounded subprocesses, a clean environment for a foreign venv, and the
elicitation answer built from whatever schema the server asks for (ports and server processes: tests/support)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = "Scripts" if os.name == "nt" else "bin"


def venv_env(venv: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a shell with `venv` activated: nothing of the repo's venv or PYTHONPATH leaks in."""
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX"}}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv / BIN), env.get("PATH", "")])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _tail(text: str | bytes | None, limit: int = 6000) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


def run(
    cmd: Sequence[str | Path],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str = "",
) -> subprocess.CompletedProcess[str]:
    """Run `cmd` to completion within `timeout` seconds; fail the test with the command's output otherwise."""
    argv = [str(part) for part in cmd]
    label = what or " ".join(argv)
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{label}: timed out after {timeout:.0f}s\n$ {' '.join(argv)}\n"
            f"--- stdout ---\n{_tail(exc.stdout)}\n--- stderr ---\n{_tail(exc.stderr)}",
            pytrace=False,
        )
    if done.returncode != 0:
        pytest.fail(
            f"{label}: exit code {done.returncode}\n$ {' '.join(argv)}\n"
            f"--- stdout ---\n{_tail(done.stdout)}\n--- stderr ---\n{_tail(done.stderr)}",
            pytrace=False,
        )
    return done


def answer_for(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A valid `accept` content for an elicitation form schema (flat object of primitives, per the spec)."""
    content: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            content[name] = prop["default"]
        elif prop.get("enum"):
            content[name] = prop["enum"][0]
        elif prop.get("oneOf"):
            content[name] = prop["oneOf"][0]["const"]
        elif prop.get("type") == "boolean":
            content[name] = True
        elif prop.get("type") == "integer":
            content[name] = max(1, int(prop.get("minimum", 1)))
        elif prop.get("type") == "number":
            content[name] = float(max(1, prop.get("minimum", 1)))
        elif prop.get("type") == "array":
            items = prop.get("items") or {}
            choices = items.get("enum") or [c["const"] for c in items.get("anyOf", [])]
            content[name] = choices[:1]
        else:
            content[name] = "2030-01-01" if prop.get("format") == "date" else "yes"
    return content


def python_in(venv: Path) -> Path:
    return venv / BIN / ("python.exe" if os.name == "nt" else "python")
