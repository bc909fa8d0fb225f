"""``JWTVerifier``: a JWT access token (RFC 9068) checked against its issuer's published keys (JWKS).

Where it sits: one ``tokens.TokenVerifier`` of ``server.auth``; imported only by protected servers (it needs
joserfc, authlib's JOSE library, installed with authlib). What is checked, in order: the token is a compact JWS
whose header's ``alg`` is in ``algorithms`` (never ``none``, never a symmetric one unless listed), signed by a key of
the issuer's JWKS with its ``kid``; ``iss`` is ``issuer``; ``exp`` is present and not past, ``nbf`` / ``iat`` not in
the future (each with ``leeway``); ``aud`` names ``audience`` when one is set (``BearerAuth`` also checks it names
the server's resource).

The keys: fetched from ``jwks_uri`` (or the ``jwks_uri`` of the issuer's RFC 8414 metadata, whose ``issuer`` must be
``issuer``), each fetch within a total deadline (``timeout``, 5 s), kept ``jwks_ttl`` seconds, at most ``max_keys``
of them; a ``kid`` not among them refetches the set, at most once per ``refetch_interval`` seconds after a fetch that
worked (so that forged kids cannot make the server hammer the issuer). Concurrent requests that need a fetch share
one (``fetching.SharedFetches``). A fetch that fails (the issuer unreachable, slow past the deadline, or answering
junk) raises ``VerifierUnavailableError`` (``BearerAuth``: 503 with ``Retry-After``, the token is not refused) and is
remembered ``failure_ttl`` seconds (5 s), during which requests that need the keys are answered at once; then the
next one fetches again.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from .fetching import DEFAULT_FAILURE_TTL, SharedFetches, fetch_json
from .tokens import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_LEEWAY,
    AccessToken,
    InvalidTokenError,
    VerifierUnavailableError,
    audience_of,
    check_fetchable_url,
    int_claim,
    scopes_of,
    str_claim,
)

__all__ = ["DEFAULT_ALGORITHMS", "JWTVerifier"]

# Asymmetric algorithms only: a resource server never holds the issuer's signing secret.
DEFAULT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
DEFAULT_JWKS_TTL: Final = 300.0
DEFAULT_REFETCH_INTERVAL: Final = 30.0
DEFAULT_MAX_KEYS: Final = 50
MAX_TOKEN_BYTES: Final = 16 * 1024


class JWTVerifier:
    """Verifies JWT access tokens of one issuer (see the module docstring).

    ``issuer``: the exact ``iss``. ``audience`` (None): a value (or values, any of which) ``aud`` must name; None
    leaves the audience to ``BearerAuth`` (the server's resource URL). ``jwks_uri`` (None: from the issuer's RFC 8414
    metadata). ``algorithms`` (``DEFAULT_ALGORITHMS``, asymmetric only). ``leeway`` (30 s) on ``exp`` / ``nbf`` /
    ``iat``. ``timeout`` (5 s): the deadline of one whole fetch. ``jwks_ttl`` (300 s), ``refetch_interval`` (30 s),
    ``max_keys`` (50), ``failure_ttl`` (5 s: how long a failed fetch is remembered and answered 503 at once).
    """

    def __init__(
        self,
        issuer: str,
        *,
        audience: str | Sequence[str] | None = None,
        jwks_uri: str | None = None,
        algorithms: Collection[str] = DEFAULT_ALGORITHMS,
        leeway: int = DEFAULT_LEEWAY,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        jwks_ttl: float = DEFAULT_JWKS_TTL,
        refetch_interval: float = DEFAULT_REFETCH_INTERVAL,
        max_keys: int = DEFAULT_MAX_KEYS,
        failure_ttl: float = DEFAULT_FAILURE_TTL,
    ) -> None:
        if "none" in {alg.lower() for alg in algorithms} or not algorithms:
            raise ValueError("algorithms must name at least one signing algorithm, and never 'none'")
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience or ())
        self.jwks_uri = check_fetchable_url(jwks_uri, "jwks_uri") if jwks_uri else None
        check_fetchable_url(issuer, "issuer")
        self.algorithms = tuple(algorithms)
        self.leeway, self.timeout = leeway, timeout
        self.jwks_ttl, self.refetch_interval, self.max_keys = jwks_ttl, refetch_interval, max_keys
        self._keys: dict[str, Any] = {}  # kid -> key ("" for a key without kid)
        self._fetched_at = -float("inf")  # when the keys were last fetched (a failed fetch does not count)
        self._fetches: SharedFetches[None] = SharedFetches(failure_ttl)

    async def verify(self, token: str) -> AccessToken:
        if len(token) > MAX_TOKEN_BYTES:
            raise InvalidTokenError("the token is too long")
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidTokenError("the token's signing algorithm is not accepted")
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else "")
        try:
            claims = jwt.decode(token, key, algorithms=list(self.algorithms)).claims
        except JoseError:
            raise InvalidTokenError("the token's signature does not verify") from None
        except ValueError:
            raise InvalidTokenError("the token is malformed") from None
        self._check_claims(claims)
        return AccessToken(
            subject=str_claim(claims, "sub"),
            client_id=str_claim(claims, "client_id") or str_claim(claims, "azp"),
            scopes=scopes_of(claims),
            issuer=str_claim(claims, "iss"),
            audience=audience_of(claims),
            expires_at=int_claim(claims, "exp"),
            claims=claims,
        )

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        if claims.get("iss") != self.issuer:
            raise InvalidTokenError("the token is from another issuer")
        now = time.time()
        exp = int_claim(claims, "exp")
        if exp is None:
            raise InvalidTokenError("the token has no expiry")
        if exp + self.leeway < now:
            raise InvalidTokenError("the token has expired")
        for name in ("nbf", "iat"):
            moment = int_claim(claims, name)
            if moment is not None and moment - self.leeway > now:
                raise InvalidTokenError(f"the token's {name} is in the future")
        if self.audience and not set(self.audience) & set(audience_of(claims)):
            raise InvalidTokenError("the token is for another audience")

    async def _key(self, kid: str) -> Any:
        now = time.monotonic()
        stale = now - self._fetched_at > self.jwks_ttl
        if stale or (kid not in self._keys and now - self._fetched_at >= self.refetch_interval):
            # concurrent requests with a new kid share one fetch; a failure is VerifierUnavailableError (503)
            await self._fetches.run("jwks", "jwks", self._fetch_keys)
        if kid not in self._keys:
            raise InvalidTokenError("the token is signed with an unknown key")
        return self._keys[kid]

    async def _fetch_keys(self) -> None:
        uri = self.jwks_uri or await self._discover_jwks_uri()
        document = await fetch_json(uri, timeout=self.timeout)
        keys = document.get("keys")
        if not isinstance(keys, list):
            raise VerifierUnavailableError(f"the issuer's JWKS ({uri}) has no keys")
        usable = [k for k in keys if isinstance(k, dict) and k.get("use", "sig") == "sig" and "d" not in k]
        try:
            key_set = KeySet.import_key_set({"keys": usable[: self.max_keys]})
        except (JoseError, ValueError, TypeError, KeyError):
            raise VerifierUnavailableError(f"the issuer's JWKS ({uri}) does not parse") from None
        self._keys = {str(getattr(key, "kid", None) or ""): key for key in key_set.keys}
        self._fetched_at = time.monotonic()

    async def _discover_jwks_uri(self) -> str:
        parts = urlsplit(self.issuer)
        path = parts.path.rstrip("/")
        url = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{path}"
        metadata = await fetch_json(url, timeout=self.timeout)
        if metadata.get("issuer") != self.issuer:  # RFC 8414 section 3.3: else it may be another's metadata
            raise VerifierUnavailableError(f"the issuer's metadata ({url}) names another issuer")
        uri = metadata.get("jwks_uri")
        if not isinstance(uri, str):
            raise VerifierUnavailableError(f"the issuer's metadata ({url}) has no jwks_uri")
        try:
            self.jwks_uri = check_fetchable_url(uri, "jwks_uri")
        except ValueError:
            raise VerifierUnavailableError(f"the issuer's jwks_uri ({uri!r}) is not https") from None
        return self.jwks_uri


def _header(token: str) -> dict[str, Any]:
    """The JOSE header of a compact JWS (three segments; a JWE or anything else is refused)."""
    segments = token.split(".")
    if len(segments) != 3:
        raise InvalidTokenError("the token is not a signed JWT")
    encoded = segments[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except ValueError:
        raise InvalidTokenError("the token's header does not parse") from None
    if not isinstance(header, dict):
        raise InvalidTokenError("the token's header does not parse")
    return header
