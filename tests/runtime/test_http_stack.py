"""The HTTP stack (``MCPGEN_HTTP_STACK``, ``transports.http.server.serving``): real server processes, started the
way users start them (``python -m mcpgen_runtime.server.runner FILE --transport http``, which is ``run_http``).

The server's ``stack`` tool reports what really serves it, from inside: the running loop's module and the uvicorn
protocol classes of the live connections; its stderr has the one line ``serve_app`` logs. The default serves on
httptools and uvloop when they are installed (they are dependencies of mcpgen-runtime); ``h11`` forces h11 and
asyncio's loop; a process that cannot import them (a ``sys.meta_path`` blocker) falls back to those under ``auto``
and says so, and refuses ``fast`` with one ``error:`` line and exit code 2, as it refuses an unknown value. Every
stack answers both eras (a legacy session and a modern stateless call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from support.processes import StderrLines

from mcpgen_runtime.transports.http.server import serving
from mcpgen_runtime.transports.http.server.serving import HTTPStack, http_stack, loop_options

MODERN = "2026-07-28"
LEGACY = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
WAIT = 30.0

SERVER = '''
import asyncio
import gc
import json

from mcpgen_runtime.server import Server

server = Server("stack", version="1.0.0")


@server.tool()
async def stack() -> str:
    """The running loop's module and the uvicorn protocol classes of the live connections."""
    protocols = set()
    for live in gc.get_objects():
        if isinstance(live, asyncio.Protocol):
            names = [c.__name__ for c in type(live).__mro__ if c.__module__.startswith("uvicorn.protocols.http.")]
            if names:
                protocols.add((type(live).__name__, names[0]))
    loop = type(asyncio.get_running_loop()).__module__.partition(".")[0]  # uvloop.Loop, asyncio.unix_events...
    return json.dumps({"loop": loop, "protocols": sorted(protocols)})
'''

# Run as `python -c`: imports of uvloop and httptools fail, as where they are not installed, then the runner runs.
BLOCKED = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("uvloop", "httptools"):
            raise ImportError(f"{name} is blocked")
        return None

sys.meta_path.insert(0, Blocker())
from mcpgen_runtime.server.runner import main
main(sys.argv[1:])
"""


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


FAST_INSTALLED = _installed("httptools") and _installed("uvloop")


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "stack_server.py"
    path.write_text(SERVER)
    return path


def _environment(stack: str | None, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("MCPGEN_HTTP_STACK", "MCPGEN_SAFE_MODE")}
    if stack is not None:
        env["MCPGEN_HTTP_STACK"] = stack
    return {**env, **extra}


def _command(server_file: Path, *, blocked: bool = False) -> list[str]:
    args = [str(server_file), "--transport", "http", "--port", "0", "--log-level", "debug"]  # the stack line: DEBUG
    if blocked:
        return [sys.executable, "-c", BLOCKED, *args]
    return [sys.executable, "-m", "mcpgen_runtime.server.runner", *args]


@contextmanager
def _serving(command: list[str], env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """The server's MCP URL and its ``HTTP stack:`` log line, for as long as it runs."""
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        stderr = StderrLines(process, timeout=WAIT)
        line = stderr.wait_for(r"HTTP stack: .*").group(0)
        url = stderr.wait_for(r"serving MCP on (\S+)").group(1)
        yield url, line
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _answer(response: httpx2.Response) -> Any:
    """The JSON-RPC answer of a POST, whether it came as JSON or as one SSE event."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


def _reported(answer: Any) -> dict[str, Any]:
    result = answer["result"]
    assert not result.get("isError"), result
    reported: dict[str, Any] = json.loads(result["content"][0]["text"])
    return reported


def _modern_call(client: httpx2.Client, url: str) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stack-test", "version": "1"},
    }
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "stack"}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "stack", "arguments": {}, "_meta": meta},
    }
    return _reported(_answer(client.post(url, json=call, headers=headers)))


def _legacy_call(client: httpx2.Client, url: str) -> dict[str, Any]:
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "stack-test", "version": "1"}}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    response = client.post(url, json=initialize, headers={"Accept": ACCEPT})
    assert _answer(response)["result"]["protocolVersion"] == LEGACY
    session = {"Accept": ACCEPT, "Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    initialized = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    assert initialized.status_code == 202, initialized.text
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "stack", "arguments": {}}}
    return _reported(_answer(client.post(url, json=call, headers=session)))


def _both_eras(url: str) -> list[dict[str, Any]]:
    with httpx2.Client(timeout=WAIT) as client:
        return [_modern_call(client, url), _legacy_call(client, url)]


@pytest.mark.skipif(not FAST_INSTALLED, reason="httptools and uvloop are not installed")
@pytest.mark.parametrize("stack", [None, "auto", "fast"])
def test_by_default_httptools_and_uvloop_serve(server_file: Path, stack: str | None) -> None:
    with _serving(_command(server_file), _environment(stack)) as (url, line):
        reports = _both_eras(url)
    assert f"uvicorn with httptools and uvloop (MCPGEN_HTTP_STACK={stack or 'auto'})" in line
    for report in reports:
        assert report["loop"] == "uvloop"
        # The coalescing protocol (coalesce.py) over httptools' own
        assert report["protocols"] == [["CoalescingHttpToolsProtocol", "HttpToolsProtocol"]]


@pytest.mark.skipif(not FAST_INSTALLED, reason="httptools and uvloop are not installed")
def test_safe_mode_serves_on_httptools_without_the_coalescing_wrapper(server_file: Path) -> None:
    with _serving(_command(server_file), _environment(None, MCPGEN_SAFE_MODE="1")) as (url, line):
        reports = _both_eras(url)
    assert "uvicorn with httptools and uvloop" in line
    assert all(report["protocols"] == [["HttpToolsProtocol", "HttpToolsProtocol"]] for report in reports)


def test_h11_forces_h11_and_asyncios_loop(server_file: Path) -> None:
    with _serving(_command(server_file), _environment("H11 ")) as (url, line):  # case and spaces do not matter
        reports = _both_eras(url)
    assert "uvicorn with h11 and asyncio (MCPGEN_HTTP_STACK=h11)" in line
    for report in reports:
        assert report["loop"] == "asyncio"
        assert report["protocols"] == [["CoalescingH11Protocol", "H11Protocol"]]


@pytest.mark.parametrize("stack", [None, "auto"])
def test_without_httptools_and_uvloop_h11_and_asyncio_serve(server_file: Path, stack: str | None) -> None:
    with _serving(_command(server_file, blocked=True), _environment(stack)) as (url, line):
        reports = _both_eras(url)
    assert "uvicorn with h11 and asyncio (MCPGEN_HTTP_STACK=auto)" in line
    for report in reports:
        assert report["loop"] == "asyncio"
        assert report["protocols"] == [["CoalescingH11Protocol", "H11Protocol"]]


def _refused(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: MCPGEN_HTTP_STACK"), done.stderr
    return lines[0]


def test_fast_without_httptools_and_uvloop_is_one_error_line_and_exit_2(server_file: Path) -> None:
    line = _refused(_command(server_file, blocked=True), _environment("fast"))
    assert "httptools and uvloop cannot be imported" in line


def test_an_unknown_stack_is_one_error_line_and_exit_2(server_file: Path) -> None:
    line = _refused(_command(server_file), _environment("granian"))
    assert "'granian' is not one of: auto, fast, h11" in line


def test_the_choice_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving, "_imports", lambda module: True)
    assert http_stack({}) == http_stack({"MCPGEN_HTTP_STACK": " "}) == HTTPStack("auto", "httptools", "uvloop")
    assert http_stack({"MCPGEN_HTTP_STACK": "Fast"}) == HTTPStack("fast", "httptools", "uvloop")
    assert http_stack({"MCPGEN_HTTP_STACK": "h11"}) == HTTPStack("h11", "h11", "asyncio")
    assert loop_options(HTTPStack("auto", "httptools", "uvloop"))["backend_options"] == {"use_uvloop": True}
    assert loop_options(HTTPStack("h11", "h11", "asyncio"))["backend_options"] == {"use_uvloop": False}
    monkeypatch.setattr(serving, "_imports", lambda module: module != "uvloop")
    assert http_stack({}) == HTTPStack("auto", "httptools", "asyncio")  # each part falls back on its own
    with pytest.raises(ValueError, match=r"^MCPGEN_HTTP_STACK=fast: uvloop cannot be imported"):
        http_stack({"MCPGEN_HTTP_STACK": "fast"})
    monkeypatch.setattr(serving, "_uvloop_installs", lambda: False)  # Windows, PyPy: fast is httptools alone
    assert http_stack({"MCPGEN_HTTP_STACK": "fast"}) == HTTPStack("fast", "httptools", "asyncio")
    with pytest.raises(ValueError, match=r"^MCPGEN_HTTP_STACK: 'uvloop' is not one of: auto, fast, h11$"):
        http_stack({"MCPGEN_HTTP_STACK": "uvloop"})
