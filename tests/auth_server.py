"""A small real OAuth 2.1 authorization server for the tests: signed JWT access tokens a protected mcpgen server
verifies, and the flows the mcpgen client runs.

Built on starlette and served by uvicorn on 127.0.0.1 (in a thread of the test process, or as a process of its own);
the protocol pieces come from authlib (PKCE S256 ``create_s256_code_challenge``, token generation) and its JOSE
library joserfc (the RSA key, JWKS, JWT signing). It serves:

- RFC 8414 metadata at ``/.well-known/oauth-authorization-server`` (and ``/.well-known/openid-configuration``);
- the JWKS at ``/jwks`` (an RSA key generated at start, ``kid`` set);
- ``/authorize``: authorization code with PKCE S256 required, automatic consent for the test user (``sub`` =
  ``USER``), redirects with ``code``, ``state`` and ``iss`` (RFC 9207); the redirect URI must be one registered;
- ``/token``: ``authorization_code`` (the verifier checked), ``refresh_token`` (rotated: a used one is dead),
  ``client_credentials`` (confidential clients); client authentication ``client_secret_basic``,
  ``client_secret_post`` or ``none`` (public clients); ``resource`` (RFC 8707) becomes ``aud``;
- ``/register``: dynamic client registration (RFC 7591);
- ``/introspect``: RFC 7662, for confidential clients;
- DPoP (RFC 9449): a token request with a valid ``DPoP`` proof (typ, alg, public jwk, signature, htm POST, htu the
  token endpoint, iat within a minute, jti unused, and the nonce when ``dpop_nonce`` is set: else 400
  ``use_dpop_nonce`` with ``DPoP-Nonce``) gets a ``token_type: DPoP`` token bound to the proof's key (``cnf.jkt``),
  its refresh token too (a refresh needs a proof of the same key); a bad proof is 400 ``invalid_dpop_proof``. The
  check is written here with joserfc, independently of the runtime's verifier, so that the two test each other.

Use::

    from auth_server import running_auth_server   # with tests/ on sys.path

    with running_auth_server(token_lifetime=3600) as auth:
        auth.issuer                                   # "http://127.0.0.1:<port>"
        client = auth.register_client(redirect_uris=["http://127.0.0.1:3000/callback"])  # {"client_id", ...}
        token = auth.issue_token(audience="http://127.0.0.1:8000/mcp", scopes=["mcp"])  # a signed JWT, directly

As a process (e.g. for the conformance suite's ``authorization`` scenarios)::

    python tests/auth_server.py --port 9000 --client-id conformance --client-secret s3cret \\
        --redirect-uri http://127.0.0.1:3000/callback

prints its issuer URL on stdout and serves until interrupted.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import uvicorn
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

USER = "test-user"  # the end user every authorization is consented for
CODE_LIFETIME = 60  # seconds an authorization code may be redeemed in
SCOPES_SUPPORTED = ("mcp", "mcp:read", "mcp:write", "offline_access")
TOKEN_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")
DPOP_ALGORITHMS = ("ES256", "ES384", "EdDSA", "RS256", "PS256")
DPOP_PROOF_MAX_AGE = 60  # seconds


@dataclass
class Client:
    client_id: str
    client_secret: str | None  # None: a public client (token_endpoint_auth_method "none")
    redirect_uris: list[str]
    auth_method: str = "client_secret_basic"
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])


@dataclass
class Grant:
    """What an authorization code or refresh token stands for."""

    client_id: str
    subject: str
    scopes: list[str]
    resource: list[str]
    redirect_uri: str = ""
    code_challenge: str = ""
    expires_at: float = 0.0
    dpop_jkt: str | None = None  # the key a refresh token is bound to (RFC 9449 §5)


class AuthServer:
    """The authorization server's state and endpoints (``app``); ``issuer`` is set once it listens."""

    def __init__(
        self,
        *,
        token_lifetime: int = 3600,
        refresh_tokens: bool = True,
        token_auth_methods: Sequence[str] = TOKEN_AUTH_METHODS,
        dpop_nonce: str | None = None,
        dpop_algorithms: Sequence[str] = DPOP_ALGORITHMS,
    ) -> None:
        self.issuer = ""
        self.dpop_nonce = dpop_nonce  # required in token requests' proofs when set
        self.dpop_algorithms = list(dpop_algorithms)
        self.dpop_jtis: set[str] = set()
        self.dpop_nonce_challenges = 0  # how many use_dpop_nonce answers the token endpoint gave
        self.token_auth_methods = list(token_auth_methods)  # what the metadata advertises
        self.token_lifetime = token_lifetime
        self.refresh_tokens = refresh_tokens
        self.key = RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(8), "use": "sig", "alg": "RS256"})
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Grant] = {}
        self.refresh: dict[str, Grant] = {}
        self.issued: list[dict[str, Any]] = []  # every access token's claims, for tests to look at
        self.lock = threading.Lock()
        self.app = Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self.metadata_endpoint),
                Route("/.well-known/openid-configuration", self.metadata_endpoint),
                Route("/jwks", self.jwks_endpoint),
                Route("/authorize", self.authorize_endpoint),
                Route("/token", self.token_endpoint, methods=["POST"]),
                Route("/register", self.register_endpoint, methods=["POST"]),
                Route("/introspect", self.introspect_endpoint, methods=["POST"]),
            ]
        )

    # -- for tests ------------------------------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "introspection_endpoint": f"{self.issuer}/introspect",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": self.token_auth_methods,
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": list(SCOPES_SUPPORTED),
            "authorization_response_iss_parameter_supported": True,
            "dpop_signing_alg_values_supported": self.dpop_algorithms,
        }

    def register_client(
        self,
        *,
        redirect_uris: Sequence[str] = (),
        auth_method: str = "client_secret_basic",
        grant_types: Sequence[str] = ("authorization_code", "refresh_token"),
        client_id: str | None = None,
        client_secret: str | None = None,
    ) -> dict[str, Any]:
        """Register a client (as ``/register`` does) and return its registration."""
        public = auth_method == "none"
        client = Client(
            client_id=client_id or generate_token(24),
            client_secret=None if public else (client_secret or generate_token(32)),
            redirect_uris=list(redirect_uris),
            auth_method=auth_method,
            grant_types=list(grant_types),
        )
        with self.lock:
            self.clients[client.client_id] = client
        registration: dict[str, Any] = {
            "client_id": client.client_id,
            "client_id_issued_at": int(time.time()),
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": auth_method,
            "grant_types": client.grant_types,
            "response_types": ["code"],
        }
        if client.client_secret is not None:
            registration |= {"client_secret": client.client_secret, "client_secret_expires_at": 0}
        return registration

    def issue_token(
        self,
        *,
        audience: str | Sequence[str],
        scopes: Sequence[str] = (),
        subject: str = USER,
        client_id: str = "test-client",
        lifetime: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> str:
        """A signed JWT access token (RFC 9068), as the token endpoint issues them."""
        now = int(time.time())
        aud = [audience] if isinstance(audience, str) else list(audience)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": aud[0] if len(aud) == 1 else aud,
            "client_id": client_id,
            "scope": " ".join(scopes),
            "iat": now,
            "exp": now + (self.token_lifetime if lifetime is None else lifetime),
            "jti": secrets.token_hex(12),
            **(extra or {}),
        }
        self.issued.append(claims)
        header = {"alg": "RS256", "typ": "at+jwt", "kid": self.key.kid}
        return jwt.encode(header, claims, self.key)

    # -- endpoints ------------------------------------------------------------------------------------------------

    async def metadata_endpoint(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    async def jwks_endpoint(self, request: Request) -> Response:
        return JSONResponse({"keys": [self.key.as_dict(private=False)]})

    async def authorize_endpoint(self, request: Request) -> Response:
        query = request.query_params
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        # Never redirect to a URI that is not the client's (RFC 6749 section 4.1.2.1): an error page instead.
        if client is None:
            return PlainTextResponse("unknown client_id", 400)
        if redirect_uri not in client.redirect_uris:
            return PlainTextResponse("redirect_uri is not registered for this client", 400)
        state = query.get("state")
        if query.get("response_type") != "code":
            return self._redirect(redirect_uri, {"error": "unsupported_response_type"}, state)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return self._redirect(
                redirect_uri, {"error": "invalid_request", "error_description": "PKCE S256 is required"}, state
            )
        code = generate_token(32)
        with self.lock:
            self.codes[code] = Grant(
                client_id=client.client_id,
                subject=USER,
                scopes=query.get("scope", "").split(),
                resource=query.getlist("resource"),
                redirect_uri=redirect_uri,
                code_challenge=query["code_challenge"],
                expires_at=time.time() + CODE_LIFETIME,
            )
        return self._redirect(redirect_uri, {"code": code}, state)

    def _redirect(self, redirect_uri: str, params: dict[str, str], state: str | None) -> Response:
        if state is not None:
            params["state"] = state
        params["iss"] = self.issuer  # RFC 9207
        parts = urlsplit(redirect_uri)
        query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
        return RedirectResponse(urlunsplit(parts._replace(query=query)), 302)

    async def token_endpoint(self, request: Request) -> Response:
        form = await request.form()
        values = {key: str(value) for key, value in form.items()}
        proofs = request.headers.getlist("dpop")
        jkt: str | None = None
        if proofs:
            checked = self._check_dpop(proofs)
            if isinstance(checked, Response):
                return checked
            jkt = checked
        client = self._authenticate_client(request, values)
        if client is None:
            return _oauth_error("invalid_client", "client authentication failed", 401)
        grant_type = values.get("grant_type")
        if grant_type not in client.grant_types and not (
            grant_type == "client_credentials" and client.client_secret is not None
        ):
            return _oauth_error("unauthorized_client", f"{grant_type} is not allowed for this client")
        if grant_type == "authorization_code":
            return self._code_grant(client, values, [str(v) for v in form.getlist("resource")], jkt)
        if grant_type == "refresh_token":
            return self._refresh_grant(client, values, [str(v) for v in form.getlist("resource")], jkt)
        if grant_type == "client_credentials":
            if client.client_secret is None:
                return _oauth_error("unauthorized_client", "public clients cannot use client_credentials")
            resource = [str(value) for value in form.getlist("resource")]
            grant = Grant(client.client_id, client.client_id, values.get("scope", "").split(), resource)
            grant.dpop_jkt = jkt
            return self._token_response(grant, refresh=False)
        return _oauth_error("unsupported_grant_type", f"unsupported grant_type {grant_type!r}")

    def _check_dpop(self, proofs: list[str]) -> str | Response:
        """The thumbprint of the key of a token request's valid DPoP proof, or the error answer."""
        if len(proofs) != 1:
            return _oauth_error("invalid_dpop_proof", "exactly one DPoP header is allowed")
        try:
            extracted = jws.extract_compact(proofs[0].encode())
            header = extracted.protected
            jwk = header.get("jwk")
            if header.get("typ") != "dpop+jwt" or header.get("alg") not in self.dpop_algorithms:
                return _oauth_error("invalid_dpop_proof", "typ must be dpop+jwt with an accepted alg")
            if not isinstance(jwk, dict) or "d" in jwk:
                return _oauth_error("invalid_dpop_proof", "the proof needs a public jwk")
            key = {"EC": ECKey, "OKP": OKPKey, "RSA": RSAKey}[jwk["kty"]].import_key(jwk)
            claims = json.loads(jws.deserialize_compact(proofs[0].encode(), key, algorithms=[header["alg"]]).payload)
        except (JoseError, ValueError, KeyError, TypeError):
            return _oauth_error("invalid_dpop_proof", "the proof does not verify")
        if claims.get("htm") != "POST" or claims.get("htu") != f"{self.issuer}/token":
            return _oauth_error("invalid_dpop_proof", "htm/htu are not this token request's")
        if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > DPOP_PROOF_MAX_AGE:
            return _oauth_error("invalid_dpop_proof", "iat is outside the accepted window")
        if self.dpop_nonce is not None and claims.get("nonce") != self.dpop_nonce:
            self.dpop_nonce_challenges += 1
            answer = _oauth_error("use_dpop_nonce", "the authorization server requires a DPoP nonce")
            answer.headers["DPoP-Nonce"] = self.dpop_nonce
            return answer
        with self.lock:
            if not isinstance(claims.get("jti"), str) or claims["jti"] in self.dpop_jtis:
                return _oauth_error("invalid_dpop_proof", "jti missing or replayed")
            self.dpop_jtis.add(claims["jti"])
        return str(key.thumbprint())

    def _code_grant(
        self, client: Client, values: dict[str, str], resource: list[str], jkt: str | None = None
    ) -> Response:
        with self.lock:
            grant = self.codes.pop(values.get("code", ""), None)  # one use only
        if grant is None or grant.client_id != client.client_id or grant.expires_at < time.time():
            return _oauth_error("invalid_grant", "unknown, used or expired authorization code")
        if values.get("redirect_uri", grant.redirect_uri) != grant.redirect_uri:
            return _oauth_error("invalid_grant", "redirect_uri does not match the authorization request")
        verifier = values.get("code_verifier", "")
        if not verifier or not secrets.compare_digest(create_s256_code_challenge(verifier), grant.code_challenge):
            return _oauth_error("invalid_grant", "the PKCE code_verifier does not match")
        if resource and grant.resource and set(resource) - set(grant.resource):
            return _oauth_error("invalid_target", "resource was not part of the authorization request")
        if resource:
            grant.resource = resource
        grant.dpop_jkt = jkt
        return self._token_response(grant, refresh=self.refresh_tokens)

    def _refresh_grant(
        self, client: Client, values: dict[str, str], resource: list[str], jkt: str | None = None
    ) -> Response:
        with self.lock:
            grant = self.refresh.pop(values.get("refresh_token", ""), None)  # rotation: the old one dies now
        if grant is None or grant.client_id != client.client_id:
            return _oauth_error("invalid_grant", "unknown or already used refresh token")
        if grant.dpop_jkt is not None and grant.dpop_jkt != jkt:
            return _oauth_error("invalid_grant", "this refresh token is bound to another DPoP key")
        requested = values.get("scope", "").split()
        if requested and set(requested) - set(grant.scopes):
            return _oauth_error("invalid_scope", "a refresh cannot widen the scopes")
        narrowed = Grant(grant.client_id, grant.subject, requested or grant.scopes, resource or grant.resource)
        narrowed.dpop_jkt = jkt
        return self._token_response(narrowed, refresh=True)

    def _token_response(self, grant: Grant, *, refresh: bool) -> Response:
        audience: list[str] = grant.resource or [self.issuer]
        bound = {"cnf": {"jkt": grant.dpop_jkt}} if grant.dpop_jkt is not None else None
        token = self.issue_token(
            audience=audience, scopes=grant.scopes, subject=grant.subject, client_id=grant.client_id, extra=bound
        )
        token_type = "DPoP" if grant.dpop_jkt is not None else "Bearer"
        body: dict[str, Any] = {"access_token": token, "token_type": token_type, "expires_in": self.token_lifetime}
        if grant.scopes:
            body["scope"] = " ".join(grant.scopes)
        if refresh:
            refresh_token = generate_token(40)
            with self.lock:
                self.refresh[refresh_token] = Grant(
                    grant.client_id, grant.subject, grant.scopes, grant.resource, dpop_jkt=grant.dpop_jkt
                )
            body["refresh_token"] = refresh_token
        return JSONResponse(body, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    def _authenticate_client(self, request: Request, values: dict[str, str]) -> Client | None:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            try:
                decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
            except ValueError:
                return None
            client_id, _, secret = decoded.partition(":")
            client = self.clients.get(unquote(client_id))
            if client is None or client.client_secret is None:
                return None
            return client if secrets.compare_digest(client.client_secret, unquote(secret)) else None
        client = self.clients.get(values.get("client_id", ""))
        if client is None:
            return None
        if client.client_secret is None:  # public: no secret, PKCE is its proof
            return client if "client_secret" not in values else None
        given = values.get("client_secret")
        return client if given is not None and secrets.compare_digest(client.client_secret, given) else None

    async def register_endpoint(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _oauth_error("invalid_client_metadata", "the body is not JSON")
        if not isinstance(body, dict):
            return _oauth_error("invalid_client_metadata", "the body is not a JSON object")
        redirect_uris = body.get("redirect_uris", [])
        if not isinstance(redirect_uris, list) or not all(isinstance(uri, str) for uri in redirect_uris):
            return _oauth_error("invalid_redirect_uri", "redirect_uris must be a list of URIs")
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            return _oauth_error("invalid_client_metadata", f"unsupported token_endpoint_auth_method {method!r}")
        grant_types = body.get("grant_types") or ["authorization_code", "refresh_token"]
        registration = self.register_client(redirect_uris=redirect_uris, auth_method=method, grant_types=grant_types)
        for name in ("client_name", "scope", "application_type"):
            if isinstance(body.get(name), str):
                registration[name] = body[name]
        return JSONResponse(registration, 201, headers={"Cache-Control": "no-store"})

    async def introspect_endpoint(self, request: Request) -> Response:
        form = await request.form()
        values = {key: str(value) for key, value in form.items()}
        client = self._authenticate_client(request, values)
        if client is None or client.client_secret is None:
            return _oauth_error("invalid_client", "introspection needs a confidential client", 401)
        try:
            claims = jwt.decode(values.get("token", ""), self.key, algorithms=["RS256"]).claims
        except Exception:
            return JSONResponse({"active": False})
        if claims.get("exp", 0) < time.time():
            return JSONResponse({"active": False})
        return JSONResponse({"active": True, "token_type": "Bearer", **claims})


def _oauth_error(error: str, description: str, status: int = 400) -> Response:
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="token"'
    return JSONResponse({"error": error, "error_description": description}, status, headers=headers)


@contextmanager
def running_auth_server(
    *,
    port: int = 0,
    token_lifetime: int = 3600,
    refresh_tokens: bool = True,
    token_auth_methods: Sequence[str] = TOKEN_AUTH_METHODS,
    dpop_nonce: str | None = None,
    dpop_algorithms: Sequence[str] = DPOP_ALGORITHMS,
) -> Iterator[AuthServer]:
    """Serve an ``AuthServer`` on 127.0.0.1 (``port`` 0: any free one) in a thread for the block; its ``issuer``
    is ``http://127.0.0.1:<port>``. ``token_lifetime``: seconds an access token lives (``expires_in``);
    ``refresh_tokens``: whether the code grant issues them; ``token_auth_methods``: the client authentication
    methods the metadata advertises (all three are accepted whatever it says); ``dpop_nonce``: the nonce every
    DPoP proof must carry (None: none needed); ``dpop_algorithms``: the proof algorithms it accepts."""
    auth = AuthServer(
        token_lifetime=token_lifetime,
        refresh_tokens=refresh_tokens,
        token_auth_methods=token_auth_methods,
        dpop_nonce=dpop_nonce,
        dpop_algorithms=dpop_algorithms,
    )
    config = uvicorn.Config(auth.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="auth-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test authorization server did not start")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    auth.issuer = f"http://127.0.0.1:{bound}"
    try:
        yield auth
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--client-id", help="pre-register a client with this id")
    parser.add_argument("--client-secret", help="its secret (omit for a public client)")
    parser.add_argument("--redirect-uri", action="append", default=[], help="its redirect URIs")
    args = parser.parse_args()
    with running_auth_server(port=args.port, token_lifetime=args.token_lifetime) as auth:
        if args.client_id:
            method = "client_secret_basic" if args.client_secret else "none"
            auth.register_client(
                redirect_uris=args.redirect_uri,
                auth_method=method,
                client_id=args.client_id,
                client_secret=args.client_secret,
                grant_types=["authorization_code", "refresh_token", "client_credentials"],
            )
        print(auth.issuer, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
