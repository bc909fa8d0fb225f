"""The verified access token a protected server's handlers see, and the protocol of whatever verifies one.

Where it sits: the bottom of ``server.auth``; the verifiers (``jwt``, ``introspection``) produce ``AccessToken`` s,
``bearer.BearerAuth`` checks them against the resource and its scopes, and ``Context.auth`` hands them to handlers.
Also the guards every verifier shares: the URLs it may fetch (https, or http on a loopback host only) and the
bounded HTTP fetch of a JSON document.
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
    "check_fetchable_url",
    "scopes_of",
]

DEFAULT_HTTP_TIMEOUT: Final = 5.0  # seconds for one fetch of metadata, keys or an introspection answer
DEFAULT_LEEWAY: Final = 30  # seconds of clock skew allowed on exp / nbf / iat
MAX_DOCUMENT_BYTES: Final = 256 * 1024  # a metadata, JWKS or introspection answer larger than this is refused
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "::1")


class InvalidTokenError(Exception):
    """The token is not acceptable (bad signature, expired, another issuer or audience, inactive ...). The message
    is sent to the client in ``error_description``: it says why, never what the token holds."""


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


async def fetch_json(
    url: str,
    *,
    timeout: float,
    form: Mapping[str, str] | None = None,
    basic_auth: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """GET ``url`` (POST ``form`` when given) and return its JSON object; ``InvalidTokenError`` on any failure
    (timeout, status, size over ``MAX_DOCUMENT_BYTES``, not a JSON object). Redirects are not followed."""
    import json

    import httpx2  # only protected servers fetch anything

    try:
        async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            method = "GET" if form is None else "POST"
            headers = {"accept": "application/json"} | (_basic_header(*basic_auth) if basic_auth else {})
            data = dict(form) if form is not None else None
            request = client.build_request(method, url, data=data, headers=headers)
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise InvalidTokenError(f"{url} answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise InvalidTokenError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
            finally:
                await response.aclose()
    except httpx2.HTTPError as error:
        raise InvalidTokenError(f"fetching {url} failed: {type(error).__name__}") from None
    try:
        document = json.loads(body)
    except ValueError:
        raise InvalidTokenError(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise InvalidTokenError(f"{url} did not answer a JSON object")
    return document


def _basic_header(client_id: str, client_secret: str) -> dict[str, str]:
    # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
    import base64
    from urllib.parse import quote

    pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
    return {"authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
