"""The pieces of the client's OAuth provider (``mcpgen_runtime.client.auth``) against real peers on 127.0.0.1:
the test authorization server (tests/auth_server.py) for discovery and its issuer check, the redirect checks
(``state``, RFC 9207 ``iss``), the protected-resource check, the file store's 0600 permissions, the
``WWW-Authenticate`` parser and the loopback redirect receiver. The suite's ``auth/*`` scenarios
(tests/conformance/test_conformance_client.py) and tests/runtime/test_auth_e2e_client.py cover the whole flow.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from mcpgen_runtime.client.auth import FileTokenStorage, LoopbackRedirectHandler, OAuthFlowError
from mcpgen_runtime.client.auth.discovery import (
    AuthServerMetadata,
    authorization_server_urls,
    discover_authorization_server,
    resource_matches,
    resource_urls,
)
from mcpgen_runtime.client.auth.provider import check_redirect
from mcpgen_runtime.transports.http.client.auth import parse_www_authenticate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import running_auth_server

pytestmark = pytest.mark.anyio

ISSUER = "https://as.example.com"


def metadata(*, iss_supported: bool = True) -> AuthServerMetadata:
    return AuthServerMetadata(ISSUER, f"{ISSUER}/authorize", f"{ISSUER}/token", iss_parameter_supported=iss_supported)


def test_www_authenticate_parameters_are_parsed_quoted_or_not() -> None:
    scheme, params = parse_www_authenticate(
        'Bearer error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", realm=mcp, '
        'error_description="say \\"please\\""'
    )
    assert scheme == "bearer"
    assert params == {
        "error": "insufficient_scope",
        "scope": "files:read files:write",
        "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
        "realm": "mcp",
        "error_description": 'say "please"',
    }
    assert parse_www_authenticate("") == ("", {})
    assert len(parse_www_authenticate("Bearer " + ", ".join(f"p{i}=v" for i in range(500)))[1]) == 32  # bounded


def test_the_spec_discovery_order() -> None:
    assert resource_urls("https://mcp.example.com/public/mcp", "https://mcp.example.com/prm") == [
        "https://mcp.example.com/prm",
        "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert authorization_server_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


def test_a_protected_resource_must_be_this_server() -> None:
    assert resource_matches("https://mcp.example.com/mcp", "https://mcp.example.com/mcp")
    assert resource_matches("https://mcp.example.com/mcp", "https://MCP.example.com")
    assert not resource_matches("https://mcp.example.com/mcp", "https://evil.example.com/mcp")
    assert not resource_matches("https://mcp.example.com/mcp", "http://mcp.example.com/mcp")
    assert not resource_matches("https://mcp.example.com/mcp", "https://mcp.example.com/mcp2")
    assert not resource_matches("https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp")


def test_a_redirect_is_accepted_only_with_its_state_and_issuer() -> None:
    good = f"http://127.0.0.1:3000/callback?code=abc&state=s1&iss={ISSUER}"
    assert check_redirect(good, "s1", metadata()) == "abc"
    refused = {
        "wrong state": (f"http://127.0.0.1:3000/callback?code=abc&state=s2&iss={ISSUER}", metadata()),
        "no state": (f"http://127.0.0.1:3000/callback?code=abc&iss={ISSUER}", metadata()),
        "wrong iss": ("http://127.0.0.1:3000/callback?code=abc&state=s1&iss=https://evil.example.com", metadata()),
        "normalized iss": (f"http://127.0.0.1:3000/callback?code=abc&state=s1&iss={ISSUER}/", metadata()),
        "missing iss": ("http://127.0.0.1:3000/callback?code=abc&state=s1", metadata()),
        "unadvertised wrong iss": (
            "http://127.0.0.1:3000/callback?code=abc&state=s1&iss=https://evil.example.com",
            metadata(iss_supported=False),
        ),
        "an error": ("http://127.0.0.1:3000/callback?error=access_denied&state=s1", metadata()),
    }
    for case, (url, server) in refused.items():
        with pytest.raises(OAuthFlowError):
            check_redirect(url, "s1", server)
            pytest.fail(f"accepted a redirect with {case}")
    # Not advertised and absent: accepted (RFC 9207 is optional for the server).
    assert check_redirect("http://x/cb?code=c&state=s1", "s1", metadata(iss_supported=False)) == "c"


async def test_metadata_from_a_real_server_is_used_only_when_its_issuer_matches() -> None:
    with anyio.fail_after(20), running_auth_server() as auth:
        async with httpx2.AsyncClient(timeout=10, follow_redirects=False) as http:
            found = await discover_authorization_server(http, auth.issuer, legacy_fallback=False)
            assert found.issuer == auth.issuer and found.token_endpoint == f"{auth.issuer}/token"
            assert found.iss_parameter_supported and "S256" in (found.code_challenge_methods_supported or ())
            # The same document reached under another issuer name (a trailing slash) names a different issuer.
            with pytest.raises(OAuthFlowError, match="issuer"):
                await discover_authorization_server(http, f"{auth.issuer}/", legacy_fallback=False)
            with pytest.raises(OAuthFlowError, match="no authorization server metadata"):
                await discover_authorization_server(http, f"{auth.issuer}/tenant", legacy_fallback=False)


async def test_the_file_store_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "config" / "tokens.json"
    store = FileTokenStorage(path)
    assert await store.load("tokens x") is None
    await store.save("tokens x", {"token": {"access_token": "secret"}})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o644)  # loosened by someone else: the next write puts it back
    await store.save("client y", {"client_id": "c"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileTokenStorage(path)
    assert await again.load("tokens x") == {"token": {"access_token": "secret"}}
    await again.delete("tokens x")
    assert await store.load("tokens x") is None and await store.load("client y") == {"client_id": "c"}
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary file left behind


async def test_the_loopback_handler_returns_the_redirect_it_receives() -> None:
    opened: list[str] = []

    async def browser(url: str) -> None:
        async with httpx2.AsyncClient(timeout=5) as http:
            await http.get(url.replace("/callback", "/favicon.ico"))  # a stray request first
            answer = await http.get(f"{url}?code=abc&state=s1")
            assert answer.status_code == 200 and b"close this window" in answer.content

    with anyio.fail_after(20):
        async with LoopbackRedirectHandler(open_url=opened.append, timeout=10) as handler:
            assert handler.redirect_uri.startswith("http://127.0.0.1:")
            async with anyio.create_task_group() as tg:
                result: list[str] = []

                async def wait() -> None:
                    result.append(await handler("https://as.example.com/authorize?x=1"))

                tg.start_soon(wait)
                await anyio.sleep(0.05)
                await browser(handler.redirect_uri)
            assert opened == ["https://as.example.com/authorize?x=1"]
            assert result == [f"{handler.redirect_uri}?code=abc&state=s1"]


async def test_the_loopback_handler_gives_up_after_its_timeout() -> None:
    with anyio.fail_after(10):
        async with LoopbackRedirectHandler(open_url=lambda url: None, timeout=0.2) as handler:
            with pytest.raises(OAuthFlowError, match="no authorization redirect"):
                await handler("https://as.example.com/authorize")
