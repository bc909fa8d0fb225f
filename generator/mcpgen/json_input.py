"""Reading JSON that mcpgen did not write: the vendored schemas, the manifest, patches, fetched files.

Pipeline position: under stage 1 (spec_loader, patches) and under `mcpgen spec fetch` (spec_fetch): the one
place where outside bytes become Python data.

`json.loads` alone turns some hostile inputs into tracebacks instead of JSONDecodeError, or into data that
breaks a later stage:

- nesting deeper than the interpreter's recursion limit raises RecursionError, and nesting far below it
  still breaks later stages: the parser, views and black recurse per level, and CPython refuses source
  with more than 200 nested brackets, so a schema nested ~250 deep generates code that does not import;
- an integer longer than `sys.get_int_max_str_digits()` raises ValueError;
- bytes that are not UTF-8 raise UnicodeDecodeError, and a lone surrogate escape (`"\\ud800"`) decodes
  but cannot be written back as UTF-8;
- `NaN`, `Infinity` and numbers like `1e400` are accepted, and print as undefined names in Python.

`parse_json` refuses all of these with a `JsonInputError` that carries the JSON pointer of the offending
spot: a scan of the tokens runs first, so `json.loads` only ever sees shallow, well-formed numbers.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from .errors import SpecError, join_pointer

# The official schemas nest at most 12 levels (objects and arrays); 64 leaves a five-fold margin and stays
# well below where later stages break: `items`, `additionalProperties`, `anyOf` and `properties` each nested
# 120 deep still generate code that imports; `items` 250 deep does not, `additionalProperties` 250 deep
# overflows black.
MAX_NESTING = 64

# A string (escapes included), one structural character, or a bare word (number, literal, or garbage that
# json.loads will refuse). ':' and whitespace are skipped: the scan needs nesting and keys, not the grammar.
# An unterminated string runs to the end of the text: were it no match, the search would restart at every
# later quote and rescan the rest each time (quadratic on `\"\"\"...`).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[{}\[\],]|[^\s"{}\[\],:]+', re.DOTALL)
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NOT_JSON_CONSTANTS = ("NaN", "Infinity", "-Infinity")


class JsonInputError(Exception):
    """The bytes are not JSON mcpgen accepts; `pointer` is where (RFC 6901, "" for the whole document)."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"#{pointer}: {message}")
        self.pointer = pointer
        self.message = message


class _Frame:
    """One open object or array during the scan: the key or index of the value being read."""

    __slots__ = ("expecting_key", "index", "is_object", "key")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.key = ""  # the raw string token, decoded only if an error needs the pointer
        self.index = 0
        self.expecting_key = is_object


def _pointer(stack: list[_Frame]) -> str:
    tokens: list[str | int] = []
    for frame in stack:
        if frame.is_object:
            try:
                key = str(json.loads(frame.key))
                key.encode("utf-8")  # a lone surrogate could not even be printed
            except ValueError:  # a malformed key: name it as written
                key = frame.key[1:-1]
            tokens.append(key)
        else:
            tokens.append(frame.index)
    return join_pointer("", *tokens)


def _check_word(word: str, stack: list[_Frame]) -> None:
    if word in _NOT_JSON_CONSTANTS:
        raise JsonInputError(_pointer(stack), f"{word} is not JSON (JSON numbers are finite)")
    if _INTEGER.fullmatch(word):
        digits, limit = len(word.lstrip("-")), sys.get_int_max_str_digits()
        if limit and digits > limit:
            raise JsonInputError(_pointer(stack), f"an integer with {digits} digits (at most {limit} are accepted)")
    elif _NUMBER.fullmatch(word) and math.isinf(float(word)):
        raise JsonInputError(_pointer(stack), f"the number {word} is out of range (it would be infinity)")


def _check_string(token: str, stack: list[_Frame]) -> None:
    # Only an escape can smuggle in a lone surrogate: the text itself was decoded from UTF-8.
    if "\\u" not in token:
        return
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        raise JsonInputError(_pointer(stack), "a string with a lone surrogate escape (not valid Unicode)") from None
    except ValueError:
        pass  # a malformed string: json.loads reports it with its line and column


def _scan(text: str) -> None:
    """Refuse what json.loads would crash on or accept wrongly, naming the spot; linear, no recursion."""
    stack: list[_Frame] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            frame = stack[-1] if stack else None
            if frame is not None and frame.expecting_key:
                frame.key, frame.expecting_key = token, False
            _check_string(token, stack)
        elif first in "{[":
            if len(stack) >= MAX_NESTING:
                raise JsonInputError(
                    _pointer(stack), f"nested deeper than {MAX_NESTING} levels of objects and arrays (refused)"
                )
            stack.append(_Frame(first == "{"))
        elif first in "}]":
            if stack:
                stack.pop()
        elif first == ",":
            if stack:
                stack[-1].expecting_key = stack[-1].is_object
                stack[-1].index += 1
        else:
            _check_word(token, stack)


def parse_json(data: bytes) -> Any:
    """The JSON value of `data`, or JsonInputError (not UTF-8, invalid JSON, too deep, unusable number)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise JsonInputError(
            "", f"not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} (line {line})"
        ) from None
    _scan(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise JsonInputError("", f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None


def read_json(path: Path) -> Any:
    """`parse_json` of a file; a file that cannot be read (a directory, no permission) is a JsonInputError."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise JsonInputError("", f"cannot read {path}: {error.strerror or error}") from None
    return parse_json(data)


def read_spec_json(path: Path, label: str) -> Any:
    """`read_json` for stage 1 (schema, manifest, patch): a SpecError naming `label` and the bad spot."""
    try:
        return read_json(path)
    except JsonInputError as error:
        raise SpecError(label, error.pointer, error.message) from None


def nesting_error(value: Any) -> JsonInputError | None:
    """For data built in memory (a patched schema): the first spot nested deeper than MAX_NESTING."""
    pending: list[tuple[Any, str, int]] = [(value, "", 1)]
    while pending:
        node, pointer, depth = pending.pop()
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            if not isinstance(child, dict | list):
                continue
            child_pointer = join_pointer(pointer, key)
            if depth >= MAX_NESTING:
                return JsonInputError(
                    child_pointer, f"nested deeper than {MAX_NESTING} levels of objects and arrays (refused)"
                )
            pending.append((child, child_pointer, depth + 1))
    return None
