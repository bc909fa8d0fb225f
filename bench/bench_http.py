"""Streamable HTTP `tools/call` under load: our server versus an official `mcp==2.3.0` server with the same tool.

Both servers run as their own processes (bench/servers/*_add_http_server.py: uvicorn, one worker, 127.0.0.1, a free
port), each started twice, once answering with JSON bodies and once with SSE streams (`json_response` on both
sides), and all four are stopped at the end. For each cell (answer mode x connections) a session is initialized
from Python first (`initialize`, then `notifications/initialized`, then one checked `tools/call`), and then the load
generator POSTs `tools/call add` on keep-alive connections for `--duration` seconds after a `--warmup`, each
connection with one request in flight (closed loop), all requests in that one session. The two servers are
measured back to back for every cell, so both see the same machine load.

The load generator is wrk (Debian package `wrk`) with a Lua script that sets the headers (Content-Type, Accept,
Mcp-Session-Id, MCP-Protocol-Version) and gives every request its own JSON-RPC id. Without wrk a Python driver
(asyncio, raw HTTP/1.1) does the same, slower and sharing the CPU with the servers, and the output says so.

Reported: requests per second, p50 and p99 latency (wrk's, or the driver's), and ours/SDK. Targets (the issue
"Streamable HTTP that holds up"): >= 2x the SDK's req/s on 1 connection and >= 1.5x on 16, p99 no worse.

Run: .venv/bin/python bench/bench_http.py [--duration S] [--warmup S] [--repeat N] [--connections 1,16]
     [--driver auto|wrk|python] [--json PATH]
With --repeat N every cell is measured N times (the two servers alternating who goes first) and medians reported.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from _common import ROOT, banner, post_mcp, table, verdict, write_summary, wrk_tools_call_script

SERVERS = {
    "mcpgen": ROOT / "bench" / "servers" / "mcpgen_add_http_server.py",
    "mcp 2.3.0": ROOT / "bench" / "servers" / "sdk_add_http_server.py",
}
OURS, THEIRS = "mcpgen", "mcp 2.3.0"
MODES = ("json", "sse")
TARGETS = {1: 2.0, 16: 1.5}  # connections -> required req/s ratio; other connection counts use the 16 target
PROTOCOL_VERSION = "2025-11-25"
HOST = "127.0.0.1"
ACCEPT = "application/json, text/event-stream"


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
        ordered = sorted(cells, key=lambda cell: cell.rps)
        middle = ordered[len(ordered) // 2]
        p50 = statistics.median(cell.p50_ms for cell in cells)
        p99 = statistics.median(cell.p99_ms for cell in cells)
        return cls(middle.requests, middle.seconds, p50, p99, sum(cell.errors for cell in cells))


# -- servers -------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@contextmanager
def server_process(script: Path, json_response: bool) -> Iterator[int]:
    """Start a benchmark server on a free port; yields the port once it accepts connections; always stopped."""
    port = free_port()
    command = [sys.executable, str(script), "--port", str(port), *(["--json-response"] if json_response else [])]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{script.name} exited with {process.returncode} before accepting connections")
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{script.name} did not accept connections within 30 s") from None
                time.sleep(0.05)
        yield port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


# -- the session, set up from Python -------------------------------------------------------------------------------


def open_session(port: int) -> dict[str, str]:
    """initialize + notifications/initialized + one checked tools/call; the headers every later request needs."""
    params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    status, headers, answer = post_mcp(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, {})
    if status != 200 or "mcp-session-id" not in headers or "result" not in (answer or {}):
        raise RuntimeError(f"initialize failed: HTTP {status} {answer}")
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": answer["result"]["protocolVersion"]}
    status, _, _ = post_mcp(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status != 202:
        raise RuntimeError(f"notifications/initialized answered HTTP {status}")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    status, _, answer = post_mcp(port, call, session)
    if status != 200 or answer["result"]["content"][0]["text"] != "3":
        raise RuntimeError(f"tools/call add(1, 2) answered HTTP {status}: {answer}")
    return session


# -- load generators -----------------------------------------------------------------------------------------------


def run_wrk(wrk: str, port: int, session: dict[str, str], connections: int, seconds: float) -> Cell:
    script = wrk_tools_call_script(ACCEPT, session)
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


def _request_bytes(port: int, session: dict[str, str], request_id: int) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
    ).encode()
    head = f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\nAccept: {ACCEPT}\r\n"
    head += "".join(f"{key}: {value}\r\n" for key, value in session.items())
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


async def _python_load(port: int, session: dict[str, str], connections: int, seconds: float) -> Cell:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(2, 1 << 62))

    async def connection(deadline: float) -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            while time.perf_counter() < deadline:
                request = _request_bytes(port, session, next(counter))
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
    ordered = sorted(latencies)
    pick = lambda fraction: ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000  # noqa: E731
    return Cell(len(latencies), elapsed, pick(0.5), pick(0.99), errors)


def run_python(port: int, session: dict[str, str], connections: int, seconds: float) -> Cell:
    return asyncio.run(_python_load(port, session, connections, seconds))


# -- main ----------------------------------------------------------------------------------------------------------


def nodelay_note() -> str:
    """Whether mcpgen's listening socket is created with IPPROTO_TCP (asyncio then sets TCP_NODELAY on accepted
    connections); another change under way, reported so that each run says which server it measured."""
    try:
        from mcpgen_runtime.transports.http.server import app as http_server

        source = inspect.getsource(inspect.getmodule(http_server.serve_app))  # type: ignore[arg-type]
    except (ImportError, OSError, TypeError):
        return "unknown"
    return "yes" if "IPPROTO_TCP" in source else "no (accepted connections keep Nagle's algorithm)"


def uvicorn_note() -> str:
    """The HTTP parser both servers get (uvicorn's default: httptools when installed, else h11) and the uvicorn
    options mcpgen's run_http sets beyond both servers' log level warning."""
    import importlib.util

    parser = "httptools" if importlib.util.find_spec("httptools") else "h11 (httptools is not installed)"
    try:
        from mcpgen_runtime.transports.http.server import serving as http_uvicorn

        source = inspect.getsource(http_uvicorn)
    except (ImportError, OSError):
        return f"HTTP parser, both servers: {parser}"
    access = "off (access_log=False)" if "access_log=False" in source else "uvicorn's default"
    return f"HTTP parser, both servers: {parser}; mcpgen's uvicorn access log: {access}, the SDK's: uvicorn's default"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per cell and server")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of untimed load before each")
    parser.add_argument("--connections", default="1,16", help="comma-separated connection counts")
    parser.add_argument("--driver", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell and server; medians are reported")
    options, _ = parser.parse_known_args()  # run_all.py passes every benchmark's options to all of them
    conns = [int(n) for n in options.connections.split(",")]
    wrk = shutil.which("wrk") if options.driver != "python" else None
    if options.driver == "wrk" and wrk is None:
        sys.exit("bench_http: --driver wrk, but wrk is not on PATH (Debian: apt-get install wrk)")
    driver = f"wrk ({wrk})" if wrk else "Python driver (asyncio, raw HTTP/1.1)"
    banner(f"bench_http: tools/call over streamable HTTP, keep-alive, {options.duration:g} s per cell, {driver}")
    if wrk is None:
        why = "--driver python" if options.driver == "python" else "wrk not found (apt-get install wrk)"
        print(f"NOTE: {why}, so the Python driver generates the load: it takes CPU from the servers on this")
        print("machine, so absolute numbers differ from wrk's and the ratios are less reliable.")
    print(f"mcpgen listening socket created with IPPROTO_TCP (TCP_NODELAY fix): {nodelay_note()}")
    print(uvicorn_note())

    def measure(port: int, connections: int) -> Cell:
        session = open_session(port)
        if options.warmup > 0:
            load(port, session, connections, options.warmup)
        return load(port, session, connections, options.duration)

    def load(port: int, session: dict[str, str], connections: int, seconds: float) -> Cell:
        return (
            run_wrk(wrk, port, session, connections, seconds)
            if wrk
            else run_python(port, session, connections, seconds)
        )

    runs: dict[tuple[str, int, str], list[Cell]] = {}
    with ExitStack() as stack:
        ports = {
            (label, mode): stack.enter_context(server_process(script, json_response=mode == "json"))
            for label, script in SERVERS.items()
            for mode in MODES
        }
        for repeat in range(options.repeat):
            # Back to back, so that both see the same load; who goes first alternates between repetitions.
            order = list(SERVERS) if repeat % 2 == 0 else list(reversed(SERVERS))
            for mode in MODES:
                for connections in conns:
                    for label in order:
                        cell = measure(ports[(label, mode)], connections)
                        runs.setdefault((mode, connections, label), []).append(cell)
    cells = {key: Cell.median(found) for key, found in runs.items()}

    rows = []
    for (mode, connections, label), cell in cells.items():
        errors = f"  ({cell.errors} errors)" if cell.errors else ""
        spread = [
            f"{min(c.rps for c in runs[(mode, connections, label)]):,.0f}..{max(c.rps for c in runs[(mode, connections, label)]):,.0f}"
        ]
        rows.append(
            [
                mode,
                connections,
                label,
                f"{cell.rps:,.0f}{errors}",
                *spread * (options.repeat > 1),
                f"{cell.p50_ms:.2f}",
                f"{cell.p99_ms:.2f}",
            ]
        )
    print()
    repeats = f"medians of {options.repeat} runs" if options.repeat > 1 else "one run each"
    headers = ["answers", "conns", "server", "req/s", *["min..max"] * (options.repeat > 1), "p50 ms", "p99 ms"]
    print(f"({repeats} of {options.duration:g} s)")
    print(table(headers, rows))

    summary: dict[str, object] = {
        "driver": "wrk" if wrk else "python",
        "duration_s": options.duration,
        "repeat": options.repeat,
        "cells": [],
    }
    ratio_rows, all_met = [], True
    for mode in MODES:
        for connections in conns:
            ours, theirs = cells[(mode, connections, OURS)], cells[(mode, connections, THEIRS)]
            ratio, p99 = ours.rps / theirs.rps, ours.p99_ms / theirs.p99_ms
            target = TARGETS.get(connections, TARGETS[16])
            met = ratio >= target and p99 <= 1.0 and ours.errors == 0 and theirs.errors == 0
            all_met &= met
            ratio_rows.append(
                [mode, connections, f"{ratio:.2f}x", f"{p99:.2f}", f">={target:g}x, p99 no worse", verdict(met)]
            )
            summary["cells"].append(  # type: ignore[attr-defined]
                {
                    "mode": mode,
                    "connections": connections,
                    "ratio": ratio,
                    "p99_ratio": p99,
                    "target": target,
                    "met": met,
                    "ours": vars(ours) | {"rps": ours.rps},
                    "theirs": vars(theirs) | {"rps": theirs.rps},
                }
            )
    print()
    print(table(["answers", "conns", "req/s ours/SDK", "p99 ours/SDK", "target", "result"], ratio_rows))
    summary["met"] = all_met
    write_summary(sys.argv, summary)


if __name__ == "__main__":
    main()
