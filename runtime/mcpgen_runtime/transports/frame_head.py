"""Reading the head of a JSON-RPC frame that may not parse: its top-level ``id`` and whether it is a request or an
answer, read up to the first ``method``, ``result`` or ``error`` key.

Where it sits: in the ``transports`` layer, pure functions over bytes (no I/O). Used by ``answer_guard`` (which
requests a frame answers) and ``undeliverable`` (whom damaged JSON was meant for): the one way to recover the id of
a response whose ``result`` is damaged is to read its ``id`` member before the damage.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from ..jsonrpc.envelopes import RequestId, is_request_id

__all__ = ["ANSWER_KEYS", "Head", "scan_head"]

# The members that make an object an answer (a response or an error response).
ANSWER_KEYS: Final = frozenset({"result", "error"})
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_HEAD_BYTES: Final = 65536


@dataclass(slots=True)
class Head:
    """The top-level members at the start of a JSON object, read up to the first ``method``, ``result`` or
    ``error`` key (whose value is not read) or the first damage."""

    id: RequestId | None = None  # a usable id member (string or integer)
    method: str | None = None  # the method name, when a "method" key came first
    is_request: bool = False  # a "method" key came before any result/error key: a request or a notification
    is_answer: bool = False  # a "result" or "error" key came before any method key
    complete: bool = False  # the whole object was read (and nothing but whitespace follows it)
    broken: bool = False  # the JSON is damaged before any of the above was decided


def scan_head(data: bytes | str) -> Head | None:
    """Read the top-level members of a frame that starts as a JSON object, without parsing what follows the first
    ``method``/``result``/``error`` key; None when the frame is not an object at all (a batch, or garbage).

    Cheap for well-formed messages (their envelope keys come first), and the one way to recover the id of a
    response whose ``result`` is damaged: an ``id`` member at the top level, before the damage, is that message's id.
    """
    if isinstance(data, bytes) and len(data) > _HEAD_BYTES:
        # The envelope keys come first in practice: read a prefix, and the whole frame only when the cut may matter.
        head = _scan(data[:_HEAD_BYTES].decode("utf-8", errors="replace"))
        if head is None or not (head.broken or head.complete):
            return head
    return _scan(data if isinstance(data, str) else data.decode("utf-8", errors="replace"))


def _scan(text: str) -> Head | None:
    end = len(text)
    position = _skip(text, 0)
    if position >= end or text[position] != "{":
        return None
    head = Head()
    position += 1
    first = True
    while True:
        position = _skip(text, position)
        if position < end and text[position] == "}" and first:
            head.complete = _skip(text, position + 1) == end
            head.broken = not head.complete
            return head
        try:
            key, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            head.broken = True
            return head
        position = _skip(text, position)
        if not isinstance(key, str) or position >= end or text[position] != ":":
            head.broken = True
            return head
        position = _skip(text, position + 1)
        if key in ANSWER_KEYS:
            head.is_answer = True
            return head
        try:
            value, position = _DECODER.raw_decode(text, position)
        except (ValueError, RecursionError):
            head.is_request = key == "method"
            head.broken = True
            return head
        if key == "method":
            head.is_request = True
            head.method = value if isinstance(value, str) else None
            return head
        if key == "id":
            head.id = value if is_request_id(value) else None
        position = _skip(text, position)
        if position < end and text[position] == ",":
            position += 1
            first = False
            continue
        if position < end and text[position] == "}":
            head.complete = _skip(text, position + 1) == end
            head.broken = not head.complete
            return head
        head.broken = True
        return head


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position
