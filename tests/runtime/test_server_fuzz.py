"""Fuzzing the typed MCP server (mcpgen_runtime.Server over a real Session) with near-valid MCP frames.

test_session_fuzz.py checks the JSON-RPC layer against an exact oracle; this one drives a whole MCP server, after a
real initialize in one of the four handshake versions, with mutated versions of every request it serves. The rules
every answer must keep:

- a frame that is a request (a JSON object with "jsonrpc": "2.0", a string or integer id and a string method) gets
  exactly one answer with its id: a result, or an error whose code is one of the codes MCP defines for bad input;
- nothing a client sends may produce -32603 (an internal error is a server bug, not the client's fault);
- after every frame a ping is still answered, so no frame crashed or hung the session.

MCPGEN_FUZZ_FRAMES (default 10,000) sets the number of fuzzed frames.
"""

from __future__ import annotations

import copy
import json
import os
import random
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpgen_runtime import Context, Server, memory_stream_pair

FRAMES = int(os.environ.get("MCPGEN_FUZZ_FRAMES", "10000"))
FRAMES_PER_EXAMPLE = 25
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
BAD_INPUT_CODES = {-32700, -32600, -32601, -32602, -32002}

VALID_REQUESTS: list[tuple[str, dict[str, Any] | None]] = [
    ("tools/list", None),
    ("tools/list", {"cursor": "x"}),
    ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
    ("tools/call", {"name": "greet", "arguments": {"name": "Ada"}}),
    ("resources/list", None),
    ("resources/templates/list", None),
    ("resources/read", {"uri": "notes://today"}),
    ("resources/read", {"uri": "notes://day/3"}),
    ("prompts/list", None),
    ("prompts/get", {"name": "summarize", "arguments": {"topic": "x"}}),
    (
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "topic", "value": "a"}},
    ),
    ("logging/setLevel", {"level": "debug"}),
    ("ping", None),
    ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
    ("server/discover", {}),
    ("tasks/list", {}),
]
ODD_VALUES: list[Any] = [None, True, 0, -1, 2**63, 1.5, "", "x" * 300, [], [1, "a"], {}, {"nested": {"deep": [None]}}]


def fuzz_server() -> Server:
    server = Server("fuzz", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def greet(name: str, context: Context) -> str:
        """Greet someone, logging it."""
        await context.info(f"greeting {name}")
        return f"hello {name}"

    @server.resource("notes://today")
    async def today() -> str:
        """Today's notes."""
        return "notes"

    @server.resource("notes://day/{day}")
    async def day(day: int) -> str:
        """The notes of a day."""
        return f"day {day}"

    @server.prompt()
    async def summarize(topic: str) -> str:
        """Summarize a topic."""
        return f"Summarize {topic}."

    @server.completion(argument="topic", prompt="summarize")
    async def topics(value: str) -> list[str]:
        return [t for t in ("alpha", "beta") if t.startswith(value)]

    return server


def odd_value(rnd: random.Random) -> Any:
    # A copy: the samples are mutable, and a later edit must never write into the shared list (or into itself).
    return copy.deepcopy(rnd.choice(ODD_VALUES))


def mutate(rnd: random.Random, message: dict[str, Any]) -> dict[str, Any] | list[Any] | Any:
    """One or two random edits of a valid request: the kind of frame a buggy or hostile client sends."""
    message = json.loads(json.dumps(message))
    for _ in range(rnd.randint(1, 2)):
        target: Any = message
        params = message.get("params")
        if isinstance(params, dict) and params and rnd.random() < 0.6:
            target = params
            inner = [v for v in params.values() if isinstance(v, dict)]
            if inner and rnd.random() < 0.5:
                target = rnd.choice(inner)
        keys = list(target) if isinstance(target, dict) else []
        action = rnd.randrange(6)
        if action == 0 and keys:
            del target[rnd.choice(keys)]
        elif action in (1, 2) and keys:
            target[rnd.choice(keys)] = odd_value(rnd)
        elif action == 3 and isinstance(target, dict):
            target[rnd.choice(["extra", "_meta", "cursor", "name", "uri"])] = odd_value(rnd)
        elif action == 4:
            message["method"] = rnd.choice([m for m, _ in VALID_REQUESTS] + ["", "tools/", "nope", 7])
        else:
            message["id"] = rnd.choice([1, "s", None, 1.5, True, [], {}])
    return message


def frame_for(rnd: random.Random, index: int) -> bytes:
    method, params = rnd.choice(VALID_REQUESTS)
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 10_000 + index, "method": method}
    if params is not None:
        message["params"] = params
    roll = rnd.random()
    if roll < 0.15:
        return json.dumps(message).encode()  # valid: must work
    if roll < 0.9:
        return json.dumps(mutate(rnd, message)).encode()
    if roll < 0.95:
        return json.dumps(message).encode()[: rnd.randrange(1, 40)]  # truncated JSON
    return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 30)))


def request_id(frame: bytes) -> tuple[bool, Any]:
    """(True, id) when the frame is a JSON-RPC request, which must be answered exactly once with that id."""
    try:
        value = json.loads(frame)
    except ValueError:
        return False, None
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0" or not isinstance(value.get("method"), str):
        return False, None
    ident = value.get("id")
    ok = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
    return ok, ident


async def exchange(version: str, frames: list[bytes]) -> list[str]:
    """Serve one fuzzed connection; return the rule violations seen."""
    client_end, server_end = memory_stream_pair()
    problems: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(fuzz_server().serve_stream, server_end)
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        await client_end.send(
            json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init}).encode()
        )
        answer = json.loads(await client_end.receive())
        assert answer["result"]["protocolVersion"] == version, answer
        await client_end.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for index, frame in enumerate(frames):
            is_request, ident = request_id(frame)
            await client_end.send(frame)
            probe = f"probe-{index}"
            await client_end.send(json.dumps({"jsonrpc": "2.0", "id": probe, "method": "ping"}).encode())
            # Requests run concurrently, so the ping may be answered first: wait for both answers.
            waiting = {probe, ident} if is_request else {probe}
            answers = []
            try:
                with anyio.fail_after(5):
                    while waiting:
                        reply = json.loads(await client_end.receive())
                        if "method" in reply:
                            continue  # a notification (a log message): fine
                        waiting.discard(reply.get("id"))
                        if reply.get("id") != probe:
                            answers.append(reply)
            except TimeoutError:
                problems.append(f"{frame[:200]!r}: no answer within 5 s (waiting for {waiting})")
                break
            if is_request and sum(1 for a in answers if a.get("id") == ident) != 1:
                problems.append(f"{frame[:200]!r}: {answers} do not answer its id exactly once")
            for reply in answers:
                error = reply.get("error")
                if error is not None and error.get("code") not in BAD_INPUT_CODES:
                    problems.append(f"{frame[:200]!r}: answered with code {error.get('code')}: {error}")
                if error is None and not is_request:
                    problems.append(f"{frame[:200]!r}: a result for a frame that is not a request")
        await client_end.aclose()
        tg.cancel_scope.cancel()
    return problems


EXAMPLES = max(1, FRAMES // FRAMES_PER_EXAMPLE)


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), version=st.sampled_from(VERSIONS))
def test_the_server_answers_every_frame_and_keeps_serving(seed: int, version: str) -> None:
    rnd = random.Random(seed)
    frames = [frame_for(rnd, index) for index in range(FRAMES_PER_EXAMPLE)]
    problems = anyio.run(exchange, version, frames)
    assert not problems, "\n".join(problems[:10])
