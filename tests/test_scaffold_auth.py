"""`mcpgen new --auth`: a server whose HTTP transport requires bearer tokens, configured from the environment.

The scaffolded project's own tests (a stand-in issuer in tests/conftest.py, a real server process, real HTTP) are
run with this interpreter, as tests/test_scaffold.py does for the plain project; the goldens of the plain variants
(tests/golden_scaffold/) show that without --auth nothing changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpgen.cli import main

NAME = "weather"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["new", *(str(arg) for arg in args)])


@pytest.mark.parametrize(("template", "transport"), [("full", "both"), ("minimal", "http")])
def test_a_protected_project_passes_its_own_tests(tmp_path: Path, template: str, transport: str) -> None:
    project = tmp_path / NAME
    result = run(NAME, "--dir", project, "--auth", "--template", template, "--transport", transport)
    assert result.exit_code == 0, result.output
    assert (project / "tests" / "conftest.py").is_file()
    pyproject = (project / "pyproject.toml").read_text()
    assert "'authlib==" in pyproject and "'joserfc==" in pyproject
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for test in ("401_and_names_its_metadata", "bad_tokens_are_refused", "whoami_sees_the_tokens_subject"):
        assert test in (project / "tests" / "test_server.py").read_text()
    assert "skipped" not in completed.stdout


def test_the_protected_server_refuses_to_serve_http_without_its_configuration(tmp_path: Path) -> None:
    project = tmp_path / NAME
    assert run(NAME, "--dir", project, "--auth", "--template", "minimal", "--transport", "http").exit_code == 0
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_AUTH_")}
    completed = subprocess.run(
        [sys.executable, "-m", f"{NAME}.server", "--transport", "http", "--port", "0"],
        cwd=project,
        env={**env, "PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode != 0
    assert "set MCP_AUTH_ISSUER and MCP_AUTH_RESOURCE to serve HTTP" in completed.stderr


def test_auth_needs_the_http_transport(tmp_path: Path) -> None:
    result = run(NAME, "--dir", tmp_path / NAME, "--auth", "--transport", "stdio")
    assert result.exit_code == 2
    assert "--auth protects the HTTP transport" in result.output
    assert not (tmp_path / NAME).exists()
