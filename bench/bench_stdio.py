"""stdio round trips of `tools/call`: mcpgen against the official SDK (`mcp==2.3.0`), as a server and as a client.

Both servers run as real subprocesses (bench/servers/, the same `add` tool). Every sample is one `tools/call add`
round trip (client framing, pipe, server dispatch and validation, pipe back, result parsing), after a warm-up; in 1.
and 2. one request is in flight at a time. Three comparisons:

1. Servers: a minimal raw NDJSON client (_stdio_raw.py: pre-encoded frames on a blocking pipe, one json.loads per
   answer) drives both servers, so almost all of each sample is the server; in both eras (2025-11-25 after
   `initialize`; 2026-07-28 with no initialize and `_meta` on every request) and both sequentially and with
   ``--concurrency`` (16) requests pipelined. Targets: 2026-07-28 >= 3x the official server's req/s, 2025-11-25
   >= 2x, p99 no worse; our 2026-07-28 >= 0.9x our 2025-11-25 (sequential and pipelined; measured apart, in
   alternating runs of at least 10,000 and 50,000 calls, about a second each, at least 5 per era). Whether the
   official stdio server serves 2026-07-28 at all is checked first and printed (if not, its modern cells are left
   out).
2. Clients ("the typed client >= 2x the official client against the same servers"): mcpgen's typed client
   (`Client.connect_stdio` + the generated `ClientStub.call_tool`) and the official client (`mcp.ClientSession` over
   `mcp.client.stdio.stdio_client`, `session.call_tool`) each drive each server; the ratio is taken per server, the
   two clients alternating (`--repeat` runs each, medians). Both negotiate MCP 2025-11-25. Besides req/s, the
   client's own CPU per call (`time.process_time` of this process, which is the client; the server is a child
   process) is shown: a round trip also contains the server's time and the pipe's, which no client can remove, so
   the req/s ratio of two clients is bounded by them (see the note printed with the table).
3. Clients with calls in flight at once (what a gateway does): each client runs ``--concurrency`` tasks (default
   16) in one session, each making sequential `tools/call add` round trips, ``--calls`` in all; throughput is calls
   over the wall time of the whole batch, latency is per call. The typed client against the official one, against
   each server, alternating, same as 2. (The JSON summary has these under "concurrent <N> in flight, typed vs
   official client, <server> server", in the same shape as the sequential entries.)

Run: .venv/bin/python bench/bench_stdio.py [--calls N] [--repeat N] [--concurrency N] [--json PATH]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import anyio
from _common import ROOT, banner, int_option, table, verdict, write_summary
from _stdio_raw import LEGACY, MODERN, measure_raw, serves_modern

from mcp_bindings.v2025_11_25 import CallToolRequestParams, TextContent
from mcp_bindings.v2025_11_25.client import ClientStub
from mcpgen_runtime.client import Client

SERVERS = {
    "mcpgen": ROOT / "bench" / "servers" / "mcpgen_add_server.py",
    "mcp 2.3.0": ROOT / "bench" / "servers" / "sdk_add_server.py",
}
WARMUP = 200
VERSION = "2025-11-25"
LEGACY_TARGET, MODERN_TARGET, MODERN_OF_LEGACY = 2.0, 3.0, 0.9  # ours/SDK per era; our modern / our legacy
ERA_RUN_CALLS = (10_000, 50_000)  # at least, per run of our two eras against each other: sequential, pipelined
ERA_RUNS = 5  # at least, per era: the median of 5 (one slow run in 3 moved a median by 5 %)

# A run: latencies in seconds of the timed calls, CPU seconds of this process over them, and the wall time of the
# timed part when calls overlapped (None for sequential calls: then the latencies add up to it).
Run = tuple[list[float], float, float | None]


async def measure(script: str, calls: int) -> Run:
    """mcpgen's typed client: `calls` sequential tools/call round trips (after a warm-up)."""
    async with Client.connect_stdio([sys.executable, script], version=VERSION) as client:
        api = client.stub(ClientStub)
        latencies = []
        cpu_start = 0.0
        for index in range(WARMUP + calls):
            if index == WARMUP:
                cpu_start = time.process_time()
            params = CallToolRequestParams(name="add", arguments={"a": index, "b": 1})
            started = time.perf_counter()
            result = await api.call_tool(params)
            elapsed = time.perf_counter() - started
            block = result.content[0]
            assert isinstance(block, TextContent) and block.text == str(index + 1), result
            if index >= WARMUP:
                latencies.append(elapsed)
        return latencies, time.process_time() - cpu_start, None


async def measure_official(script: str, calls: int) -> Run:
    """The official client (mcp 2.3.0 `ClientSession` over its `stdio_client`): the same round trips."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(StdioServerParameters(command=sys.executable, args=[script])) as (read, write),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        assert initialized.protocol_version == VERSION, initialized
        latencies = []
        cpu_start = 0.0
        for index in range(WARMUP + calls):
            if index == WARMUP:
                cpu_start = time.process_time()
            started = time.perf_counter()
            result = await session.call_tool("add", {"a": index, "b": 1})
            elapsed = time.perf_counter() - started
            assert getattr(result.content[0], "text", None) == str(index + 1), result
            if index >= WARMUP:
                latencies.append(elapsed)
        return latencies, time.process_time() - cpu_start, None


async def concurrently(
    call: Callable[[int], Awaitable[None]], calls: int, tasks: int
) -> tuple[list[float], float, float]:
    """A warm-up, then ``calls`` calls of ``call(n)`` spread over ``tasks`` tasks, each making its calls one after
    the other: (latencies, CPU seconds of this process, wall seconds), of the timed part."""
    latencies: list[float] = []

    async def worker(first: int, count: int, record: bool) -> None:
        for n in range(first, first + count):
            started = time.perf_counter()
            await call(n)
            if record:
                latencies.append(time.perf_counter() - started)

    for record, total in ((False, WARMUP), (True, calls)):
        if record:
            cpu_start, wall_start = time.process_time(), time.perf_counter()
        share, extra = divmod(total, tasks)
        async with anyio.create_task_group() as tg:
            first = 0
            for task in range(tasks):
                count = share + (1 if task < extra else 0)
                tg.start_soon(worker, first, count, record)
                first += count
    return latencies, time.process_time() - cpu_start, time.perf_counter() - wall_start


async def measure_concurrent(script: str, calls: int, tasks: int) -> Run:
    """mcpgen's typed client with ``tasks`` tasks calling at once over one connection."""
    async with Client.connect_stdio([sys.executable, script], version=VERSION) as client:
        api = client.stub(ClientStub)

        async def call(n: int) -> None:
            result = await api.call_tool(CallToolRequestParams(name="add", arguments={"a": n, "b": 1}))
            block = result.content[0]
            assert isinstance(block, TextContent) and block.text == str(n + 1), result

        return await concurrently(call, calls, tasks)


async def measure_official_concurrent(script: str, calls: int, tasks: int) -> Run:
    """The official client with ``tasks`` tasks calling at once over one connection."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(StdioServerParameters(command=sys.executable, args=[script])) as (read, write),
        ClientSession(read, write) as session,
    ):
        initialized = await session.initialize()
        assert initialized.protocol_version == VERSION, initialized

        async def call(n: int) -> None:
            result = await session.call_tool("add", {"a": n, "b": 1})
            assert getattr(result.content[0], "text", None) == str(n + 1), result

        return await concurrently(call, calls, tasks)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def stats_of(runs: list[Run]) -> dict[str, float]:
    """Medians over the runs: req/s, p50 and p99 latency, and the client's CPU per call (us; raw runs: none)."""
    return {
        "rps": statistics.median(len(lat) / (sum(lat) if wall is None else wall) for lat, _, wall in runs),
        "p50_ms": statistics.median(statistics.median(lat) for lat, _, _ in runs) * 1000,
        "p99_ms": statistics.median(percentile(lat, 0.99) for lat, _, _ in runs) * 1000,
        "client_cpu_us": statistics.median(cpu / len(lat) for lat, cpu, _ in runs) * 1e6,
    }


def compare(
    title: str,
    labels: tuple[str, str],
    runners: tuple[Callable[[], Run], Callable[[], Run]],
    repeat: int,
    target: float = 2.0,
) -> dict[str, object]:
    """Run both sides ``repeat`` times, alternating who goes first; print and return the comparison (ours first)."""
    runs: dict[str, list[Run]] = {label: [] for label in labels}
    for index in range(repeat):
        order = (0, 1) if index % 2 == 0 else (1, 0)
        for side in order:
            runs[labels[side]].append(runners[side]())
    stats = {label: stats_of(found) for label, found in runs.items()}
    ours, theirs = stats[labels[0]], stats[labels[1]]
    ratio = ours["rps"] / theirs["rps"]
    met = ratio >= target and ours["p99_ms"] <= theirs["p99_ms"]
    print(f"\n{title}:")
    rows = [
        [
            label,
            f"{s['rps']:,.0f}",
            f"{s['p50_ms']:.3f}",
            f"{s['p99_ms']:.3f}",
            f"{s['client_cpu_us']:.0f}" if s["client_cpu_us"] else "-",
        ]
        for label, s in stats.items()
    ]
    print(table(["", "req/s", "p50 ms", "p99 ms", "client CPU us/call"], rows))
    # The raw client's CPU is not measured (its runs report 0): no ratio then.
    cpu_ratio = theirs["client_cpu_us"] / ours["client_cpu_us"] if ours["client_cpu_us"] else float("nan")
    print(
        table(
            ["ratio (req/s)", "p99 ours/theirs", "client CPU theirs/ours", "target", "result"],
            [
                [
                    f"{ratio:.2f}x",
                    f"{ours['p99_ms'] / theirs['p99_ms']:.2f}",
                    f"{cpu_ratio:.2f}x" if cpu_ratio == cpu_ratio else "-",
                    f">={target:g}x, p99 no worse",
                    verdict(met),
                ]
            ],
        )
    )
    # Keys as run_all.py reads them: the two sides under "servers", ours as "mcpgen", the peer as "mcp 2.3.0".
    return {
        "ratio": ratio,
        "met": met,
        "target": target,
        "client_cpu_ratio": cpu_ratio,
        "servers": {"mcpgen": ours, "mcp 2.3.0": theirs},
        "labels": list(labels),
    }


def main() -> None:
    calls = int_option(sys.argv, "--calls", 3000)
    repeat = int_option(sys.argv, "--repeat", 3)
    concurrency = int_option(sys.argv, "--concurrency", 16)
    banner(
        f"bench_stdio: {calls} tools/call round trips over stdio, sequential and {concurrency} in flight, {repeat}"
        " alternating runs per side"
    )
    summary: dict[str, object] = {}
    ours_script, theirs_script = str(SERVERS["mcpgen"]), str(SERVERS["mcp 2.3.0"])

    modern_ok, first_answer = serves_modern(theirs_script)
    print(
        "the SDK's stdio server serves 2026-07-28 requests (no initialize, `_meta` per request: its lowlevel"
        " Server.run drives serve_dual_era_loop)"
        if modern_ok
        else f"NOTE: the SDK's stdio server does NOT serve 2026-07-28 requests; its answer: {first_answer}"
    )

    def raw(script: str, era: str, in_flight: int) -> Callable[[], Run]:
        return lambda: measure_raw(script, calls, era, in_flight)

    for in_flight in (1, concurrency):
        how = "sequential" if in_flight == 1 else f"{in_flight} in flight"
        for era in (MODERN, LEGACY) if modern_ok else (LEGACY,):
            result = compare(
                f"1. servers, {era}, {how}, driven by the raw NDJSON client",
                ("mcpgen", "mcp 2.3.0"),
                (raw(ours_script, era, in_flight), raw(theirs_script, era, in_flight)),
                repeat,
                MODERN_TARGET if era == MODERN else LEGACY_TARGET,
            )
            summary[f"raw NDJSON client, {era}, {how}"] = result
    # Our two eras against each other: runs of their own, long enough to be measured (--calls pipelined at 50,000
    # req/s last 60 ms: the same cell then moved 0.76x-1.43x between runs), in pairs whose order alternates.
    era_rows, era_ratios = [], []
    for in_flight in (1, concurrency):
        how = "sequential" if in_flight == 1 else f"{in_flight} in flight"
        era_calls = max(calls, ERA_RUN_CALLS[in_flight > 1])
        runs: dict[str, list[Run]] = {MODERN: [], LEGACY: []}
        for index in range(max(repeat, ERA_RUNS)):
            for era in (MODERN, LEGACY) if index % 2 == 0 else (LEGACY, MODERN):
                runs[era].append(measure_raw(ours_script, era_calls, era, in_flight))
        modern, legacy = stats_of(runs[MODERN])["rps"], stats_of(runs[LEGACY])["rps"]
        met = modern / legacy >= MODERN_OF_LEGACY
        era_rows.append(
            [
                how,
                f"{era_calls:,}",
                f"{modern:,.0f}",
                f"{legacy:,.0f}",
                f"{modern / legacy:.2f}x",
                f">={MODERN_OF_LEGACY:g}x",
                verdict(met),
            ]
        )
        era_ratios.append(
            {"how": how, "modern_rps": modern, "legacy_rps": legacy, "ratio": modern / legacy, "met": met}
        )
    print("\n1. mcpgen's server, 2026-07-28 against 2025-11-25 (raw client):")
    print(table(["", "calls per run", "modern req/s", "legacy req/s", "ratio", "target", "result"], era_rows))
    summary["modern_of_legacy"] = era_ratios
    summary["sdk_serves_modern"] = modern_ok

    def typed(script: str) -> Callable[[], Run]:
        return lambda: anyio.run(measure, script, calls)

    def official(script: str) -> Callable[[], Run]:
        return lambda: anyio.run(measure_official, script, calls)

    for server, script in SERVERS.items():
        result = compare(
            f"2. clients, against the {server} server",
            ("mcpgen typed client", "official client"),
            (typed(str(script)), official(str(script))),
            repeat,
        )
        summary[f"typed vs official client, {server} server"] = result
        servers = result["servers"]
        theirs = servers["mcp 2.3.0"]  # type: ignore[index]
        # The server and the pipe are in both round trips: the req/s ratio cannot exceed what is left after them.
        raw_stats = summary[f"raw NDJSON client, {LEGACY}, sequential"]["servers"][server]  # type: ignore[index]
        floor_ms = 1000 / raw_stats["rps"]
        bound = (1000 / theirs["rps"]) / floor_ms
        print(
            f"   note: with the raw client a round trip to this server takes {floor_ms:.3f} ms (server + pipe, next to"
            f" no client); the official client's takes {1000 / theirs['rps']:.3f} ms, so a client as cheap as the raw"
            f" one would be about {bound:.2f}x faster than it against this server (an estimate, not a hard bound: the"
            " raw client's blocking reads wake up on their own schedule, an event loop's on another)"
        )
        result["req_s_bound"] = bound

    def typed_concurrent(script: str) -> Callable[[], Run]:
        return lambda: anyio.run(measure_concurrent, script, calls, concurrency)

    def official_concurrent(script: str) -> Callable[[], Run]:
        return lambda: anyio.run(measure_official_concurrent, script, calls, concurrency)

    for server, script in SERVERS.items():
        summary[f"concurrent {concurrency} in flight, typed vs official client, {server} server"] = compare(
            f"3. clients, {concurrency} calls in flight from one client, against the {server} server",
            ("mcpgen typed client", "official client"),
            (typed_concurrent(str(script)), official_concurrent(str(script))),
            repeat,
        )
    write_summary(sys.argv, summary)


if __name__ == "__main__":
    main()
