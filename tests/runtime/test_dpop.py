"""DPoP (RFC 9449): the client's proofs and nonces (``client.auth.dpop``), its DPoP-bound token requests against the
real test authorization server (tests/auth_server.py, which checks proofs with its own joserfc code), and the
resource server's proof checks (``server.auth.dpop`` through ``BearerAuth(dpop=...)``) with real tokens and real
proofs: accepted, and refused for a replayed proof, a wrong ``htu`` or ``htm``, an old ``iat``, a stolen token
without its key, a bound token presented as Bearer, a missing nonce. End to end (our client, our protected server,
the test AS, all over HTTP).
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from joserfc import jws, jwt
from joserfc.jwk import OctKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpgen_runtime import Client
from mcpgen_runtime.client.auth import ClientMetadata, DPoP, DPoPKey, OAuthFlowError, OAuthProvider
from mcpgen_runtime.client.auth.dpop import access_token_hash, htu_of
from mcpgen_runtime.client.auth.registration import ClientInfo
from mcpgen_runtime.client.auth.tokens import request_token
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.auth import AccessToken, BearerAuth, DPoPVerifier, JWTVerifier
from mcpgen_runtime.transports.http.server.auth import Authenticated, AuthRefusal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import AuthServer, running_auth_server
from support.content import text_of
from support.servers import serving_app, serving_protected

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:3999/callback"  # never listened on: the redirect handler reads the Location header


def claims_of(compact: str) -> tuple[dict[str, Any], dict[str, Any]]:
    extracted = jws.extract_compact(compact.encode())
    return dict(extracted.protected), json.loads(extracted.payload)


# -- the client's proofs ------------------------------------------------------------------------------------------


def test_a_proof_has_the_rfc_claims_and_only_the_public_key() -> None:
    dpop = DPoP()
    proof = dpop.proof("post", "https://mcp.example.com/mcp?x=1#f", access_token="tok")
    header, claims = claims_of(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256"
    assert "d" not in header["jwk"] and header["jwk"]["kty"] == "EC"
    assert claims["htm"] == "POST" and claims["htu"] == "https://mcp.example.com/mcp"
    assert claims["ath"] == access_token_hash("tok") and abs(claims["iat"] - time.time()) < 5
    assert claims_of(dpop.proof("POST", "https://a/"))[1]["jti"] != claims["jti"]  # fresh every time
    assert "ath" not in claims_of(dpop.proof("POST", "https://a/token"))[1]


def test_nonces_are_kept_per_origin_and_bounded() -> None:
    dpop = DPoP(DPoPKey.generate("ES384"))
    dpop.remember("https://as.example/token", {"dpop-nonce": "n1"})
    assert claims_of(dpop.proof("POST", "https://as.example/other"))[1]["nonce"] == "n1"
    assert "nonce" not in claims_of(dpop.proof("POST", "https://rs.example/mcp"))[1]
    dpop.remember("https://as.example/token", {"dpop-nonce": "x" * 5000})  # hostile: ignored
    assert dpop.nonce_for("https://as.example/") == "n1"
    for index in range(100):
        dpop.remember(f"https://h{index}.example/", {"dpop-nonce": "n"})
    assert dpop.nonce_for("https://as.example/") is None and dpop.nonce_for("https://h99.example/") == "n"


def test_unsupported_algorithms_and_public_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        DPoPKey.generate("HS256")
    with pytest.raises(ValueError, match="private"):
        DPoPKey(type(DPoP().key.key).import_key(DPoP().key.public_jwk), "ES256")  # type: ignore[attr-defined]
    assert htu_of("http://h:1/p?q#f") == "http://h:1/p"
    original = DPoPKey.generate("PS256")
    loaded = DPoPKey.from_pem(original.key.as_pem(private=True), "PS256")
    assert loaded.thumbprint == original.thumbprint and "d" not in loaded.public_jwk


async def test_the_http_flow_answers_one_nonce_challenge_and_signs_each_request() -> None:
    seen: list[dict[str, Any]] = []

    async def endpoint(request: Request) -> Response:
        if "dpop" not in request.headers:
            return JSONResponse({"error": "invalid_token"}, 401)
        _, claims = claims_of(request.headers["dpop"])
        seen.append(claims)
        if claims.get("nonce") != "rs-nonce":
            challenge = {"WWW-Authenticate": 'DPoP error="use_dpop_nonce"', "DPoP-Nonce": "rs-nonce"}
            return JSONResponse({"error": "use_dpop_nonce"}, 401, headers=challenge)
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])
    dpop = DPoP()
    with anyio.fail_after(20):
        async with serving_app(app) as base, httpx2.AsyncClient(auth=dpop.http_auth) as http:
            headers = {"authorization": "DPoP the-token"}
            assert (await http.post(f"{base}/mcp?q=1", headers=headers)).status_code == 200
            assert (await http.get(f"{base}/mcp", headers=headers)).status_code == 200
            assert (await http.delete(f"{base}/mcp", headers=headers)).status_code == 200
            assert (await http.get(f"{base}/mcp")).status_code == 401  # no DPoP token: nothing signed
    assert [claims["htm"] for claims in seen] == ["POST", "POST", "GET", "DELETE"]
    assert [claims.get("nonce") for claims in seen] == [None, "rs-nonce", "rs-nonce", "rs-nonce"]
    assert len({claims["jti"] for claims in seen}) == 4 and all(c["htu"] == f"{base}/mcp" for c in seen)
    assert all(claims["ath"] == access_token_hash("the-token") for claims in seen)


# -- token requests at the real test authorization server --------------------------------------------------------


async def test_a_token_request_retries_once_with_the_as_nonce_and_gets_a_bound_token() -> None:
    with anyio.fail_after(20), running_auth_server(dpop_nonce="as-nonce") as auth:
        registration = auth.register_client(grant_types=["client_credentials"])
        client = ClientInfo(registration["client_id"], registration["client_secret"], "client_secret_basic")
        dpop = DPoP()
        form = {"grant_type": "client_credentials", "resource": "http://127.0.0.1:1/mcp", "scope": "mcp"}
        async with httpx2.AsyncClient(timeout=10) as http:
            token = await request_token(http, f"{auth.issuer}/token", client, form, dpop=dpop)
            assert token.token_type == "DPoP" and auth.dpop_nonce_challenges == 1
            assert auth.issued[-1]["cnf"] == {"jkt": dpop.thumbprint}
            # The nonce is remembered: the next request carries it at once.
            await request_token(http, f"{auth.issuer}/token", client, form, dpop=dpop)
            assert auth.dpop_nonce_challenges == 1
            # Without DPoP, the same server issues a Bearer token.
            plain = await request_token(http, f"{auth.issuer}/token", client, form)
            assert plain.token_type == "Bearer" and "cnf" not in auth.issued[-1]


async def test_a_key_the_authorization_server_does_not_accept_stops_the_flow() -> None:
    with anyio.fail_after(20), running_auth_server(dpop_algorithms=["RS256"]) as auth:
        async with protected(auth) as url:
            hook = provider(url, dpop=DPoP())  # ES256
            with pytest.raises(OAuthFlowError, match="RS256"):
                await hook.authorize()


# -- the resource server's checks, with real tokens and real proofs ----------------------------------------------


def scope_of(url: str, method: str = "POST", proofs: tuple[str, ...] = ()) -> dict[str, Any]:
    parts = httpx2.URL(url)
    headers = [(b"host", f"{parts.host}:{parts.port}".encode())] + [(b"dpop", proof.encode()) for proof in proofs]
    return {"type": "http", "method": method, "scheme": "http", "path": parts.path, "root_path": "", "headers": headers}


class Resource:
    """A BearerAuth with DPoP in front of the real test AS (its JWKS fetched over HTTP)."""

    def __init__(self, auth: AuthServer, url: str, **dpop: Any) -> None:
        self.auth, self.url = auth, url
        self.verifier = DPoPVerifier(**dpop)
        protection = BearerAuth(
            verifier=JWTVerifier(auth.issuer), resource=url, authorization_servers=[auth.issuer], dpop=self.verifier
        )
        self.authenticator = protection.authenticator()

    def token(self, dpop: DPoP | None) -> str:
        extra = {"cnf": {"jkt": dpop.thumbprint}} if dpop is not None else None
        return self.auth.issue_token(audience=self.url, scopes=["mcp"], extra=extra)

    async def check(self, authorization: str, scope: Mapping[str, Any]) -> Authenticated | AuthRefusal:
        return await self.authenticator.authenticate_request(authorization, scope)


def refused(verdict: Authenticated | AuthRefusal, error: str) -> bool:
    return isinstance(verdict, AuthRefusal) and verdict.status == 401 and f'error="{error}"' in verdict.challenge


async def test_the_resource_server_accepts_a_good_proof_and_refuses_every_bad_one() -> None:
    with anyio.fail_after(30), running_auth_server() as auth:
        url = "http://127.0.0.1:8123/mcp"
        rs = Resource(auth, url)
        dpop, thief = DPoP(), DPoP()
        token = rs.token(dpop)
        good = dpop.proof("POST", url, token)
        verdict = await rs.check(f"DPoP {token}", scope_of(url, proofs=(good,)))
        assert isinstance(verdict, Authenticated) and isinstance(verdict.identity, AccessToken)
        # The same proof again: a replay.
        assert refused(await rs.check(f"DPoP {token}", scope_of(url, proofs=(good,))), "invalid_dpop_proof")
        cases = {
            "wrong htu": dpop.proof("POST", "http://127.0.0.1:8123/other", token),
            "wrong htm": dpop.proof("GET", url, token),
            "another token's ath": dpop.proof("POST", url, "another-token"),
            "the thief's key": thief.proof("POST", url, token),
        }
        for name, proof in cases.items():
            assert refused(await rs.check(f"DPoP {token}", scope_of(url, proofs=(proof,))), "invalid_dpop_proof"), name
        assert refused(await rs.check(f"DPoP {token}", scope_of(url)), "invalid_dpop_proof")  # no proof
        two = (dpop.proof("POST", url, token), dpop.proof("POST", url, token))
        assert refused(await rs.check(f"DPoP {token}", scope_of(url, proofs=two)), "invalid_dpop_proof")
        # A stolen bound token presented as Bearer, without any proof.
        assert refused(await rs.check(f"Bearer {token}", scope_of(url)), "invalid_token")
        # An unbound token is still fine as Bearer (DPoP not required), but not as DPoP.
        plain = rs.token(None)
        assert isinstance(await rs.check(f"Bearer {plain}", scope_of(url)), Authenticated)
        plain_proof = dpop.proof("POST", url, plain)
        assert refused(await rs.check(f"DPoP {plain}", scope_of(url, proofs=(plain_proof,))), "invalid_dpop_proof")
        # The authenticator keeps serving: a good fresh proof still passes.
        again = await rs.check(f"DPoP {token}", scope_of(url, proofs=(dpop.proof("POST", url, token),)))
        assert isinstance(again, Authenticated)


def forged(dpop: DPoP, claims: dict[str, Any], header: dict[str, Any] | None = None, key: Any = None) -> str:
    protected = {"typ": "dpop+jwt", "alg": dpop.algorithm, "jwk": dpop.key.public_jwk, **(header or {})}
    return jwt.encode(protected, claims, key or dpop.key.key, algorithms=[protected["alg"]])


async def test_old_proofs_symmetric_algorithms_and_private_keys_are_refused() -> None:
    with anyio.fail_after(30), running_auth_server() as auth:
        url = "http://127.0.0.1:8124/mcp"
        rs = Resource(auth, url, max_age=30)
        dpop = DPoP()
        token = rs.token(dpop)
        base = {"htm": "POST", "htu": url, "ath": access_token_hash(token)}
        old = forged(dpop, {**base, "jti": "a", "iat": int(time.time()) - 120})
        future = forged(dpop, {**base, "jti": "b", "iat": int(time.time()) + 120})
        secret = OctKey.import_key(b"k" * 32)
        hmac_proof = forged(dpop, {**base, "jti": "c", "iat": int(time.time())}, {"alg": "HS256"}, secret)
        private = forged(
            dpop, {**base, "jti": "d", "iat": int(time.time())}, {"jwk": dpop.key.key.as_dict(private=True)}
        )
        wrong_typ = forged(dpop, {**base, "jti": "e", "iat": int(time.time())}, {"typ": "JWT"})
        garbage = base64.urlsafe_b64encode(b"not a jws").decode()
        for proof in (old, future, hmac_proof, private, wrong_typ, garbage, "a.b.c" * 3000):
            assert refused(await rs.check(f"DPoP {token}", scope_of(url, proofs=(proof,))), "invalid_dpop_proof")
        with pytest.raises(ValueError, match="asymmetric"):
            DPoPVerifier(algorithms=["HS256"])


async def test_required_dpop_refuses_bearer_and_a_nonce_is_demanded() -> None:
    with anyio.fail_after(30), running_auth_server() as auth:
        url = "http://127.0.0.1:8125/mcp"
        rs = Resource(auth, url, required=True, require_nonce=True)
        assert rs.authenticator.metadata("/.well-known/oauth-protected-resource/mcp") is not None
        metadata = rs.authenticator.metadata("/.well-known/oauth-protected-resource/mcp") or {}
        assert metadata["dpop_bound_access_tokens_required"] is True
        dpop = DPoP()
        token = rs.token(dpop)
        bearer = await rs.check(f"Bearer {rs.token(None)}", scope_of(url))
        assert isinstance(bearer, AuthRefusal) and bearer.challenge.startswith("DPoP ") and "algs=" in bearer.challenge
        challenge = await rs.check(f"DPoP {token}", scope_of(url, proofs=(dpop.proof("POST", url, token),)))
        assert refused(challenge, "use_dpop_nonce")
        nonce = rs.verifier.current_nonce()
        assert isinstance(challenge, AuthRefusal) and challenge.headers["DPoP-Nonce"] == nonce
        dpop.remember(url, {"dpop-nonce": nonce})
        verdict = await rs.check(f"DPoP {token}", scope_of(url, proofs=(dpop.proof("POST", url, token),)))
        assert isinstance(verdict, Authenticated)
        dpop.remember(url, {"dpop-nonce": "forged-nonce"})
        forged_nonce = await rs.check(f"DPoP {token}", scope_of(url, proofs=(dpop.proof("POST", url, token),)))
        assert refused(forged_nonce, "use_dpop_nonce")


# -- end to end ----------------------------------------------------------------------------------------------------


def build_server() -> Server:
    server = Server("dpop-protected")

    @server.tool()
    def whoami(ctx: Context) -> str:
        bound = (ctx.auth.claims.get("cnf") or {}).get("jkt") if ctx.auth is not None else None
        return f"{ctx.auth.subject if ctx.auth is not None else '?'} {bound}"

    return server


def protected(auth: AuthServer, dpop: DPoPVerifier | None = None) -> AbstractAsyncContextManager[str]:
    return serving_protected(build_server(), auth.issuer, dpop=dpop)


async def consent(authorization_url: str) -> str:
    async with httpx2.AsyncClient(timeout=10, follow_redirects=False) as http:
        response = await http.get(authorization_url)
    assert response.status_code == 302, response.text
    return str(response.headers["location"])


def provider(url: str, *, dpop: DPoP) -> OAuthProvider:
    metadata = ClientMetadata([REDIRECT], client_name="dpop-e2e")
    return OAuthProvider(url, client_metadata=metadata, redirect_handler=consent, dpop=dpop)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_our_client_calls_our_dpop_server_with_nonces_on_both_sides(mode: str) -> None:
    with anyio.fail_after(40), running_auth_server(dpop_nonce="as-nonce") as auth:
        async with protected(auth, DPoPVerifier(required=True, require_nonce=True)) as url:
            dpop = DPoP()
            # The transport's own HTTP client runs the provider's per-request proofs (``http_auth``).
            async with Client.connect_http(url, auth=provider(url, dpop=dpop), mode=mode) as client:
                assert text_of(await client.call_tool("whoami", {})) == f"test-user {dpop.thumbprint}"
                assert text_of(await client.call_tool("whoami", {})) == f"test-user {dpop.thumbprint}"
            assert auth.dpop_nonce_challenges == 1


async def test_a_stolen_token_replayed_proof_wrong_htu_or_old_iat_is_refused_over_http() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth, DPoPVerifier()) as url:
            dpop = DPoP()
            token = auth.issue_token(audience=url, scopes=["mcp"], extra={"cnf": {"jkt": dpop.thumbprint}})
            client_info = {"name": "raw", "version": "1"}
            params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}
            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
            headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
            async with httpx2.AsyncClient(timeout=10) as http:
                proof = dpop.proof("POST", url, token)
                sent = {**headers, "authorization": f"DPoP {token}", "dpop": proof}
                first = await http.post(url, json=body, headers=sent)
                assert first.status_code == 200
                replayed = await http.post(url, json=body, headers=sent)
                assert replayed.status_code == 401 and "invalid_dpop_proof" in replayed.headers["www-authenticate"]
                stolen = await http.post(url, json=body, headers={**headers, "authorization": f"Bearer {token}"})
                assert stolen.status_code == 401 and "DPoP-bound" in stolen.json()["error"]["message"]
                thief = DPoP().proof("POST", url, token)
                other_key = await http.post(url, json=body, headers={**sent, "dpop": thief})
                assert other_key.status_code == 401
                elsewhere = dpop.proof("POST", url.replace("/mcp", "/elsewhere"), token)
                wrong_htu = await http.post(url, json=body, headers={**sent, "dpop": elsewhere})
                assert wrong_htu.status_code == 401 and "htu" in wrong_htu.json()["error"]["message"]
                claims = {"jti": "old", "htm": "POST", "htu": url, "iat": int(time.time()) - 600}
                stale = forged(dpop, {**claims, "ath": access_token_hash(token)})
                old_iat = await http.post(url, json=body, headers={**sent, "dpop": stale})
                assert old_iat.status_code == 401 and "iat" in old_iat.json()["error"]["message"]
                # Still serving: a fresh proof passes.
                fresh = await http.post(url, json=body, headers={**sent, "dpop": dpop.proof("POST", url, token)})
                assert fresh.status_code == 200


async def test_a_dpop_token_is_refreshed_with_a_proof_of_the_same_key() -> None:
    with anyio.fail_after(40), running_auth_server(token_lifetime=5) as auth:
        async with protected(auth, DPoPVerifier(required=True)) as url:
            dpop = DPoP()
            metadata = ClientMetadata([REDIRECT], client_name="dpop-e2e")
            # Refreshed when less than 10 s are left: before every call, with 5 s tokens.
            hook = OAuthProvider(url, client_metadata=metadata, redirect_handler=consent, dpop=dpop, refresh_skew=10)
            async with (
                httpx2.AsyncClient(auth=hook.http_auth, timeout=30) as http,
                Client.connect_http(url, auth=hook, http_client=http) as client,
            ):
                await client.call_tool("whoami", {})
                issued = len(auth.issued)
                assert text_of(await client.call_tool("whoami", {})) == f"test-user {dpop.thumbprint}"
            assert len(auth.issued) > issued and all(claims["cnf"]["jkt"] == dpop.thumbprint for claims in auth.issued)
