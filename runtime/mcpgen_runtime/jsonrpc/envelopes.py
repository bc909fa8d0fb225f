"""JSON-RPC 2.0 envelopes and errors: the bottom of ``mcpgen_runtime`` (``jsonrpc`` layer; imports only ``safe_mode``).

Where it sits: transports (``transports.stdio.ndjson``, the streamable HTTP ones) move opaque frames; this module turns one
incoming frame into a classified message (request / notification / response / error response / batch / invalid) and
builds the outgoing envelopes; ``session`` sits on top and does the bookkeeping (ids, cancellation, progress).
Nothing here knows about MCP versions or pydantic: the envelope is checked with plain ``isinstance`` tests because
it is tiny and runs for every frame, and the MCP payload (``params`` / ``result``) is left to the generated
bindings.
"""

from __future__ import annotations

import json
import json.encoder
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final, TypeAlias, TypeGuard, cast

from ..safe_mode import SelfCheckFailed, fast_path, require

__all__ = [
    "Batch",
    "Decoded",
    "ErrorCode",
    "ErrorResponse",
    "Invalid",
    "InvalidParams",
    "JSONParams",
    "JSONRPCError",
    "Message",
    "MethodNotFound",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "classify",
    "decode_frame",
    "decode_value",
    "encode_frame",
    "error_response",
    "is_request_id",
    "notification_message",
    "request_message",
    "strict_loads",
    "success_response",
]

RequestId: TypeAlias = str | int
JSONParams: TypeAlias = dict[str, Any] | list[Any] | None

JSONRPC_VERSION: Final = "2.0"


class ErrorCode(IntEnum):
    """JSON-RPC 2.0 error codes, plus the two implementation-defined ones the official MCP SDKs use.

    An ``IntEnum`` so that it compares equal to the plain ints found on the wire and to the generated
    ``mcp_bindings.<version>.ErrorCode`` members.
    """

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    # Server-defined range (-32000..-32099); same numbers as the official SDKs.
    CONNECTION_CLOSED = -32000
    REQUEST_TIMEOUT = -32001


# The messages the JSON-RPC 2.0 specification gives for its own codes.
STANDARD_MESSAGES: Final[dict[int, str]] = {
    ErrorCode.PARSE_ERROR: "Parse error",
    ErrorCode.INVALID_REQUEST: "Invalid Request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
}


class JSONRPCError(Exception):
    """Raised by a request handler to answer with a JSON-RPC error, and by ``Session.request`` when the peer did.

    ``data`` is any JSON value; ``None`` means "no data member" on the wire.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = int(code)
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"JSON-RPC error {self.code}: {self.message}"

    def error_object(self) -> dict[str, Any]:
        """The ``error`` member of a response carrying this error."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class MethodNotFound(JSONRPCError):
    """A handler's way of saying "I do not serve this method" (-32601)."""

    def __init__(self, method: str, data: Any = None) -> None:
        super().__init__(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}", data)


class InvalidParams(JSONRPCError):
    """A handler's way of rejecting the params of a method it does serve (-32602)."""

    def __init__(self, message: str = "Invalid params", data: Any = None) -> None:
        super().__init__(ErrorCode.INVALID_PARAMS, message, data)


# ---------------------------------------------------------------------------------------------------------------
# Classified messages. Plain frozen dataclasses: the session only needs to branch on the kind and read a few fields.


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: JSONParams


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: JSONParams


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: Any


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    # null when the peer could not tell which request failed (e.g. it could not parse ours).
    id: RequestId | None
    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """A frame that is not a valid JSON-RPC message.

    ``respond`` says whether the receiver must answer it (with ``code`` and ``id``, id null when unknown). It is false
    for things that look like responses: JSON-RPC forbids answering a response, which also keeps two peers from
    bouncing errors at each other forever. ``id`` is still filled in for those when it is usable, so that a waiting
    request can be failed instead of left hanging.
    """

    code: int
    message: str
    id: RequestId | None = None
    respond: bool = True


Message: TypeAlias = Request | Notification | Response | ErrorResponse | Invalid


@dataclass(frozen=True, slots=True)
class Batch:
    """A non-empty JSON array of messages (JSON-RPC batch; only MCP 2025-03-26 allows them)."""

    items: tuple[Message, ...]


Decoded: TypeAlias = Message | Batch


def is_request_id(value: object) -> TypeGuard[RequestId]:
    """MCP request ids are strings or integers (never null, never fractional); bool is an int subclass, so exclude."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _reject_constant(name: str) -> Any:
    # NaN / Infinity / -Infinity are accepted by Python's json but are not JSON.
    raise ValueError(f"{name} is not valid JSON")


def _parse_float(text: str) -> float:
    # Numbers like 1e400 overflow to inf, which could then never be written back out as JSON.
    value = float(text)
    if math.isinf(value):
        raise ValueError("number out of range")
    return value


# Made once: json.loads / json.dumps with options build a new decoder / encoder on every call.
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_parse_float)
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_ASCII_ENCODER: Final = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _not_serializable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# _ENCODER's own C encoder, made once: JSONEncoder.encode builds one per call (and a dict for the circular check).
# Arguments: markers (no circular check), default, string encoder, indent, key and item separators, sort_keys,
# skipkeys, allow_nan. c_make_encoder is CPython's private accelerator (not in the type stubs, and its signature is
# not promised): a fast path, checked first (safe_mode); the public path is _ENCODER.encode, which gives the same
# text and errors.
def _make_c_encoder() -> Callable[[Any, int], Any]:
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    require(make is not None, "json.encoder.c_make_encoder is missing (no C accelerator)")
    return cast(
        "Callable[[Any, int], Any]",
        make(None, _not_serializable, json.encoder.encode_basestring, None, ":", ",", False, False, False),
    )


def _check_c_encoder() -> None:
    """The C encoder gives what the public encoder gives, for every kind of value, and the same errors."""
    encode = _make_c_encoder()
    sample = {
        "s": 'é\u2028"\\\n\x00',
        "n": [0, -1, 10**30, 2.5, -0.0, 1e300],
        "b": [True, False, None],
        "o": {},
        "l": [],
    }
    require("".join(encode(sample, 0)) == _ENCODER.encode(sample), "its text differs from json's own")
    for bad, error in ((object(), TypeError), (math.nan, ValueError)):
        try:
            "".join(encode([bad], 0))
        except error:
            continue
        raise SelfCheckFailed(f"{bad!r} did not raise {error.__name__}")


C_ENCODER: Final = fast_path(
    "json-c-encoder", relies_on="json.encoder.c_make_encoder (CPython's private)", check=_check_c_encoder
)
_c_encode: Callable[[Any, int], Any] | None = None  # made on the first encode_frame with the fast path on


# orjson (a compiled codec, 3x json's speed to read a frame and 10x to write one) where it is installed: a
# dependency of the runtime on CPython. Only where it gives what json gives: a frame it refuses is read again by json
# (which decides, and names the error), one with a run of 19 digits too (orjson reads an integer beyond 64 bits as a
# float, json keeps it exact); an answer it cannot write, or writes with a null in it (orjson writes NaN and
# Infinity as null, json refuses them), is written by json. What differs: some floats are written in another form of
# the same number (1e16 for 1e+16, 0.00001 for 1e-05), and a UUID or an Enum member is written (json refuses them).
_orjson: Any
try:
    import orjson as _orjson
except ImportError:  # PyPy, or a platform without its wheel: json does it all
    _orjson = None
_DIGITS_AS_ONES: Final = bytes.maketrans(b"0123456789", b"1" * 10)
_LONG_NUMBER: Final = b"1" * 19  # 19 digits in a row, once every digit reads "1"
# Dataclasses and datetimes go to json, which refuses them, as before (orjson would write them).
_ORJSON_OPTIONS: Final = 0 if _orjson is None else _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME


def _loads(data: bytes | bytearray | str) -> Any:
    """JSON as ``decode_frame`` reads it: UTF-8 only (json.loads(bytes) would sniff UTF-16/32, but MCP frames are
    UTF-8); no NaN, Infinity or overflowing numbers. Raises ``ValueError`` or ``RecursionError``."""
    if _orjson is not None and not isinstance(data, str) and _LONG_NUMBER not in data.translate(_DIGITS_AS_ONES):
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # json decides, and names what is wrong
    return _DECODER.decode(data if isinstance(data, str) else bytes(data).decode("utf-8"))


def strict_loads(data: bytes | str) -> Any:
    """JSON as ``decode_frame`` reads it (UTF-8 only; no NaN, Infinity or overflowing numbers), for a transport
    that must judge a frame before the session does. Raises ``ValueError`` or ``RecursionError``."""
    return _loads(data)


def decode_frame(data: bytes | bytearray | str) -> Decoded:
    """Classify one incoming frame. Never raises: anything wrong comes back as an ``Invalid``."""
    try:
        value = _loads(data)
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError, UnicodeDecodeError and over-long integer literals;
        # RecursionError comes from absurdly deep nesting.
        return Invalid(ErrorCode.PARSE_ERROR, STANDARD_MESSAGES[ErrorCode.PARSE_ERROR])
    return decode_value(value)


def decode_value(value: Any) -> Decoded:
    """``decode_frame`` of a frame already parsed (as strictly as ``decode_frame`` parses) into ``value``."""
    if isinstance(value, list):
        if not value:
            return Invalid(ErrorCode.INVALID_REQUEST, "Invalid Request: empty batch")
        return Batch(tuple(classify(item) for item in value))
    return classify(value)


def classify(value: Any) -> Message:
    """Classify one already-parsed JSON value as a single (non-batch) message."""
    if not isinstance(value, dict):
        return Invalid(ErrorCode.INVALID_REQUEST, "Invalid Request: not a JSON object")
    raw_id = value.get("id")
    usable_id: RequestId | None = raw_id if is_request_id(raw_id) else None

    if "method" not in value and ("result" in value or "error" in value):
        return _classify_response(value, usable_id)

    method = value.get("method")
    params = value.get("params")
    # The well-formed request or notification, decided in one test (this runs for every incoming frame) ...
    if (
        type(method) is str
        and value.get("jsonrpc") == JSONRPC_VERSION
        and (usable_id is not None or "id" not in value)
        and ((params is None and "params" not in value) or type(params) is dict or type(params) is list)
    ):
        return Notification(method, params) if usable_id is None else Request(usable_id, method, params)
    # ... anything else, checked in order for the error that names the first thing wrong.
    if value.get("jsonrpc") != JSONRPC_VERSION:
        reason = '"jsonrpc" must be "2.0"'
    elif "method" not in value:
        reason = 'missing "method"'
    elif not isinstance(method, str):
        reason = '"method" must be a string'
    elif "id" in value and usable_id is None:
        reason = '"id" must be a string or an integer'
    elif "params" in value and not isinstance(params, dict | list):
        reason = '"params" must be an object or an array'
    else:  # a str, dict or list subclass (only from Python callers): as valid as the plain types
        return Notification(method, params) if usable_id is None else Request(usable_id, method, params)
    return Invalid(ErrorCode.INVALID_REQUEST, f"Invalid Request: {reason}", usable_id)


def _classify_response(value: dict[str, Any], usable_id: RequestId | None) -> Message:
    def invalid(reason: str) -> Invalid:
        return Invalid(ErrorCode.INVALID_REQUEST, f"Invalid response: {reason}", usable_id, respond=False)

    if value.get("jsonrpc") != JSONRPC_VERSION:
        return invalid('"jsonrpc" must be "2.0"')
    if "result" in value and "error" in value:
        return invalid('both "result" and "error"')
    if "id" not in value:
        return invalid('missing "id"')
    if "result" in value:
        if usable_id is None:
            return invalid('"id" must be a string or an integer')
        return Response(usable_id, value["result"])
    raw_id = value["id"]
    if raw_id is not None and usable_id is None:
        return invalid('"id" must be a string, an integer or null')
    error = value["error"]
    if not isinstance(error, dict):
        return invalid('"error" must be an object')
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(message, str):
        return invalid('"error" needs an integer "code" and a string "message"')
    return ErrorResponse(usable_id, code, message, error.get("data"))


# ---------------------------------------------------------------------------------------------------------------
# Outgoing envelopes.


def request_message(request_id: RequestId, method: str, params: JSONParams = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification_message(method: str, params: JSONParams = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION, "method": method}
    if params is not None:
        message["params"] = params
    return message


def success_response(request_id: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result}


def error_response(
    request_id: RequestId | None, code: int, message: str | None = None, data: Any = None
) -> dict[str, Any]:
    """An error response; ``request_id`` None gives ``"id": null`` (the request could not be identified)."""
    error = JSONRPCError(code, message if message is not None else STANDARD_MESSAGES.get(code, "Error"), data)
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.error_object()}


def encode_frame(message: Any) -> bytes:
    """Serialize one message (or a batch list) as compact UTF-8 JSON with no raw newline in it.

    Raises ``TypeError`` / ``ValueError`` for values JSON cannot carry (the session turns that into -32603).
    """
    global _c_encode
    if _orjson is not None:
        try:
            frame: bytes = _orjson.dumps(message, option=_ORJSON_OPTIONS)
        except (TypeError, _orjson.JSONEncodeError):
            pass  # json writes it, or says why it cannot
        else:
            if b"null" not in frame:  # (a null may have been a NaN or an Infinity, which json refuses)
                return frame
    try:
        if C_ENCODER.active:
            if _c_encode is None:
                _c_encode = _make_c_encoder()
            return "".join(_c_encode(message, 0)).encode("utf-8")
        return _ENCODER.encode(message).encode("utf-8")
    except RecursionError:
        # Without the encoder's circular-reference check (it costs a dict per call), a cycle ends here.
        raise ValueError("Circular reference detected (or nesting too deep for JSON)") from None
    except UnicodeEncodeError:
        # A lone surrogate (legal in a parsed JSON string, not in UTF-8): fall back to \\u escapes, which carry it.
        return _ASCII_ENCODER.encode(message).encode("ascii")
