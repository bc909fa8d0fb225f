"""orjson reads and writes the frames (``jsonrpc/envelopes.py``, issue 22), and json stays the judge wherever they
would differ: every frame decodes to the same value (types included), every error is the same, every answer is
the same bytes, with orjson and without it (PyPy, or a platform without its wheel). The one difference allowed is
the form of some floats (``1e16`` for ``1e+16``, ``0.00001`` for ``1e-05``): the same number."""

from __future__ import annotations

import enum
import json
import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from mcpgen_runtime.jsonrpc import envelopes
from mcpgen_runtime.jsonrpc.envelopes import Invalid, Request, decode_frame, encode_frame, strict_loads

pytestmark = pytest.mark.skipif(envelopes._orjson is None, reason="orjson is not installed (not CPython?)")

FRAMES: list[bytes] = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}',  # beyond 64 bits: json keeps it exact
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":-9223372036854775809,"m":18446744073709551616}}',
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\\ud800"}}',  # a lone surrogate escape: json reads it
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e400}}',  # overflows: refused
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":[NaN]}',  # not JSON: refused
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}',  # a duplicate key: the last wins
    b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"f":0.1,"g":-0.0,"h":1E2,"i":-0}}',
    b'{"jsonrpc":"2.0","id":"\xc3\xa9","method":"m"}',
    b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',  # not UTF-8: refused
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"m"}',  # a BOM: refused
    b'{"jsonrpc":"2.0","id":1,"method":"m",}',  # a trailing comma: refused
    b"[" * 5000 + b"]" * 5000,  # nested too deep for orjson: json decides
    b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]',
    b"  \n",
]

ANSWERS: list[Any] = [
    {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "3"}], "isError": False}},
    {"jsonrpc": "2.0", "id": 1, "result": {"text": 'é \u2028 "q" \\ \n \x00 😀', "n": [0, -1, 2.5, -0.0, 0.1]}},
    {"jsonrpc": "2.0", "id": 10**30, "result": {}},  # beyond 64 bits: json writes it
    {"jsonrpc": "2.0", "id": 1, "result": {"lone": "\ud800"}},  # a lone surrogate: json's ASCII fallback
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},  # a null: json writes it
    {"jsonrpc": "2.0", "id": 1, "result": {1: "one"}},  # a key that is not a string: json writes it as "1"
    ({"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "method": "b", "params": [True, False]}),  # a tuple
]


@dataclass
class _Point:
    x: int


BAD_ANSWERS: list[Any] = [
    {"x": math.nan},
    {"x": math.inf},
    {"x": object()},
    {"x": b"bytes"},
    {"x": {1, 2}},
    {"x": _Point(1)},
    {"x": datetime(2026, 11, 27, tzinfo=UTC)},
]


def _outcome(call: Any, value: Any) -> Any:
    try:
        result = call(value)
    except Exception as exc:
        return type(exc).__name__
    return result


def _typed(value: Any) -> Any:
    """``value`` with the type of every scalar in it, so that 1 == 1.0 == True do not compare equal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(item) for item in value]
    if isinstance(value, Request):
        return ("Request", _typed(value.id), value.method, _typed(value.params))
    if isinstance(value, Invalid):
        return ("Invalid", value.code, value.message)
    return (type(value).__name__, repr(value))


def _both(monkeypatch: pytest.MonkeyPatch, run: Any) -> tuple[Any, Any]:
    with_orjson = run()
    with monkeypatch.context() as patch:
        patch.setattr(envelopes, "_orjson", None)
        without = run()
    return with_orjson, without


@pytest.mark.parametrize("frame", FRAMES, ids=range(len(FRAMES)))
def test_every_frame_decodes_as_json_decodes_it(monkeypatch: pytest.MonkeyPatch, frame: bytes) -> None:
    def run() -> Any:
        decoded = decode_frame(frame)
        items = decoded.items if isinstance(decoded, envelopes.Batch) else (decoded,)
        return [_typed(item) for item in items], _typed(_outcome(strict_loads, frame))

    with_orjson, without = _both(monkeypatch, run)
    assert with_orjson == without


def test_an_integer_beyond_64_bits_stays_an_exact_integer() -> None:
    decoded = decode_frame(FRAMES[1])
    assert isinstance(decoded, Request) and decoded.id == 123456789012345678901234567890


@pytest.mark.parametrize("answer", ANSWERS, ids=range(len(ANSWERS)))
def test_every_answer_is_written_as_json_writes_it(monkeypatch: pytest.MonkeyPatch, answer: Any) -> None:
    with_orjson, without = _both(monkeypatch, lambda: encode_frame(answer))
    assert with_orjson == without
    assert b"\n" not in with_orjson


@pytest.mark.parametrize("answer", BAD_ANSWERS, ids=range(len(BAD_ANSWERS)))
def test_what_json_refuses_is_refused_with_the_same_error(monkeypatch: pytest.MonkeyPatch, answer: Any) -> None:
    with_orjson, without = _both(monkeypatch, lambda: _outcome(encode_frame, answer))
    assert with_orjson == without
    assert with_orjson in ("TypeError", "ValueError")


def test_the_form_of_a_float_is_the_one_difference_and_the_same_number() -> None:
    message = {"x": [1e16, 1.5e300, 1e-5, 2.5e-10]}
    frame = encode_frame(message)
    assert frame == b'{"x":[1e16,1.5e300,0.00001,2.5e-10]}'
    assert json.loads(frame) == message


class _Color(enum.Enum):
    RED = "red"


def test_what_orjson_writes_beyond_json_is_documented() -> None:
    """A UUID and an Enum member are written (json refused them): the relaxation the changelog names."""
    value = uuid.UUID(int=1)
    assert encode_frame({"id": value}) == b'{"id":"%s"}' % str(value).encode()
    assert encode_frame({"color": _Color.RED}) == b'{"color":"red"}'
