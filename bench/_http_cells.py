"""The parts of bench_http.py that run one cell: the server processes, the requests of each era (set up and checked
from Python before the load), and the load generators (wrk, or a Python driver).

A cell is one server under one workload (era x answer mode x connections) for some seconds. Workloads:

- legacy (2025-11-25): a session initialized from Python first (initialize, notifications/initialized), then
  `tools/call add` with its Mcp-Session-Id; answers JSON or SSE as the server is configured (`json_response`).
- modern JSON (2026-07-28): no initialize, no session; every request carries `_meta` (protocolVersion,
  clientCapabilities, clientInfo) and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers; `tools/call add`.
- modern SSE: the same, calling `add_progress` with a `progressToken` in `_meta`: the tool sends one progress
  notification and then answers, so the answer is an SSE stream (progress event, then the result) on both servers.

Before the load every workload's request is sent once to the cell's server (the floor's too) and its answer checked
(status, content type, the sum, and for modern SSE the progress event), so a cell never measures errors or the wrong
kind of answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, post_mcp_messages, wrk_tools_call_script

HOST = "127.0.0.1"
ACCEPT = "application/json, text/event-stream"
LEGACY, MODERN = "2025-11-25", "2026-07-28"
SERVER_DIR = ROOT / "bench" / "servers"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
PROGRESS_TOKEN = "bench"


@dataclass
class Cell:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @classmethod
    def median(cls, cells: list[Cell]) -> Cell:
        """The run with the median req/s, with the medians of the latencies and the errors of all runs."""
        middle = sorted(cells, key=lambda cell: cell.rps)[len(cells) // 2]
        p50 = statistics.median(cell.p50_ms for cell in cells)
        p99 = statistics.median(cell.p99_ms for cell in cells)
        return cls(middle.requests, middle.seconds, p50, p99, sum(cell.errors for cell in cells))


@dataclass(frozen=True)
class Workload:
    """What every request of a cell is: the tool, the extra headers, the `_meta` spliced into the params."""

    era: str
    mode: str  # "json" or "sse": the answer the check expects
    tool: str
    headers: dict[str, str]
    meta: dict[str, Any] | None

    @property
    def meta_json(self) -> str:
        return "" if self.meta is None else ',"_meta":' + json.dumps(self.meta, separators=(",", ":"))

    def body(self, request_id: int, a: int = 1, b: int = 2) -> dict[str, Any]:
        params: dict[str, Any] = {"name": self.tool, "arguments": {"a": a, "b": b}}
        if self.meta is not None:
            params["_meta"] = self.meta
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# -- servers -------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class Served:
    port: int
    stack_line: str  # the server's own `STACK ...` line: the loop and HTTP protocol it really runs on


@contextmanager
def server_process(script: Path, json_response: bool, stack: str) -> Iterator[Served]:
    """Start a benchmark server on a free port with ``--stack``; yields once it accepts connections and has printed
    its STACK line (stderr, kept in a file; shown if it fails); always stopped."""
    port = free_port()
    command = [sys.executable, str(script), "--port", str(port), "--stack", stack]
    command += ["--json-response"] if json_response else []
    with tempfile.TemporaryFile("w+") as errors:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)

        def fail(why: str) -> RuntimeError:
            errors.seek(0)
            return RuntimeError(f"{script.name} {why}; its stderr:\n{errors.read()[-3000:]}")

        try:
            deadline, stack_line = time.monotonic() + 30, ""
            while not stack_line:
                if process.poll() is not None:
                    raise fail(f"exited with {process.returncode} before accepting connections")
                try:
                    socket.create_connection((HOST, port), timeout=1).close()
                    errors.seek(0)
                    stack_line = next((line for line in errors if line.startswith("STACK ")), "").strip()
                except OSError:
                    pass
                if not stack_line:
                    if time.monotonic() > deadline:
                        raise fail("did not accept connections (and print its STACK line) within 30 s")
                    time.sleep(0.05)
            yield Served(port, stack_line)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)


# -- the requests, set up and checked from Python ------------------------------------------------------------------


def post(port: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], list[Any]]:
    """One POST to /mcp on a fresh connection: (status, lower-cased headers, every JSON-RPC message answered)."""
    return post_mcp_messages(port, body, headers, host=HOST)


def open_session(port: int) -> dict[str, str]:
    """initialize + notifications/initialized (2025-11-25); the headers every later request of the session needs."""
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    status, headers, answer = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, {})
    if status != 200 or "mcp-session-id" not in headers or not answer or "result" not in answer[-1]:
        raise RuntimeError(f"initialize failed: HTTP {status} {answer}")
    session = {
        "Mcp-Session-Id": headers["mcp-session-id"],
        "MCP-Protocol-Version": answer[-1]["result"]["protocolVersion"],
    }
    status, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status != 202:
        raise RuntimeError(f"notifications/initialized answered HTTP {status}")
    return session


def workload(era: str, mode: str, port: int) -> Workload:
    """The workload of a cell on the server at ``port`` (a legacy one opens its session there), checked once."""
    if era == LEGACY:
        found = Workload(era, mode, "add", open_session(port), None)
    else:
        tool = "add_progress" if mode == "sse" else "add"
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool}
        meta = {**MODERN_META, "progressToken": PROGRESS_TOKEN} if mode == "sse" else MODERN_META
        found = Workload(era, mode, tool, headers, meta)
    check(port, found)
    return found


def check(port: int, load: Workload) -> None:
    """One request of ``load``: HTTP 200, the answer's content type, the sum 3, and for a modern SSE answer the
    progress notification (with our token) before the result."""
    status, headers, messages = post(port, load.body(1), load.headers)
    kind = headers.get("content-type", "")
    result = messages[-1].get("result", {}) if messages else {}
    text = (result.get("content") or [{}])[0].get("text")
    wanted = "text/event-stream" if load.mode == "sse" else "application/json"
    problems = [] if status == 200 else [f"HTTP {status}"]
    problems += [] if kind.startswith(wanted) else [f"content-type {kind!r}, not {wanted}"]
    problems += [] if text == "3" else [f"result text {text!r}, not '3'"]
    if load.era == MODERN and load.mode == "sse":
        progress = [m for m in messages[:-1] if m.get("method") == "notifications/progress"]
        if not progress or progress[0]["params"].get("progressToken") != PROGRESS_TOKEN:
            problems.append("no notifications/progress event with our token before the result")
    if problems:
        raise RuntimeError(f"{load.era} {load.mode} tools/call {load.tool}(1, 2): {'; '.join(problems)}: {messages}")


# -- load generators -----------------------------------------------------------------------------------------------


def run_wrk(wrk: str, port: int, load: Workload, connections: int, seconds: float) -> Cell:
    script = wrk_tools_call_script(ACCEPT, load.headers, load.meta_json, load.tool)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        # One wrk thread: the other core is the server's (a Python server uses one), and wrk needs little CPU.
        command = [wrk, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
        command += ["-s", handle.name, f"http://{HOST}:{port}/mcp"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=True)
    finally:
        os.unlink(handle.name)
    line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    requests, micros, p50, p99, errors = (int(field) for field in line.split()[1:])
    return Cell(requests, micros / 1e6, p50 / 1000, p99 / 1000, errors)


def _request_bytes(port: int, load: Workload, request_id: int) -> bytes:
    body = json.dumps(load.body(request_id)).encode()
    head = f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\nAccept: {ACCEPT}\r\n"
    head += "".join(f"{key}: {value}\r\n" for key, value in load.headers.items())
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one HTTP/1.1 response (Content-Length or chunked); its status."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    else:
        await reader.readexactly(int(headers.get("content-length", "0")))
    return status


async def _python_load(port: int, load: Workload, connections: int, seconds: float) -> Cell:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(2, 1 << 62))

    async def connection(deadline: float) -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while time.perf_counter() < deadline:
                request = _request_bytes(port, load, next(counter))
                started = time.perf_counter()
                writer.write(request)
                status = await _read_response(reader)
                latencies.append(time.perf_counter() - started)
                errors += status >= 400
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection(started + seconds) for _ in range(connections)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies) or [0.0]

    def pick(fraction: float) -> float:
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000

    return Cell(len(latencies), elapsed, pick(0.50), pick(0.99), errors)


def run_python(port: int, load: Workload, connections: int, seconds: float) -> Cell:
    return asyncio.run(_python_load(port, load, connections, seconds))
