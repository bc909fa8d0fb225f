"""DPoP (RFC 9449) for the client: a key that proves possession of a DPoP-bound token, the proofs it signs, and the
nonces servers hand out.

- ``DPoPKey``: the private key (EC P-256 / ES256 by default; ES384, ES512, EdDSA, RS256 and PS256 too) and the
  public JWK that goes into each proof's header. Its thumbprint (RFC 7638) is what a bound token's ``cnf.jkt`` names.
- ``DPoP``: a key and the nonces learnt from servers. ``proof(method, url, access_token)`` signs a fresh proof
  (``typ: dpop+jwt``; ``jti`` random, ``htm``, ``htu`` without query or fragment, ``iat``, ``ath`` = the SHA-256 of
  the access token for a resource request, ``nonce`` when the server gave one).
- ``DPoPHTTPAuth``: the per-request part, an ``httpx2.Auth``: every request that carries ``Authorization: DPoP ...``
  gets its own proof (the real method and URL: GET and DELETE too); a ``DPoP-Nonce`` answered by the server is kept
  for its origin, and a 401 ``use_dpop_nonce`` challenge is answered by sending the request once more with it.

Nonces are kept per origin (the authorization server's and the resource server's are different, RFC 9449 §8/§9),
for at most ``MAX_NONCE_ORIGINS`` origins (the least recently used dropped first), each at most ``MAX_NONCE_CHARS``:
a hostile server cannot grow them. The token request's nonce retry lives in ``tokens``.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import httpx2
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

__all__ = [
    "DEFAULT_DPOP_ALGORITHM",
    "DPoP",
    "DPoPHTTPAuth",
    "DPoPKey",
    "dpop_nonce_challenge",
    "htu_of",
]

DEFAULT_DPOP_ALGORITHM: Final = "ES256"
MAX_NONCE_ORIGINS: Final = 32
MAX_NONCE_CHARS: Final = 1024
NONCE_HEADER: Final = "dpop-nonce"
# algorithm -> how to generate a key for it
_GENERATORS: Final[dict[str, Callable[[], ECKey | OKPKey | RSAKey]]] = {
    "ES256": lambda: ECKey.generate_key("P-256"),
    "ES384": lambda: ECKey.generate_key("P-384"),
    "ES512": lambda: ECKey.generate_key("P-521"),
    "EdDSA": lambda: OKPKey.generate_key("Ed25519"),
    "RS256": lambda: RSAKey.generate_key(2048),
    "PS256": lambda: RSAKey.generate_key(2048),
}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def access_token_hash(access_token: str) -> str:
    """``ath``: base64url of the SHA-256 of the token's ASCII (RFC 9449 §4.2)."""
    return _b64url(hashlib.sha256(access_token.encode("ascii")).digest())


def htu_of(url: str) -> str:
    """The ``htu`` of a request to ``url``: the URL without its query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class DPoPKey:
    """A DPoP private key and its JWS algorithm. ``DPoPKey.generate()`` makes an EC P-256 (ES256) key;
    ``DPoPKey.from_pem(pem, algorithm)`` loads one (PEM, private)."""

    def __init__(self, key: ECKey | OKPKey | RSAKey, algorithm: str) -> None:
        if algorithm not in _GENERATORS:
            raise ValueError(f"unsupported DPoP algorithm {algorithm!r}: one of {', '.join(_GENERATORS)}")
        if not key.is_private:
            raise ValueError("a DPoP key must be a private key")
        self.key = key
        self.algorithm = algorithm
        self.public_jwk: dict[str, Any] = dict(key.as_dict(private=False))
        for private_only in ("d", "p", "q", "dp", "dq", "qi"):
            self.public_jwk.pop(private_only, None)
        self.thumbprint: str = key.thumbprint()  # RFC 7638, SHA-256: a bound token's cnf.jkt

    @classmethod
    def generate(cls, algorithm: str = DEFAULT_DPOP_ALGORITHM) -> DPoPKey:
        generator = _GENERATORS.get(algorithm)
        if generator is None:
            raise ValueError(f"unsupported DPoP algorithm {algorithm!r}: one of {', '.join(_GENERATORS)}")
        return cls(generator(), algorithm)

    @classmethod
    def from_pem(cls, pem: str | bytes, algorithm: str = DEFAULT_DPOP_ALGORITHM) -> DPoPKey:
        kind = {"ES": ECKey, "Ed": OKPKey, "RS": RSAKey, "PS": RSAKey}[algorithm[:2]]
        return cls(kind.import_key(pem), algorithm)  # type: ignore[attr-defined]


class DPoP:
    """Proof of possession for a client: ``key`` (default: a new ES256 key) and the nonces servers gave."""

    def __init__(self, key: DPoPKey | None = None) -> None:
        self.key = key if key is not None else DPoPKey.generate()
        self._nonces: OrderedDict[str, str] = OrderedDict()

    @property
    def algorithm(self) -> str:
        return self.key.algorithm

    @property
    def thumbprint(self) -> str:
        return self.key.thumbprint

    def nonce_for(self, url: str) -> str | None:
        return self._nonces.get(_origin(url))

    def remember(self, url: str, headers: Mapping[str, str]) -> None:
        """Keep the ``DPoP-Nonce`` a response from ``url`` carried (the server's newest: it may rotate them)."""
        nonce = headers.get(NONCE_HEADER)
        if not nonce or len(nonce) > MAX_NONCE_CHARS or not nonce.isprintable():
            return
        origin = _origin(url)
        self._nonces[origin] = nonce
        self._nonces.move_to_end(origin)
        while len(self._nonces) > MAX_NONCE_ORIGINS:
            self._nonces.popitem(last=False)

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for one request: ``method`` and ``url`` as sent; ``access_token`` for a resource request
        (its hash goes in ``ath``); the origin's nonce, if one was given."""
        header = {"typ": "dpop+jwt", "alg": self.key.algorithm, "jwk": self.key.public_jwk}
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if (nonce := self.nonce_for(url)) is not None:
            claims["nonce"] = nonce
        return jwt.encode(header, claims, self.key.key, algorithms=[self.key.algorithm])

    @property
    def http_auth(self) -> DPoPHTTPAuth:
        """The per-request flow for an HTTP client: ``httpx2.AsyncClient(auth=dpop.http_auth)``."""
        return DPoPHTTPAuth(self)


def dpop_nonce_challenge(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a resource server's answer asks for a (new) nonce: 401 ``WWW-Authenticate: DPoP
    error="use_dpop_nonce"`` (RFC 9449 §9)."""
    if status != 401:
        return False
    challenge = headers.get("www-authenticate", "")
    return challenge.strip().lower().startswith("dpop") and "use_dpop_nonce" in challenge


class DPoPHTTPAuth(httpx2.Auth):
    """Signs every request that presents a DPoP token (``Authorization: DPoP <token>``) with a fresh proof, keeps
    the nonces the server sends, and answers one ``use_dpop_nonce`` challenge per request by sending it again with
    the nonce (a server that challenges again gets its refusal back: no loop). Requests without a DPoP token pass
    untouched."""

    requires_request_body = False
    requires_response_body = False

    def __init__(self, dpop: DPoP) -> None:
        self.dpop = dpop

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "dpop" or not token.strip():
            yield request
            return
        token = token.strip()
        url = str(request.url)
        sent_nonce = self.dpop.nonce_for(url)
        request.headers["DPoP"] = self.dpop.proof(request.method, url, token)
        response = yield request
        self.dpop.remember(url, response.headers)
        # Retried only with a nonce this proof did not carry: the same one again cannot satisfy the server.
        if dpop_nonce_challenge(response.status_code, response.headers) and self.dpop.nonce_for(url) != sent_nonce:
            request.headers["DPoP"] = self.dpop.proof(request.method, url, token)
            response = yield request
            self.dpop.remember(url, response.headers)
