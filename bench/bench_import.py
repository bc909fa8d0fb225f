"""Import cost in a fresh interpreter: `import mcp_bindings.v2025_11_25` versus `import mcp_types`.

A version package of mcp_bindings is lazy (PEP 562): importing it builds nothing, and the first use of a name
loads the sub-module that defines it (`models` holds every class). mcp_types builds everything on import. So the
headline (the issue's target) is paired with two comparisons of what a program pays before it can do something:
"first use", importing one class (`from ... import CallToolRequest`), and "first parse", importing and validating
one `tools/call` request (which also builds the validators both libraries defer).

Each measurement is a new `python -c "<statement>"` process timed by wall clock (time.perf_counter around
subprocess.run), repeated (default 15, interleaved across statements) and reduced to the median. The interpreter
start-up (`python -c pass`, measured the same way) is subtracted. `import pydantic` (lazy: it defers most of its
own imports) and `from pydantic import BaseModel, TypeAdapter` (what both libraries really need) are reported for
context. A second method, `python -X importtime`, sums the cumulative microseconds of the top-level imports
(minus the same sum for `-c pass`), median of fewer runs, as a cross-check that is free of process noise.

Bytecode: the sessions here run with PYTHONDONTWRITEBYTECODE=1, and generated/ has no __pycache__ while
site-packages does, which would charge only our side for compiling. So every process gets PYTHONPYCACHEPREFIX
pointing at one temporary directory (nothing is written into the repository) and two untimed warm-up runs fill it.
Target: ours (net of start-up) <= half of mcp-types (net of start-up).

    .venv/bin/python bench/bench_import.py [--repeat N] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from _common import banner, int_option, median, spread, table, verdict, write_summary

OURS = "import mcp_bindings.v2025_11_25"
THEIRS = "import mcp_types"
CALL_FRAME = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}'
# (label, ours, theirs): what a program pays before it can use a class, and before it has parsed a message.
FIRST_USE = (
    (
        "first use: import one class",
        "from mcp_bindings.v2025_11_25 import CallToolRequest",
        "from mcp_types import CallToolRequest",
    ),
    (
        "first parse: import, validate one tools/call",
        f"from mcp_bindings.v2025_11_25 import parse_client_request; parse_client_request({CALL_FRAME!r})",
        "from mcp_types.jsonrpc import jsonrpc_message_adapter as a; from mcp_types._types import "
        f"client_request_adapter as c; m = a.validate_json({CALL_FRAME!r}); "
        "c.validate_python({'method': m.method, 'params': m.params})",
    ),
)
STATEMENTS = {
    "baseline: python -c pass": "pass",
    "context: import pydantic": "import pydantic",
    "context: from pydantic import BaseModel, TypeAdapter": "from pydantic import BaseModel, TypeAdapter",
    f"mcpgen: {OURS}": OURS,
    f"mcp-types: {THEIRS}": THEIRS,
    **{f"mcpgen, {label}": ours for label, ours, _theirs in FIRST_USE},
    **{f"mcp-types, {label}": theirs for label, _ours, theirs in FIRST_USE},
}
TARGET_FRACTION = 0.5


def run(statement: str, env: dict[str, str], importtime: bool = False) -> tuple[float, str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", statement]
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{statement!r} failed:\n{proc.stderr}")
    return elapsed, proc.stderr


def top_level_microseconds(stderr: str) -> int:
    """Sum of the cumulative column of the top-level (unindented) lines of `-X importtime` output."""
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if cumulative.strip().isdigit() and name.startswith(" ") and not name.startswith("  "):
            total += int(cumulative)
    return total


def main(argv: list[str]) -> dict[str, object]:
    repeat = int_option(argv, "--repeat", 15)
    importtime_repeat = max(3, repeat // 2)
    banner(f"bench_import: fresh-process import cost, wall-clock median of {repeat} (start-up subtracted)")
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as prefix:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = prefix
        for _ in range(2):  # compile to the prefix, fill the OS file cache
            for statement in STATEMENTS.values():
                run(statement, env)
        wall: dict[str, list[float]] = {label: [] for label in STATEMENTS}
        for _ in range(repeat):
            for label, statement in STATEMENTS.items():
                wall[label].append(run(statement, env)[0])
        importtime: dict[str, list[int]] = {label: [] for label in STATEMENTS}
        for _ in range(importtime_repeat):
            for label, statement in STATEMENTS.items():
                importtime[label].append(top_level_microseconds(run(statement, env, importtime=True)[1]))

    base_wall = median(wall["baseline: python -c pass"])
    base_it = median(importtime["baseline: python -c pass"])
    rows = []
    net: dict[str, float] = {}
    net_it: dict[str, float] = {}
    for label in STATEMENTS:
        m = median(wall[label])
        net[label] = m - base_wall
        net_it[label] = (median(importtime[label]) - base_it) / 1e6
        rows.append(
            (
                label,
                f"{m * 1e3:.1f}",
                spread([v * 1e3 for v in wall[label]]),
                f"{net[label] * 1e3:.1f}",
                f"{net_it[label] * 1e3:.1f}",
            )
        )
    print()
    print(table(["statement", "wall ms", "min..max ms", "net of start-up ms", "-X importtime ms"], rows))

    ours_label, theirs_label = f"mcpgen: {OURS}", f"mcp-types: {THEIRS}"
    fraction = net[ours_label] / net[theirs_label]
    fraction_it = net_it[ours_label] / net_it[theirs_label]
    met = fraction <= TARGET_FRACTION
    print()
    print(
        table(
            ["method", "mcpgen ms", "mcp-types ms", "ours/theirs", "speed-up", "target", "result"],
            [
                (
                    "wall clock (headline)",
                    f"{net[ours_label] * 1e3:.1f}",
                    f"{net[theirs_label] * 1e3:.1f}",
                    f"{fraction:.2f}",
                    f"{1 / fraction:.2f}x",
                    "<=0.50",
                    verdict(met),
                ),
                (
                    "-X importtime",
                    f"{net_it[ours_label] * 1e3:.1f}",
                    f"{net_it[theirs_label] * 1e3:.1f}",
                    f"{fraction_it:.2f}",
                    f"{1 / fraction_it:.2f}x",
                    "<=0.50",
                    verdict(fraction_it <= TARGET_FRACTION),
                ),
            ],
        )
    )
    first_use: dict[str, dict[str, float]] = {}
    rows = []
    for label, _ours, _theirs in FIRST_USE:
        ours_ms, theirs_ms = net[f"mcpgen, {label}"] * 1e3, net[f"mcp-types, {label}"] * 1e3
        first_use[label] = {"ours_ms": ours_ms, "theirs_ms": theirs_ms, "fraction": ours_ms / theirs_ms}
        rows.append((label, f"{ours_ms:.1f}", f"{theirs_ms:.1f}", f"{ours_ms / theirs_ms:.2f}"))
    print("\nbeyond the import (context, no target; wall clock net of start-up):")
    print(table(["what", "mcpgen ms", "mcp-types ms", "ours/theirs"], rows))
    summary: dict[str, object] = {
        "name": "import",
        "ours_net_ms": net[ours_label] * 1e3,
        "theirs_net_ms": net[theirs_label] * 1e3,
        "pydantic_net_ms": net["context: import pydantic"] * 1e3,
        "pydantic_basemodel_net_ms": net["context: from pydantic import BaseModel, TypeAdapter"] * 1e3,
        "startup_ms": base_wall * 1e3,
        "fraction": fraction,
        "importtime_fraction": fraction_it,
        "first_use": first_use,
        "met": met,
    }
    write_summary(argv, summary)
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
