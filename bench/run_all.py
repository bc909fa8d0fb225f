"""Run the benchmarks (each in its own fresh process, one after the other) and summarise their ratios.

    .venv/bin/python bench/run_all.py [--repeat N] [--duration S]      (also: .venv/bin/nox -s bench)

Extra arguments are passed to every benchmark. Targets are reported, never asserted: the exit status is 0
whether or not they are met (it is non-zero only if a benchmark itself fails).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import http_target_result, table, verdict

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "bench_regenerate.py",
    "bench_validation.py",
    "bench_import.py",
    "bench_stdio.py",
    "bench_http.py",
    "bench_startup.py",
    "bench_scale.py",  # with --workers 2 unless given: its issue-22 target is 2 workers against one
)


def _load(numbers: dict[str, object]) -> str:
    start, end = numbers.get("load_1min_start"), numbers.get("load_1min_end")
    return f" [load {start:.1f}..{end:.1f}]" if isinstance(start, float) and isinstance(end, float) else ""


def issue15_rows(results: dict[str, dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """The four targets of issue 15: typed validation, import, cold regeneration, typed client."""
    regen, valid, imp, stdio = (
        results[name] for name in ("bench_regenerate.py", "bench_validation.py", "bench_import.py", "bench_stdio.py")
    )
    # bench_stdio.py compares the typed client with the official one against each server ("typed vs official
    # client, <server> server"); older versions of it had one "mcpgen typed client" entry.
    clients = {
        name.removeprefix("typed vs official client, "): numbers
        for name, numbers in stdio.items()
        if isinstance(numbers, dict) and (name.startswith("typed vs official client") or name == "mcpgen typed client")
    }
    rows = [
        (
            "typed validation vs mcp-types' fastest path",
            f"{valid['ours_msgs_per_s']:,.0f} vs {valid['theirs_msgs_per_s']:,.0f} msg/s{_load(valid)}",
            f"{valid['ratio']:.2f}x",
            ">=1.5x",
            verdict(bool(valid["met"])),
        ),
        (
            "import one version vs import mcp_types",
            f"{imp['ours_net_ms']:.0f} vs {imp['theirs_net_ms']:.0f} ms net of start-up{_load(imp)}",
            f"{imp['fraction']:.2f}",
            "<=0.50",
            verdict(bool(imp["met"])),
        ),
        (
            "regenerate all versions, cold (warm)",
            f"{regen['mcpgen_cold_s']:.2f} s ({regen['mcpgen_warm_s']:.2f} s){_load(regen)}",
            f"{regen['mcpgen_cold_s']:.2f} s",
            "<=1.5 s (warm <0.5 s)",
            verdict(bool(regen["issue15_cold_met"]) and bool(regen["issue15_warm_met"])),
        ),
    ]
    for server, client in clients.items():
        ours, theirs = client["servers"]["mcpgen"], client["servers"]["mcp 2.3.0"]
        rows.append(
            (
                f"typed client vs official client (stdio, {server})",
                f"{ours['rps']:,.0f} vs {theirs['rps']:,.0f} req/s, p99 {ours['p99_ms']:.2f} vs "
                f"{theirs['p99_ms']:.2f} ms{_load(stdio)}",
                f"{client['ratio']:.2f}x",
                ">=2x, p99 no worse",
                verdict(bool(client["met"])),
            )
        )
    return rows


def main(argv: list[str]) -> int:
    results: dict[str, dict[str, object]] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-summary-") as tmp:
        for script in BENCHMARKS:
            out = Path(tmp) / f"{script}.json"
            extra = ["--workers", "2"] if script == "bench_scale.py" and "--workers" not in argv else []
            if script == "bench_scale.py" and not (shutil.which("wrk") and shutil.which("redis-server")):
                print(f"\n{script} skipped: it needs wrk and redis-server on PATH")
                continue
            proc = subprocess.run([sys.executable, str(HERE / script), *argv, *extra, "--json", str(out)])
            if proc.returncode != 0 or not out.is_file():
                print(f"\n{script} FAILED (exit {proc.returncode})")
                return 1
            results[script] = json.loads(out.read_text(encoding="utf-8"))
    elapsed = time.perf_counter() - start

    regen, valid, imp, stdio, http, startup = (results[name] for name in BENCHMARKS[:6])
    rows = [
        (
            "regenerate, cold cache",
            f"mcpgen {regen['mcpgen_cold_s']:.2f} s vs datamodel-codegen {regen['dmcg_total_s']:.2f} s",
            f"{regen['cold_ratio']:.2f}x",
            "<=2 s & >=2.5x",
            verdict(bool(regen["cold_met"])),
        ),
        (
            "regenerate, warm cache",
            f"mcpgen {regen['mcpgen_warm_s']:.2f} s vs datamodel-codegen {regen['dmcg_total_s']:.2f} s",
            f"{regen['warm_ratio']:.2f}x",
            "<=2 s & >=2.5x",
            verdict(bool(regen["warm_met"])),
        ),
        (
            "validation, 10k frames",
            f"{valid['ours_msgs_per_s']:,.0f} vs {valid['theirs_msgs_per_s']:,.0f} msg/s",
            f"{valid['ratio']:.2f}x",
            ">=1.5x",
            verdict(bool(valid["met"])),
        ),
        (
            "import one version",
            f"{imp['ours_net_ms']:.0f} ms vs mcp-types {imp['theirs_net_ms']:.0f} ms (net of start-up)",
            f"{1 / float(imp['fraction']):.2f}x (ours/theirs {imp['fraction']:.2f})",  # type: ignore[arg-type]
            "ours/theirs <=0.50",
            verdict(bool(imp["met"])),
        ),
    ]
    for client, numbers in stdio.items():
        if not isinstance(numbers, dict) or "servers" not in numbers:
            continue  # load_1min_start / load_1min_end, modern_of_legacy, sdk_serves_modern
        servers = numbers["servers"]
        ours, theirs = servers["mcpgen"], servers["mcp 2.3.0"]
        rows.append(
            (
                f"stdio tools/call, {client}",
                f"{ours['rps']:,.0f} vs {theirs['rps']:,.0f} req/s, p99 {ours['p99_ms']:.2f} vs {theirs['p99_ms']:.2f} ms",
                f"{numbers['ratio']:.2f}x",
                f">={numbers.get('target', 2):g}x, p99 no worse",
                verdict(bool(numbers["met"])),
            )
        )
    for era_ratio in stdio.get("modern_of_legacy", []):  # type: ignore[attr-defined]
        rows.append(
            (
                f"stdio server, ours 2026-07-28 / 2025-11-25, {era_ratio['how']}",
                f"{era_ratio['modern_rps']:,.0f} vs {era_ratio['legacy_rps']:,.0f} req/s",
                f"{era_ratio['ratio']:.2f}x",
                ">=0.9x",
                verdict(bool(era_ratio["met"])),
            )
        )
    if stdio.get("sdk_serves_modern") is False:
        print("NOTE: the SDK's stdio server does not serve 2026-07-28: no modern stdio cells against it")
    driver = "" if http["driver"] == "wrk" else ", Python driver"
    for target in http["targets"]:  # type: ignore[attr-defined]
        note = f" [{target['note']}]" if target["note"] and target["note"] != "not judged" else ""
        rows.append(
            (
                f"{target['name']} ({http['stack']} stack{driver})",
                f"{target['numbers']}{note}",
                target["measured"],
                target["target"],
                http_target_result(target),
            )
        )
    ours_start, theirs_start = startup["servers"]["mcpgen"], startup["servers"]["mcp 2.3.0"]
    rows.append(
        (
            "stdio server cold start, spawn to first tools/call",
            f"{ours_start['first_call_ms']:.0f} vs {theirs_start['first_call_ms']:.0f} ms",
            f"{startup['ratios']['first_call_ms']:.2f}x",
            "(none)",
            "-",
        )
    )
    for target in results.get("bench_scale.py", {}).get("targets", []):  # type: ignore[attr-defined]
        rows.append(
            (
                str(target["name"]),
                str(target["numbers"]),
                str(target["measured"]),
                str(target["target"]),
                (verdict(bool(target["met"])) if target["judged"] else "- (1 conn: not judged)")
                + (f" ({target['note']})" if target.get("note") and target["judged"] else ""),
            )
        )
    print("\n\nSUMMARY (mcpgen vs peer; ratio > 1 means mcpgen is faster)")
    print(table(["benchmark", "numbers (medians)", "ratio", "target", "result"], rows))
    print("\nISSUE 15 TARGETS (same-run ratios; 1-minute load average at each benchmark's start..end in brackets)")
    print(table(["target", "numbers (medians)", "measured", "target", "result"], issue15_rows(results)))
    if regen["dmcg_failures"]:
        print(f"datamodel-codegen failed on: {', '.join(regen['dmcg_failures'])} (excluded from its total)")  # type: ignore[arg-type]
    print(f"(all benchmarks took {elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
