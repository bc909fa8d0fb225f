"""bench_stdio.py's raw NDJSON client: `tools/call add` round trips to a stdio server with next to no client cost
(pre-encoded frames on a blocking pipe, one orjson.loads per answer), so a sample is the server and the pipe.

Eras: legacy (2025-11-25: `initialize` + `notifications/initialized` first, then plain requests) and modern
(2026-07-28: no initialize; every request carries `_meta` with protocolVersion, clientCapabilities, clientInfo).
In flight: 1 (sequential: write, read the answer, next) or N (pipelined: N requests written first, then a new one
written as each answer arrives, so N are always in flight; answers matched by id, latency per request).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

try:  # the answers are read with orjson where it is installed (mcpgen-runtime depends on it): the cheapest client
    import orjson
except ImportError:
    orjson = None

LEGACY, MODERN = "2025-11-25", "2026-07-28"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}

# latencies (s) of the timed calls, client CPU (0: not measured), wall time of the timed part (None: sequential)
Run = tuple[list[float], float, float | None]


def frame(era: str, request_id: int, a: int) -> bytes:
    """The request ``request_id`` (``add`` of ``a`` and 1) in ``era``, filled into the era's pre-encoded text: a
    few hundred nanoseconds, the same for both eras (json.dumps of the request cost the client 2-3 us more for a
    modern request than for a legacy one, which a sequential round trip counted as the server's)."""
    return _FRAMES[era] % (request_id, a)


def _encoded(era: str) -> bytes:
    params: dict[str, Any] = {"name": "add", "arguments": {"a": -1, "b": 1}}
    if era == MODERN:
        params["_meta"] = MODERN_META
    text = json.dumps({"jsonrpc": "2.0", "id": -2, "method": "tools/call", "params": params}, separators=(",", ":"))
    return text.replace("%", "%%").replace('"id":-2', '"id":%d').replace('"a":-1', '"a":%d').encode() + b"\n"


_FRAMES = {era: _encoded(era) for era in (LEGACY, MODERN)}
_loads: Callable[[bytes], Any] = json.loads if orjson is None else orjson.loads


def measure_raw(script: str, calls: int, era: str, in_flight: int = 1, warmup: int = 200) -> Run:
    """``warmup`` then ``calls`` round trips to the stdio server ``script`` (era ``era``, ``in_flight`` at a time);
    every answer is checked (id and sum)."""
    process = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert process.stdin is not None and process.stdout is not None
    # bufsize=0 keeps the writes unbuffered (each request leaves at once); the answers are read through a buffer of
    # their own: an unbuffered readline() is one read system call per byte, which made the client, not the server,
    # the bottleneck and its cost grow with the answer's length (a modern answer is about twice a legacy one).
    writer, reader = process.stdin, open(process.stdout.fileno(), "rb", buffering=1 << 16, closefd=False)
    try:
        if era == LEGACY:
            init = {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
            writer.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode())
            writer.write(b"\n")
            assert "result" in json.loads(reader.readline())
            writer.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        total = warmup + calls
        sent: dict[int, float] = {}
        latencies: list[float] = []
        next_id, answered, wall_start = 1, 0, 0.0

        def send() -> None:
            nonlocal next_id
            data = frame(era, next_id, next_id)
            sent[next_id] = time.perf_counter()
            writer.write(data)
            next_id += 1

        for _ in range(min(in_flight, total)):
            send()
        while answered < total:
            answer = _loads(reader.readline())
            now = time.perf_counter()
            request_id = answer["id"]
            assert answer["result"]["content"][0]["text"] == str(request_id + 1), answer
            started = sent.pop(request_id)
            answered += 1
            if request_id > warmup:
                latencies.append(now - started)
            if answered == warmup:
                wall_start = now  # the timed part starts with the last warm-up answer
            if next_id <= total:
                send()
        wall = time.perf_counter() - wall_start
        return latencies, 0.0, wall if in_flight > 1 else None
    finally:
        writer.close()
        reader.close()
        process.wait(timeout=10)


def serves_modern(script: str) -> tuple[bool, str]:
    """Whether the stdio server ``script`` answers a 2026-07-28 request (no initialize) with a 2026-07-28 result
    (`resultType`); and the first answer, to show when it does not."""
    process = subprocess.Popen([sys.executable, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(frame(MODERN, 1, 2))
        answer = json.loads(process.stdout.readline())
    finally:
        process.stdin.close()
        process.wait(timeout=10)
    result = answer.get("result") or {}
    ok = result.get("resultType") == "complete" and (result.get("content") or [{}])[0].get("text") == "3"
    return ok, json.dumps(answer)[:300]
