"""Token requests (RFC 6749 §3.2, OAuth 2.1): the form, the client authentication (authlib's
``client_secret_basic`` / ``client_secret_post`` encoders, and ``private_key_jwt`` assertions signed with
authlib's JOSE), and the answer checked before it is kept.

With ``dpop`` (RFC 9449 §5) each token request carries a fresh DPoP proof; a 400 ``use_dpop_nonce`` with a new
``DPoP-Nonce`` is answered by sending the request once more with that nonce (§8), and the answer may then be a
``DPoP`` token (bound to the key) or, from a server that does not bind, a ``Bearer`` one.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import httpx2
from authlib.oauth2.auth import encode_client_secret_basic, encode_client_secret_post
from authlib.oauth2.rfc7523 import private_key_jwt_sign

from .errors import OAuthFlowError
from .registration import ClientInfo

if TYPE_CHECKING:
    from .dpop import DPoP  # only a DPoP client loads it

__all__ = ["JWT_BEARER_ASSERTION", "PrivateKeyJWT", "Token", "request_token"]

JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MAX_TOKEN_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class PrivateKeyJWT:
    """``private_key_jwt`` client authentication (RFC 7523): a PEM private key and its algorithm. The assertion's
    audience is the authorization server's issuer."""

    private_key_pem: str
    algorithm: str = "RS256"
    lifetime: int = 300


@dataclass(frozen=True, slots=True)
class Token:
    """A token response, as stored. ``expires_at`` is a Unix time (None: the server gave no lifetime)."""

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Token | None:
        if not isinstance(data.get("access_token"), str):
            return None
        return cls(
            data["access_token"],
            str(data.get("token_type") or "Bearer"),
            data.get("refresh_token") if isinstance(data.get("refresh_token"), str) else None,
            float(data["expires_at"]) if isinstance(data.get("expires_at"), int | float) else None,
            data.get("scope") if isinstance(data.get("scope"), str) else None,
        )

    def expired(self, skew: float) -> bool:
        return self.expires_at is not None and time.time() + skew >= self.expires_at


class _Credentials:
    """What authlib's encoders read."""

    def __init__(self, client_id: str, client_secret: str | None) -> None:
        self.client_id, self.client_secret = client_id, client_secret


def _authenticate(
    client: ClientInfo, form: dict[str, str], token_endpoint: str, audience: str | None, jwt: PrivateKeyJWT | None
) -> tuple[dict[str, str], str]:
    headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
    body = urlencode(form)
    method = client.token_endpoint_auth_method
    credentials = _Credentials(client.client_id, client.client_secret)
    if method == "client_secret_basic":
        _, headers, body = encode_client_secret_basic(credentials, "POST", token_endpoint, headers, body)
    elif method == "client_secret_post":
        _, headers, body = encode_client_secret_post(credentials, "POST", token_endpoint, headers, body)
    elif method == "private_key_jwt":
        if jwt is None:
            raise OAuthFlowError("private_key_jwt needs a private key")
        now = int(time.time())
        claims = {"jti": uuid.uuid4().hex, "iat": now, "exp": now + jwt.lifetime}
        assertion = private_key_jwt_sign(
            jwt.private_key_pem, client.client_id, audience or token_endpoint, alg=jwt.algorithm, claims=claims
        )
        extra = {"client_id": client.client_id, "client_assertion_type": JWT_BEARER_ASSERTION}
        body = urlencode(
            {**form, **extra, "client_assertion": assertion.decode() if isinstance(assertion, bytes) else assertion}
        )
    else:  # none: a public client names itself in the body
        body = urlencode({**form, "client_id": client.client_id})
    return headers, body


async def request_token(
    http: httpx2.AsyncClient,
    token_endpoint: str,
    client: ClientInfo,
    form: dict[str, str],
    *,
    audience: str | None = None,
    jwt: PrivateKeyJWT | None = None,
    previous_refresh_token: str | None = None,
    dpop: DPoP | None = None,
) -> Token:
    """POST ``form`` to the token endpoint with the client's authentication (and a DPoP proof with ``dpop``); the
    checked token."""
    headers, body = _authenticate(client, form, token_endpoint, audience, jwt)
    response, answer = await _post(http, token_endpoint, body, headers, dpop)
    if dpop is not None and _wants_nonce(response, answer, dpop, token_endpoint):
        # A fresh assertion too: a private_key_jwt assertion's jti must not be replayed.
        headers, body = _authenticate(client, form, token_endpoint, audience, jwt)
        response, answer = await _post(http, token_endpoint, body, headers, dpop)
    if response.status_code != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise OAuthFlowError(f"the token endpoint answered HTTP {response.status_code} ({error or 'no error code'})")
    access, token_type = answer.get("access_token"), answer.get("token_type")
    if not isinstance(access, str) or not access or not isinstance(token_type, str):
        raise OAuthFlowError("the token response has no access_token or token_type")
    if token_type.lower() == "dpop" and dpop is not None:
        token_type = "DPoP"
    elif token_type.lower() == "bearer":
        token_type = "Bearer"
    else:
        raise OAuthFlowError(f"unsupported token type {token_type!r} ({'DPoP or ' if dpop else ''}Bearer)")
    lifetime = answer.get("expires_in")
    refresh = answer.get("refresh_token")
    scope = answer.get("scope")
    return Token(
        access_token=access,
        token_type=token_type,
        # A refresh answer without a new refresh token leaves the old one usable (RFC 6749 §6).
        refresh_token=refresh if isinstance(refresh, str) else previous_refresh_token,
        expires_at=time.time() + lifetime if isinstance(lifetime, int | float) and lifetime > 0 else None,
        scope=scope if isinstance(scope, str) else form.get("scope"),
    )


async def _post(
    http: httpx2.AsyncClient, token_endpoint: str, body: str, headers: dict[str, str], dpop: DPoP | None
) -> tuple[httpx2.Response, Any]:
    """One token request (with a fresh DPoP proof): the response and its JSON (None when it is not JSON)."""
    if dpop is not None:
        headers = {**headers, "DPoP": dpop.proof("POST", token_endpoint)}
    try:
        response = await http.post(token_endpoint, content=body.encode(), headers=headers)
    except httpx2.HTTPError as exc:
        raise OAuthFlowError(f"the token request failed: {exc!r}") from exc
    if len(response.content) > MAX_TOKEN_BYTES:
        raise OAuthFlowError("the token response is too large")
    if dpop is not None:
        dpop.remember(token_endpoint, response.headers)
    try:
        return response, response.json()
    except ValueError:
        return response, None


def _wants_nonce(response: httpx2.Response, answer: Any, dpop: DPoP, token_endpoint: str) -> bool:
    """Whether the authorization server asked for a DPoP nonce (400 ``use_dpop_nonce``) and gave one."""
    return (
        response.status_code == 400
        and isinstance(answer, dict)
        and answer.get("error") == "use_dpop_nonce"
        and dpop.nonce_for(token_endpoint) is not None
    )
