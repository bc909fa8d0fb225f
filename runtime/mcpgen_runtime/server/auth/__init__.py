"""Bearer-token protection of a streamable HTTP server (MCP basic/authorization, the resource server's side).

Where it sits: in the ``server`` layer, imported only by servers that are protected (a stdio server never loads it,
nor authlib's JOSE library). ``BearerAuth`` says what the server requires (``bearer``); a ``TokenVerifier`` checks
the tokens (``jwt.JWTVerifier`` against the issuer's JWKS, ``introspection.IntrospectionVerifier`` with RFC 7662);
the verified ``AccessToken`` is ``Context.auth`` in handlers::

    auth = BearerAuth(
        verifier=JWTVerifier(issuer="https://auth.example.com"),
        resource="https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
        required_scopes=["mcp"],
    )
    server.run_http("0.0.0.0", 8000, auth=auth)

``JWTVerifier`` and ``DPoPVerifier`` are imported on first use, so that a server verifying by introspection does
not need joserfc.

Modules: ``tokens`` (``AccessToken``, the ``TokenVerifier`` protocol), ``bearer`` (``BearerAuth``: the challenge,
the metadata document, scope checks), ``jwt`` (``JWTVerifier``: JWTs against the issuer's JWKS),
``introspection`` (``IntrospectionVerifier``: RFC 7662) and ``dpop`` (``DPoPVerifier``: RFC 9449 proofs for
DPoP-bound tokens, ``BearerAuth(dpop=...)``), the token verifiers fetching through ``fetching`` (a total deadline per
fetch, concurrent fetches of one document shared, failures remembered briefly: ``VerifierUnavailableError``, 503).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from .bearer import METADATA_PATH, BearerAuth, BearerAuthenticator
from .introspection import IntrospectionVerifier
from .tokens import AccessToken, InvalidTokenError, TokenVerifier, VerifierUnavailableError

if TYPE_CHECKING:
    from .dpop import DPoPError, DPoPVerifier
    from .jwt import JWTVerifier

__all__ = [
    "METADATA_PATH",
    "AccessToken",
    "BearerAuth",
    "BearerAuthenticator",
    "DPoPError",
    "DPoPVerifier",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "JWTVerifier",
    "TokenVerifier",
    "VerifierUnavailableError",
    "bind_auth",
]


def __getattr__(name: str) -> Any:
    if name == "JWTVerifier":
        from .jwt import JWTVerifier

        return JWTVerifier
    if name in ("DPoPError", "DPoPVerifier"):
        from . import dpop

        return getattr(dpop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bind_auth(auth: Any, tool_scopes: Mapping[str, Collection[str]]) -> Any:
    """The transport's hook for the ``auth=`` option of a server: a ``BearerAuth`` bound to the server's tool
    scopes; anything else (an ``http_auth.HTTPAuthenticator`` of your own) as it is."""
    return auth.authenticator(tool_scopes) if isinstance(auth, BearerAuth) else auth
