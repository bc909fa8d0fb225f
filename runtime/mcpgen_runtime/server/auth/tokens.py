"""The verified access token a protected server's handlers see, and the protocol of whatever verifies one.

Where it sits: the bottom of ``server.auth``; the verifiers (``jwt``, ``introspection``) produce ``AccessToken`` s,
``bearer.BearerAuth`` checks them against the resource and its scopes, and ``Context.auth`` hands them to handlers.
Also the guard every verifier shares: the URLs it may fetch (https, or http on a loopback host only); the bounded
fetch itself is ``fetching``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_LEEWAY",
    "AccessToken",
    "InvalidTokenError",
    "TokenVerifier",
    "VerifierUnavailableError",
    "check_fetchable_url",
    "scopes_of",
]

# seconds for one whole fetch of metadata, keys or an introspection answer (a deadline: connect to last byte)
DEFAULT_HTTP_TIMEOUT: Final = 5.0
DEFAULT_LEEWAY: Final = 30  # seconds of clock skew allowed on exp / nbf / iat
MAX_DOCUMENT_BYTES: Final = 256 * 1024  # a metadata, JWKS or introspection answer larger than this is refused
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "::1")


class InvalidTokenError(Exception):
    """The token is not acceptable (bad signature, expired, another issuer or audience, inactive ...). The message
    is sent to the client in ``error_description``: it says why, never what the token holds."""


class VerifierUnavailableError(InvalidTokenError):
    """The token cannot be checked now: what the verifier depends on (the issuer's metadata or JWKS, the
    introspection endpoint) failed, timed out or answered junk. Not the token's fault: ``BearerAuth`` answers 503 with
    ``Retry-After: retry_after`` (seconds), so that the client keeps its token and retries. The message is for the
    server's log (it may name an internal URL); the client is told only that the check is unavailable. A subclass of
    ``InvalidTokenError``, so that code catching that still refuses the request."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class AccessToken:
    """A verified access token: who (``subject``, the end user; ``client_id``, the client acting for them), what it
    allows (``scopes``), for whom (``audience``: resource URLs or identifiers), by whom (``issuer``), until when
    (``expires_at``, seconds since the epoch; None: no expiry stated) and every claim (``claims``)."""

    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    issuer: str | None
    audience: tuple[str, ...]
    expires_at: int | None
    claims: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def owner(self) -> str:
        """A stable key of who holds the token (issuer and subject, else client): sessions are bound to it."""
        return f"{self.issuer or ''}\x00{self.subject or ''}\x00{'' if self.subject else self.client_id or ''}"


class TokenVerifier(Protocol):
    """Checks a bearer token: ``verify`` returns it as an ``AccessToken`` or raises ``InvalidTokenError``. Any
    network call it makes has a timeout."""

    async def verify(self, token: str) -> AccessToken: ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes of a token's claims: ``scope`` (RFC 8693 / 7662: space-separated), else ``scp`` (a list, as some
    issuers send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list):
        return frozenset(item for item in scp if isinstance(item, str))
    if isinstance(scp, str):
        return frozenset(scp.split())
    return frozenset()


def audience_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return (aud,)
    if isinstance(aud, list):
        return tuple(item for item in aud if isinstance(item, str))
    return ()


def check_fetchable_url(url: str, what: str) -> str:
    """``url`` if a verifier may fetch it: https, or http to a loopback host (tests, local development)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return url
    raise ValueError(f"{what} must be an https URL (or http on a loopback host): {url!r}")


def int_claim(claims: Mapping[str, Any], name: str) -> int | None:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def str_claim(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    return value if isinstance(value, str) else None
