"""The conformance client's dpop scenarios (see client_kit.ClientScenario; run by client.py).

auth/dpop and auth/dpop-nonce (SEP-1932, RFC 9449): the mock authorization server advertises
``dpop_signing_alg_values_supported`` and issues DPoP-bound tokens (``cnf.jkt``) for a token request with a valid
proof; the mock MCP server wants ``Authorization: DPoP`` and a fresh proof (htm, htu, ath, jkt) on every POST. In
dpop-nonce both first refuse with ``use_dpop_nonce`` and a ``DPoP-Nonce``, and the client must send again with it.
The client is ``OAuthProvider(dpop=True)`` (authorization code + PKCE); the HTTP transport runs its per-request
proofs (``provider.http_auth``) on every MCP request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
from client_kit import ClientScenario

from mcpgen_runtime.client.auth import ClientMetadata, OAuthProvider

REDIRECT_URI = "http://localhost:3000/callback"  # nobody listens: the redirect's Location is read instead
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def follow_redirect(authorization_url: str) -> str:
    """The user's part, for a mock authorization server that consents at once: where it redirects to."""
    async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False) as http:
        response = await http.get(authorization_url)
    location = response.headers.get("location")
    if response.status_code not in (302, 303) or not location:
        raise RuntimeError(f"the authorization endpoint answered HTTP {response.status_code} without a redirect")
    return str(location)


def dpop_provider(url: str, context: Mapping[str, Any]) -> OAuthProvider:
    return OAuthProvider(
        url,
        client_metadata=ClientMetadata([REDIRECT_URI], client_name="mcpgen-conformance-client"),
        redirect_handler=follow_redirect,
        client_id_metadata_url=CLIENT_METADATA_URL,
        dpop=True,
    )


SCENARIOS: dict[str, ClientScenario] = {
    name: ClientScenario(auth=dpop_provider) for name in ("auth/dpop", "auth/dpop-nonce")
}
