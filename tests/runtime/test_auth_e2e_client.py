"""End to end: mcpgen's client with ``client.auth.OAuthProvider`` against a bearer-protected mcpgen server and the
test authorization server (tests/auth_server.py, authlib), all over real HTTP on 127.0.0.1: discovery, dynamic
registration, authorization code + PKCE with real signed JWTs, refresh before expiry, step-up on 403
``insufficient_scope``, a token the server refuses as expired, and ``AuthorizationError`` when no hook can help.
"""

from __future__ import annotations

import sys
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpgen_runtime import Client
from mcpgen_runtime.client import AuthorizationError
from mcpgen_runtime.client.auth import ClientMetadata, FileTokenStorage, InMemoryTokenStorage, OAuthProvider
from mcpgen_runtime.server import Context, Server

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import AuthServer, running_auth_server
from support.content import text_of
from support.servers import serving_protected

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:3999/callback"  # never listened on: the redirect handler reads the Location header


class ConsentingBrowser:
    """The user's part, for an authorization server that consents at once: follow to the redirect, count visits."""

    def __init__(self) -> None:
        self.visits: list[str] = []

    async def __call__(self, authorization_url: str) -> str:
        self.visits.append(authorization_url)
        async with httpx2.AsyncClient(timeout=10, follow_redirects=False) as http:
            response = await http.get(authorization_url)
        assert response.status_code == 302, response.text
        return str(response.headers["location"])


def build_server() -> Server:
    server = Server("protected")

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.auth.subject if ctx.auth is not None and ctx.auth.subject else "?"

    @server.tool(scopes=["mcp:write"])
    def write(ctx: Context) -> str:
        return "written"

    return server


def protected(auth: AuthServer) -> AbstractAsyncContextManager[str]:
    return serving_protected(build_server(), auth.issuer, scopes_supported=["mcp"])


def provider(
    url: str, browser: ConsentingBrowser, *, storage: InMemoryTokenStorage | None = None, refresh_skew: float = 30.0
) -> OAuthProvider:
    metadata = ClientMetadata([REDIRECT], client_name="e2e")
    return OAuthProvider(
        url, client_metadata=metadata, redirect_handler=browser, storage=storage, refresh_skew=refresh_skew
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_client_authorizes_then_calls_with_a_token_for_this_server(mode: str) -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:
            browser = ConsentingBrowser()
            async with Client.connect_http(url, auth=provider(url, browser), mode=mode) as client:
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
            assert len(browser.visits) == 1  # one authorization, the token reused
            assert "code_challenge_method=S256" in browser.visits[0] and "resource=" in browser.visits[0]
            assert auth.issued[-1]["aud"] == url and "mcp" in auth.issued[-1]["scope"].split()


async def test_a_token_about_to_expire_is_refreshed_without_the_user() -> None:
    with anyio.fail_after(40), running_auth_server(token_lifetime=5) as auth:
        async with protected(auth) as url:
            browser = ConsentingBrowser()
            # Refreshed when less than 10 s are left: at once, with 5 s tokens.
            hook = provider(url, browser, refresh_skew=10.0)
            async with Client.connect_http(url, auth=hook) as client:
                await client.call_tool("whoami", {})
                issued = len(auth.issued)
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
            assert len(browser.visits) == 1 and len(auth.issued) > issued  # new tokens, from the refresh token
            assert "offline_access" in browser.visits[0]  # the server offers it and the client wants refresh


async def test_step_up_on_insufficient_scope_keeps_the_granted_scopes() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:
            browser = ConsentingBrowser()
            async with Client.connect_http(url, auth=provider(url, browser)) as client:
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
                assert text_of(await client.call_tool("write", {})) == "written"
            assert len(browser.visits) == 2
            granted = auth.issued[-1]["scope"].split()
            assert {"mcp", "mcp:write"} <= set(granted)


async def test_a_token_the_server_refuses_as_expired_is_replaced() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:
            storage = InMemoryTokenStorage()
            expired = auth.issue_token(audience=url, scopes=["mcp"], lifetime=-120)
            # The client believes it valid (no expiry recorded): only the server's 401 says otherwise.
            record = {
                "token": {"access_token": expired},
                "issuer": auth.issuer,
                "token_endpoint": f"{auth.issuer}/token",
            }
            await storage.save(f"tokens {url}", record)
            browser = ConsentingBrowser()
            async with Client.connect_http(url, auth=provider(url, browser, storage=storage)) as client:
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
            assert len(browser.visits) == 1
            held = await storage.load(f"tokens {url}")
            assert held is not None and held["token"]["access_token"] != expired


async def test_without_a_hook_a_refusal_is_an_authorization_error_with_the_challenge() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:
            with pytest.raises(AuthorizationError) as refused:
                async with Client.connect_http(url) as client:
                    await client.tools()
            assert refused.value.status == 401
            assert refused.value.resource_metadata == url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")


async def test_a_refused_step_up_ends_in_an_authorization_error_not_a_loop() -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:

            class RefusingWrites(ConsentingBrowser):
                async def __call__(self, authorization_url: str) -> str:
                    # The user consents, but the server never grants mcp:write.
                    return await super().__call__(authorization_url.replace("mcp%3Awrite", "mcp"))

            browser = RefusingWrites()
            async with Client.connect_http(url, auth=provider(url, browser)) as client:
                await client.call_tool("whoami", {})
                started = time.monotonic()
                with pytest.raises(AuthorizationError) as refused:
                    await client.call_tool("write", {})
            assert refused.value.status == 403 and refused.value.error == "insufficient_scope"
            assert len(browser.visits) <= 3 and time.monotonic() - started < 10


async def test_authorizing_up_front_and_a_file_store_reused_by_the_next_connection(tmp_path: Path) -> None:
    with anyio.fail_after(40), running_auth_server() as auth:
        async with protected(auth) as url:
            browser = ConsentingBrowser()
            store = FileTokenStorage(tmp_path / "tokens.json")
            first = OAuthProvider(
                url, client_metadata=ClientMetadata([REDIRECT]), redirect_handler=browser, storage=store
            )
            await first.authorize()  # outside any request's timeout
            assert len(browser.visits) == 1
            again = OAuthProvider(
                url, client_metadata=ClientMetadata([REDIRECT]), redirect_handler=browser, storage=store
            )
            async with Client.connect_http(url, auth=again, mode="auto") as client:
                assert text_of(await client.call_tool("whoami", {})) == "test-user"
            assert len(browser.visits) == 1  # the stored token and registration were used
