"""Small helpers shared by the benchmark scripts: timing statistics, tables, the JSON summary.

Nothing here asserts on time: a benchmark reports numbers and says whether a target is met.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin/: mcpgen and datamodel-codegen live next to python


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float]) -> str:
    """min..max of the runs, so a reader can see how noisy the median is."""
    return f"{min(values):.3f}..{max(values):.3f}"


def verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        lines.append(
            "  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


_load_at_start: float | None = None  # set by banner(); recorded by write_summary()


def banner(title: str) -> None:
    print()
    print("=" * len(title))
    print(title)
    print("=" * len(title))
    global _load_at_start
    load = _load_at_start = os.getloadavg()[0]
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPU(s), 1-min load average {load:.2f} (other work on the machine makes the numbers noisy)"
    )


def write_summary(argv: Sequence[str], summary: dict[str, object]) -> None:
    """`--json PATH` (used by run_all.py): write this benchmark's headline numbers there."""
    if "--json" in argv:
        path = Path(argv[list(argv).index("--json") + 1])
        loads = {"load_1min_start": _load_at_start, "load_1min_end": os.getloadavg()[0]}
        path.write_text(json.dumps({**summary, **loads}, indent=2), encoding="utf-8")


def int_option(argv: Sequence[str], name: str, default: int) -> int:
    if name in argv:
        return int(argv[list(argv).index(name) + 1])
    return default
