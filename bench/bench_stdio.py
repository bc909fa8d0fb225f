"""stdio round trips of `tools/call`: our server versus an official `mcp==2.3.0` server with the same tool.

Both servers run as real subprocesses (bench/servers/), and the same client, mcpgen's typed runtime client,
drives both in the same run: after a warm-up it makes sequential `tools/call add` requests, one in flight at a
time, so each sample is one full round trip (client framing, pipe, server dispatch and validation, pipe back,
result parsing). Reported: requests per second and p50/p99 latency. Target: at least 2x the requests per second
of the official server, with p99 no worse.

Run: .venv/bin/python bench/bench_stdio.py [--calls N] [--json PATH]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import anyio
from _common import ROOT, banner, int_option, table, verdict, write_summary

from mcp_bindings.v2025_06_18 import CallToolRequestParams, TextContent
from mcp_bindings.v2025_06_18.client import ClientStub
from mcpgen_runtime.client import Client

SERVERS = {
    "mcpgen": ROOT / "bench" / "servers" / "mcpgen_add_server.py",
    "mcp 2.3.0": ROOT / "bench" / "servers" / "sdk_add_server.py",
}
WARMUP = 200


async def measure(script: str, calls: int) -> list[float]:
    """Latencies in seconds of `calls` sequential tools/call round trips (after a warm-up)."""
    async with Client.connect_stdio([sys.executable, script], version="2025-06-18") as client:
        api = client.stub(ClientStub)
        latencies = []
        for index in range(WARMUP + calls):
            params = CallToolRequestParams(name="add", arguments={"a": index, "b": 1})
            started = time.perf_counter()
            result = await api.call_tool(params)
            elapsed = time.perf_counter() - started
            block = result.content[0]
            assert isinstance(block, TextContent) and block.text == str(index + 1), result
            if index >= WARMUP:
                latencies.append(elapsed)
        return latencies


def measure_raw(script: str, calls: int) -> list[float]:
    """The same round trips through a minimal client: pre-encoded NDJSON frames on a blocking pipe and one
    json.loads per answer, so almost all of each sample is the server (and the pipe)."""
    process = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert process.stdin is not None and process.stdout is not None
    reader = process.stdout

    def call(frame: dict[str, object]) -> dict[str, object]:
        process.stdin.write(json.dumps(frame).encode() + b"\n")  # type: ignore[union-attr]
        answer: dict[str, object] = json.loads(reader.readline())
        return answer

    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        assert "result" in call({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        latencies = []
        for index in range(WARMUP + calls):
            frame = {"jsonrpc": "2.0", "id": index + 1, "method": "tools/call"}
            frame["params"] = {"name": "add", "arguments": {"a": index, "b": 1}}
            started = time.perf_counter()
            answer = call(frame)
            elapsed = time.perf_counter() - started
            assert answer["result"]["content"][0]["text"] == str(index + 1), answer  # type: ignore[index]
            if index >= WARMUP:
                latencies.append(elapsed)
        return latencies
    finally:
        process.stdin.close()
        process.wait(timeout=10)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    calls = int_option(sys.argv, "--calls", 3000)
    banner(f"bench_stdio: {calls} sequential tools/call round trips over stdio, same client for both servers")
    summary: dict[str, object] = {}
    for client, run in (
        ("raw NDJSON client", measure_raw),
        ("mcpgen typed client", lambda s, n: anyio.run(measure, s, n)),
    ):
        stats = {}
        for label, script in SERVERS.items():
            latencies = run(str(script), calls)
            stats[label] = {
                "rps": len(latencies) / sum(latencies),
                "p50_ms": statistics.median(latencies) * 1000,
                "p99_ms": percentile(latencies, 0.99) * 1000,
            }
        ours, theirs = stats["mcpgen"], stats["mcp 2.3.0"]
        ratio = ours["rps"] / theirs["rps"]
        met = ratio >= 2.0 and ours["p99_ms"] <= theirs["p99_ms"]
        print(f"\n{client}:")
        rows = [[label, f"{s['rps']:,.0f}", f"{s['p50_ms']:.3f}", f"{s['p99_ms']:.3f}"] for label, s in stats.items()]
        print(table(["server", "req/s", "p50 ms", "p99 ms"], rows))
        p99 = f"{ours['p99_ms'] / theirs['p99_ms']:.2f}"
        print(
            table(
                ["ratio (req/s)", "p99 ours/theirs", "target", "result"],
                [[f"{ratio:.2f}x", p99, ">=2x, p99 no worse", verdict(met)]],
            )
        )
        summary[client] = {"ratio": ratio, "met": met, "servers": stats}
    write_summary(sys.argv, summary)


if __name__ == "__main__":
    main()
