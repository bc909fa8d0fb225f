"""DPoP (RFC 9449) at the resource server: checking the proof that comes with a DPoP-bound access token.

Where it sits: in ``server.auth``, below ``bearer`` (``BearerAuth(dpop=DPoPVerifier(...))`` uses it), beside the
token verifiers; it imports joserfc only. A request presenting ``Authorization: DPoP <token>`` must carry exactly
one ``DPoP`` header whose proof (RFC 9449 §4.3), in this order:

- is a compact JWS of at most ``MAX_PROOF_BYTES``, ``typ`` ``dpop+jwt``, ``alg`` in ``algorithms`` (asymmetric
  only: ``none`` and HMAC can never be allowed), with a public ``jwk`` (no private members) its signature verifies
  with;
- has ``jti`` (at most ``MAX_JTI_CHARS``), ``htm`` = the request's method, ``htu`` = the request's URL or the
  server's ``resource`` (query and fragment ignored, as the client leaves them out), ``iat`` no older than
  ``max_age`` and no further ahead than ``leeway`` seconds;
- with ``require_nonce``, carries a nonce this server issued (rotating: a keyed hash of the current time window of
  ``nonce_lifetime`` seconds; the previous window's is still accepted, so that a rotation does not fail requests in
  flight); else the answer is 401 ``use_dpop_nonce`` with a fresh ``DPoP-Nonce``;
- has ``ath`` = the SHA-256 of the presented token, and the thumbprint of its ``jwk`` equals the token's ``cnf.jkt``;
- was not seen before: its ``jti`` is remembered until its ``iat`` leaves the window, in a cache of at most
  ``replay_cache_size`` entries. When that many live proofs are remembered, a new one is refused with
  ``retry_after`` (503: the bearer answers "retry later") rather than forgetting one still inside its window, whose
  replay would then pass: fail closed. Only a proof that passed every other check (signed by the key its valid,
  bound token names) reaches the cache, so only a token holder can fill it; size it above the requests per
  ``max_age`` the server takes.

A refusal is a ``DPoPError`` with the RFC's error code (``invalid_dpop_proof`` or ``use_dpop_nonce``); its message
says what failed, never what the proof held.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
import struct
import time
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey

__all__ = [
    "DEFAULT_DPOP_ALGORITHMS",
    "DPoPError",
    "DPoPVerifier",
    "request_url",
]

DEFAULT_DPOP_ALGORITHMS: Final = ("ES256", "ES384", "ES512", "EdDSA", "RS256", "PS256")
ASYMMETRIC: Final = frozenset((*DEFAULT_DPOP_ALGORITHMS, "RS384", "RS512", "PS384", "PS512"))
DEFAULT_MAX_AGE: Final = 60  # seconds a proof stays acceptable after its iat
DEFAULT_LEEWAY: Final = 5  # seconds a client's clock may run ahead
DEFAULT_NONCE_LIFETIME: Final = 300  # seconds of one nonce window
DEFAULT_REPLAY_CACHE_SIZE: Final = 100_000  # jtis remembered at most
MAX_PROOF_BYTES: Final = 8 * 1024
MAX_JTI_CHARS: Final = 256
_KEY_TYPES: Final = {"EC": ECKey, "OKP": OKPKey, "RSA": RSAKey}
_PRIVATE_MEMBERS: Final = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")


class DPoPError(Exception):
    """A DPoP proof refused: ``error`` is ``invalid_dpop_proof`` or ``use_dpop_nonce`` (then ``nonce`` is the one
    to send back in ``DPoP-Nonce``); the message (sent as ``error_description``) says what failed."""

    def __init__(
        self, message: str, error: str = "invalid_dpop_proof", nonce: str | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.error = error
        self.nonce = nonce
        self.retry_after = retry_after  # seconds: the proof could not be checked now (the replay cache is full)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _normalized(url: str) -> str:
    """A URL as ``htu`` is compared (RFC 9449 §4.3: scheme and host case-insensitive, no query or fragment)."""
    parts = urlsplit(url)
    netloc = parts.netloc.lower()
    default_port = {"http": ":80", "https": ":443"}.get(parts.scheme.lower())
    if default_port and netloc.endswith(default_port):
        netloc = netloc[: -len(default_port)]
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/") or "/", "", ""))


def request_url(scope: Mapping[str, Any]) -> str:
    """The URL of an ASGI request as its client addressed it (``Host`` header, root path and path)."""
    host = ""
    for key, value in scope.get("headers", ()):
        if key.lower() == b"host":
            host = value.decode("latin-1")
            break
    if not host and scope.get("server"):
        server_host, port = scope["server"]
        host = f"{server_host}:{port}"
    path = str(scope.get("root_path", "")) + str(scope.get("path", ""))
    return f"{scope.get('scheme', 'http')}://{host}{path}"


class DPoPVerifier:
    """Checks DPoP proofs (see the module docstring). ``required``: refuse Bearer tokens altogether (else a token
    without ``cnf.jkt`` may still come as Bearer; a bound one never may)."""

    def __init__(
        self,
        *,
        algorithms: Collection[str] = DEFAULT_DPOP_ALGORITHMS,
        max_age: int = DEFAULT_MAX_AGE,
        leeway: int = DEFAULT_LEEWAY,
        require_nonce: bool = False,
        nonce_lifetime: int = DEFAULT_NONCE_LIFETIME,
        replay_cache_size: int = DEFAULT_REPLAY_CACHE_SIZE,
        required: bool = False,
    ) -> None:
        unsafe = set(algorithms) - ASYMMETRIC
        if unsafe or not algorithms:
            raise ValueError(f"DPoP algorithms must be asymmetric JWS algorithms, not {sorted(unsafe) or 'none'}")
        if max_age <= 0 or nonce_lifetime <= 0 or replay_cache_size <= 0 or leeway < 0:
            raise ValueError("max_age, nonce_lifetime and replay_cache_size must be positive, leeway not negative")
        self.algorithms = tuple(algorithms)
        self.max_age, self.leeway = max_age, leeway
        self.require_nonce, self.nonce_lifetime = require_nonce, nonce_lifetime
        self.replay_cache_size = replay_cache_size
        self.required = required
        self._nonce_key = secrets.token_bytes(32)  # per process: nonces of a restarted server are re-issued
        self._seen: OrderedDict[str, float] = OrderedDict()  # jti -> when it may be forgotten

    # -- nonces ---------------------------------------------------------------------------------------------------

    def _nonce_of(self, window: int) -> str:
        packed = struct.pack(">Q", window)
        return _b64url(packed + hmac.new(self._nonce_key, packed, hashlib.sha256).digest()[:16])

    def current_nonce(self) -> str:
        return self._nonce_of(int(time.time()) // self.nonce_lifetime)

    def _nonce_valid(self, nonce: Any) -> bool:
        if not isinstance(nonce, str):
            return False
        window = int(time.time()) // self.nonce_lifetime
        return any(hmac.compare_digest(nonce, self._nonce_of(w)) for w in (window, window - 1))

    # -- proofs ---------------------------------------------------------------------------------------------------

    def verify(
        self,
        proofs: list[str],
        method: str,
        urls: Collection[str],
        access_token: str,
        bound_jkt: str | None,
    ) -> str:
        """Check the request's ``DPoP`` header values ``proofs`` for a request of ``method`` to one of ``urls``
        presenting ``access_token`` bound to ``bound_jkt``: the proof key's thumbprint, or ``DPoPError``."""
        if len(proofs) != 1:
            raise DPoPError("exactly one DPoP proof header is required")
        proof = proofs[0]
        if len(proof) > MAX_PROOF_BYTES:
            raise DPoPError("the DPoP proof is too large")
        claims, key = self._signed(proof)
        if not isinstance(claims.get("jti"), str) or not 0 < len(claims["jti"]) <= MAX_JTI_CHARS:
            raise DPoPError("the DPoP proof has no valid jti")
        if claims.get("htm") != method.upper():
            raise DPoPError("the DPoP proof's htm is not the request's method")
        htu = claims.get("htu")
        if not isinstance(htu, str) or _normalized(htu) not in {_normalized(url) for url in urls}:
            raise DPoPError("the DPoP proof's htu is not the request's URL")
        iat = claims.get("iat")
        now = time.time()
        if isinstance(iat, bool) or not isinstance(iat, int | float):
            raise DPoPError("the DPoP proof has no iat")
        if iat > now + self.leeway or iat < now - self.max_age:
            raise DPoPError("the DPoP proof's iat is outside the accepted window")
        if self.require_nonce and not self._nonce_valid(claims.get("nonce")):
            raise DPoPError("a fresh DPoP nonce is required", "use_dpop_nonce", self.current_nonce())
        expected_ath = _b64url(hashlib.sha256(access_token.encode("ascii", "replace")).digest())
        if not isinstance(claims.get("ath"), str) or not hmac.compare_digest(claims["ath"], expected_ath):
            raise DPoPError("the DPoP proof's ath is not the presented token's hash")
        thumbprint = key.thumbprint()
        if bound_jkt is None or not hmac.compare_digest(bound_jkt, thumbprint):
            raise DPoPError("the DPoP proof's key is not the one the token is bound to")
        self._remember(claims["jti"], float(iat), now)
        return thumbprint

    def _signed(self, proof: str) -> tuple[dict[str, Any], ECKey | OKPKey | RSAKey]:
        """The proof's claims, once its form and signature are checked, and its public key."""
        try:
            unverified = jws.extract_compact(proof.encode("ascii"))
        except (JoseError, ValueError, UnicodeError):
            raise DPoPError("the DPoP proof is not a compact JWS") from None
        header = dict(unverified.protected)
        if header.get("typ") != "dpop+jwt":
            raise DPoPError("the DPoP proof's typ is not dpop+jwt")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise DPoPError("the DPoP proof's algorithm is not accepted")
        jwk = header.get("jwk")
        kty = jwk.get("kty") if isinstance(jwk, dict) else None
        if not isinstance(jwk, dict) or kty not in _KEY_TYPES or any(member in jwk for member in _PRIVATE_MEMBERS):
            raise DPoPError("the DPoP proof has no public jwk")
        try:
            key: ECKey | OKPKey | RSAKey = _KEY_TYPES[kty].import_key(jwk)  # type: ignore[attr-defined]
            verified = jws.deserialize_compact(proof.encode("ascii"), key, algorithms=[alg])
            claims = json.loads(verified.payload)
        except (JoseError, ValueError, TypeError):
            raise DPoPError("the DPoP proof's signature does not verify") from None
        if not isinstance(claims, dict):
            raise DPoPError("the DPoP proof's claims are not a JSON object")
        return claims, key

    def _remember(self, jti: str, iat: float, now: float) -> None:
        """Refuse a jti seen before; keep it until its proof is too old to be accepted anyway."""
        while self._seen and next(iter(self._seen.values())) < now:
            self._seen.popitem(last=False)
        if jti in self._seen:
            raise DPoPError("the DPoP proof was used before (jti replayed)")
        if len(self._seen) >= self.replay_cache_size:
            oldest = next(iter(self._seen.values()))
            raise DPoPError("too many DPoP proofs to remember now", retry_after=max(1, math.ceil(oldest - now)))
        self._seen[jti] = iat + self.max_age + self.leeway
