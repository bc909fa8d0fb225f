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

from client_kit import ClientScenario, oauth_provider

from mcpgen_runtime.client.auth import OAuthProvider


def dpop_provider(url: str, context: Mapping[str, Any]) -> OAuthProvider:
    return oauth_provider(url, dpop=True)


SCENARIOS: dict[str, ClientScenario] = {
    name: ClientScenario(auth=dpop_provider) for name in ("auth/dpop", "auth/dpop-nonce")
}
