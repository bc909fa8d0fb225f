"""How a server process runs (``server.hosting.options``) and ``python -m mcpgen_runtime.server.runner``: logging on
stderr at a chosen level, the announced URL (the real port for port 0), the Host list that follows ``--host`` and
``--allowed-host`` with a warning for a wildcard bind, and the runner's bad input (exit 2, one ``error:`` line).

The functions are tested in-process; the rest with real server processes on 127.0.0.1 and our Client. Every wait
is bounded.
"""

from __future__ import annotations

import io
import logging
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from support.processes import StderrLines

from mcp_bindings import v2025_06_18 as mcp
from mcp_bindings.v2025_06_18.client import ClientStub
from mcpgen_runtime import Client
from mcpgen_runtime.server.hosting import options as run_options
from mcpgen_runtime.server.hosting.options import (
    Announcer,
    allowed_hosts_for,
    configure_logging,
    http_options,
    wildcard_warning,
)
from mcpgen_runtime.transports.http.server import app as http_server
from mcpgen_runtime.transports.stdio.ndjson import open_subprocess_stream

TIMEOUT = 20
RUNNER = [sys.executable, "-m", "mcpgen_runtime.server.runner"]
ACCEPT_BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
SERVER_FILE = '''
import logging

from mcpgen_runtime import Server

server = Server("logged")
log = logging.getLogger("logged")


@server.tool()
async def shout() -> str:
    """Logs at every level."""
    log.debug("a debug line")
    log.warning("a warning line")
    return "done"
'''


def _bare(root: logging.Logger) -> logging.Logger:
    # pytest's log capture adds its handlers to the root logger for the test's call phase: take them off too.
    for handler in list(root.handlers):
        root.removeHandler(handler)
    return root


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The root logger without any handler (call ``_bare`` in the test, after pytest added its own), restored
    after the test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "logged_server.py"
    path.write_text(SERVER_FILE, encoding="utf-8")
    return path


# -- the functions -----------------------------------------------------------------------------------------------


def test_configure_logging_sets_the_level_and_one_handler(root_logging: logging.Logger) -> None:
    _bare(root_logging)
    stream = io.StringIO()
    configure_logging("warning", stream=stream)
    configure_logging("WARNING", stream=stream)  # again: replaces its own handler, never adds a second
    assert len(root_logging.handlers) == 1 and root_logging.level == logging.WARNING
    logging.getLogger("x").info("hidden")
    logging.getLogger("x").warning("shown")
    assert "hidden" not in stream.getvalue() and "x WARNING shown" in stream.getvalue()
    configure_logging("debug", stream=stream)
    logging.getLogger("x").debug("now shown")
    assert "x DEBUG now shown" in stream.getvalue()
    configure_logging(None)  # leaves it as it is
    assert root_logging.level == logging.DEBUG and len(root_logging.handlers) == 1


def test_configure_logging_keeps_logging_configured_elsewhere(root_logging: logging.Logger) -> None:
    theirs = logging.StreamHandler(io.StringIO())
    _bare(root_logging).addHandler(theirs)
    configure_logging("error", stream=io.StringIO())
    assert root_logging.handlers == [theirs] and root_logging.level == logging.ERROR


@pytest.mark.parametrize("level", ["loud", "", True, "info "])
def test_configure_logging_refuses_a_bad_level(root_logging: logging.Logger, level: object) -> None:
    if level == "info ":  # surrounding spaces are forgiven
        configure_logging("info ", stream=io.StringIO())
        assert root_logging.level == logging.INFO
        return
    with pytest.raises(ValueError, match="invalid log level"):
        configure_logging(level, stream=io.StringIO())  # type: ignore[arg-type]


def test_the_local_hosts_are_the_http_servers() -> None:
    assert run_options.LOCAL_HOSTS == http_server.LOCAL_HOSTS


@pytest.mark.parametrize(
    ("host", "extra", "expected"),
    [
        ("127.0.0.1", None, ["localhost", "127.0.0.1", "::1"]),
        ("192.168.1.20", None, ["localhost", "127.0.0.1", "::1", "192.168.1.20"]),
        ("Box.Example", ["box.example", "other"], ["localhost", "127.0.0.1", "::1", "box.example", "other"]),
        ("0.0.0.0", None, ["localhost", "127.0.0.1", "::1"]),
        ("::", ["[fe80::1]"], ["localhost", "127.0.0.1", "::1", "fe80::1"]),
        ("0.0.0.0", ["*"], ["localhost", "127.0.0.1", "::1", "*"]),
    ],
)
def test_allowed_hosts_follow_the_bind_host(host: str, extra: list[str] | None, expected: list[str]) -> None:
    assert allowed_hosts_for(host, extra) == expected


def test_a_wildcard_bind_without_allowed_hosts_warns_naming_the_flag() -> None:
    assert wildcard_warning("127.0.0.1", None) is None
    assert wildcard_warning("0.0.0.0", ["box.example"]) is None
    cli = wildcard_warning("0.0.0.0", [], "--allowed-host")
    assert cli is not None and cli.startswith("mcpgen: warning: listening on 0.0.0.0 (every interface)")
    assert "--allowed-host NAME (repeatable)" in cli and "--allowed-host '*'" in cli and "\n" not in cli
    api = wildcard_warning("::", None)
    assert api is not None and "allowed_hosts=[NAME, ...]" in api and "allowed_hosts=['*']" in api


def test_http_options_complete_what_serve_http_gets() -> None:
    out = io.StringIO()
    options = http_options("0.0.0.0", {"max_sessions": 5, "path": "/x"}, allowed_hosts_flag="--allowed-host", file=out)
    assert options["max_sessions"] == 5 and options["allowed_hosts"] == ["localhost", "127.0.0.1", "::1"]
    assert "--allowed-host NAME" in out.getvalue()
    announcer = options["task_status"]
    assert isinstance(announcer, Announcer)
    announcer.started("http://0.0.0.0:4321")
    assert announcer.url == "http://0.0.0.0:4321/x"
    assert out.getvalue().splitlines()[-1] == "mcpgen: serving MCP on http://0.0.0.0:4321/x"
    quiet = io.StringIO()
    mine = object()
    options = http_options("127.0.0.1", {"task_status": mine, "allowed_hosts": ["a.example"]}, file=quiet)
    assert options["task_status"] is mine and options["allowed_hosts"][-1] == "a.example" and not quiet.getvalue()


# -- real processes ----------------------------------------------------------------------------------------------


def start_runner(*args: str | Path, cwd: Path | None = None) -> tuple[subprocess.Popen[str], StderrLines, str]:
    """The runner serving HTTP on a free port; (process, its stderr, the URL it announced)."""
    process = subprocess.Popen(
        [*RUNNER, *(str(arg) for arg in args), "--transport", "http", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    stderr = StderrLines(process, timeout=TIMEOUT)
    try:
        url = stderr.wait_for(r"mcpgen: serving MCP on (http://\S+)").group(1)
    except AssertionError:
        process.kill()
        process.wait()
        raise
    return process, stderr, url


def stop(process: subprocess.Popen[str], stderr: StderrLines) -> str:
    """SIGINT (Ctrl-C), then what is left of its stderr; asserts a clean exit."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    rest = stderr.rest()
    assert process.returncode == 0, rest
    return rest


@pytest.mark.anyio
async def test_the_runner_announces_the_real_port_and_serves(server_file: Path) -> None:
    process, stderr, url = start_runner(server_file)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url) and not url.endswith(":0/mcp")
        with anyio.fail_after(TIMEOUT):
            async with Client.connect_http(url, version="2025-06-18", request_timeout=TIMEOUT) as client:
                result = await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name="shout"))
                assert not result.is_error
    finally:
        rest = stop(process, stderr)
    assert "a warning line" in rest and "a debug line" not in rest  # the default level is info
    assert "Traceback" not in rest


@pytest.mark.anyio
async def test_log_level_over_stdio_goes_to_stderr(server_file: Path) -> None:
    for level, debug_shown in (("debug", True), ("error", False)):
        command = [*RUNNER, str(server_file), "--log-level", level]
        with anyio.fail_after(TIMEOUT):
            async with open_subprocess_stream(command, capture_stderr=True) as stream:
                async with Client.connect(stream, version="2025-06-18", request_timeout=TIMEOUT) as client:
                    await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name="shout"))
            logged = stream.stderr_output.decode()
        assert ("logged DEBUG a debug line" in logged) is debug_shown, logged
        assert ("logged WARNING a warning line" in logged) is debug_shown, logged


@pytest.mark.anyio
async def test_a_wildcard_bind_warns_and_allowed_hosts_open_it(server_file: Path) -> None:
    process, stderr, url = start_runner(server_file, "--host", "0.0.0.0")
    port = url.rsplit(":", 1)[1].split("/")[0]
    local = f"http://127.0.0.1:{port}/mcp"
    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            named = {**ACCEPT_BOTH, "host": f"box.example.test:{port}"}
            refused = await http.post(local, json=INITIALIZE, headers=named)
            assert refused.status_code == 403 and "box.example.test" in refused.text
            assert (await http.post(local, json=INITIALIZE, headers=ACCEPT_BOTH)).status_code == 200
    finally:
        rest = stop(process, stderr)
    assert "Traceback" not in rest
    process, stderr, url = start_runner(server_file, "--host", "0.0.0.0", "--allowed-host", "box.example.test")
    port = url.rsplit(":", 1)[1].split("/")[0]
    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            named = {**ACCEPT_BOTH, "host": f"box.example.test:{port}"}
            response = await http.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=named)
            assert response.status_code == 200, response.text
    finally:
        stop(process, stderr)


def test_the_wildcard_warning_comes_before_the_url(server_file: Path) -> None:
    process, stderr, url = start_runner(server_file, "--host", "0.0.0.0")
    stop(process, stderr)
    first, second = stderr.seen[0], stderr.seen[1]
    assert first.startswith("mcpgen: warning: listening on 0.0.0.0") and "--allowed-host NAME" in first
    assert second == f"mcpgen: serving MCP on {url}\n" and url.startswith("http://0.0.0.0:")


@pytest.mark.parametrize(
    ("files", "target", "message"),
    [
        ({}, "missing.py", "error: missing.py: no such file"),
        ({"plain.py": "x = 1\n"}, "plain.py", "plain.py defines no mcpgen_runtime Server; name the object with"),
        (
            {"two.py": "from mcpgen_runtime import Server\na = Server('a')\nb = Server('b')\n"},
            "two.py",
            "two.py defines several Servers (a, b); choose one with two.py:NAME",
        ),
        ({"plain.py": "x = 1\n"}, "plain.py:x", "plain.py:x is of type int, not an mcpgen_runtime Server"),
        ({"plain.py": "x = 1\n"}, "plain.py:y", "the module has no attribute 'y'"),
        ({}, "no_such_module:server", "no module named 'no_such_module'"),
        ({}, "not a module", "is neither a .py file nor a module name"),
        ({"boom.py": "raise RuntimeError('at import')\n"}, "boom.py", "cannot load boom.py: RuntimeError: at import"),
    ],
)
def test_the_runners_bad_input_is_one_error_line_and_exit_2(
    tmp_path: Path, files: dict[str, str], target: str, message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    completed = subprocess.run(
        [*RUNNER, target], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.splitlines()
    assert message in lines[-1] and lines[-1].startswith("error: ")
    if "cannot load" in message:  # the server's own exception: its traceback, without the runner's frames
        assert 'boom.py", line 1, in <module>' in completed.stderr and "runner.py" not in completed.stderr
    else:
        assert len(lines) == 1


def test_a_module_target_and_a_named_server(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "srv.py").write_text(textwrap.dedent("""
            from mcpgen_runtime import Server
            main_server = Server("main")
            other = Server("other")
            """))
    for target in ("pkg.srv:main_server", "pkg/srv.py:other"):
        process, stderr, url = start_runner(target, cwd=tmp_path)
        assert url.startswith("http://127.0.0.1:")
        stop(process, stderr)


def test_a_port_in_use_is_one_error_line(server_file: Path) -> None:
    process, stderr, url = start_runner(server_file)
    port = url.rsplit(":", 1)[1].split("/")[0]
    try:
        completed = subprocess.run(
            [*RUNNER, str(server_file), "--transport", "http", "--port", port],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    finally:
        stop(process, stderr)
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_an_address_that_cannot_be_bound_is_one_error_line(server_file: Path) -> None:
    completed = subprocess.run(
        [*RUNNER, str(server_file), "--transport", "http", "--host", "no-such-host.invalid", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert completed.returncode == 2
    lines = completed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot listen on no-such-host.invalid:0: "), lines
