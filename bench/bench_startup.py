"""Cold start of a stdio server: how long from spawning it until it has answered, mcpgen against the official SDK.

A desktop client starts a stdio server per session and waits for it; so does every test that spawns one. Each sample
is a new process of bench/servers/ (the same `add` tool on both sides), timed by wall clock from Popen to:
  1. the `initialize` answer (interpreter start, imports, server set-up, the handshake);
  2. the first `tools/call` answer after it (what a version's first real request adds: models and validators
     that are built on first use).
The driver is a raw NDJSON client on blocking pipes. Samples alternate between the two servers; medians are
reported. Bytecode is cached in a temporary PYTHONPYCACHEPREFIX, filled by untimed warm-up runs, so neither side
pays for compiling. No target: the ratio is printed for the record.

    .venv/bin/python bench/bench_startup.py [--repeat N] [--json PATH]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from _common import ROOT, banner, int_option, median, spread, table, write_summary

SERVERS = {
    "mcpgen": ROOT / "bench" / "servers" / "mcpgen_add_server.py",
    "mcp 2.3.0": ROOT / "bench" / "servers" / "sdk_add_server.py",
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}


def one_start(script: str, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer, and to the first tools/call answer."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        answer = json.loads(process.stdout.readline())
        initialized = time.perf_counter() - started
        assert answer["result"]["protocolVersion"] == "2025-11-25", answer
        process.stdin.write(json.dumps(INITIALIZED).encode() + b"\n" + json.dumps(CALL).encode() + b"\n")
        answer = json.loads(process.stdout.readline())
        called = time.perf_counter() - started
        assert answer["result"]["content"][0]["text"] == "5", answer
        return initialized, called
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str]) -> dict[str, object]:
    repeat = int_option(argv, "--repeat", 15)
    banner(f"bench_startup: stdio server cold start, wall-clock median of {repeat} new processes per server")
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in SERVERS}
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as prefix:
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = prefix
        for _ in range(2):  # compile into the prefix and warm the OS file cache, untimed
            for script in SERVERS.values():
                one_start(str(script), env)
        for index in range(repeat):
            order = list(SERVERS.items()) if index % 2 == 0 else list(reversed(SERVERS.items()))
            for name, script in order:
                samples[name].append(one_start(str(script), env))

    stats: dict[str, dict[str, float]] = {}
    rows = []
    for name, runs in samples.items():
        initialize = [run[0] * 1e3 for run in runs]
        call = [run[1] * 1e3 for run in runs]
        stats[name] = {"initialize_ms": median(initialize), "first_call_ms": median(call)}
        rows.append((name, f"{median(initialize):.1f}", spread(initialize), f"{median(call):.1f}", spread(call)))
    print()
    print(table(["server", "to initialize ms", "min..max", "to first tools/call ms", "min..max"], rows))
    ours, theirs = stats["mcpgen"], stats["mcp 2.3.0"]
    ratios = {key: theirs[key] / ours[key] for key in ours}
    print(
        f"\nmcpgen starts {ratios['initialize_ms']:.2f}x as fast to the initialize answer and "
        f"{ratios['first_call_ms']:.2f}x to the first tools/call answer (same run; no target)"
    )
    summary: dict[str, object] = {"name": "startup", "servers": stats, "ratios": ratios}
    write_summary(argv, summary)
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
