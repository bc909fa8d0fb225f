"""The test authorization server's flows (tests/auth_server.py: registration, authorization code with PKCE, refresh
rotation, client credentials, RFC 8707 resource -> aud) ending at a protected mcpgen server, the JWKS cache of
``JWTVerifier`` (refetch on a new key, at most once per interval) and a protected server mounted in a Starlette app.
All over real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from joserfc.jwk import RSAKey
from starlette.applications import Starlette

from mcpgen_runtime.server.auth import BearerAuth, InvalidTokenError, JWTVerifier
from mcpgen_runtime.server.hosting.asgi import mount_mcp
from mcpgen_runtime.transports.http.server.serving import serve_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import AuthServer, running_auth_server
from support.ports import free_port
from support.servers import serving_protected, whoami_server

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:3999/callback"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def authorize(client: httpx2.AsyncClient, auth: AuthServer, client_id: str, **extra: str) -> dict[str, list[str]]:
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st4te",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "mcp offline_access",
        **extra,
    }
    response = await client.get(f"{auth.issuer}/authorize", params=params)
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["location"]).query)
    query["verifier"] = [verifier]
    return query


async def call_whoami(url: str, token: str) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "whoami"}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
        "authorization": f"Bearer {token}",
    }
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.post(url, json=body, headers=headers)


async def test_authorization_code_with_pkce_refresh_rotation_and_the_token_at_the_server() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with (
            serving_protected(whoami_server(), auth.issuer, required_scopes=()) as resource,
            httpx2.AsyncClient(timeout=10) as client,
        ):
            metadata = (await client.get(f"{auth.issuer}/.well-known/oauth-authorization-server")).json()
            assert metadata["issuer"] == auth.issuer and metadata["code_challenge_methods_supported"] == ["S256"]
            registered = await client.post(
                metadata["registration_endpoint"],
                json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "t"},
            )
            assert registered.status_code == 201 and "client_secret" not in registered.json()
            client_id = registered.json()["client_id"]

            redirect = await authorize(client, auth, client_id, resource=resource)
            assert redirect["state"] == ["st4te"] and redirect["iss"] == [auth.issuer]
            token_form = {
                "grant_type": "authorization_code",
                "code": redirect["code"][0],
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "resource": resource,
            }
            wrong = await client.post(metadata["token_endpoint"], data=token_form | {"code_verifier": "x" * 43})
            assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
            redirect = await authorize(client, auth, client_id, resource=resource)
            token_form["code"] = redirect["code"][0]
            tokens = await client.post(
                metadata["token_endpoint"], data=token_form | {"code_verifier": redirect["verifier"][0]}
            )
            assert tokens.status_code == 200 and tokens.headers["cache-control"] == "no-store"
            assert auth.issued[-1]["aud"] == resource  # RFC 8707
            answer = await call_whoami(resource, tokens.json()["access_token"])
            assert answer.status_code == 200 and "test-user" in answer.text
            reused = await client.post(
                metadata["token_endpoint"], data=token_form | {"code_verifier": redirect["verifier"][0]}
            )
            assert reused.status_code == 400  # a code is used once

            refresh = {
                "grant_type": "refresh_token",
                "client_id": client_id,
                "refresh_token": tokens.json()["refresh_token"],
            }
            refreshed = await client.post(metadata["token_endpoint"], data=refresh)
            assert refreshed.status_code == 200 and refreshed.json()["refresh_token"] != refresh["refresh_token"]
            assert (await call_whoami(resource, refreshed.json()["access_token"])).status_code == 200
            replayed = await client.post(metadata["token_endpoint"], data=refresh)
            assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"  # rotated


async def test_authorize_refuses_unregistered_redirects_and_missing_pkce() -> None:
    with anyio.fail_after(20), running_auth_server() as auth:
        client_id = auth.register_client(redirect_uris=[REDIRECT], auth_method="none")["client_id"]
        async with httpx2.AsyncClient(timeout=10) as client:
            evil = await client.get(
                f"{auth.issuer}/authorize",
                params={"response_type": "code", "client_id": client_id, "redirect_uri": "http://evil.example/cb"},
            )
            assert evil.status_code == 400  # an error page, never a redirect to it
            plain = await client.get(
                f"{auth.issuer}/authorize",
                params={"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s"},
            )
            assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"]


async def test_client_credentials_and_short_lived_tokens_expire() -> None:
    with anyio.fail_after(30), running_auth_server(token_lifetime=1) as auth:
        registration = auth.register_client(grant_types=["client_credentials"])
        async with (
            serving_protected(whoami_server(), auth.issuer, required_scopes=()) as resource,
            httpx2.AsyncClient(timeout=10) as client,
        ):
            form = {"grant_type": "client_credentials", "resource": resource, "scope": "mcp"}
            credentials = (registration["client_id"], registration["client_secret"])
            tokens = await client.post(f"{auth.issuer}/token", data=form, auth=credentials)
            assert tokens.status_code == 200, tokens.text
            assert (await call_whoami(resource, tokens.json()["access_token"])).status_code == 200
            bad = await client.post(f"{auth.issuer}/token", data=form, auth=(registration["client_id"], "nope"))
            assert bad.status_code == 401
            # exp is 1 s away; the verifier allows 30 s of skew: a token past that is refused
            expired = auth.issue_token(audience=resource, lifetime=-31)
            assert (await call_whoami(resource, expired)).status_code == 401


async def test_jwks_refetch_on_a_new_key_is_rate_limited() -> None:
    with anyio.fail_after(30), running_auth_server() as auth:
        audience = "http://127.0.0.1:1/mcp"
        eager = JWTVerifier(auth.issuer, audience=audience, refetch_interval=0)
        lazy = JWTVerifier(auth.issuer, audience=audience, refetch_interval=3600)
        first = auth.issue_token(audience=audience)
        assert (await eager.verify(first)).subject == "test-user"
        assert (await lazy.verify(first)).subject == "test-user"
        auth.key = RSAKey.generate_key(2048, parameters={"kid": "rotated", "use": "sig", "alg": "RS256"})
        rotated = auth.issue_token(audience=audience)
        assert (await eager.verify(rotated)).subject == "test-user"  # unknown kid: refetched
        with pytest.raises(InvalidTokenError, match="unknown key"):
            await lazy.verify(rotated)  # fetched moments ago: not again before refetch_interval
        with pytest.raises(InvalidTokenError, match="another audience"):
            await eager.verify(auth.issue_token(audience="http://127.0.0.1:2/mcp"))


async def test_mounted_protected_server_serves_its_metadata_at_the_app_root() -> None:
    with anyio.fail_after(30), running_auth_server() as auth:
        port = free_port()
        resource = f"http://127.0.0.1:{port}/api/mcp"
        app = Starlette()
        protection = BearerAuth(
            verifier=JWTVerifier(auth.issuer), resource=resource, authorization_servers=[auth.issuer]
        )
        mount_mcp(app, whoami_server(), "/api/mcp", auth=protection)
        async with anyio.create_task_group() as tg:
            await tg.start(partial(serve_app, app, "127.0.0.1", port))
            async with httpx2.AsyncClient(timeout=10) as client:
                document: Any = (
                    await client.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/api/mcp")
                ).json()
                assert document["resource"] == resource
            assert (await call_whoami(resource, "nope")).status_code == 401
            assert (await call_whoami(resource, auth.issue_token(audience=resource))).status_code == 200
            tg.cancel_scope.cancel()
