"""A project's own command over the runtime's runner (``server.runner.serve_command_line``, the whole ``main()`` of
a scaffolded project) and the one error line for a Redis URL without redis-py.

- the command has the flags of ``python -m mcpgen_runtime.server.runner`` (one parser builds both), and serves
  both eras over stdio and HTTP (real processes, our Client pinned to each era);
- ``auth`` is built only for HTTP: a command whose HTTP needs settings from the environment still serves stdio;
- ``--redis`` (or ``run_http(redis=...)``, ``serve_http(scale_out=...)``) without redis-py installed: exit 2 and one
  ``error:`` line naming the extra to install (the project's, or ``mcpgen-runtime[redis]``), never a traceback.

A process "without redis-py" is a real process started with ``sys.modules["redis"] = None``, which is how Python
marks a module as not importable (the import raises ModuleNotFoundError); tests/test_scaffold_e2e.py does it for
real, in a project venv without the extra. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from support.ports import free_port
from support.processes import StderrLines, http_server

from mcpgen_runtime import Client, Server
from mcpgen_runtime.scaleout.settings import ScaleOutSettings, SettingsError
from mcpgen_runtime.server.runner import TRANSPORTS, add_serving_arguments, runner_parser

TIMEOUT = 20
VERSIONS = ("2026-07-28", "2025-11-25")  # one per era
PROJECT_FILE = '''
import os
import sys

from mcpgen_runtime import Server
from mcpgen_runtime.server.runner import serve_command_line

server = Server("demo")


@server.tool()
async def echo(text: str) -> str:
    """Says it back."""
    return text


def auth_from_environment():
    # What a protected project does: refuse to serve HTTP without its settings.
    if "DEMO_ISSUER" not in os.environ:
        raise SystemExit("demo: set DEMO_ISSUER to serve HTTP")
    raise AssertionError("not reached in these tests")


if __name__ == "__main__":
    auth = auth_from_environment if os.environ.get("DEMO_AUTH") else None
    serve_command_line(server, prog="demo", description="The demo server.", auth=auth, redis_extra="demo[redis]")
'''
# The prelude of a process without redis-py (see the module docstring), then the command.
WITHOUT_REDIS = "import runpy, sys; sys.modules['redis'] = None; sys.argv = sys.argv[1:]; "
MISSING = "error: a Redis URL (--redis, MCPGEN_REDIS_URL) needs redis-py, which is not installed: pip install "


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project_file(tmp_path: Path) -> Path:
    path = tmp_path / "demo_server.py"
    path.write_text(textwrap.dedent(PROJECT_FILE))
    return path


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(re.findall(r"\[(-[-a-z]+)", parser.format_usage()))  # what the usage line offers (not SUPPRESSed)


def test_a_project_command_has_the_runners_flags() -> None:
    project = argparse.ArgumentParser(prog="demo")
    add_serving_arguments(project)
    assert _options(project) == _options(runner_parser())
    assert _options(project) >= {"--transport", "--host", "--port", "--allowed-host", "--workers", "--redis"}
    stdio_only = argparse.ArgumentParser(prog="demo")
    add_serving_arguments(stdio_only, ["stdio"])
    assert _options(stdio_only) == {"-h", "--transport", "--log-level"}


@pytest.mark.parametrize("transports", [[], ["stdio", "carrier-pigeon"]])
def test_unknown_transports_are_a_value_error(transports: list[str]) -> None:
    with pytest.raises(ValueError, match=f"choose from {', '.join(TRANSPORTS)}"):
        add_serving_arguments(argparse.ArgumentParser(), transports)


@pytest.mark.anyio
@pytest.mark.parametrize("version", VERSIONS)
async def test_the_command_serves_both_eras_over_stdio(project_file: Path, version: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client.connect_stdio([sys.executable, str(project_file)], version=version) as client:
            assert client.protocol_version == version
            assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"


@pytest.mark.anyio
async def test_the_command_serves_both_eras_over_http(project_file: Path) -> None:
    port = free_port()
    command = [sys.executable, str(project_file), "--transport", "http", "--port", str(port)]
    with http_server(command, port, env={"PATH": "/usr/bin:/bin"}) as url:
        for version in VERSIONS:
            with anyio.fail_after(TIMEOUT):
                async with Client.connect_http(url, version=version) as client:
                    assert client.protocol_version == version
                    assert (await client.call_tool("echo", {"text": version})).content[0].text == version


@pytest.mark.anyio
async def test_auth_is_built_for_http_only(project_file: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "DEMO_AUTH": "1"}
    with anyio.fail_after(TIMEOUT):
        async with Client.connect_stdio([sys.executable, str(project_file)], version="2026-07-28", env=env) as client:
            assert (await client.call_tool("echo", {"text": "stdio"})).content[0].text == "stdio"
    refused = subprocess.run(
        [sys.executable, str(project_file), "--transport", "http", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert refused.returncode == 1 and refused.stderr == "demo: set DEMO_ISSUER to serve HTTP\n"


def _without_redis(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_REDIS + command[0], *command[1:]],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("workers", ["1", "3"])
def test_the_runner_with_redis_but_no_redis_py_is_one_line(project_file: Path, workers: str) -> None:
    flags = ["--transport", "http", "--port", "0", "--workers", workers, "--redis", "redis://127.0.0.1:1/0"]
    done = _without_redis(
        "runpy.run_module('mcpgen_runtime.server.runner', run_name='__main__')", "runner", str(project_file), *flags
    )
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [MISSING + "'mcpgen-runtime[redis]'"]


def test_a_project_command_with_redis_but_no_redis_py_names_its_extra(project_file: Path) -> None:
    flags = ["--transport", "http", "--port", "0", "--workers", "3", "--redis", "redis://127.0.0.1:1/0"]
    done = _without_redis("runpy.run_path(sys.argv[0], run_name='__main__')", str(project_file), *flags)
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [MISSING + "'demo[redis]'"]


def test_run_http_with_redis_but_no_redis_py_is_one_line(project_file: Path) -> None:
    # The Python API, as a project's own main() might call it: SystemExit(2) after the same line.
    code = "import demo_server; demo_server.server.run_http(port=0, redis='redis://127.0.0.1:1/0')"
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['redis'] = None; " + code],
        cwd=project_file.parent,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [MISSING + "'mcpgen-runtime[redis]'"]


@pytest.mark.anyio
async def test_serve_http_with_scale_out_but_no_redis_py_raises_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [name for name in sys.modules if name == "redis" or name.startswith("redis.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "redis", None)
    settings = ScaleOutSettings(redis_url="redis://127.0.0.1:1/0")
    with anyio.fail_after(TIMEOUT), pytest.raises(SettingsError, match=r"pip install 'mcpgen-runtime\[redis\]'"):
        await Server("unused").serve_http(port=0, scale_out=settings)


def test_the_project_command_stops_on_ctrl_c_with_exit_0(project_file: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(project_file), "--transport", "http", "--port", "0"], stderr=subprocess.PIPE, text=True
    )
    stderr = StderrLines(process, timeout=TIMEOUT)
    try:
        stderr.wait_for(r"mcpgen: serving MCP on http://127\.0\.0\.1:\d+/mcp")
        process.send_signal(signal.SIGINT)
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0 and "Traceback" not in stderr.rest()
