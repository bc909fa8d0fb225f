"""Which HTTP server stack serves fastest: uvicorn on h11 + asyncio, uvicorn on httptools + uvloop, and granian.

    .venv/bin/python bench/bench_stacks.py [--seconds 5] [--only bare|mcpgen] [--granian-task-impl asyncio|rust]

Two apps, each in a server process of its own, loaded by wrk (one thread, 1 and 16 keep-alive connections, a
``tools/call add`` body with a fresh id per request):

- ``bare``: the reference ceiling, a bare ASGI app that reads the body, parses the JSON and answers a
  ``tools/call``-like result with Content-Length; on granian also as an RSGI app (granian's own interface).
- ``mcpgen``: a ``Server`` with the ``add`` tool, JSON answers, both eras: modern (the 2026-07-28 headers and
  ``_meta`` in every request) and legacy (one session, opened with ``initialize`` first). On uvicorn it runs as users
  run it (``server.run_http``, ``MCPGEN_HTTP_STACK=h11|fast``: the coalescing protocol included); on granian its
  ASGI app (``server.asgi_app()``, an ``MCPApp``, which runs the server's lifespan from the ASGI lifespan).

granian runs 1 worker, 1 runtime thread (st mode), uvloop, no websockets, HTTP/1 only (``--task-impl rust`` was
slower still on 1 connection: bare ASGI 4,919 req/s against 10,006). Prints one table and the ratios to uvicorn
httptools+uvloop. Nothing here asserts: it informs the choice of a default stack (see
``transports/http/server/serving.py``).

The decision (2026-11-27, 2 CPUs, load average ~2.7, 4 s per cell; req/s, ratio to uvicorn httptools+uvloop):

    cell                 uvicorn h11+asyncio  uvicorn httptools+uvloop  granian ASGI     granian RSGI
    bare, 1 conn         6,803 (0.32x)        21,231                    8,389 (0.40x)    9,112 (0.43x)
    bare, 16 conns       8,265 (0.36x)        22,999                    15,085 (0.66x)   20,071 (0.87x)
    mcpgen modern, 1     4,946 (0.75x)        6,611                     3,832 (0.58x)
    mcpgen modern, 16    5,343 (0.51x)        10,391                    6,908 (0.66x)
    mcpgen legacy, 1     5,681 (0.50x)        11,303                    6,054 (0.54x)
    mcpgen legacy, 16    6,185 (0.53x)        11,573                    8,628 (0.75x)

granian is slower than uvicorn on httptools+uvloop in every cell (its RSGI interface too, for the bare app), so it
is not offered: httptools+uvloop on uvicorn is the default, and granian's features (SSE, disconnect detection,
lifespan, graceful shutdown) were not worth checking for a stack that brings no speed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "servers"))

import bare_asgi_server  # noqa: E402
from _common import banner, post_mcp, table, wrk_tools_call_script  # noqa: E402

MODERN = "2026-07-28"
LEGACY = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "add"}
CONNECTIONS = (1, 16)


# -- the apps (imported by the server processes: `python bench_stacks.py --serve ...` and granian) -------------------


# The bare ASGI app is bench_http's reference (bench/servers/bare_asgi_server.py: parse the request, answer a fixed
# tools/call result, JSON by default): the same app measured on every stack.
bare_app = bare_asgi_server.app


class BareRSGI:
    """The bare app on granian's RSGI interface."""

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        request = json.loads(await protocol())
        result = {"content": [{"type": "text", "text": "3"}], "isError": False}
        out = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        protocol.response_bytes(200, [("content-type", "application/json")], out)


bare_rsgi = BareRSGI()


def mcpgen_server() -> Any:
    from mcpgen_runtime.server import Server

    server = Server("bench-stacks", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    return server


def mcpgen_asgi() -> Any:
    """granian's target (``--factory``): the server's ASGI app, JSON answers, any Host (granian binds 127.0.0.1)."""
    return mcpgen_server().asgi_app(json_response=True)


# -- the server processes ---------------------------------------------------------------------------------------------


def _uvicorn_bare(port: int, stack: str) -> None:
    import uvicorn

    loop, http = ("uvloop", "httptools") if stack == "fast" else ("asyncio", "h11")
    uvicorn.run(bare_app, host="127.0.0.1", port=port, log_level="warning", access_log=False, loop=loop, http=http)


def _uvicorn_mcpgen(port: int, stack: str) -> None:
    os.environ["MCPGEN_HTTP_STACK"] = stack  # run_http picks parser and loop from it (serving.py)
    try:
        mcpgen_server().run_http("127.0.0.1", port, json_response=True, log_level="warning")
    except KeyboardInterrupt:
        pass


def _command(app: str, server: str, port: int, task_impl: str) -> list[str]:
    if server.startswith("uvicorn"):
        return [sys.executable, __file__, "--serve", app, server.split("-", 1)[1], str(port)]
    interface, target = {
        "bare": ("asgi", "bench_stacks:bare_app"),
        "bare-rsgi": ("rsgi", "bench_stacks:bare_rsgi"),
        "mcpgen": ("asgi", "bench_stacks:mcpgen_asgi"),
    }[app if server != "granian-rsgi" else "bare-rsgi"]
    granian = shutil.which("granian", path=str(Path(sys.executable).parent)) or "granian"
    command = [granian, "--interface", interface, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    command += ["--runtime-threads", "1", "--runtime-mode", "st", "--loop", "uvloop", "--task-impl", task_impl]
    command += ["--no-ws", "--http", "1", "--log-level", "warning", "--working-dir", str(HERE)]
    if app == "mcpgen":
        command.append("--factory")
    return [*command, target]


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _running(command: list[str], port: int) -> Iterator[None]:
    import socket

    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command} did not serve: {process.communicate()[1].decode()}") from None
                time.sleep(0.1)
        yield
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _open_session(port: int) -> dict[str, str]:
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    status, headers, answer = post_mcp(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, {})
    if status != 200 or "mcp-session-id" not in headers:
        raise RuntimeError(f"initialize failed: HTTP {status} {answer}")
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    post_mcp(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def _check(port: int, headers: dict[str, str], meta: dict[str, Any] | None) -> None:
    params: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    if meta is not None:
        params["_meta"] = meta
    status, _, answer = post_mcp(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers)
    if status != 200 or answer["result"]["content"][0]["text"] != "3":
        raise RuntimeError(f"tools/call add(1, 2) answered HTTP {status}: {answer}")


def _wrk(port: int, headers: dict[str, str], meta: str, connections: int, seconds: int) -> tuple[float, float]:
    """(requests per second, p99 in ms)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(wrk_tools_call_script(ACCEPT, headers, meta))
    try:
        command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", handle.name]
        done = subprocess.run([*command, f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True, check=True)
    finally:
        os.unlink(handle.name)
    line = next(line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT"))
    requests, duration, _, p99, errors = map(int, line.split()[1:])
    if errors:
        raise RuntimeError(f"wrk saw {errors} errors: {done.stdout}")
    return requests / (duration / 1e6), p99 / 1000


def measure(app: str, server: str, seconds: int, task_impl: str) -> dict[tuple[str, int], tuple[float, float]]:
    """{(era, connections): (req/s, p99 ms)} of one app on one server."""
    port = _free_port()
    cells: dict[tuple[str, int], tuple[float, float]] = {}
    with _running(_command(app, server, port, task_impl), port):
        eras: list[tuple[str, dict[str, str], str]] = []
        if app == "bare":
            eras.append(("-", {}, ""))
        else:
            _check(port, MODERN_HEADERS, META)
            eras.append(("modern", MODERN_HEADERS, ',"_meta":' + json.dumps(META, separators=(",", ":"))))
            session = _open_session(port)
            _check(port, session, None)
            eras.append(("legacy", session, ""))
        for era, headers, meta in eras:
            for connections in CONNECTIONS:
                _wrk(port, headers, meta, connections, 1)  # warm-up
                cells[era, connections] = _wrk(port, headers, meta, connections, seconds)
    return cells


def main(argv: list[str]) -> None:
    if argv[:1] == ["--serve"]:
        app, stack, port = argv[1], argv[2], int(argv[3])
        (_uvicorn_bare if app == "bare" else _uvicorn_mcpgen)(port, stack)
        return
    seconds = int(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 5
    task_impl = argv[argv.index("--granian-task-impl") + 1] if "--granian-task-impl" in argv else "asyncio"
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    banner("HTTP server stacks: uvicorn h11+asyncio, uvicorn httptools+uvloop, granian (wrk -t1, keep-alive)")
    plans = [
        ("bare", ["uvicorn-h11", "uvicorn-fast", "granian", "granian-rsgi"]),
        ("mcpgen", ["uvicorn-h11", "uvicorn-fast", "granian"]),
    ]
    rows = []
    for app, servers in plans:
        if only not in (None, app):
            continue
        results = {server: measure(app, server, seconds, task_impl) for server in servers}
        for (era, connections), (reference, _) in results["uvicorn-fast"].items():
            for server in servers:
                rate, p99 = results[server][era, connections]
                rows.append([app, era, connections, server, f"{rate:,.0f}", f"{p99:.2f}", f"{rate / reference:.2f}x"])
    print(table(["app", "era", "conns", "server", "req/s", "p99 ms", "vs uvicorn-fast"], rows))
    print(f"granian: --task-impl {task_impl}, --loop uvloop, --runtime-mode st, 1 worker, 1 runtime thread")


if __name__ == "__main__":
    main(sys.argv[1:])
