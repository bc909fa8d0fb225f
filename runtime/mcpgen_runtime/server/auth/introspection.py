"""``IntrospectionVerifier``: an opaque (or any) access token checked by asking the authorization server (RFC 7662).

Where it sits: one ``tokens.TokenVerifier`` of ``server.auth``; uses only httpx2 (no JOSE). The server
authenticates to the introspection endpoint as a client (``client_secret_basic`` by default, or
``client_secret_post``); each answer is cached for at most ``cache_ttl`` seconds (and never past the token's
``exp``), at most ``max_cached`` tokens, so that a busy client does not cost one introspection per request. Each
introspection has a total deadline (``timeout``, 5 s); concurrent ones of the same token share one; one that fails
(unreachable, slow, junk) raises ``VerifierUnavailableError`` (``BearerAuth``: 503 with ``Retry-After``) and is
remembered ``failure_ttl`` seconds (5 s), during which every token is answered so at once.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Literal

from .fetching import DEFAULT_FAILURE_TTL, SharedFetches, fetch_json
from .tokens import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_LEEWAY,
    AccessToken,
    InvalidTokenError,
    audience_of,
    check_fetchable_url,
    int_claim,
    scopes_of,
    str_claim,
)

__all__ = ["IntrospectionVerifier"]

DEFAULT_CACHE_TTL: Final = 30.0
DEFAULT_MAX_CACHED: Final = 1000


class IntrospectionVerifier:
    """Verifies tokens with an RFC 7662 introspection endpoint.

    ``endpoint``: the introspection URL (https, or http on a loopback host). ``client_id`` / ``client_secret``: the
    resource server's credentials there; ``client_auth`` (``"client_secret_basic"``) or ``"client_secret_post"``.
    ``issuer`` (None): when set, an answer's ``iss``, if any, must equal it. ``audience`` (None): values any of which
    ``aud`` must name (``BearerAuth`` also checks the resource). ``timeout`` (5 s: the deadline of one whole
    introspection), ``leeway`` (30 s) on ``exp``, ``cache_ttl`` (30 s; 0 turns the cache off), ``max_cached`` (1000),
    ``failure_ttl`` (5 s: after a failed introspection, every token is answered 503 at once for that long)."""

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str,
        client_secret: str,
        client_auth: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic",
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        leeway: int = DEFAULT_LEEWAY,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        max_cached: int = DEFAULT_MAX_CACHED,
        failure_ttl: float = DEFAULT_FAILURE_TTL,
    ) -> None:
        self.endpoint = check_fetchable_url(endpoint, "endpoint")
        self.client_id, self._client_secret, self.client_auth = client_id, client_secret, client_auth
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience or ())
        self.timeout, self.leeway = timeout, leeway
        self.cache_ttl, self.max_cached = cache_ttl, max_cached
        # sha256 of the token -> (answer, cached until): the tokens themselves are not kept
        self._cache: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()
        # concurrent introspections of one token share one; a failed one makes the endpoint 503 for failure_ttl
        self._fetches: SharedFetches[dict[str, Any]] = SharedFetches(failure_ttl)

    def __repr__(self) -> str:  # without the secret
        return f"IntrospectionVerifier({self.endpoint!r}, client_id={self.client_id!r})"

    async def verify(self, token: str) -> AccessToken:
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > time.monotonic():
            self._check_expiry(cached[0])
            return cached[0]
        form = {"token": token, "token_type_hint": "access_token"}
        basic = None
        if self.client_auth == "client_secret_basic":
            basic = (self.client_id, self._client_secret)
        else:
            form |= {"client_id": self.client_id, "client_secret": self._client_secret}
        endpoint, timeout = self.endpoint, self.timeout
        answer = await self._fetches.run(
            digest, "endpoint", lambda: fetch_json(endpoint, timeout=timeout, form=form, basic_auth=basic)
        )
        if answer.get("active") is not True:
            raise InvalidTokenError("the token is not active")
        if self.issuer is not None and "iss" in answer and answer["iss"] != self.issuer:
            raise InvalidTokenError("the token is from another issuer")
        access = AccessToken(
            subject=str_claim(answer, "sub"),
            client_id=str_claim(answer, "client_id"),
            scopes=scopes_of(answer),
            issuer=str_claim(answer, "iss") or self.issuer,
            audience=audience_of(answer),
            expires_at=int_claim(answer, "exp"),
            claims=answer,
        )
        self._check_expiry(access)
        if self.audience and not set(self.audience) & set(access.audience):
            raise InvalidTokenError("the token is for another audience")
        self._remember(digest, access)
        return access

    def _check_expiry(self, access: AccessToken) -> None:
        if access.expires_at is not None and access.expires_at + self.leeway < time.time():
            raise InvalidTokenError("the token has expired")

    def _remember(self, digest: bytes, access: AccessToken) -> None:
        if self.cache_ttl <= 0:
            return
        until = time.monotonic() + self.cache_ttl
        self._cache[digest] = (access, until)
        self._cache.move_to_end(digest)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)
