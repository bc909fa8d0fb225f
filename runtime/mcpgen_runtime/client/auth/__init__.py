"""OAuth 2.1 for the MCP client (the spec's authorization, 2025-06-18 to 2026-07-28): the provider that plugs into
``Client.connect_http(url, auth=...)``.

Holds ``errors`` (``AuthorizationError``, ``OAuthFlowError``), ``storage`` (where tokens and client registrations
are kept, per issuer: in memory, or a 0600 JSON file), ``discovery`` (protected resource metadata, RFC 9728, and
authorization server metadata, RFC 8414 / OpenID, in the spec's order), ``registration`` (pre-registered
credentials, client ID metadata documents, RFC 7591 dynamic registration), ``tokens`` (token requests with
client authentication), ``dpop`` (RFC 9449 proof of possession: ``DPoP``, ``DPoPKey``, the per-request
``DPoPHTTPAuth``), ``grants`` (the RFC 7523 JWT bearer grant without a user:
``EnterpriseAuthProvider``, Enterprise-Managed Authorization with an ID-JAG from the IdP's RFC 8693 token
exchange, and ``WorkloadIdentityProvider``, workload identity federation; ``GrantError`` carries the server's
OAuth error code), ``provider`` (``OAuthProvider``: authorization code + PKCE, and
``ClientCredentialsProvider``) and ``loopback`` (a redirect receiver on 127.0.0.1 for command-line tools).

May import: ``transports.http.client.auth`` (the hook's protocol), httpx2, authlib (PKCE, client authentication,
JWT), joserfc (DPoP proofs) and the standard library. Only ``errors`` is imported eagerly: a stdio client never
imports authlib; the other names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import AuthorizationError, OAuthFlowError

__all__ = [
    "DEFAULT_AUTH_TIMEOUT",
    "ENTERPRISE_MANAGED_AUTHORIZATION",
    "AuthorizationError",
    "ClientCredentialsProvider",
    "ClientMetadata",
    "DPoP",
    "DPoPHTTPAuth",
    "DPoPKey",
    "EnterpriseAuthProvider",
    "FileTokenStorage",
    "GrantError",
    "InMemoryTokenStorage",
    "LoopbackRedirectHandler",
    "OAuthFlowError",
    "OAuthProvider",
    "PreRegisteredClient",
    "PrivateKeyJWT",
    "RedirectHandler",
    "TokenStorage",
    "WorkloadIdentityProvider",
]

_LAZY = {
    "DEFAULT_AUTH_TIMEOUT": "provider",
    "DPoP": "dpop",
    "DPoPHTTPAuth": "dpop",
    "DPoPKey": "dpop",
    "ENTERPRISE_MANAGED_AUTHORIZATION": "grants",
    "EnterpriseAuthProvider": "grants",
    "GrantError": "grants",
    "WorkloadIdentityProvider": "grants",
    "ClientCredentialsProvider": "provider",
    "ClientMetadata": "registration",
    "FileTokenStorage": "storage",
    "InMemoryTokenStorage": "storage",
    "LoopbackRedirectHandler": "loopback",
    "OAuthProvider": "provider",
    "PreRegisteredClient": "registration",
    "PrivateKeyJWT": "tokens",
    "RedirectHandler": "provider",
    "TokenStorage": "storage",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
