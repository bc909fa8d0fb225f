"""End to end: mcpgen's client with ``EnterpriseAuthProvider`` (Enterprise-Managed Authorization: an ID-JAG from the
IdP's RFC 8693 token exchange, presented by the RFC 7523 JWT bearer grant) and ``WorkloadIdentityProvider`` (the
workload's JWT presented by the same grant), against a bearer-protected mcpgen server, an enterprise IdP and an MCP
authorization server written here (starlette, joserfc keys and JWTs), all over real HTTP on 127.0.0.1.

The authorization server checks what a real one does (the assertion's signature, issuer, audience, expiry; the
ID-JAG's ``typ``, ``client_id`` and ``resource``; client authentication) and records every token request, so the
tests can say what was sent, and that a refused grant is neither retried nor swapped for another grant.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import pytest
from auth_server import AuthServer
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from support.content import text_of
from support.ports import free_port
from support.servers import serving_app, serving_protected, whoami_server

from mcpgen_runtime import Client
from mcpgen_runtime.client import AuthorizationError
from mcpgen_runtime.client.auth import OAuthFlowError
from mcpgen_runtime.client.auth.grants import (
    ENTERPRISE_MANAGED_AUTHORIZATION,
    ID_JAG_TOKEN_TYPE,
    ID_TOKEN_TYPE,
    JWT_BEARER_GRANT,
    TOKEN_EXCHANGE_GRANT,
    EnterpriseAuthProvider,
    GrantError,
    WorkloadIdentityProvider,
)
from mcpgen_runtime.server.auth import DPoPVerifier

pytestmark = pytest.mark.anyio

USER = "alice@example.com"
WORKLOAD = "spiffe://example.org/ns/prod/sa/builder"
WORKLOAD_ISSUER = "https://cluster.example.org"
MCP_CLIENT_ID, MCP_CLIENT_SECRET = "mcp-client", "mcp s3cret:with/odd chars"
IDP_CLIENT_ID = "idp-client"
FORBIDDEN_SCOPE = "admin"  # the authorization server refuses it with invalid_scope


def sign(key: Any, claims: dict[str, Any], typ: str = "JWT", lifetime: int = 300) -> str:
    now = int(time.time())
    header = {"alg": "ES256" if isinstance(key, ECKey) else "RS256", "typ": typ}
    if key.kid:
        header["kid"] = key.kid
    return jwt.encode(header, {"iat": now, "exp": now + lifetime, "jti": uuid.uuid4().hex, **claims}, key)


def oauth_error(error: str, status: int = 400) -> Response:
    return JSONResponse({"error": error, "error_description": f"refused: {error}"}, status_code=status)


def verified(token: str, key: Any, *, issuer: str, audience: str) -> dict[str, Any] | None:
    """The claims of ``token`` when it is signed by ``key`` for ``audience`` by ``issuer`` and not expired."""
    try:
        claims = dict(jwt.decode(token, key).claims)
    except (JoseError, ValueError):
        return None
    audiences = claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
    fresh = isinstance(claims.get("exp"), int) and claims["exp"] > time.time()
    return claims if claims.get("iss") == issuer and audience in audiences and fresh else None


@dataclass
class IdP:
    """The enterprise IdP: its ID tokens (for ``IDP_CLIENT_ID``) and the token exchange that turns one into an
    ID-JAG for an allowed resource."""

    key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256"))
    issuer: str = ""
    allowed_resources: set[str] = field(default_factory=set)
    issued_type: str = ID_JAG_TOKEN_TYPE  # what it claims to issue (a broken IdP claims something else)
    exchanges: list[dict[str, str]] = field(default_factory=list)

    def id_token(self, audience: str = IDP_CLIENT_ID, lifetime: int = 300) -> str:
        return sign(self.key, {"iss": self.issuer, "sub": USER, "aud": audience, "email": USER}, lifetime=lifetime)

    async def token(self, request: Request) -> Response:
        form = {key: str(value) for key, value in (await request.form()).items()}
        self.exchanges.append(form)
        if form.get("grant_type") != TOKEN_EXCHANGE_GRANT:
            return oauth_error("unsupported_grant_type")
        if form.get("requested_token_type") != ID_JAG_TOKEN_TYPE or form.get("subject_token_type") != ID_TOKEN_TYPE:
            return oauth_error("invalid_request")
        claims = verified(form.get("subject_token", ""), self.key, issuer=self.issuer, audience=IDP_CLIENT_ID)
        if claims is None:
            return oauth_error("invalid_grant")
        if form.get("resource") not in self.allowed_resources or not form.get("audience"):
            return oauth_error("invalid_target")  # the policy: this user may not use that server
        grant = {
            "iss": self.issuer,
            "sub": claims["sub"],
            "aud": form["audience"],
            "client_id": MCP_CLIENT_ID,
            "resource": form["resource"],
        }
        id_jag = sign(self.key, grant, typ="oauth-id-jag+jwt")
        return JSONResponse({"access_token": id_jag, "issued_token_type": self.issued_type, "token_type": "N_A"})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/token", self.token, methods=["POST"])])


@dataclass
class MCPAuthServer:
    """The MCP authorization server: the JWT bearer grant only, for ID-JAGs of the IdP (from the confidential
    client, ``client_secret_basic``) and for workload JWTs of ``WORKLOAD_ISSUER``; signed JWT access tokens."""

    idp: IdP
    workload_key: ECKey = field(default_factory=lambda: ECKey.generate_key("P-256"))
    signing_key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "as-1"}))
    issuer: str = ""
    requests: list[dict[str, str]] = field(default_factory=list)
    issued: list[dict[str, Any]] = field(default_factory=list)
    misbehaviour: str | None = None  # "huge", "slow" or "mac": a hostile token endpoint
    # DPoP (RFC 9449) at the token endpoint: tests/auth_server.py's own proof check (joserfc, independent of the
    # runtime); a grant with a valid proof gets a DPoP token bound to its key (cnf.jkt). None: Bearer only.
    proofs: AuthServer | None = None

    async def metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "grant_types_supported": [JWT_BEARER_GRANT],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                **({"dpop_signing_alg_values_supported": self.proofs.dpop_algorithms} if self.proofs else {}),
            }
        )

    async def jwks(self, request: Request) -> Response:
        return JSONResponse(KeySet([self.signing_key]).as_dict(private=False))

    def _client(self, request: Request) -> str | None:
        """The authenticated client's id (Basic, each part URL-decoded), or None."""
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return None
        client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        return MCP_CLIENT_ID if (unquote(client_id), unquote(secret)) == (MCP_CLIENT_ID, MCP_CLIENT_SECRET) else None

    async def token(self, request: Request) -> Response:
        form = {key: str(value) for key, value in (await request.form()).items()}
        self.requests.append({**form, "authorization": request.headers.get("authorization", "")})
        jkt: str | None = None
        if self.proofs is not None and request.headers.getlist("dpop"):
            checked = self.proofs._check_dpop(request.headers.getlist("dpop"))
            if isinstance(checked, Response):
                return checked
            jkt = checked
        if self.misbehaviour == "huge":
            return JSONResponse({"access_token": "x" * 100_000, "token_type": "Bearer"})
        if self.misbehaviour == "slow":
            await anyio.sleep(30)
        if self.misbehaviour == "mac":
            return JSONResponse({"access_token": "abc", "token_type": "mac"})
        if form.get("grant_type") != JWT_BEARER_GRANT:
            return oauth_error("unsupported_grant_type")
        assertion = form.get("assertion", "")
        if FORBIDDEN_SCOPE in form.get("scope", "").split():
            return oauth_error("invalid_scope")
        if _signed_by(assertion, self.idp.key):  # an ID-JAG
            if jwt.decode(assertion, self.idp.key).header.get("typ") != "oauth-id-jag+jwt":
                return oauth_error("invalid_grant")
            client = self._client(request)
            if client is None:
                return oauth_error("invalid_client", 401)
            grant = verified(assertion, self.idp.key, issuer=self.idp.issuer, audience=self.issuer)
            if grant is None or grant.get("client_id") != client or grant.get("resource") != form.get("resource"):
                return oauth_error("invalid_grant")
            subject = grant["sub"]
        else:
            grant = verified(assertion, self.workload_key, issuer=WORKLOAD_ISSUER, audience=self.issuer)
            if grant is None:
                return oauth_error("invalid_grant")
            subject = grant["sub"]
        claims: dict[str, Any] = {"iss": self.issuer, "sub": subject, "aud": form.get("resource", ""), "scope": "mcp"}
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        self.issued.append(claims)
        token_type = "DPoP" if jkt is not None else "Bearer"
        return JSONResponse(
            {"access_token": sign(self.signing_key, claims), "token_type": token_type, "expires_in": 300}
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self.metadata),
                Route("/jwks", self.jwks),
                Route("/token", self.token, methods=["POST"]),
            ]
        )

    def workload_jwt(self, audience: str | None = None, lifetime: int = 300) -> str:
        claims = {"iss": WORKLOAD_ISSUER, "sub": WORKLOAD, "aud": audience or self.issuer}
        return sign(self.workload_key, claims, lifetime=lifetime)


def _signed_by(token: str, key: Any) -> bool:
    try:
        jwt.decode(token, key)
    except (JoseError, ValueError):
        return False
    return True


@dataclass
class World:
    idp: IdP
    auth: MCPAuthServer
    url: str  # the protected MCP server


@asynccontextmanager
async def world(
    *, advertised_issuer: str | None = None, dpop: DPoPVerifier | None = None, **dpop_at_the_as: Any
) -> AsyncIterator[World]:
    """The IdP, the MCP authorization server and the protected server, all serving. ``advertised_issuer``: the
    authorization server the protected resource metadata names (default: the real one). ``dpop``: the protected
    server checks DPoP proofs, and the authorization server binds tokens to a proof's key (``dpop_at_the_as``:
    ``AuthServer``'s ``dpop_nonce`` / ``dpop_algorithms``)."""
    idp = IdP()
    auth = MCPAuthServer(idp, proofs=AuthServer(**dpop_at_the_as) if dpop is not None else None)
    async with serving_app(idp.app()) as idp_base, serving_app(auth.app()) as auth_base:
        idp.issuer, auth.issuer = idp_base, auth_base
        if auth.proofs is not None:
            auth.proofs.issuer = auth_base  # the proofs' htu is this server's token endpoint
        protected = serving_protected(
            whoami_server(), auth_base, authorization_servers=[advertised_issuer or auth_base], dpop=dpop
        )
        async with protected as url:
            idp.allowed_resources.add(url)
            yield World(idp, auth, url)


def enterprise(w: World, **options: Any) -> EnterpriseAuthProvider:
    settings: dict[str, Any] = {
        "id_token": w.idp.id_token(),
        "idp_token_endpoint": f"{w.idp.issuer}/token",
        "idp_client_id": IDP_CLIENT_ID,
        "client_id": MCP_CLIENT_ID,
        "client_secret": MCP_CLIENT_SECRET,
    }
    return EnterpriseAuthProvider(w.url, **{**settings, **options})


# --- Enterprise-Managed Authorization ---


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_id_token_becomes_an_id_jag_then_an_access_token_for_this_server(mode: str) -> None:
    with anyio.fail_after(40):
        async with world() as w:
            # The provider's capability is declared by Client.connect, merged with the caller's own.
            capabilities = {"experimental": {"x": {}}}
            async with Client.connect_http(w.url, auth=enterprise(w), mode=mode, capabilities=capabilities) as client:
                declared = client.client_capabilities
                assert (
                    declared["extensions"] == {ENTERPRISE_MANAGED_AUTHORIZATION: {}} and "x" in declared["experimental"]
                )
                assert text_of(await client.call_tool("whoami", {})) == USER
                assert text_of(await client.call_tool("whoami", {})) == USER
            (exchange,) = w.idp.exchanges  # one exchange, one grant: the token is reused
            assert exchange["audience"] == w.auth.issuer and exchange["resource"] == w.url
            assert exchange["client_id"] == IDP_CLIENT_ID
            (grant,) = w.auth.requests
            assert grant["grant_type"] == JWT_BEARER_GRANT and grant["authorization"].startswith("Basic ")
            assert "client_secret" not in grant  # client_secret_basic: the secret stays out of the body
            assert w.auth.issued[-1]["aud"] == w.url


async def test_an_id_token_the_idp_refuses_is_a_grant_error_and_nothing_reaches_the_mcp_authorization_server() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            provider = enterprise(w, id_token=w.idp.id_token(audience="another-app"))
            with pytest.raises(GrantError) as refused:
                await provider.authorize()
            assert refused.value.error == "invalid_grant" and refused.value.status == 400
            assert refused.value.endpoint == f"{w.idp.issuer}/token"
            with pytest.raises(OAuthFlowError, match="refused this credential before"):
                await provider.authorize()  # the same ID token is not sent again
            assert len(w.idp.exchanges) == 1 and w.auth.requests == []


async def test_the_idp_policy_refusal_surfaces_under_a_request_as_an_authorization_error() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            w.idp.allowed_resources.clear()  # the user may not use this server
            provider = enterprise(w)
            with pytest.raises(AuthorizationError) as refused:
                async with Client.connect_http(w.url, auth=provider) as client:
                    await client.tools()
            assert refused.value.status == 401
            assert isinstance(provider.last_exception, GrantError) and provider.last_exception.error == "invalid_target"
            assert len(w.idp.exchanges) == 1 and w.auth.requests == []


async def test_an_idp_answer_that_is_not_an_id_jag_is_refused() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            w.idp.issued_type = "urn:ietf:params:oauth:token-type:access_token"
            with pytest.raises(GrantError, match="not an ID-JAG"):
                await enterprise(w).authorize()
            assert w.auth.requests == []


async def test_a_pinned_authorization_server_is_used_whatever_the_resource_names() -> None:
    with anyio.fail_after(40):
        async with world(advertised_issuer=f"http://127.0.0.1:{free_port()}") as w:
            # The resource names an authorization server the client was not configured for: the ID-JAG is made
            # for, and sent to, the configured one only.
            provider = enterprise(w, authorization_server=w.auth.issuer)
            async with Client.connect_http(w.url, auth=provider) as client:
                assert text_of(await client.call_tool("whoami", {})) == USER
            assert w.idp.exchanges[0]["audience"] == w.auth.issuer


async def test_the_id_token_source_is_called_with_the_authorization_server_issuer() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            asked: list[str] = []

            async def id_token(audience: str) -> str:
                asked.append(audience)
                return w.idp.id_token()

            await enterprise(w, id_token=id_token).authorize()
            assert asked == [w.auth.issuer]


# --- workload identity federation ---


async def test_a_workload_jwt_from_a_callable_is_the_grant() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            audiences: list[str] = []

            def source(audience: str) -> str:
                audiences.append(audience)
                return w.auth.workload_jwt(audience)

            provider = WorkloadIdentityProvider(w.url, assertion=source, client_id="builder")
            async with Client.connect_http(w.url, auth=provider, mode="auto") as client:
                assert text_of(await client.call_tool("whoami", {})) == WORKLOAD
            assert audiences == [w.auth.issuer]
            (grant,) = w.auth.requests
            assert grant["grant_type"] == JWT_BEARER_GRANT and grant["client_id"] == "builder"
            assert grant["resource"] == w.url and grant["authorization"] == ""


async def test_a_workload_jwt_file_is_read_at_each_grant(tmp_path: Path) -> None:
    with anyio.fail_after(40):
        async with world() as w:
            token_file = tmp_path / "token"
            token_file.write_text(w.auth.workload_jwt() + "\n")
            provider = WorkloadIdentityProvider(w.url, assertion_path=token_file)
            await provider.authorize()
            token_file.write_text(w.auth.workload_jwt())  # rotated by the platform
            await provider.storage.delete(f"tokens {w.url}")
            await provider.authorize()
            first, second = (request["assertion"] for request in w.auth.requests)
            assert first != second and second == token_file.read_text()


async def test_a_missing_or_oversized_workload_jwt_file_is_a_flow_error_naming_it(tmp_path: Path) -> None:
    provider = WorkloadIdentityProvider("http://127.0.0.1:9/mcp", assertion_path=tmp_path / "absent")
    with pytest.raises(OAuthFlowError, match="absent"):
        await provider.assertion(WORKLOAD_ISSUER)  # type: ignore[misc, operator]
    (tmp_path / "huge").write_bytes(b"x" * 1_000_000)
    provider = WorkloadIdentityProvider("http://127.0.0.1:9/mcp", assertion_path=tmp_path / "huge")
    with pytest.raises(OAuthFlowError, match="larger than"):
        await provider.assertion(WORKLOAD_ISSUER)  # type: ignore[misc, operator]


@pytest.mark.parametrize(
    ("scope", "wrong_audience", "error"), [(FORBIDDEN_SCOPE, False, "invalid_scope"), (None, True, "invalid_grant")]
)
async def test_a_refused_workload_grant_is_a_typed_error_never_retried_nor_switched(
    scope: str | None, wrong_audience: bool, error: str
) -> None:
    with anyio.fail_after(40):
        async with world() as w:
            assertion = w.auth.workload_jwt("https://wrong.example" if wrong_audience else None)
            provider = WorkloadIdentityProvider(w.url, assertion=assertion, scope=scope)
            with pytest.raises(GrantError) as refused:
                await provider.authorize()
            assert refused.value.error == error and refused.value.status == 400
            # Under requests: each fails, and the refused assertion is not sent again.
            for _ in range(2):  # each connection is refused (its first request, by HTTP 401)
                with pytest.raises(AuthorizationError):
                    async with Client.connect_http(w.url, auth=provider, request_timeout=10) as client:
                        await client.tools()
            assert [request["grant_type"] for request in w.auth.requests] == [JWT_BEARER_GRANT]
            assert "refused this credential before" in (provider.last_error or "")


async def test_an_expired_workload_jwt_is_refused_before_anything_is_sent() -> None:
    with anyio.fail_after(40):
        async with world() as w:
            provider = WorkloadIdentityProvider(w.url, assertion=w.auth.workload_jwt(lifetime=-120))
            with pytest.raises(OAuthFlowError, match="expired"):
                await provider.authorize()
            assert w.auth.requests == []


@pytest.mark.parametrize("assertion", ["", "not-a-jwt", "a.b", "x" * 20000 + ".y.z", "a.!!!.c"])
async def test_a_malformed_assertion_is_refused_before_anything_is_sent(assertion: str) -> None:
    with anyio.fail_after(40):
        async with world() as w:
            with pytest.raises(OAuthFlowError):
                await WorkloadIdentityProvider(w.url, assertion=assertion).authorize()
            assert w.auth.requests == []


@pytest.mark.parametrize(
    ("misbehaviour", "message"),
    [("huge", "too large"), ("slow", "did not answer within 1.0 s"), ("mac", "only Bearer")],
)
async def test_a_hostile_token_endpoint_is_a_grant_error_within_the_deadline(misbehaviour: str, message: str) -> None:
    with anyio.fail_after(40):
        async with world() as w:
            w.auth.misbehaviour = misbehaviour
            provider = WorkloadIdentityProvider(w.url, assertion=w.auth.workload_jwt(), timeout=1.0)
            started = time.monotonic()
            with pytest.raises(GrantError, match=message):
                await provider.authorize()
            assert time.monotonic() - started < 5
            assert await provider.storage.load(f"tokens {w.url}") is None


def test_the_providers_refuse_a_configuration_that_cannot_work() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentityProvider("http://127.0.0.1:9/mcp")
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentityProvider("http://127.0.0.1:9/mcp", assertion="a.b.c", assertion_path="/tmp/x")
    with pytest.raises(ValueError, match="client_id"):
        WorkloadIdentityProvider("http://127.0.0.1:9/mcp", assertion="a.b.c", client_secret="s")
    with pytest.raises(ValueError, match="confidential"):
        EnterpriseAuthProvider(
            "http://127.0.0.1:9/mcp",
            id_token="a.b.c",
            idp_token_endpoint="http://127.0.0.1:9/token",
            idp_client_id=None,
            client_id="c",
            client_secret="s",
            token_endpoint_auth_method="none",
        )


# --- DPoP-bound tokens from the grants ---


@pytest.mark.parametrize("kind", ["workload", "enterprise"])
async def test_a_grant_with_dpop_gets_a_bound_token_used_with_a_proof_on_every_request(kind: str) -> None:
    # Nonces on both sides: the authorization server's (use_dpop_nonce on the grant) and the resource server's.
    with anyio.fail_after(40):
        async with world(dpop=DPoPVerifier(required=True, require_nonce=True), dpop_nonce="as-nonce") as w:
            provider: WorkloadIdentityProvider | EnterpriseAuthProvider
            if kind == "workload":
                provider = WorkloadIdentityProvider(w.url, assertion=w.auth.workload_jwt, dpop=True)
                options: dict[str, Any] = {"mode": "auto"}
            else:
                provider = enterprise(w, dpop=True)
                options = {"mode": "legacy"}  # the extension's capability comes from the provider
            async with Client.connect_http(w.url, auth=provider, **options) as client:
                assert text_of(await client.call_tool("whoami", {})) == (WORKLOAD if kind == "workload" else USER)
                assert text_of(await client.call_tool("whoami", {})) == (WORKLOAD if kind == "workload" else USER)
            assert provider.dpop is not None
            assert w.auth.issued == [{**w.auth.issued[0], "cnf": {"jkt": provider.dpop.thumbprint}}]
            assert w.auth.proofs is not None and w.auth.proofs.dpop_nonce_challenges == 1
            assert [request["grant_type"] for request in w.auth.requests] == [JWT_BEARER_GRANT] * 2  # nonce, then it
            if kind == "enterprise":
                assert len(w.idp.exchanges) == 1  # the IdP's exchange is not bound: no proof, no nonce retry


async def test_a_dpop_key_the_authorization_server_does_not_accept_stops_before_the_grant() -> None:
    with anyio.fail_after(40):
        async with world(dpop=DPoPVerifier(), dpop_algorithms=["PS256"]) as w:
            provider = WorkloadIdentityProvider(w.url, assertion=w.auth.workload_jwt, dpop=True)
            with pytest.raises(OAuthFlowError, match="PS256"):
                await provider.authorize()
            assert w.auth.requests == []  # the workload's JWT was never sent


def test_the_enterprise_provider_gives_the_capability_the_client_declares() -> None:
    provider = EnterpriseAuthProvider(
        "http://127.0.0.1:1/mcp",
        id_token="a.b.c",
        idp_token_endpoint="http://127.0.0.1:1/token",
        idp_client_id=IDP_CLIENT_ID,
        client_id=MCP_CLIENT_ID,
        client_secret=MCP_CLIENT_SECRET,
    )
    assert provider.client_capabilities == {"extensions": {ENTERPRISE_MANAGED_AUTHORIZATION: {}}}
    provider.client_capabilities["extensions"].clear()  # a fresh dict each time: the caller may merge into it
    assert provider.client_capabilities["extensions"] == {ENTERPRISE_MANAGED_AUTHORIZATION: {}}
