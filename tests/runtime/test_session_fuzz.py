"""Fuzzing mcpgen_runtime.jsonrpc.session (the server side) with arbitrary bytes, arbitrary JSON and mutated JSON-RPC
frames.

Every frame is checked against an independent oracle (a table of the JSON-RPC 2.0 rules below): a frame that must be
answered gets exactly one well-formed response with the right id and error code (or the right result), a frame that
must not be answered gets nothing, and after every example a ping still works.

``MCPGEN_FUZZ_FRAMES`` (default 10,000) sets how many frames one run sends; ``nox`` can raise it for a long soak.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair

FRAMES = int(os.environ.get("MCPGEN_FUZZ_FRAMES", "10000"))
FRAMES_PER_EXAMPLE = 20
SEEDS_PER_EXAMPLE = 4

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
METHODS = ["echo", "boom", "fail", "ping", "tools/call", "notifications/cancelled", "notifications/progress", ""]


async def fuzz_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    if method == "echo":
        return {"echo": params}
    if method == "boom":
        raise ZeroDivisionError("internal detail")
    if method == "fail":
        raise JSONRPCError(INVALID_PARAMS, "bad params", {"got": params})
    raise MethodNotFound(method)


# -- the oracle ------------------------------------------------------------------------------------------------------

# An expected answer: ("result", id, result) or ("error", id, code). None: no answer.
Expected = tuple[str, Any, Any]


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _parse(frame: bytes) -> tuple[bool, Any]:
    """RFC 8259 JSON in UTF-8; numbers must be finite doubles (NaN/Infinity literals and 1e400 are not accepted)."""

    def no_constants(name: str) -> Any:
        raise ValueError(name)

    def finite(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            raise ValueError(text)
        return value

    try:
        return True, json.loads(frame.decode("utf-8"), parse_constant=no_constants, parse_float=finite)
    except (ValueError, RecursionError):
        return False, None


@dataclass
class _BatchState:
    accepted: dict[Any, int] = field(default_factory=dict)  # request id -> index of its expectation


def _expect_one(value: Any, state: _BatchState, expectations: list[Expected | None]) -> None:
    """Append what one message must produce; ``state`` carries in-flight ids across one frame (or batch)."""
    usable_id = value.get("id") if isinstance(value, dict) and _is_id(value.get("id")) else None
    if not isinstance(value, dict):
        expectations.append(("error", None, INVALID_REQUEST))
        return
    if "method" not in value and ("result" in value or "error" in value):
        expectations.append(None)  # a response (valid or not) is never answered
        return
    method, params = value.get("method"), value.get("params")
    if (
        value.get("jsonrpc") != "2.0"
        or not isinstance(method, str)
        or ("id" in value and usable_id is None)
        or ("params" in value and not isinstance(params, dict | list))
    ):
        expectations.append(("error", usable_id, INVALID_REQUEST))
        return
    if "id" not in value:  # a notification
        if method == "notifications/cancelled" and isinstance(params, dict) and _is_id(params.get("requestId")):
            index = state.accepted.pop(params["requestId"], None)  # and the id is free again
            if index is not None:
                expectations[index] = None  # cancelled before it ran: no response, per MCP
        expectations.append(None)
        return
    if usable_id in state.accepted:
        expectations.append(("error", usable_id, INVALID_REQUEST))  # duplicate of a request still in flight
        return
    state.accepted[usable_id] = len(expectations)
    if method == "ping":
        expectations.append(("result", usable_id, {}))
    elif method == "echo":
        expectations.append(("result", usable_id, {"echo": params}))
    elif method == "boom":
        expectations.append(("error", usable_id, INTERNAL_ERROR))
    elif method == "fail":
        expectations.append(("error", usable_id, INVALID_PARAMS))
    else:
        expectations.append(("error", usable_id, METHOD_NOT_FOUND))


def expected_answer(frame: bytes, allow_batches: bool) -> Expected | list[Expected] | None:
    """What the session must send back for ``frame``: one response, a batch of responses, or nothing."""
    ok, value = _parse(frame)
    if not ok:
        return ("error", None, PARSE_ERROR)
    if isinstance(value, list):
        if not value or not allow_batches:
            return ("error", None, INVALID_REQUEST)
        expectations: list[Expected | None] = []
        state = _BatchState()
        for item in value:
            _expect_one(item, state, expectations)
        answers = [expectation for expectation in expectations if expectation is not None]
        return answers or None
    expectations = []
    _expect_one(value, _BatchState(), expectations)
    return expectations[0]


def _normalize(response: Any) -> Expected:
    """Check one response's shape and reduce it to the oracle's form."""
    assert isinstance(response, dict), response
    assert response.get("jsonrpc") == "2.0", response
    assert set(response) in ({"jsonrpc", "id", "result"}, {"jsonrpc", "id", "error"}), response
    assert response["id"] is None or _is_id(response["id"]), response
    if "result" in response:
        assert isinstance(response["result"], dict), response
        return ("result", response["id"], response["result"])
    error = response["error"]
    assert isinstance(error, dict) and set(error) <= {"code", "message", "data"}, response
    assert isinstance(error["code"], int) and isinstance(error["message"], str), response
    assert "internal detail" not in error["message"], response  # handler exception text never leaks
    return ("error", response["id"], error["code"])


def _key(expected: Expected) -> str:
    # Sortable and exact (1 vs "1" vs 1.0 stay different).
    return json.dumps(expected, sort_keys=True)


# -- the strategies --------------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)
# A small id pool makes duplicate ids and matching cancellations likely.
ids: st.SearchStrategy[Any] = (
    st.sampled_from([1, 2, "a", "1", 0, -7, None, True, 1.5, [], {}]) | st.integers() | st.text(max_size=6)
)
methods = st.one_of(st.sampled_from(METHODS), st.sampled_from(METHODS), st.text(max_size=10), json_scalars)
params = st.dictionaries(st.text(max_size=6), json_values, max_size=3) | st.lists(json_values, max_size=3) | json_values


@st.composite
def message_dicts(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["request", "request", "notification", "cancel", "response", "error"]))
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        if kind == "request":
            message["id"] = draw(ids)
        message["method"] = draw(methods)
        if draw(st.booleans()):
            message["params"] = draw(params)
    elif kind == "cancel":
        message["method"] = "notifications/cancelled"
        message["params"] = {"requestId": draw(ids), "reason": "fuzz"}
    elif kind == "response":
        message["id"] = draw(ids)
        message["result"] = draw(json_values)
    else:
        message["id"] = draw(ids)
        message["error"] = {"code": draw(st.integers(-32800, -32000)), "message": draw(st.text(max_size=8))}
    # Near-valid: up to two small mutations of the envelope.
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        mutation = draw(st.sampled_from(["drop", "replace", "add", "jsonrpc"]))
        if mutation == "drop" and message:
            del message[draw(st.sampled_from(sorted(message)))]
        elif mutation == "replace" and message:
            message[draw(st.sampled_from(sorted(message)))] = draw(json_values)
        elif mutation == "add":
            message[draw(st.sampled_from(["id", "method", "params", "result", "error", "extra"]))] = draw(json_values)
        else:
            message["jsonrpc"] = draw(st.sampled_from(["1.0", "2", 2.0, 2, None, "2.0 "]))
    return message


@st.composite
def near_valid_frames(draw: st.DrawFn) -> bytes:
    value: Any = draw(message_dicts())
    if draw(st.integers(0, 5)) == 0:  # a batch, sometimes with junk elements
        value = draw(st.lists(message_dicts() | json_scalars, max_size=5))
    frame = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, None, 1]))).encode()
    if draw(st.integers(0, 7)) == 0:  # byte-level damage
        position = draw(st.integers(0, len(frame)))
        damage = draw(st.sampled_from(["truncate", "insert", "replace"]))
        if damage == "truncate":
            frame = frame[:position]
        elif damage == "insert":
            frame = frame[:position] + draw(st.binary(min_size=1, max_size=3)) + frame[position:]
        else:
            frame = frame[:position] + draw(st.binary(min_size=1, max_size=1)) + frame[position + 1 :]
    return frame


frames = st.one_of(
    near_valid_frames(),
    near_valid_frames(),
    st.binary(max_size=64),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.text(max_size=32).map(str.encode),
)


# -- bulk frames -----------------------------------------------------------------------------------------------------
# Hypothesis draws are the expensive part (tens of microseconds each, dozens per rich frame), so each example has a
# few frames drawn by Hypothesis ("seeds") and many more made by a seeded PRNG from fixed pools plus those seeds:
# cheap, deterministic for a given example (the seed is part of it), and weighted towards frames that get deep.

POOL_IDS: list[Any] = [1, 2, "a", "1", 0, -7, 2**53, "", None, True, 1.5, [], {}]
BATCH_IDS: list[Any] = [1, "a", 1, "a", 2]
POOL_VALUES: list[Any] = [None, True, 0, -1, 2**70, 1.5, -0.0, "", "2.0", "é\u2028", [], {}, [1, "a"], {"a": None}]
POOL_PARAMS: list[Any] = [{}, {"a": 1}, [1, 2], {"nested": {"x": [1, {"y": "z"}]}}, {"_meta": {"progressToken": 1}}]


def _cheap_message(rnd: random.Random, ids: list[Any] = POOL_IDS) -> dict[str, Any]:
    roll = rnd.random()
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if roll < 0.6:
        message["id"] = rnd.choice(ids[:8]) if rnd.random() < 0.9 else rnd.choice(ids)
        message["method"] = rnd.choice(METHODS)
    elif roll < 0.7:
        message["method"] = rnd.choice(METHODS)
    elif roll < 0.8:
        message["method"] = "notifications/cancelled"
        message["params"] = {"requestId": rnd.choice(ids)}
    elif roll < 0.9:
        message["id"] = rnd.choice(POOL_IDS)
        message["result"] = rnd.choice(POOL_VALUES)
    else:
        message["id"] = rnd.choice(POOL_IDS)
        message["error"] = {"code": rnd.choice([-32600, -32603, 1]), "message": rnd.choice(["x", 1])}
    if "method" in message and "params" not in message and rnd.random() < 0.5:
        message["params"] = rnd.choice(POOL_PARAMS)
    for _ in range(rnd.choice([0, 0, 0, 1, 2])):
        keys = sorted(message)
        mutation = rnd.randrange(4)
        if mutation == 0 and keys:
            del message[rnd.choice(keys)]
        elif mutation == 1 and keys:
            message[rnd.choice(keys)] = rnd.choice(POOL_VALUES)
        elif mutation == 2:
            message[rnd.choice(["id", "method", "params", "result", "error", "x"])] = rnd.choice(POOL_VALUES)
        else:
            message["jsonrpc"] = rnd.choice(["1.0", "2", 2.0, None])
    return message


def _damage(rnd: random.Random, frame: bytes) -> bytes:
    position = rnd.randint(0, len(frame))
    damage = rnd.randrange(4)
    if damage == 0:
        return frame[:position]
    if damage == 1:
        return frame[:position] + bytes([rnd.randrange(256)]) + frame[position:]
    if damage == 2:
        return frame[:position] + bytes([rnd.randrange(256)]) + frame[position + 1 :]
    return frame[:position] + frame[position // 2 :]  # a repeated slice


def cheap_frame(rnd: random.Random, seeds: list[bytes]) -> bytes:
    roll = rnd.random()
    if roll < 0.1 and seeds:
        return _damage(rnd, rnd.choice(seeds))
    if roll < 0.8:
        value: Any = _cheap_message(rnd)
    else:
        # Batches draw ids from a tiny pool, so duplicates and cancellations of earlier elements are common.
        value = [_cheap_message(rnd, BATCH_IDS) for _ in range(rnd.randint(0, 5))]
    frame = json.dumps(value, ensure_ascii=rnd.random() < 0.5).encode()
    return _damage(rnd, frame) if rnd.random() < 0.1 else frame


# -- the driver ------------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    frames: int = 0
    answered: int = 0
    silent: int = 0
    batches: int = 0
    results: int = 0
    codes: Counter[int] = field(default_factory=Counter)


async def drive(batch: list[bytes], allow_batches: bool, tally: Tally) -> None:
    server_end, peer = memory_stream_pair()
    with anyio.fail_after(10):
        async with Session(server_end, request_handler=fuzz_handler, allow_batches=allow_batches):
            for frame in batch:
                expected = expected_answer(frame, allow_batches)
                await peer.send(frame)
                tally.frames += 1
                if expected is None:
                    tally.silent += 1
                    continue
                answer = json.loads(await peer.receive())
                tally.answered += 1
                if isinstance(expected, list):
                    assert isinstance(answer, list), (frame, answer)
                    got = sorted(_key(_normalize(item)) for item in answer)
                    assert got == sorted(_key(item) for item in expected), (frame, answer, expected)
                    tally.batches += 1
                else:
                    got_one = _normalize(answer)
                    assert _key(got_one) == _key(expected), (frame, answer, expected)
                    if got_one[0] == "result":
                        tally.results += 1
                    else:
                        tally.codes[got_one[2]] += 1
            # Nothing extra was sent for any frame, and the session still serves.
            await peer.send(b'{"jsonrpc":"2.0","id":"final-ping","method":"ping"}')
            assert json.loads(await peer.receive()) == {"jsonrpc": "2.0", "id": "final-ping", "result": {}}


def test_session_fuzz_every_frame_gets_exactly_the_answer_it_needs() -> None:
    tally = Tally()
    # Thousands of deliberate handler failures and malformed frames would be logged otherwise; logging is not what
    # this test is about, and formatting those records would take most of its time.
    session_logger = logging.getLogger("mcpgen_runtime.jsonrpc.session")
    saved_level, session_logger.level = session_logger.level, logging.CRITICAL

    @settings(
        max_examples=math.ceil(FRAMES / FRAMES_PER_EXAMPLE),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        allow_batches=st.booleans(),
        seeds=st.lists(frames, min_size=SEEDS_PER_EXAMPLE, max_size=SEEDS_PER_EXAMPLE),
        seed=st.integers(0, 2**32 - 1),
    )
    def run(allow_batches: bool, seeds: list[bytes], seed: int) -> None:
        rnd = random.Random(seed)
        batch = seeds + [cheap_frame(rnd, seeds) for _ in range(FRAMES_PER_EXAMPLE - SEEDS_PER_EXAMPLE)]
        rnd.shuffle(batch)
        anyio.run(drive, batch, allow_batches, tally, backend="asyncio")

    try:
        run()
    finally:
        session_logger.setLevel(saved_level)
    assert tally.frames >= FRAMES, tally
    # The oracle must not be vacuous: every kind of outcome happened, and not just a handful of times.
    assert min(tally.answered, tally.silent, tally.batches, tally.results) >= FRAMES // 100, tally
    for code in (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR):
        assert tally.codes[code] >= FRAMES // 200, tally
