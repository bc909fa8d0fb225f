"""The integrity-protected ``requestState`` of multi round-trip requests (MCP 2026-07-28 basic/patterns/mrtr).

Where it sits: at the bottom of the ``server`` layer, used by ``mrtr`` (what goes into the state) and configured on
``server.Server`` (``request_state_key`` ...). Standard library only.

The spec makes the client-echoed ``requestState`` attacker-controlled input that the server must verify ("MUST
protect its integrity (e.g. HMAC or AEAD) and MUST reject state that fails verification") and recommends a short
expiry and a binding to the originating request. A token here is ``base64url(payload) "." base64url(tag)`` with
``tag = HMAC-SHA256(key, "mcpgen-request-state/1" || payload)``; the payload is JSON holding the expiry (``exp``,
Unix seconds) and what ``mrtr`` puts in it (the method, a digest of the request's params, the answers so far).
It is signed, not encrypted: the client can read the answers it gave itself, nothing else is in it.

A token that does not verify, has expired, is longer than ``max_bytes`` or was minted for another request is
refused with ``InvalidRequestStateError`` (the request is answered -32602). Several server processes that must
accept each other's tokens (workers behind a load balancer) share one ``key``; the default is a random key per
``RequestStateCodec`` (so, per ``Server``): tokens do not survive a restart, which only makes the client start over.
``SigningKeys`` as the key (``scaleout.worker.KeyRing``) lets its owner change the signing key while the codec runs:
tokens are sealed with its ``current`` key and accepted under any of its ``accepted`` ones, so a key the workers of a
scaled-out server re-agree on does not void the tokens already handed out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

__all__ = [
    "DEFAULT_MAX_REQUEST_STATE_BYTES",
    "DEFAULT_REQUEST_STATE_TTL",
    "InvalidRequestStateError",
    "RequestStateCodec",
    "SigningKeys",
]

DEFAULT_REQUEST_STATE_TTL: Final = 600.0
"""Seconds a ``requestState`` stays valid: long enough for a person to fill in a form, short enough to bound replay."""
DEFAULT_MAX_REQUEST_STATE_BYTES: Final = 64 * 1024
"""The longest token minted or accepted (the answers of every round are in it)."""
MIN_KEY_BYTES: Final = 16
_DOMAIN: Final = b"mcpgen-request-state/1"


class InvalidRequestStateError(ValueError):
    """A ``requestState`` that cannot be trusted; the message says why (for the log and the -32602 answer)."""


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _secret(key: bytes | str) -> bytes:
    secret = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if len(secret) < MIN_KEY_BYTES:
        raise ValueError(f"a request state key needs at least {MIN_KEY_BYTES} bytes (32 random bytes are best)")
    return secret


class SigningKeys(Protocol):
    """The keys of a codec: ``current`` signs, each of ``accepted`` (the current one included) verifies. A codec
    given one key has it alone; ``scaleout.worker.KeyRing`` is one whose keys change while the codec runs."""

    @property
    def current(self) -> bytes: ...

    @property
    def accepted(self) -> Sequence[bytes]: ...


class _OneKey:
    def __init__(self, key: bytes | str) -> None:
        self.current = _secret(key)
        self.accepted = (self.current,)


class RequestStateCodec:
    """Seals ``requestState`` payloads (JSON objects) with HMAC-SHA256 and an expiry, and verifies them.

    ``key``: the secret (bytes, or a str taken as UTF-8; at least 16 bytes), or ``SigningKeys`` its owner changes;
    None (the default) draws a random 32-byte key, private to this codec. ``ttl``: seconds a token stays valid (default 600). ``max_bytes``: the
    longest token minted or accepted (default 64 KiB). ``clock``: Unix seconds, for tests."""

    def __init__(
        self,
        key: bytes | str | SigningKeys | None = None,
        *,
        ttl: float = DEFAULT_REQUEST_STATE_TTL,
        max_bytes: int = DEFAULT_MAX_REQUEST_STATE_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        ring = (
            _OneKey(os.urandom(32) if key is None else key)
            if key is None or isinstance(key, bytes | bytearray | str)
            else key
        )
        if ttl <= 0:
            raise ValueError("the request state ttl must be positive")
        if max_bytes < 256:
            raise ValueError("max_bytes must be at least 256")
        self.keys: SigningKeys
        self.keys, self.ttl, self.max_bytes, self._clock = ring, ttl, max_bytes, clock

    @staticmethod
    def _tag(payload: bytes, key: bytes) -> bytes:
        return hmac.new(key, _DOMAIN + payload, hashlib.sha256).digest()

    def seal(self, claims: Mapping[str, Any]) -> str:
        """A token carrying ``claims`` (JSON) and an expiry. Raises ``ValueError`` when it would exceed
        ``max_bytes`` (a handler that asks for more input than a state can carry)."""
        payload = json.dumps(
            {**claims, "exp": round(self._clock() + self.ttl, 3)}, separators=(",", ":"), ensure_ascii=False
        ).encode("utf-8")
        token = f"{_encode(payload)}.{_encode(self._tag(payload, self.keys.current))}"
        if len(token) > self.max_bytes:
            raise ValueError(f"the request state would be {len(token)} bytes, over the limit of {self.max_bytes}")
        return token

    def unseal(self, token: str) -> dict[str, Any]:
        """The claims of a token this codec (or one with the same key) sealed, unexpired. Raises
        ``InvalidRequestStateError`` for anything else."""
        if len(token) > self.max_bytes:
            raise InvalidRequestStateError("requestState is longer than this server ever mints")
        body, dot, tag = token.partition(".")
        try:
            payload, given = _decode(body), _decode(tag)
        except (binascii.Error, ValueError):
            raise InvalidRequestStateError("requestState is not one this server minted") from None
        if not dot or not any(hmac.compare_digest(given, self._tag(payload, key)) for key in self.keys.accepted):
            raise InvalidRequestStateError("requestState failed verification (altered, or minted with another key)")
        try:
            claims = json.loads(payload)
        except ValueError:  # a valid tag over invalid JSON: only possible with our key, but never trust it
            raise InvalidRequestStateError("requestState is not one this server minted") from None
        expiry = claims.get("exp") if isinstance(claims, dict) else None
        if not isinstance(expiry, int | float) or isinstance(expiry, bool):
            raise InvalidRequestStateError("requestState has no expiry")
        if self._clock() > expiry:
            raise InvalidRequestStateError("requestState has expired; send the request again without it")
        assert isinstance(claims, dict)
        return claims
