"""How a scaled-out server is started and refused: the runner's --workers/--redis with bad values exits 2 with one
error line (no traceback, no worker started), and the official SDK client works against 3 workers with no
session affinity."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client as SDKClient
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CreateMessageResult, TextContent
from scale_support import SERVER, Client, ScaledServer, free_port


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "3"], "error: 3 workers need a shared Redis: give --redis URL (or MCPGEN_REDIS_URL)"),
        (["--workers", "0"], "error: workers (MCPGEN_WORKERS) must be at least 1, not 0"),
        (["--redis", "nosuch://x"], "error: --redis nosuch://x: not a Redis URL"),
        (["--workers", "2", "--redis", "redis://127.0.0.1:{port}/0"], "error: --redis redis://127.0.0.1:{port}/0: "),
    ],
    ids=["workers-without-redis", "no-workers", "bad-url", "unreachable"],
)
def test_bad_scale_out_flags_exit_2_with_one_line(flags: list[str], message: str) -> None:
    port = str(free_port())  # nothing listens there
    flags = [flag.replace("{port}", port) for flag in flags]
    command = [sys.executable, "-m", "mcpgen_runtime.server.runner", str(SERVER), "--transport", "http", *flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message.replace("{port}", port)), done.stderr


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_the_official_sdk_client_over_three_workers(scaled: ScaledServer) -> None:
    """mcp 2.3.0's Client (legacy mode: sessions) through a transport that opens a connection per request."""
    pids: set[int] = set()
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params.level)

    async def on_sampling(context: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="yes"), model="m")

    http = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=10)
    transport = streamable_http_client(scaled.url, http_client=http)
    with anyio.fail_after(60):
        async with (
            http,
            SDKClient(
                transport,
                mode="legacy",
                logging_callback=on_log,
                sampling_callback=on_sampling,
                read_timeout_seconds=10,
            ) as client,
        ):
            assert client.protocol_version == "2025-11-25"
            for _ in range(9):
                called = await client.call_tool("whoami", {})
                pids.add(int(called.content[0].text))  # type: ignore[union-attr]
            await client.set_logging_level("error")
            await client.call_tool("log_levels", {})
            asked = await client.call_tool("ask", {"question": "ok?"})
            assert asked.content[0].text.endswith(":yes")  # type: ignore[union-attr]
    assert len(pids) > 1 and pids <= set(scaled.workers())
    assert logs == ["error"]


def test_the_documented_uvicorn_command_line(redis_url: str) -> None:
    """MCPGEN_TARGET=server.py MCPGEN_REDIS_URL=... uvicorn --factory mcpgen_runtime.server.runner:create_app
    --workers 2: uvicorn's own workers (spawned, each calling the factory) share the sessions."""
    port = free_port()
    environment = {
        **os.environ,
        "MCPGEN_TARGET": str(SERVER),
        "MCPGEN_REDIS_URL": redis_url,
        "MCPGEN_REDIS_PREFIX": f"u{port}",
        "MCPGEN_REQUEST_STATE_KEY": "a shared key of at least 32 bytes, for every worker",
    }
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "mcpgen_runtime.server.runner:create_app",
        "--workers",
        "2",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        client = Client(url)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.initialize()
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline and process.poll() is None, "uvicorn did not start"
                time.sleep(0.1)
        assert all(isinstance(client.call("whoami"), int) for _ in range(6))
        assert httpx2.delete(url, headers=client.headers(), timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, errors = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate()
    assert "Traceback" not in errors, errors
