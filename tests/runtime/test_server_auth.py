"""A mcpgen server protected by bearer tokens (``server.auth``), against real tokens of the test authorization server
(tests/auth_server.py, served by uvicorn on 127.0.0.1 in a thread): the server is served by uvicorn on 127.0.0.1
too, and spoken to with raw HTTP (httpx2), so that what is checked is what goes over the wire: the statuses, the
``WWW-Authenticate`` challenges, the RFC 9728 metadata, both eras, and the identity handlers see."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.auth import IntrospectionVerifier, TokenVerifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import AuthServer, running_auth_server
from support.servers import serving_protected

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build_server() -> Server:
    server = Server("protected")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """Who the token says the caller is."""
        auth = ctx.auth
        assert auth is not None
        return json.dumps({"sub": auth.subject, "scopes": sorted(auth.scopes), "client": auth.client_id})

    @server.tool(scopes=["mcp:write"])
    def write(text: str) -> str:
        """Needs mcp:write."""
        return f"wrote {text}"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Asks the user's name (in 2026-07-28: an InputRequiredResult, then a retry with its requestState)."""
        answer = await ctx.elicit("Your name?", NAME_SCHEMA, input_key="name")
        return f"hello {answer.content['name']}"

    return server


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthServer]:
    with running_auth_server() as auth:
        yield auth


@asynccontextmanager
async def serving(auth: AuthServer, verifier: TokenVerifier | None = None) -> AsyncIterator[str]:
    """The protected server's MCP URL (its resource), requiring the ``mcp`` scope."""
    async with serving_protected(
        build_server(), auth.issuer, verifier=verifier, resource_name="Protected test server"
    ) as url:
        yield url


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def call_modern(url: str, tool: str, headers: dict[str, str], arguments: Any = None) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"_meta": META, "name": tool, "arguments": arguments or {}},
    }
    modern = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool}
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.post(url, json=body, headers=ACCEPT | modern | headers)


async def post(url: str, body: Any, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as client:
        return await client.post(url, json=body, headers=ACCEPT | headers)


def sse_result(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or single-event SSE answer."""
    if response.headers["content-type"].startswith("application/json"):
        message: dict[str, Any] = response.json()
        return message
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    message = json.loads(data[-1])
    return message


def challenge(response: httpx2.Response) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    params = {}
    for part in rest.split('", '):
        key, _, value = part.partition("=")
        params[key.strip()] = value.strip().strip('"')
    return params


async def test_valid_token_works_in_both_eras_and_context_has_the_identity(issuer: AuthServer) -> None:
    with anyio.fail_after(30):
        async with serving(issuer) as url:
            token = issuer.issue_token(audience=url, scopes=["mcp", "mcp:read"], client_id="cli")
            modern = await call_modern(url, "whoami", bearer(token))
            assert modern.status_code == 200, modern.text
            seen = json.loads(sse_result(modern)["result"]["content"][0]["text"])
            assert seen == {"sub": "test-user", "scopes": ["mcp", "mcp:read"], "client": "cli"}

            init = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, bearer(token))
            assert init.status_code == 200, init.text
            session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            answer = await post(url, call, bearer(token) | session)
            assert answer.status_code == 200, answer.text
            assert json.loads(sse_result(answer)["result"]["content"][0]["text"])["sub"] == "test-user"


async def test_no_token_is_401_with_the_metadata_and_scope_in_the_challenge(issuer: AuthServer) -> None:
    with anyio.fail_after(30):
        async with serving(issuer) as url:
            metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            for response in (
                await call_modern(url, "whoami", {}),
                await post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, {}),
            ):
                assert response.status_code == 401
                params = challenge(response)
                assert params == {"resource_metadata": metadata_url, "scope": "mcp"}
            async with httpx2.AsyncClient(timeout=10) as client:
                stream = await client.get(url, headers={"accept": "text/event-stream"})
                assert stream.status_code == 401  # GET and DELETE too
                basic = await client.post(url, headers=ACCEPT | {"authorization": "Basic dXNlcjpwYXNz"}, json={})
                assert basic.status_code == 401 and challenge(basic)["error"] == "invalid_token"


async def test_metadata_documents(issuer: AuthServer) -> None:
    with anyio.fail_after(30):
        async with serving(issuer) as url:
            base = url.removesuffix("/mcp")
            async with httpx2.AsyncClient(timeout=10) as client:
                for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
                    response = await client.get(base + path)
                    assert response.status_code == 200, path
                    assert response.json() == {
                        "resource": url,
                        "authorization_servers": [issuer.issuer],
                        "bearer_methods_supported": ["header"],
                        "scopes_supported": ["mcp", "mcp:write"],
                        "resource_name": "Protected test server",
                    }
                    assert response.headers["access-control-allow-origin"] == "*"
                assert (await client.get(base + "/.well-known/oauth-protected-resource/other")).status_code == 404
                assert (await client.post(base + "/.well-known/oauth-protected-resource")).status_code == 405


def tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["scope"] = "mcp mcp:write admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def unsigned(token: str, alg: str = "none") -> str:
    _, payload, _ = token.split(".")
    header = base64.urlsafe_b64encode(json.dumps({"alg": alg, "typ": "JWT"}).encode()).rstrip(b"=").decode()
    return f"{header}.{payload}."


def hs256_with_public_key(auth: AuthServer, token: str) -> str:
    """The algorithm-confusion attack: HS256 keyed with the issuer's public key (which anyone can fetch)."""
    import hashlib
    import hmac

    _, payload, _ = token.split(".")
    kid = auth.key.kid
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": kid}).encode()).rstrip(b"=").decode()
    secret = json.dumps(auth.key.as_dict(private=False)).encode()
    mac = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


async def test_bad_tokens_are_refused_with_401(issuer: AuthServer) -> None:
    with anyio.fail_after(40), running_auth_server() as other_issuer:
        async with serving(issuer) as url:
            good = issuer.issue_token(audience=url, scopes=["mcp"])
            cases = {
                "another audience": issuer.issue_token(audience="http://127.0.0.1:1/mcp", scopes=["mcp"]),
                "another issuer": other_issuer.issue_token(audience=url, scopes=["mcp"]),
                "tampered": tamper(good),
                "expired": issuer.issue_token(audience=url, scopes=["mcp"], lifetime=-120),
                "not yet valid": issuer.issue_token(audience=url, scopes=["mcp"], extra={"nbf": 2**40}),
                "alg none": unsigned(good),
                "alg HS256 with the public key": hs256_with_public_key(issuer, good),
                "not a JWT": "opaque-token",
                "unknown kid": other_issuer.issue_token(audience=url, scopes=["mcp"], extra={"iss": issuer.issuer}),
            }
            for case, token in cases.items():
                response = await call_modern(url, "whoami", bearer(token))
                assert response.status_code == 401, (case, response.text)
                assert challenge(response)["error"] == "invalid_token", case
            assert (await call_modern(url, "whoami", bearer(good))).status_code == 200


async def test_missing_scopes_are_403_with_a_step_up_challenge(issuer: AuthServer) -> None:
    with anyio.fail_after(30):
        async with serving(issuer) as url:
            metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
            no_server_scope = issuer.issue_token(audience=url, scopes=["mcp:read"])
            response = await call_modern(url, "whoami", bearer(no_server_scope))
            assert response.status_code == 403
            assert challenge(response)["scope"] == "mcp"

            basic = issuer.issue_token(audience=url, scopes=["mcp"])
            response = await call_modern(url, "write", bearer(basic), {"text": "x"})
            assert response.status_code == 403, response.text
            params = challenge(response)
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == "mcp mcp:write" and params["resource_metadata"] == metadata_url
            assert response.json()["id"] == 1 and "mcp:write" in response.json()["error"]["message"]

            stepped_up = issuer.issue_token(audience=url, scopes=["mcp", "mcp:write"])
            response = await call_modern(url, "write", bearer(stepped_up), {"text": "x"})
            assert response.status_code == 200 and sse_result(response)["result"]["content"][0]["text"] == "wrote x"


async def test_a_session_is_bound_to_the_subject_that_created_it(issuer: AuthServer) -> None:
    with anyio.fail_after(30):
        async with serving(issuer) as url:
            alice = issuer.issue_token(audience=url, scopes=["mcp"], subject="alice")
            mallory = issuer.issue_token(audience=url, scopes=["mcp"], subject="mallory")
            init = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, bearer(alice))
            session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
            hijack = await post(url, call, bearer(mallory) | session)
            assert hijack.status_code == 404, hijack.text
            async with httpx2.AsyncClient(timeout=10) as client:
                delete = await client.delete(url, headers=bearer(mallory) | session)
                assert delete.status_code == 404
            again = issuer.issue_token(audience=url, scopes=["mcp"], subject="alice")  # a new token, same subject
            owner = await post(url, call, bearer(again) | session)
            assert owner.status_code == 200
            assert json.loads(sse_result(owner)["result"]["content"][0]["text"])["sub"] == "alice"


async def test_a_request_state_is_bound_to_the_principal_it_was_issued_to(issuer: AuthServer) -> None:
    """The spec (basic/patterns/mrtr): servers SHOULD bind requestState to "the authenticated principal, rejecting
    state presented by a different principal"."""
    meta = META | {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    modern = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "ask_name"}

    async def ask(token: str, request_id: int, status: int = 200, **retry: Any) -> dict[str, Any]:
        params = {"_meta": meta, "name": "ask_name", "arguments": {}, **retry}
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        response = await post(url, body, bearer(token) | modern)
        assert response.status_code == status, response.text
        return sse_result(response)

    with anyio.fail_after(30):
        async with serving(issuer) as url:
            alice = issuer.issue_token(audience=url, scopes=["mcp"], subject="alice")
            mallory = issuer.issue_token(audience=url, scopes=["mcp"], subject="mallory")
            first = (await ask(alice, 1))["result"]
            assert first["resultType"] == "input_required" and set(first["inputRequests"]) == {"name"}, first
            answers = {"name": {"action": "accept", "content": {"name": "Bob"}}}
            retry = {"inputResponses": answers, "requestState": first["requestState"]}

            stolen = await ask(mallory, 2, status=400, **retry)  # a JSON-RPC error answers 400 in this era
            assert stolen["error"]["code"] == -32602, stolen
            assert "another principal" in stolen["error"]["message"], stolen

            renewed = issuer.issue_token(audience=url, scopes=["mcp"], subject="alice")  # same principal, new token
            done = (await ask(renewed, 3, **retry))["result"]
            assert done["content"][0]["text"] == "hello Bob", done


async def test_introspection_verifier(issuer: AuthServer) -> None:
    registration = issuer.register_client(grant_types=["client_credentials"])
    with anyio.fail_after(30):
        verifier = IntrospectionVerifier(
            f"{issuer.issuer}/introspect",
            client_id=registration["client_id"],
            client_secret=registration["client_secret"],
            issuer=issuer.issuer,
        )
        async with serving(issuer, verifier) as url:
            token = issuer.issue_token(audience=url, scopes=["mcp"], subject="bob")
            response = await call_modern(url, "whoami", bearer(token))
            assert response.status_code == 200, response.text
            assert json.loads(sse_result(response)["result"]["content"][0]["text"])["sub"] == "bob"
            for refused in (
                issuer.issue_token(audience=url, scopes=["mcp"], lifetime=-120),
                issuer.issue_token(audience="http://elsewhere/mcp", scopes=["mcp"]),
                tamper(token),
            ):
                assert (await call_modern(url, "whoami", bearer(refused))).status_code == 401
        wrong_secret = IntrospectionVerifier(
            f"{issuer.issuer}/introspect", client_id=registration["client_id"], client_secret="wrong"
        )
        async with serving(issuer, wrong_secret) as url:
            token = issuer.issue_token(audience=url, scopes=["mcp"])
            assert (await call_modern(url, "whoami", bearer(token))).status_code == 401


async def test_unprotected_server_has_no_auth_and_no_metadata() -> None:
    server = Server("open")

    @server.tool()
    def whoami(ctx: Context) -> str:
        return repr(ctx.auth)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            response = await call_modern(f"{base}/mcp", "whoami", {})
            assert sse_result(response)["result"]["content"][0]["text"] == "None"
            async with httpx2.AsyncClient(timeout=10) as client:
                assert (await client.get(f"{base}/.well-known/oauth-protected-resource")).status_code == 404
            tg.cancel_scope.cancel()
