"""Streamable HTTP `tools/call` under load: our server versus an official `mcp==2.3.0` server with the same tools,
in both protocol eras, on the same HTTP stack, with a bare ASGI app on that stack as the reference.

Servers (bench/servers/, each its own process: uvicorn, one worker, 127.0.0.1, a free port), all started with the
same `--stack` (fast: httptools + uvloop; h11: h11 + asyncio's loop) and each printing the loop and HTTP protocol it
really runs on: mcpgen (`server.run_http()`, the stack through MCPGEN_HTTP_STACK) and the SDK (its
`streamable_http_app()` under `uvicorn.Config(loop=..., http=...)`), each twice (JSON answers, `json_response`, and
SSE answers), `bare_asgi_server.py` (parse the body, answer a fixed result: the ceiling of the stack) and
`floor_mcp_server.py` (the least work a conforming 2026-07-28 server must do for the request, with the runtime's
own parts in one function and no layering: the limit for an MCP server on the stack, 2026-07-28 cells only).

Cells (era x answers x connections; each server back to back, so both see the same machine load):
- legacy 2025-11-25: a session initialized from Python, then `tools/call add`; JSON answers, SSE answers.
- modern 2026-07-28: no initialize, `_meta` and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers on every
  request; JSON answers (`add`), SSE answers (`add_progress`: one progress notification, then the result).
- the bare app on the same connection counts, JSON and SSE answers (its SSE answer streams a progress event and the
  result, as `add_progress` does), the reference of the cells of the same kind.
- the floor in the 2026-07-28 cells, JSON and SSE, each connection count, right after the two servers, printed
  like the bare app (its share of the bare app's req/s) and, as mcpgen, with its ratio to the SDK.
Each request is checked once before the load (content type, the sum, the progress event); wrk (one thread, a Lua
script giving every request its own id) or a Python driver keeps each connection with one request in flight.

Targets (issue 22): modern JSON >= 3x the SDK on 1 connection and >= 4x on 16; modern SSE >= 3x on both; legacy
>= 2x on 1 and >= 1.5x on 16; p99 no worse than the SDK's in every cell; our modern JSON >= 0.85x our legacy JSON
on 16 connections; our legacy cells on 16 connections >= 50 % of the bare app's req/s. A target above what the bare
app itself reaches against the SDK is printed with that ceiling, and still judged as measured. Every 2026-07-28
target's note says what the floor reached against the SDK in the same run ("floor 2.80x SDK"); a missed target that
the floor misses too is "MISSED (floor below target)": out of reach for any server layered on this runtime and stack.

Run: .venv/bin/python bench/bench_http.py [--duration S] [--warmup S] [--repeat N] [--connections 1,16]
     [--stack fast|h11] [--driver auto|wrk|python] [--json PATH]
With --repeat N every cell is measured N times (the servers alternating who goes first) and medians reported.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from contextlib import ExitStack

from _common import banner, http_target_result, table, write_summary
from _http_cells import LEGACY, MODERN, SERVER_DIR, Cell, Served, Workload, run_python, run_wrk, server_process
from _http_cells import workload as make_workload

OURS, THEIRS, BARE, FLOOR = "mcpgen", "mcp 2.3.0", "bare ASGI", "floor"
SERVERS = {
    OURS: SERVER_DIR / "mcpgen_add_http_server.py",
    THEIRS: SERVER_DIR / "sdk_add_http_server.py",
    BARE: SERVER_DIR / "bare_asgi_server.py",
    FLOOR: SERVER_DIR / "floor_mcp_server.py",
}
ERAS, MODES = (MODERN, LEGACY), ("json", "sse")
# (era, answers, connections) -> our req/s over the SDK's; other connection counts take the 16-connection target.
TARGETS = {
    (MODERN, "json", 1): 3.0,
    (MODERN, "json", 16): 4.0,
    (MODERN, "sse", 1): 3.0,
    (MODERN, "sse", 16): 3.0,
    (LEGACY, "json", 1): 2.0,
    (LEGACY, "json", 16): 1.5,
    (LEGACY, "sse", 1): 2.0,
    (LEGACY, "sse", 16): 1.5,
}
MODERN_OF_LEGACY, LEGACY_OF_BARE = 0.85, 0.50


def target_for(era: str, mode: str, connections: int) -> float:
    return TARGETS.get((era, mode, connections), TARGETS[(era, mode, 16)])


def stack_of(line: str) -> tuple[str, str]:
    """(loop class, uvicorn protocol class) of a server's STACK line; mcpgen's coalescing protocol is a subclass of
    uvicorn's, reported as `CoalescingX over X`: X is what parses."""
    loop, _, http = line.partition(" loop=")[2].partition(" http=")
    return loop, http.rpartition(" over ")[2]


def expected_stack(stack: str) -> tuple[str, str]:
    """What ``stack`` should run on here (the fast stack falls back per part when uvloop or httptools is missing)."""
    if stack == "h11":
        return "asyncio.", "H11Protocol"
    fast_loop = "uvloop." if importlib.util.find_spec("uvloop") else "asyncio."
    return fast_loop, "HttpToolsProtocol" if importlib.util.find_spec("httptools") else "H11Protocol"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per cell and server")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of untimed load before each")
    parser.add_argument("--connections", default="1,16", help="comma-separated connection counts")
    parser.add_argument("--stack", choices=("fast", "h11"), default="fast", help="the HTTP stack of every server")
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

    def measure(served: Served, era: str, mode: str, connections: int) -> Cell:
        load = make_workload(era, mode, served.port)  # legacy: a new session per cell; checked once either way
        if options.warmup > 0:
            run_load(served.port, load, connections, options.warmup)
        return run_load(served.port, load, connections, options.duration)

    def run_load(port: int, load: Workload, connections: int, seconds: float) -> Cell:
        return run_wrk(wrk, port, load, connections, seconds) if wrk else run_python(port, load, connections, seconds)

    runs: dict[tuple[str, str, int, str], list[Cell]] = {}
    stack_lines: dict[tuple[str, str], str] = {}
    with ExitStack() as stack:
        served = {
            (label, mode): stack.enter_context(server_process(script, mode == "json", options.stack))
            for label, script in SERVERS.items()
            for mode in MODES
        }
        expected = expected_stack(options.stack)
        print(f"HTTP stack of every server: --stack {options.stack}; each server's own report (loop, protocol class):")
        for (label, mode), found in served.items():
            stack_lines[(label, mode)] = found.stack_line
            loop, http = stack_of(found.stack_line)
            ok = loop.startswith(expected[0]) and http == expected[1]
            print(f"  {label:10} {mode:4}  {found.stack_line}{'' if ok else '   <-- NOT the requested stack'}")
        for repeat in range(options.repeat):
            # Back to back, so that both see the same load; who goes first alternates between repetitions.
            order = [OURS, THEIRS] if repeat % 2 == 0 else [THEIRS, OURS]
            for era in ERAS:
                for mode in MODES:
                    for connections in conns:
                        # The floor serves 2026-07-28 only; the bare app is measured once per mode and count.
                        labels = order + [BARE] * (era == LEGACY) + [FLOOR] * (era == MODERN)
                        for label in labels:
                            # The bare app answers any POST: it gets the modern request (no session to open; in SSE
                            # mode with a progress token, so that it streams a progress event and the result).
                            cell = measure(served[(label, mode)], MODERN if label == BARE else era, mode, connections)
                            key = (era, mode, connections, label) if label != BARE else ("-", mode, connections, BARE)
                            runs.setdefault(key, []).append(cell)
    cells = {key: Cell.median(found) for key, found in runs.items()}
    found_stacks = {stack_of(line) for line in stack_lines.values()}
    same_stack = len(found_stacks) == 1 and all(
        loop.startswith(expected[0]) and http == expected[1] for loop, http in found_stacks
    )

    rows = []
    for (era, mode, connections, label), cell in cells.items():
        errors = f"  ({cell.errors} errors)" if cell.errors else ""
        samples = runs[(era, mode, connections, label)]
        bare_rps = cells[("-", mode, connections, BARE)].rps
        sdk = cells.get((era, mode, connections, THEIRS))
        of_sdk = f"{cell.rps / sdk.rps:.2f}x" if sdk is not None and label in (OURS, FLOOR) else ""
        rows.append(
            [era, mode, connections, label, f"{cell.rps:,.0f}{errors}"]
            + [f"{min(c.rps for c in samples):,.0f}..{max(c.rps for c in samples):,.0f}"] * (options.repeat > 1)
            + [f"{cell.p50_ms:.2f}", f"{cell.p99_ms:.2f}", f"{cell.rps / bare_rps:.0%}", of_sdk]
        )
    print()
    repeats = f"medians of {options.repeat} runs" if options.repeat > 1 else "one run each"
    print(f"({repeats} of {options.duration:g} s; 'of bare': req/s as a fraction of the bare ASGI app's, same conns;")
    print(" 'x SDK': req/s over the SDK's in the same cell; floor: the least work of a conforming 2026-07-28 server)")
    headers = ["era", "answers", "conns", "server", "req/s", *["min..max"] * (options.repeat > 1), "p50 ms", "p99 ms"]
    print(table([*headers, "of bare", "x SDK"], rows))

    targets: list[dict[str, object]] = []

    def judge(
        name: str, numbers: str, measured: str, target: str, met: bool, note: str = "", floor_below: bool = False
    ) -> None:
        row = {"name": name, "numbers": numbers, "measured": measured, "target": target, "met": met, "note": note}
        targets.append({**row, "floor_below": floor_below})

    for era in ERAS:
        for mode in MODES:
            for connections in conns:
                ours, theirs = cells[(era, mode, connections, OURS)], cells[(era, mode, connections, THEIRS)]
                bare = cells[("-", mode, connections, BARE)]
                ratio, p99 = ours.rps / theirs.rps, ours.p99_ms / theirs.p99_ms
                target = target_for(era, mode, connections)
                clean = ours.errors == 0 and theirs.errors == 0 and same_stack
                ceiling = bare.rps / theirs.rps
                # What the target asks of the stack: the share of the bare app's req/s it takes (all of the MCP work,
                # parsing, validation and the tool, in what is left); above 100 % nothing on this stack reaches it.
                needs = f"{target:g}x SDK = {target * theirs.rps / bare.rps:.0%} of the bare app"
                note = (
                    needs
                    if ceiling >= target
                    else f"{needs}: bare app = {ceiling:.2f}x SDK, the target is above the physical limit on this stack"
                )
                floor = cells.get((era, mode, connections, FLOOR))
                floor_ratio = floor.rps / theirs.rps if floor is not None else None
                note += "" if floor_ratio is None else f"; floor {floor_ratio:.2f}x SDK"
                note += "" if same_stack else " (servers NOT on the same stack)"
                note += "" if ours.errors == 0 and theirs.errors == 0 else " (errors during the load)"
                judge(
                    f"HTTP {era} {mode}, {connections} conn: ours/SDK, p99",
                    f"{ours.rps:,.0f} vs {theirs.rps:,.0f} req/s, p99 {ours.p99_ms:.2f} vs {theirs.p99_ms:.2f} ms",
                    f"{ratio:.2f}x, p99 {p99:.2f}",
                    f">={target:g}x, p99 <=1",
                    ratio >= target and p99 <= 1.0 and clean,
                    note.strip(),
                    floor_ratio is not None and floor_ratio < target,
                )
    top = max(conns)
    for mode in MODES:
        modern, legacy = cells[(MODERN, mode, top, OURS)], cells[(LEGACY, mode, top, OURS)]
        same_work = mode == "json"  # modern SSE calls add_progress (a progress event more): informational only
        judge(
            f"HTTP ours modern/legacy {mode}, {top} conn",
            f"{modern.rps:,.0f} vs {legacy.rps:,.0f} req/s",
            f"{modern.rps / legacy.rps:.2f}x",
            f">={MODERN_OF_LEGACY:g}x" if same_work else "(info: modern SSE sends a progress event too)",
            modern.rps / legacy.rps >= MODERN_OF_LEGACY if same_work else True,
            "" if same_work else "not judged",
        )
    for mode in MODES:
        legacy, bare = cells[(LEGACY, mode, top, OURS)], cells[("-", mode, top, BARE)]
        judge(
            f"HTTP ours legacy {mode} / bare ASGI app, {top} conn",
            f"{legacy.rps:,.0f} vs {bare.rps:,.0f} req/s",
            f"{legacy.rps / bare.rps:.0%}",
            f">={LEGACY_OF_BARE:.0%}",
            legacy.rps / bare.rps >= LEGACY_OF_BARE and same_stack,
        )
    print()
    print(f"Targets (issue 22), stack {options.stack}:")

    print(
        table(
            ["target", "measured", "wanted", "result", "note"],
            [[t["name"], t["measured"], t["target"], http_target_result(t), t["note"]] for t in targets],
        )
    )
    summary: dict[str, object] = {
        "driver": "wrk" if wrk else "python",
        "stack": options.stack,
        "stack_lines": {f"{label} {mode}": line for (label, mode), line in stack_lines.items()},
        "duration_s": options.duration,
        "repeat": options.repeat,
        "cells": [
            {"era": era, "mode": mode, "connections": connections, "server": label, **vars(cell), "rps": cell.rps}
            for (era, mode, connections, label), cell in cells.items()
        ],
        "targets": targets,
        "met": all(t["met"] for t in targets),
    }
    write_summary(sys.argv, summary)


if __name__ == "__main__":
    main()
