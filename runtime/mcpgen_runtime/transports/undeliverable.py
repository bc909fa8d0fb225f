"""Answers that arrived but cannot be delivered, and how a transport fails their call at once.

Where it sits: in the ``transports`` layer; needs only ``jsonrpc.envelopes`` and ``frame_head`` (no httpx2, so a
stdio client uses it too). The HTTP client (``http.client``) judges every message of a request's answer with
``malformed`` / ``incomplete``; ``answer_guard.AnswerGuard`` does the same for stdio and in-memory streams; the
typed client reads ``undeliverable_reason`` off the error its call got.

Why: ``jsonrpc.session.Session`` resolves a waiting request only from a well-formed response. An answer that is not
JSON, is over a transport's limit, or is an object with the request's ``id`` but neither ``result`` nor ``error``
would leave the call waiting for its timeout (or forever). Where the request it answers is known, the transport
fails that request at once instead, with an error response (``undeliverable_frame``) whose ``data`` carries this
process's ``UNDELIVERABLE_MARKER`` (a random token a server cannot forge), which ``undeliverable_reason``
recognises and the typed client turns into ``MalformedResponseError``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Final

from ..jsonrpc.envelopes import (
    ErrorCode,
    JSONRPCError,
    RequestId,
    encode_frame,
    error_response,
    is_request_id,
)
from .frame_head import ANSWER_KEYS, scan_head

__all__ = [
    "UNDELIVERABLE_MARKER",
    "Undeliverable",
    "incomplete",
    "malformed",
    "undeliverable_frame",
    "undeliverable_reason",
]

UNDELIVERABLE_MARKER: Final = secrets.token_hex(16)
_MARKER_KEY: Final = "mcpgenUndeliverable"


def undeliverable_frame(request_id: RequestId, reason: str, code: int = ErrorCode.INTERNAL_ERROR) -> bytes:
    """An error response for ``request_id`` that says its answer arrived but could not be delivered."""
    data = {_MARKER_KEY: UNDELIVERABLE_MARKER, "reason": reason}
    return encode_frame(error_response(request_id, code, f"Undeliverable response: {reason}", data))


def undeliverable_reason(error: JSONRPCError) -> str | None:
    """The reason, if ``error`` is one of our own ``undeliverable_frame`` errors (not something the server sent)."""
    data = error.data
    if isinstance(data, dict) and data.get(_MARKER_KEY) == UNDELIVERABLE_MARKER:
        reason = data.get("reason")
        return reason if isinstance(reason, str) else "undeliverable response"
    return None


# -- judging one message ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Undeliverable:
    """Why a message cannot be delivered; ``request_id`` is the request it answers, when that could be read."""

    reason: str
    request_id: RequestId | None = None
    malformed: bool = True  # not JSON at all (else: an object with an id but neither result nor error)


def malformed(data: bytes) -> Undeliverable | None:
    """Judge a message that does not parse (``strict_loads`` raised): None when its head shows a request or a
    notification (the session answers those with a parse error), else why it cannot be delivered and, when its head
    names one, the request it answers."""
    head = scan_head(data)
    if head is not None and head.is_request:
        return None
    return Undeliverable("malformed JSON", head.id if head is not None else None)


def incomplete(value: Any) -> Undeliverable | None:
    """Judge a parsed message: an object with a request id but neither ``result``, ``error`` nor ``method`` answers
    that request with nothing (the session would take it for a request without a method, and wait on)."""
    if (
        isinstance(value, dict)
        and is_request_id(value.get("id"))
        and "method" not in value
        and not ANSWER_KEYS & value.keys()
    ):
        return Undeliverable('an object with an "id" but neither "result" nor "error"', value["id"], malformed=False)
    return None
