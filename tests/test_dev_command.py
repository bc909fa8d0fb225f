"""The development commands: `mcpgen dev` (serve a server file over HTTP, restart it on change) and
`mcpgen client-config` (a server's entry for a desktop client's config file).

`dev` runs as a real process on a temporary server file and a free loopback port: our Client calls a tool, the file
is edited, the new answer comes after the reload, and once `dev` is stopped (SIGINT, SIGTERM, even SIGKILL) no
server process is left and the port is free. Every wait is bounded. Bad input is one `error:` line and exit 2.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result
from support.ports import free_port
from support.processes import StderrLines

from mcpgen.cli import main
from mcpgen.features.dev_server import changed_files, snapshot, split_target

TIMEOUT = 30
MCPGEN = [sys.executable, "-m", "mcpgen.cli"]
SERVER = '''
from mcpgen_runtime import Server

server = Server("dev")


@server.tool()
async def answer() -> str:
    """The answer of the day."""
    return "{answer}"
'''


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(arg) for arg in args])


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def alive(pid: int) -> bool:
    """Whether process `pid` runs; a zombie (exited, not reaped yet) does not, where /proc can tell."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return not Path("/proc").is_dir()  # gone meanwhile (Linux), or no /proc: kill said it runs
    return state != "Z"


def wait_until(condition: object, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


class Dev:
    """`mcpgen dev` as a real process; its stderr read by a thread so that every wait for a line is bounded."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [*MCPGEN, "dev", *args], cwd=cwd, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        self.stderr = StderrLines(self.process, timeout=TIMEOUT)

    def wait_for(self, pattern: str, timeout: float = TIMEOUT) -> re.Match[str]:
        return self.stderr.wait_for(pattern, timeout)

    def started(self) -> tuple[int, str]:
        """(pid, URL) of the next server started."""
        pid = int(self.wait_for(r"mcpgen dev: server started \(pid (\d+)\)").group(1))
        url = self.wait_for(r"mcpgen: serving MCP on (http://\S+)").group(1)
        return pid, url

    @property
    def output(self) -> str:
        return "".join(self.stderr.seen)

    def stop(self, signum: int = signal.SIGINT) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def rest(self) -> str:
        """Everything it printed, once it has exited."""
        self.stderr.rest()
        return self.output


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "server.py").write_text(SERVER.format(answer="one"), encoding="utf-8")
    yield tmp_path


def edit(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    # Make sure the change is visible even where mtime is coarse: the size differs too, but be explicit.
    later = time.time() + 2
    os.utime(path, (later, later))


async def ask(url: str) -> str:
    from mcp_bindings import v2025_06_18 as mcp
    from mcp_bindings.v2025_06_18.client import ClientStub
    from mcpgen_runtime import Client

    with anyio.fail_after(TIMEOUT):
        async with Client.connect_http(url, version="2025-06-18", request_timeout=TIMEOUT) as client:
            result = await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name="answer"))
            block = result.content[0]
            assert isinstance(block, mcp.TextContent)
            return str(block.text)


def ask_sync(url: str) -> str:
    return anyio.run(ask, url)


# -- mcpgen dev: real processes ----------------------------------------------------------------------------------


def test_dev_reloads_on_change_and_leaves_nothing_behind(project: Path) -> None:
    port = free_port()
    dev = Dev(project, "server.py", "--port", str(port), "--poll-interval", "0.1", "--debounce", "0.1")
    try:
        dev.wait_for(r"mcpgen dev: watching 1 \*\.py files under .*; Ctrl-C stops")
        first_pid, url = dev.started()
        assert url == f"http://127.0.0.1:{port}/mcp"
        assert ask_sync(url) == "one"

        edit(project / "server.py", SERVER.format(answer="two, after the reload"))
        dev.wait_for(r"mcpgen dev: server\.py changed: restarting")
        second_pid, url_again = dev.started()
        assert url_again == url and second_pid != first_pid
        assert not alive(first_pid)  # the old server was stopped before the new one started
        assert ask_sync(url) == "two, after the reload"

        # A file beside it counts too; one that is not Python does not.
        (project / "notes.txt").write_text("not watched")
        (project / "helpers.py").write_text("X = 1\n")
        dev.wait_for(r"mcpgen dev: helpers\.py changed: restarting")
        third_pid, _ = dev.started()
    finally:
        code = dev.stop(signal.SIGINT)
    output = dev.rest()
    assert code == 0, output
    assert output.splitlines()[-1] == "mcpgen dev: stopped"
    assert "notes.txt" not in output and "Traceback" not in output
    assert not alive(third_pid)
    wait_until(lambda: port_is_free(port), f"port {port} free again")


def test_a_broken_edit_is_reported_and_the_fix_restarts_it(project: Path) -> None:
    port = free_port()
    dev = Dev(project, "server.py", "--port", str(port), "--poll-interval", "0.1", "--debounce", "0.1")
    try:
        dev.started()
        edit(project / "server.py", "def broken(:\n")
        dev.wait_for(r"restarting")
        dev.wait_for(r"SyntaxError")
        dev.wait_for(r"error: cannot load server\.py: SyntaxError")
        dev.wait_for(r"mcpgen dev: the server exited with code 2; it restarts when a file changes")
        edit(project / "server.py", SERVER.format(answer="fixed"))
        pid, url = dev.started()
        assert ask_sync(url) == "fixed"
    finally:
        code = dev.stop(signal.SIGTERM)  # SIGTERM stops it as cleanly as Ctrl-C
    output = dev.rest()
    assert code == 0, output
    assert output.splitlines()[-1] == "mcpgen dev: stopped"
    assert not alive(pid)


def test_a_killed_dev_leaves_no_server_holding_the_port(project: Path) -> None:
    port = free_port()
    dev = Dev(project, "server.py", "--port", str(port))
    try:
        pid, _ = dev.started()
    finally:
        dev.stop(signal.SIGKILL)  # no chance to clean up: the server notices its parent is gone
    wait_until(lambda: not alive(pid), f"server {pid} gone after its parent was killed")
    wait_until(lambda: port_is_free(port), f"port {port} free again")


def test_a_module_target_watches_its_package(tmp_path: Path) -> None:
    package = tmp_path / "weather"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "server.py").write_text(SERVER.format(answer="from a module"))
    port = free_port()
    dev = Dev(tmp_path, "weather.server:server", "--port", str(port), "--poll-interval", "0.1", "--debounce", "0.1")
    try:
        dev.wait_for(rf"watching 2 \*\.py files under {re.escape(str(package.resolve()))};")
        pid, url = dev.started()
        assert ask_sync(url) == "from a module"
    finally:
        assert dev.stop() == 0
    assert not alive(pid)


# -- mcpgen dev: the parts, and bad input ------------------------------------------------------------------------


def test_snapshots_see_python_files_and_skip_caches(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    for skipped in ("__pycache__", ".venv", "node_modules", ".git"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.py").write_text("x")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "c.py").write_text("c")
    before = snapshot([tmp_path])
    assert sorted(path.relative_to(tmp_path).as_posix() for path in before) == ["a.py", "pkg/c.py"]
    assert len(snapshot([tmp_path], limit=1)) == 1
    (tmp_path / "pkg" / "c.py").write_text("cc")
    (tmp_path / "a.py").unlink()
    assert changed_files(before, snapshot([tmp_path])) == [tmp_path / "a.py", tmp_path / "pkg" / "c.py"]


def test_targets_split_like_the_runners() -> None:
    from mcpgen_runtime.server.runner import split_target as runner_split

    for target in ("server.py", "server.py:app", "pkg.mod:server", "C:\\x\\server.py", "a:b:c", ":x"):
        assert split_target(target) == runner_split(target)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.py"], "error: missing.py: no such file"),
        (["no_such_module_here"], "error: no module named 'no_such_module_here' under"),
        (["not a module"], "is neither a .py file nor a module name"),
        (["server.py", "--port", "70000"], "error: --port 70000: not a port number (0 to 65535)"),
        (["server.py", "--watch", "nowhere"], "error: --watch nowhere: not a directory"),
        (["server.py", "--poll-interval", "0"], "error: the poll interval must be more than 0"),
        (["server.py", "--debounce", "-1"], "error: the debounce must be more than 0"),
        ([""], "error: the target is empty"),
        (["server.py", "--python", "/no/such/python"], "error: --python /no/such/python: not an executable"),
    ],
)
def test_dev_bad_input_is_one_error_line_and_exit_2(
    project: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(project)
    result = run("dev", *args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert "Traceback" not in result.output


def test_dev_help_shows_examples() -> None:
    result = run("dev", "--help")
    assert result.exit_code == 0 and "Examples" in result.output and "mcpgen dev server.py" in result.output


# -- mcpgen client-config ----------------------------------------------------------------------------------------


def test_client_config_prints_the_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("client-config", "weather", "--env", "API_KEY=a=b", "--", ".venv/bin/weather", "--verbose")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "mcpServers": {
            "weather": {
                "command": str(tmp_path / ".venv" / "bin" / "weather"),  # made absolute: clients start elsewhere
                "args": ["--verbose"],
                "env": {"API_KEY": "a=b"},
            }
        }
    }
    bare = json.loads(run("client-config", "weather", "--", "uvx", "weather-server").stdout)
    assert bare == {"mcpServers": {"weather": {"command": "uvx", "args": ["weather-server"]}}}
    remote = json.loads(run("client-config", "weather", "--url", "http://127.0.0.1:8000/mcp").stdout)
    assert remote == {"mcpServers": {"weather": {"url": "http://127.0.0.1:8000/mcp"}}}


def test_client_config_for_a_server_file_uses_the_runner(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    result = run("client-config", "dev", "--server", "server.py:server", "--python", "/opt/py/bin/python3")
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["mcpServers"]["dev"]
    assert entry == {
        "command": "/opt/py/bin/python3",
        "args": ["-m", "mcpgen_runtime.server.runner", f"{project.resolve() / 'server.py'}:server"],
    }


def test_the_printed_entry_starts_a_working_server(project: Path) -> None:
    # The entry as a desktop client would use it: started from another directory, spoken to over stdio.
    result = run("client-config", "dev", "--server", str(project / "server.py"))
    entry = json.loads(result.stdout)["mcpServers"]["dev"]

    async def call() -> str:
        from mcp_bindings import v2025_06_18 as mcp
        from mcp_bindings.v2025_06_18.client import ClientStub
        from mcpgen_runtime import Client

        with anyio.fail_after(TIMEOUT):
            command = [entry["command"], *entry["args"]]
            async with Client.connect_stdio(command, cwd="/", version="2025-06-18") as client:
                answer = await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name="answer"))
                block = answer.content[0]
                assert isinstance(block, mcp.TextContent)
                return str(block.text)

    assert anyio.run(call) == "one"


def test_client_config_write_merges_atomically(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "other"}}}))
    config.chmod(0o640)
    result = run("client-config", "weather", "--write", config, "--", "/bin/weather")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"added mcpServers.weather in {config}\n"
    document = json.loads(config.read_text())
    assert list(document) == ["theme", "mcpServers"]
    assert document["mcpServers"] == {"other": {"command": "other"}, "weather": {"command": "/bin/weather", "args": []}}
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    result = run("client-config", "weather", "--write", config, "--", "/bin/weather", "--v2")
    assert result.stdout == f"replaced mcpServers.weather in {config}\n"
    assert json.loads(config.read_text())["mcpServers"]["weather"]["args"] == ["--v2"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [config.name]  # no temporary file left


def test_client_config_write_creates_a_private_file_and_follows_a_link(tmp_path: Path) -> None:
    created = tmp_path / "new.json"
    assert run("client-config", "w", "--write", created, "--", "/bin/w").exit_code == 0
    assert json.loads(created.read_text()) == {"mcpServers": {"w": {"command": "/bin/w", "args": []}}}
    assert stat.S_IMODE(created.stat().st_mode) == 0o600  # env may hold secrets
    link = tmp_path / "link.json"
    link.symlink_to(created)
    assert run("client-config", "x", "--write", link, "--url", "https://mcp.example.com/mcp").exit_code == 0
    assert link.is_symlink() and set(json.loads(created.read_text())["mcpServers"]) == {"w", "x"}
    empty = tmp_path / "empty.json"
    empty.write_text("\n")
    assert run("client-config", "e", "--write", empty, "--", "/bin/e").exit_code == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "holds an array, not a JSON object; nothing was written"),
        ('"text"', "holds a str, not a JSON object"),
        ("{not json", "invalid JSON at line 1 column 2"),
        ('{"mcpServers": []}', "#/mcpServers is not a JSON object; nothing was written"),
        ('{"a": NaN}', "NaN"),
    ],
)
def test_client_config_refuses_a_file_that_is_not_a_config(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(text)
    result = run("client-config", "weather", "--write", config, "--", "/bin/weather")
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ") and message in result.stderr
    assert config.read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["w"], "give exactly one of `-- COMMAND [ARGS]`, --server TARGET and --url URL (none given)"),
        (["w", "--url", "http://x/mcp", "--", "cmd"], "(-- COMMAND and --url given)"),
        (["w", "--url", "ftp://x"], "expected an http:// or https:// URL"),
        (["w", "--url", "http://x/mcp", "--env", "A=1"], "--env goes with a command or --server"),
        (["w", "--env", "NOEQUALS", "--", "cmd"], "--env 'NOEQUALS': expected KEY=VALUE"),
        (["w", "--python", "/bin/python3", "--", "cmd"], "--python goes with --server"),
        (["w", "--server", "missing.py"], "--server missing.py: no such file"),
        (["", "--", "cmd"], "the server name is empty"),
        (["a\tb", "--", "cmd"], "contains control characters"),
        (["w", "--write", "no/such/dir/c.json", "--", "cmd"], "the directory no/such/dir does not exist"),
    ],
)
def test_client_config_bad_input_is_one_error_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("client-config", *args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []
