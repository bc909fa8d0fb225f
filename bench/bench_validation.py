"""Parsing a 10,000-frame MCP 2025-11-25 stream into typed objects: mcp_bindings versus mcp-types.

The stream (built once, deterministic) repeats a 10-frame cycle, each frame one JSON-RPC message as bytes:
  1 initialize request, 1 tools/list result carrying 50 tools, 4 tools/call requests, 4 tools/call results.
A client knows which method a response answers from the id of the request it sent, so both sides get the same
id -> method table (`pending`) for results.

Paths compared (each frame ends as a typed request or result object, envelope checked):
  mcpgen "decode once" (headline): pydantic_core.from_json(frame) once, then dispatch on shape exactly as
      parse_message does ("method"+"id" = request, else "error" = error, else result):
      - requests: parse_client_request(payload). Our request classes carry `jsonrpc` and `id` themselves, so this
        one validation checks the envelope and the typed body together (discriminated on `method`);
      - results:  parse_message(payload) for the envelope (JSONRPCResultResponse; its `result` is the open
        `Result`, whose extra keys are kept as-is, so it is shallow), then parse_result(method, payload["result"]).
      Validating the frame *bytes* with parse_client_request(frame) would skip the Python dict, but a mixed stream
      has to be looked at before one knows a frame is a request, so that path is not a correct general parser;
      its speed is printed as an aside ("requests only").
  mcpgen "parse_message first": parse_message(frame) on the bytes, then parse_client_request(payload dict again
      via from_json) / parse_result: the literal reading of the API, decoding each frame twice.
  mcp-types "documented": jsonrpc_message_adapter.validate_json(frame), then for requests
      client_request_adapter.validate_python({"method", "params"}) and for results
      TypeAdapter(MONOLITH_RESULTS[method]).validate_python(message.result) (adapters built once, up front).
  mcp-types "decode once": from_json(frame) then jsonrpc_message_adapter.validate_python(payload), same second step.

The headline compares the fastest mcpgen path with the fastest mcp-types path. Every path runs over the whole stream
once as warm-up (schemas built, caches filled) and is checked there, outside the timing: every output must be an
instance of the expected class, and both libraries must agree on method and id for every frame.
Timed passes interleave the paths; gc is disabled during a pass; the median pass is reported.
Target: mcpgen >= 1.5x the messages per second of mcp-types.

    .venv/bin/python bench/bench_validation.py [--repeat N] [--messages N] [--json PATH]
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import banner, int_option, median, spread, table, verdict, write_summary
from mcp_types import jsonrpc as mt_jsonrpc
from mcp_types import methods as mt_methods
from mcp_types._types import client_request_adapter
from pydantic import TypeAdapter
from pydantic_core import from_json

import mcp_bindings.v2025_11_25 as mb

TARGET_RATIO = 1.5
TOOLS_PER_LIST = 50


def make_tool(i: int) -> dict[str, Any]:
    return {
        "name": f"tool_{i}",
        "title": f"Tool {i}",
        "description": f"Reads up to `limit` lines of a file (tool number {i}) and returns them as structured content.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "absolute path of the file"},
                "limit": {"type": "integer", "minimum": 1, "description": "how many lines"},
                "encoding": {"type": "string", "enum": ["utf-8", "latin-1"]},
            },
            "required": ["path"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"lines": {"type": "array", "items": {"type": "string"}}},
            "required": ["lines"],
        },
        "annotations": {"title": f"Tool {i}", "readOnlyHint": True, "openWorldHint": False},
    }


def make_stream(count: int) -> tuple[list[bytes], dict[int, str]]:
    tools = [make_tool(i) for i in range(TOOLS_PER_LIST)]
    frames: list[bytes] = []
    pending: dict[int, str] = {}
    next_id = 1
    while len(frames) < count:
        cycle: list[dict[str, Any]] = [
            {
                "jsonrpc": "2.0",
                "id": next_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}},
                    "clientInfo": {"name": "bench-client", "title": "Bench client", "version": "1.0.0"},
                },
            },
            {"jsonrpc": "2.0", "id": next_id + 1, "result": {"tools": tools, "nextCursor": f"page-{next_id}"}},
        ]
        pending[next_id + 1] = "tools/list"
        for k in range(4):
            call_id = next_id + 2 + k
            cycle.append(
                {
                    "jsonrpc": "2.0",
                    "id": call_id,
                    "method": "tools/call",
                    "params": {
                        "name": f"tool_{call_id % TOOLS_PER_LIST}",
                        "arguments": {"path": f"/srv/data/{call_id}.txt", "limit": 20},
                        "_meta": {"progressToken": call_id},
                    },
                }
            )
        for k in range(4):
            call_id = next_id + 2 + k
            pending[call_id] = "tools/call"
            cycle.append(
                {
                    "jsonrpc": "2.0",
                    "id": call_id,
                    "result": {
                        "content": [{"type": "text", "text": f"line one of {call_id}\nline two"}],
                        "structuredContent": {"lines": [f"line one of {call_id}", "line two"]},
                        "isError": False,
                    },
                }
            )
        frames.extend(json.dumps(message, separators=(",", ":")).encode() for message in cycle)
        next_id += 6
    return frames[:count], pending


# --- mcpgen (mcp_bindings) ---------------------------------------------------------------------------------------


def ours_decode_once(frames: list[bytes], pending: dict[int, str]) -> list[Any]:
    parse_client_request, parse_message, parse_result = mb.parse_client_request, mb.parse_message, mb.parse_result
    out = []
    for frame in frames:
        payload = from_json(frame)
        if "method" in payload and "id" in payload:
            out.append(parse_client_request(payload))  # envelope + typed body in one validation
        else:
            envelope = parse_message(payload)  # JSONRPCResultResponse, shallow
            out.append(parse_result(pending[envelope.id], payload["result"]))
    return out


def ours_parse_message_first(frames: list[bytes], pending: dict[int, str]) -> list[Any]:
    parse_client_request, parse_message, parse_result = mb.parse_client_request, mb.parse_message, mb.parse_result
    request_type = mb.JSONRPCRequest
    out = []
    for frame in frames:
        message = parse_message(frame)
        payload = from_json(frame)
        if isinstance(message, request_type):
            out.append(parse_client_request(payload))
        else:
            out.append(parse_result(pending[message.id], payload["result"]))
    return out


# --- mcp-types ---------------------------------------------------------------------------------------------------

RESULT_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    method: TypeAdapter(mt_methods.MONOLITH_RESULTS[method]) for method in ("tools/list", "tools/call")
}


def _theirs_second_step(message: Any, pending: dict[int, str], out: list[Any]) -> None:
    if isinstance(message, mt_jsonrpc.JSONRPCRequest):
        body = (
            {"method": message.method}
            if message.params is None
            else {"method": message.method, "params": message.params}
        )
        out.append(client_request_adapter.validate_python(body))
    else:
        out.append(RESULT_ADAPTERS[pending[message.id]].validate_python(message.result))


def theirs_documented(frames: list[bytes], pending: dict[int, str]) -> list[Any]:
    validate_json = mt_jsonrpc.jsonrpc_message_adapter.validate_json
    out: list[Any] = []
    for frame in frames:
        _theirs_second_step(validate_json(frame), pending, out)
    return out


def theirs_decode_once(frames: list[bytes], pending: dict[int, str]) -> list[Any]:
    validate_python = mt_jsonrpc.jsonrpc_message_adapter.validate_python
    out: list[Any] = []
    for frame in frames:
        _theirs_second_step(validate_python(from_json(frame)), pending, out)
    return out


# --- checks and timing -------------------------------------------------------------------------------------------

EXPECTED_OURS = {"initialize": mb.InitializeRequest, "tools/call": mb.CallToolRequest}
EXPECTED_THEIRS = {"initialize": "InitializeRequest", "tools/call": "CallToolRequest"}


def check(frames: list[bytes], pending: dict[int, str], ours: list[Any], theirs: list[Any], label: str) -> None:
    import mcp_types

    assert len(ours) == len(theirs) == len(frames), label
    for frame, a, b in zip(frames, ours, theirs, strict=True):
        payload = json.loads(frame)
        if "method" in payload:
            method = payload["method"]
            assert isinstance(a, EXPECTED_OURS[method]), (label, type(a))
            assert isinstance(b, getattr(mcp_types, EXPECTED_THEIRS[method])), (label, type(b))
            assert a.id == payload["id"] and a.method == b.method == method, label
        elif pending[payload["id"]] == "tools/list":
            assert isinstance(a, mb.ListToolsResult) and isinstance(b, mcp_types.ListToolsResult), label
            assert isinstance(a.tools[0], mb.Tool) and isinstance(b.tools[0], mcp_types.Tool), label
            assert len(a.tools) == len(b.tools) == TOOLS_PER_LIST, label
            assert [t.name for t in a.tools] == [t.name for t in b.tools], label
        else:
            assert isinstance(a, mb.CallToolResult) and isinstance(b, mcp_types.CallToolResult), (
                label,
                type(a),
                type(b),
            )
            assert isinstance(a.content[0], mb.TextContent) and isinstance(b.content[0], mcp_types.TextContent), label
            assert a.content[0].text == b.content[0].text, label


def timed(
    fn: Callable[[list[bytes], dict[int, str]], list[Any]], frames: list[bytes], pending: dict[int, str]
) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn(frames, pending)
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(argv: list[str]) -> dict[str, object]:
    repeat = int_option(argv, "--repeat", 5)
    count = int_option(argv, "--messages", 10_000)
    frames, pending = make_stream(count)
    size = sum(len(f) for f in frames)
    banner(f"bench_validation: {count} MCP 2025-11-25 frames ({size / 1e6:.1f} MB), median of {repeat} passes")
    kinds = {"initialize": 0, "tools/call request": 0, "tools/list result": 0, "tools/call result": 0}
    for frame in frames:
        payload = json.loads(frame)
        key = f"{payload['method']} request" if "method" in payload else f"{pending[payload['id']]} result"
        kinds[key.replace("initialize request", "initialize")] += 1
    print("stream: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) + f" ({TOOLS_PER_LIST} tools per list)")

    paths: dict[str, Callable[[list[bytes], dict[int, str]], list[Any]]] = {
        "mcpgen: decode once": ours_decode_once,
        "mcpgen: parse_message first": ours_parse_message_first,
        "mcp-types: documented (validate_json)": theirs_documented,
        "mcp-types: decode once": theirs_decode_once,
    }
    outputs = {name: fn(frames, pending) for name, fn in paths.items()}  # warm-up, outside the timing
    for name in ("mcpgen: decode once", "mcpgen: parse_message first"):
        for other in ("mcp-types: documented (validate_json)", "mcp-types: decode once"):
            check(frames, pending, outputs[name], outputs[other], f"{name} / {other}")
    del outputs
    print("checked: every frame parsed to the expected typed class on every path; both libraries agree.")

    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name, fn in paths.items():
            times[name].append(timed(fn, frames, pending))

    # aside: frames already known to be requests, validated straight from bytes (not a general stream parser)
    request_frames = [f for f in frames if "method" in json.loads(f)]
    parse_client_request = mb.parse_client_request
    validate_json = mt_jsonrpc.jsonrpc_message_adapter.validate_json
    aside: dict[str, list[float]] = {"ours": [], "theirs": []}
    for _ in range(repeat):
        aside["ours"].append(timed(lambda fs, _p: [parse_client_request(f) for f in fs], request_frames, pending))
        aside["theirs"].append(
            timed(
                lambda fs, _p: [_theirs_second_step(validate_json(f), pending, []) for f in fs], request_frames, pending
            )
        )

    rows = []
    for name, values in times.items():
        rows.append((name, f"{median(values):.3f}", spread(values), f"{count / median(values):,.0f}"))
    print()
    print(table(["path", "median s", "min..max s", "msg/s"], rows))

    ours_name = min(("mcpgen: decode once", "mcpgen: parse_message first"), key=lambda n: median(times[n]))
    theirs_name = min(
        ("mcp-types: documented (validate_json)", "mcp-types: decode once"), key=lambda n: median(times[n])
    )
    ours_rate, theirs_rate = count / median(times[ours_name]), count / median(times[theirs_name])
    ratio = ours_rate / theirs_rate
    met = ratio >= TARGET_RATIO
    print()
    print(
        table(
            ["fastest mcpgen path", "msg/s", "fastest mcp-types path", "msg/s", "ratio", "target", "result"],
            [
                (
                    ours_name,
                    f"{ours_rate:,.0f}",
                    theirs_name,
                    f"{theirs_rate:,.0f}",
                    f"{ratio:.2f}x",
                    ">=1.5x",
                    verdict(met),
                )
            ],
        )
    )
    # Both fastest paths start with from_json(frame): that part no validation can win back, so it bounds the ratio.
    decode = [timed(lambda fs, _p: [from_json(f) for f in fs], frames, pending) for _ in range(repeat)]
    decode_s, theirs_s = median(decode), median(times[theirs_name])
    needed_s = theirs_s / TARGET_RATIO
    print(
        f"decoding alone (from_json, in both fastest paths) takes {decode_s:.3f} s of mcp-types' {theirs_s:.3f} s: "
        f"for {TARGET_RATIO}x, everything after it would have to take {max(needed_s - decode_s, 0):.3f} s on our "
        f"side (now {median(times[ours_name]) - decode_s:.3f} s; mcp-types {theirs_s - decode_s:.3f} s)"
    )
    n_req = len(request_frames)
    print(
        f"(aside, {n_req} request frames only, straight from bytes: parse_client_request(frame) "
        f"{n_req / median(aside['ours']):,.0f}/s vs mcp-types {n_req / median(aside['theirs']):,.0f}/s)"
    )
    summary: dict[str, object] = {
        "name": "validation",
        "ours_path": ours_name,
        "theirs_path": theirs_name,
        "ours_msgs_per_s": ours_rate,
        "theirs_msgs_per_s": theirs_rate,
        "ratio": ratio,
        "met": met,
        "all_paths_median_s": {name: median(values) for name, values in times.items()},
        "decode_only_s": decode_s,
    }
    write_summary(argv, summary)
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
