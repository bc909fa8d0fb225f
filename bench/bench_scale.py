"""Scale-out: `tools/call` requests per second with 1, 2 and 4 workers sharing one Redis, in both protocol eras,
and what the Redis-backed session path adds to a request.

The server is bench/servers/mcpgen_add_http_server.py (one `add` tool) run the way docs/how-to/deploy.md shows:
`python -m mcpgen_runtime.server.runner FILE --transport http --port P [--workers N --redis URL]`, with
MCPGEN_REQUEST_STATE_KEY set. The benchmark starts its own `redis-server` (Debian package `redis-server`: a free
port, no persistence) and stops it, and every server process, at the end. Setups, each its own server process:

- `1 worker, memory`: no Redis, everything in the one process (the baseline, as `server.run_http()`);
- `N workers, redis`: N = 1, 2, 4 (`--workers`), sessions and their event streams in Redis, the 2026-07-28 change
  notifications through Redis pub/sub.

Eras: 2026-07-28 (stateless: every POST carries its `_meta` and the routing headers, no session) and 2025-11-25 (the
legacy era: a session initialized from Python first; with Redis every request looks the session up there, on
whichever worker it lands). The load generator is wrk (Debian package `wrk`, one thread) with a Lua script that sets
the headers and gives every request its own JSON-RPC id, on keep-alive connections (as a load balancer keeps them),
each connection with one request in flight; the kernel spreads the connections over the workers. Without wrk the
benchmark stops: a Python load generator would take the CPU the workers are being measured on.

Reported per cell: req/s, p50/p99 latency, the server's CPU time per request (all its processes, from /proc: less
noisy than req/s on a shared machine) and Redis's, the Redis commands per request (INFO commandstats), and the req/s
ratio to `1 worker, memory` of the same era and connection count, and the issue-22 target on 2026-07-28: 2 workers
>= 1.8x one worker (judged on more than one connection). Then the added latency of the Redis-backed path:
1 worker with Redis against 1 worker in memory, on 1 connection (p50 and CPU per request). Nothing here asserts on
time. On a 2-core machine expect the scaling to stop at 2 workers (the load generator and Redis need CPU too).

Run: .venv/bin/python bench/bench_scale.py [--duration S] [--warmup S] [--repeat N] [--connections 1,16]
     [--workers 1,2,4] [--json PATH]
With --repeat N every cell is measured N times (the setups in alternating order) and medians are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
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

from _common import ROOT, banner, post_mcp, table, verdict, write_summary, wrk_tools_call_script

SERVER_SCRIPT = ROOT / "bench" / "servers" / "mcpgen_add_http_server.py"
HOST = "127.0.0.1"
ACCEPT = "application/json, text/event-stream"
MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
SCALING_TARGET = 1.8  # issue 22: 2 workers >= 1.8x one worker, 2026-07-28
ERAS = (MODERN, HANDSHAKE)
START_TIMEOUT = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
MODERN_HEADERS = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "add"}


@dataclass(frozen=True)
class Setup:
    workers: int
    redis: bool

    @property
    def label(self) -> str:
        return f"{self.workers} worker{'s' * (self.workers > 1)}, {'redis' if self.redis else 'memory'}"


@dataclass
class Cell:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int
    server_cpu_s: float
    redis_cpu_s: float
    redis_commands: int = 0  # Redis commands run meanwhile (INFO commandstats, the INFO calls left out)
    load_cpu_s: float = 0.0  # wrk's own CPU (it shares the machine's cores with the workers)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def cpu_ms_per_request(self, cpu_s: float) -> float:
        return cpu_s * 1000 / self.requests if self.requests else float("nan")

    @classmethod
    def median(cls, cells: list[Cell]) -> Cell:
        """The run with the median req/s, with the medians of the latencies and CPU, and the errors of all runs."""
        middle = sorted(cells, key=lambda cell: cell.rps)[len(cells) // 2]
        scale = middle.requests  # CPU per request of every run, scaled to the median run's request count
        return cls(
            middle.requests,
            middle.seconds,
            statistics.median(cell.p50_ms for cell in cells),
            statistics.median(cell.p99_ms for cell in cells),
            sum(cell.errors for cell in cells),
            statistics.median(cell.server_cpu_s / cell.requests for cell in cells if cell.requests) * scale,
            statistics.median(cell.redis_cpu_s / cell.requests for cell in cells if cell.requests) * scale,
            round(statistics.median(cell.redis_commands / cell.requests for cell in cells if cell.requests) * scale),
            statistics.median(cell.load_cpu_s / cell.requests for cell in cells if cell.requests) * scale,
        )


# -- processes -------------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before accepting connections")
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not accept connections within {START_TIMEOUT:g} s") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT (a clean shutdown, workers included), then SIGKILL of its process group if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@contextmanager
def redis_server() -> Iterator[tuple[str, int]]:
    """A private redis-server (no persistence) on a free port: (its URL, its pid)."""
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("bench_scale: redis-server is not on PATH (Debian: apt-get install redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-scale-redis-") as directory:
        command = [binary, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"]
        command += ["--dir", directory, "--logfile", str(Path(directory) / "redis.log")]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for_port(port, process, "redis-server")
            yield f"redis://{HOST}:{port}/0", process.pid
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)


@contextmanager
def server_process(setup: Setup, redis_url: str, key: str) -> Iterator[tuple[int, int]]:
    """The benchmark server for ``setup`` on a free port: (port, pid of its main process); always stopped."""
    port = free_port()
    command = [sys.executable, "-m", "mcpgen_runtime.server.runner", str(SERVER_SCRIPT), "--transport", "http"]
    command += ["--port", str(port), "--log-level", "warning"]
    environment = {key: value for key, value in os.environ.items() if not key.startswith("MCPGEN_")}
    if setup.redis:
        command += ["--workers", str(setup.workers), "--redis", redis_url]
        environment["MCPGEN_REQUEST_STATE_KEY"] = key
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=environment, start_new_session=True
    )
    try:
        wait_for_port(port, process, setup.label)
        yield port, process.pid
    finally:
        stop(process)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and every live descendant (the workers), from /proc."""
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def redis_commands(url: str) -> int:
    """Commands Redis has run so far (INFO commandstats; the INFO commands themselves not counted)."""
    import redis  # the runtime's `redis` extra (dev installs it)

    client = redis.Redis.from_url(url)
    try:
        stats: dict[str, Any] = client.info("commandstats")
    finally:
        client.close()
    return sum(int(value["calls"]) for name, value in stats.items() if name != "cmdstat_info")


# -- the requests, checked from Python first ----------------------------------------------------------------------


def request_headers(era: str, port: int) -> dict[str, str]:
    """The headers every request of ``era`` needs (the legacy era: a session opened here), after one checked call."""
    arguments = {"name": "add", "arguments": {"a": 1, "b": 2}}
    if era == MODERN:
        headers = dict(MODERN_HEADERS)
        arguments["_meta"] = MODERN_META
    else:
        params = {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        status, answer_headers, answer = post_mcp(
            port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, {}
        )
        if status != 200 or "mcp-session-id" not in answer_headers or "result" not in (answer or {}):
            raise RuntimeError(f"initialize failed: HTTP {status} {answer}")
        headers = {"Mcp-Session-Id": answer_headers["mcp-session-id"], "MCP-Protocol-Version": era}
        status, _, _ = post_mcp(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        if status != 202:
            raise RuntimeError(f"notifications/initialized answered HTTP {status}")
    for attempt in range(8):  # new connections: with several workers, several of them answer
        call = {"jsonrpc": "2.0", "id": 1 + attempt, "method": "tools/call", "params": arguments}
        status, _, answer = post_mcp(port, call, headers)
        if status != 200 or (answer or {}).get("result", {}).get("content", [{}])[0].get("text") != "3":
            raise RuntimeError(f"{era} tools/call add(1, 2) answered HTTP {status}: {answer}")
    return headers


def run_wrk(wrk: str, port: int, era: str, headers: dict[str, str], connections: int, seconds: float) -> Cell:
    meta = ',"_meta":' + json.dumps(MODERN_META, separators=(",", ":")) if era == MODERN else ""
    script = wrk_tools_call_script(ACCEPT, headers, meta)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)
    try:
        command = [wrk, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
        command += ["-s", handle.name, f"http://{HOST}:{port}/mcp"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk is the only child waited for meanwhile
        done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        os.unlink(handle.name)
    line = next((line for line in done.stdout.splitlines() if line.startswith("BENCH_RESULT")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    requests, micros, p50, p99, errors = (int(field) for field in line.split()[1:])
    load_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Cell(requests, micros / 1e6, p50 / 1000, p99 / 1000, errors, 0.0, 0.0, load_cpu_s=load_cpu)


# -- the target -----------------------------------------------------------------------------------------------------


def scaling_targets(
    cells: dict[tuple[str, str, int], Cell], conns: list[int], setups: list[Setup]
) -> list[dict[str, Any]]:
    """Issue 22: on 2026-07-28, 2 workers (Redis) >= 1.8x the req/s of one worker (in memory, the baseline the table
    divides by; the 1-worker Redis setup shown too when measured). One connection keeps one request in flight, so
    only one worker can be busy: those rows are shown, not judged. Printed and returned for the JSON summary."""
    two, one_redis, memory = Setup(2, True).label, Setup(1, True).label, setups[0].label
    rows, targets = [], []
    for connections in conns:
        if (MODERN, two, connections) not in cells:
            continue
        cell, base = cells[(MODERN, two, connections)], cells[(MODERN, memory, connections)]
        redis = cells.get((MODERN, one_redis, connections))
        judged = connections > 1
        met = judged and cell.rps / base.rps >= SCALING_TARGET and cell.errors == 0
        result = verdict(met) if judged else "- (1 request in flight: 1 worker busy)"
        vs_redis = f"{cell.rps / redis.rps:.2f}x" if redis else "-"
        # What this machine's cores can give at all: every core busy with one request's CPU (the two workers', wrk's
        # and Redis's, per request, as measured in the 2-worker run), over one worker's req/s.
        per_request = (cell.server_cpu_s + cell.redis_cpu_s + cell.load_cpu_s) / cell.requests if cell.requests else 0
        ceiling = (os.cpu_count() or 1) / per_request / base.rps if per_request else float("inf")
        rows.append([connections, f"{cell.rps:,.0f}", f"{base.rps:,.0f}", f"{cell.rps / base.rps:.2f}x", vs_redis])
        rows[-1] += [f"{cell.cpu_ms_per_request(cell.load_cpu_s):.3f}", f"{ceiling:.2f}x"]
        rows[-1] += [f">={SCALING_TARGET:g}x", result]
        targets.append(
            {
                "name": f"scale-out {MODERN}, 2 workers / 1, {connections} conn",
                "numbers": f"{cell.rps:,.0f} vs {base.rps:,.0f} req/s",
                "measured": f"{cell.rps / base.rps:.2f}x",
                "target": f">={SCALING_TARGET:g}x",
                "met": met,
                "judged": judged,
                "ceiling": ceiling,
                "note": "" if ceiling >= SCALING_TARGET else f"the cores allow {ceiling:.2f}x: target above the limit",
            }
        )
    if rows:
        print()
        print(f"Target (issue 22): {MODERN}, 2 workers >= {SCALING_TARGET:g}x one worker ({os.cpu_count()} CPUs here):")
        header = ["conns", "2 workers req/s", "1 worker (memory)", "ratio", "vs 1 worker (redis)", "wrk CPU ms/req"]
        print(table([*header, "cores allow", "target", "result"], rows))
        print(
            f"('cores allow': {os.cpu_count()} CPUs / (workers' + Redis's + wrk's CPU per request), over one worker's"
            " req/s: the most any server could scale on this machine, with wrk and Redis on the same cores)"
        )
    return targets


# -- main ------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per cell")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of untimed load before each")
    parser.add_argument("--connections", default="1,16", help="comma-separated connection counts")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts (with Redis)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; medians are reported")
    options, _ = parser.parse_known_args()  # run_all.py passes every benchmark's options to all of them
    conns = [int(n) for n in options.connections.split(",")]
    setups = [Setup(1, False), *(Setup(int(n), True) for n in options.workers.split(","))]
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("bench_scale: wrk is not on PATH (Debian: apt-get install wrk)")
    banner(f"bench_scale: tools/call over streamable HTTP with N workers and Redis, {options.duration:g} s per cell")
    print(f"load: wrk, one thread, keep-alive connections, one request in flight each; {os.cpu_count()} CPUs shared")
    print("by the workers, Redis and wrk (and whatever else runs on the machine).")

    runs: dict[tuple[str, str, int], list[Cell]] = {}
    with redis_server() as (redis_url, redis_pid):
        key = secrets.token_hex(32)
        for repeat in range(options.repeat):
            order = setups if repeat % 2 == 0 else list(reversed(setups))
            for setup in order:
                with server_process(setup, redis_url, key) as (port, pid):
                    for era in ERAS:
                        headers = request_headers(era, port)
                        for connections in conns:
                            if options.warmup > 0:
                                run_wrk(wrk, port, era, headers, connections, options.warmup)
                            server_before, redis_before = cpu_seconds(pid), cpu_seconds(redis_pid)
                            commands_before = redis_commands(redis_url)
                            cell = run_wrk(wrk, port, era, headers, connections, options.duration)
                            cell.server_cpu_s = cpu_seconds(pid) - server_before
                            cell.redis_cpu_s = cpu_seconds(redis_pid) - redis_before
                            # (the other workers' heartbeats and subscriptions are in it too: a handful per second)
                            cell.redis_commands = redis_commands(redis_url) - commands_before
                            runs.setdefault((era, setup.label, connections), []).append(cell)
    cells = {key: Cell.median(found) for key, found in runs.items()}

    rows, summary_cells = [], []
    for era in ERAS:
        for connections in conns:
            base = cells[(era, setups[0].label, connections)]
            for setup in setups:
                cell = cells[(era, setup.label, connections)]
                errors = f" ({cell.errors} errors)" if cell.errors else ""
                low = min(c.rps for c in runs[(era, setup.label, connections)])
                high = max(c.rps for c in runs[(era, setup.label, connections)])
                rows.append(
                    [
                        era,
                        connections,
                        setup.label,
                        f"{cell.rps:,.0f}{errors}",
                        *[f"{low:,.0f}..{high:,.0f}"] * (options.repeat > 1),
                        f"{cell.rps / base.rps:.2f}x",
                        f"{cell.p50_ms:.2f}",
                        f"{cell.p99_ms:.2f}",
                        f"{cell.cpu_ms_per_request(cell.server_cpu_s):.3f}",
                        f"{cell.cpu_ms_per_request(cell.redis_cpu_s):.3f}" if setup.redis else "-",
                        f"{cell.redis_commands / cell.requests:.2f}" if setup.redis and cell.requests else "-",
                    ]
                )
                summary_cells.append(
                    {
                        "era": era,
                        "setup": setup.label,
                        "workers": setup.workers,
                        "redis": setup.redis,
                        "connections": connections,
                        "rps": cell.rps,
                        "ratio_to_memory": cell.rps / base.rps,
                        "p50_ms": cell.p50_ms,
                        "p99_ms": cell.p99_ms,
                        "errors": cell.errors,
                        "server_cpu_ms_per_request": cell.cpu_ms_per_request(cell.server_cpu_s),
                        "redis_cpu_ms_per_request": cell.cpu_ms_per_request(cell.redis_cpu_s),
                        "redis_commands_per_request": cell.redis_commands / cell.requests if cell.requests else None,
                    }
                )
    print()
    repeats = f"medians of {options.repeat} runs" if options.repeat > 1 else "one run each"
    print(f"({repeats} of {options.duration:g} s; ratio: req/s over `1 worker, memory` of the same era and conns)")
    columns = ["era", "conns", "setup", "req/s", *["min..max"] * (options.repeat > 1), "ratio", "p50 ms", "p99 ms"]
    print(table([*columns, "server CPU ms/req", "redis CPU ms/req", "redis cmds/req"], rows))

    targets = scaling_targets(cells, conns, setups)
    added_rows, added = [], []
    one = min(conns)
    with_redis = Setup(1, True).label
    if (MODERN, with_redis, one) in cells:
        for era in ERAS:
            memory, redis = cells[(era, setups[0].label, one)], cells[(era, with_redis, one)]
            extra_p50 = redis.p50_ms - memory.p50_ms
            extra_cpu = redis.cpu_ms_per_request(redis.server_cpu_s) - memory.cpu_ms_per_request(memory.server_cpu_s)
            added_rows.append(
                [era, one, f"{memory.p50_ms:.3f}", f"{redis.p50_ms:.3f}", f"{extra_p50:+.3f}", f"{extra_cpu:+.3f}"]
            )
            added.append({"era": era, "connections": one, "added_p50_ms": extra_p50, "added_server_cpu_ms": extra_cpu})
        print()
        print("The Redis-backed path against the in-memory one (1 worker each):")
        print(table(["era", "conns", "p50 memory", "p50 redis", "added p50 ms", "added server CPU ms/req"], added_rows))
    summary = {"duration_s": options.duration, "repeat": options.repeat, "cells": summary_cells, "redis_added": added}
    write_summary(sys.argv, {**summary, "targets": targets})


if __name__ == "__main__":
    main()
