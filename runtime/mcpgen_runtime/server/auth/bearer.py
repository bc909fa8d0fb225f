"""``BearerAuth``: what a protected MCP server requires of its requests, and the RFC 9728 metadata it publishes.

Where it sits: the top of ``server.auth``. ``Server.serve_http(auth=BearerAuth(...))`` (and ``run_http``,
``asgi_app``, ``mount_mcp``) binds it to the server's tool scopes (``BearerAuth.authenticator``), which gives the
transport's ``http_auth.HTTPAuthenticator``: every request to the MCP endpoint, of both eras, must carry
``Authorization: Bearer <token>`` whose verified token names the server's ``resource`` in its audience (RFC 8707)
and holds ``required_scopes``; a request for a method of ``method_scopes`` or a tool registered with
``scopes=[...]`` needs those too.

Refusals (RFC 6750 section 3, with the MCP spec's ``resource_metadata``): no token, or one that does not verify,
is 401 ``WWW-Authenticate: Bearer [error="invalid_token", error_description="...",] resource_metadata="...",
scope="..."``; a valid token without a method's or tool's scopes is 403 ``error="insufficient_scope"`` with the
scopes the request needs (all of them: the client asks for those and retries, "step-up"). A token that cannot be
checked now (the verifier raised ``VerifierUnavailableError``: the issuer's keys or the introspection endpoint
unreachable, slow past the fetch deadline, or junk) is 503 with ``Retry-After`` (the verifier's failure memory, 5 s
by default; at least 1 s) and no challenge, so that the client keeps its token and retries; what failed (and its
URL) is logged at WARNING, never sent. (A request with more than one ``Authorization`` header is refused with 400
by the transport before it gets here.)

DPoP (RFC 9449): with ``dpop=DPoPVerifier(...)`` a token may also come as ``Authorization: DPoP <token>`` with a
``DPoP`` proof (checked by ``dpop``: signature, htm, htu, iat, jti replay, nonce, ath, and the proof key's
thumbprint against the token's ``cnf.jkt``); a DPoP-bound token presented as Bearer is refused (it would let a thief
use it without the key), and with ``DPoPVerifier(required=True)`` every Bearer token is. The 401 challenges then
carry ``DPoP algs="..."`` (first when DPoP is required or was presented); a proof refused is 401
``error="invalid_dpop_proof"``, a missing or stale nonce 401 ``error="use_dpop_nonce"`` with ``DPoP-Nonce``. The
proof needs the request (method, URL, headers): the transport passes it to ``authenticate_request``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ...transports.http.server.auth import UNAVAILABLE_CODE, Authenticated, AuthRefusal
from .fetching import retry_after_seconds
from .tokens import AccessToken, InvalidTokenError, TokenVerifier, VerifierUnavailableError

if TYPE_CHECKING:
    from .dpop import DPoPError, DPoPVerifier  # joserfc: loaded only by a server that checks DPoP

__all__ = ["METADATA_PATH", "BearerAuth", "BearerAuthenticator"]

logger = logging.getLogger(__name__)

METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
MAX_AUTHORIZATION_BYTES: Final = 16 * 1024


@dataclass(frozen=True)
class BearerAuth:
    """Bearer-token protection of a streamable HTTP server.

    ``verifier``: a ``TokenVerifier`` (``JWTVerifier``, ``IntrospectionVerifier`` or your own). ``resource``: this
    server's canonical URL (``https://mcp.example.com/mcp``): every token's audience must name it, and it is the
    ``resource`` of the metadata. ``authorization_servers``: issuer URLs clients may get tokens from (metadata).
    ``required_scopes`` (none): every request needs them. ``method_scopes`` (none): method -> scopes a request of
    that method also needs (``{"resources/read": ["files:read"]}``); tools' scopes are given at registration
    (``@server.tool(scopes=[...])``). ``scopes_supported`` (None: every scope named here and by tools) and
    ``resource_name`` / ``resource_documentation`` (None) are published in the metadata. ``dpop`` (None): a
    ``DPoPVerifier`` to accept DPoP-bound tokens (see the module docstring).
    """

    verifier: TokenVerifier
    resource: str
    authorization_servers: Sequence[str]
    required_scopes: Collection[str] = ()
    method_scopes: Mapping[str, Collection[str]] = field(default_factory=dict)
    scopes_supported: Collection[str] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None
    dpop: DPoPVerifier | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.resource)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
            raise ValueError(f"resource must be the server's absolute URL, without a fragment: {self.resource!r}")
        if not self.authorization_servers:
            raise ValueError("authorization_servers must name at least one issuer")

    def authenticator(self, tool_scopes: Mapping[str, Collection[str]] | None = None) -> BearerAuthenticator:
        """The transport's hook for a server whose tools need ``tool_scopes`` (tool name -> scopes; read at each
        request, so tools registered later count)."""
        return BearerAuthenticator(self, tool_scopes if tool_scopes is not None else {})


class BearerAuthenticator:
    """``BearerAuth`` bound to a server's tool scopes: an ``http_auth.HTTPAuthenticator``."""

    def __init__(self, config: BearerAuth, tool_scopes: Mapping[str, Collection[str]]) -> None:
        self.config = config
        self._tool_scopes = tool_scopes
        self._required = frozenset(config.required_scopes)
        self._method_scopes = {method: frozenset(scopes) for method, scopes in config.method_scopes.items()}
        parts = urlsplit(config.resource)
        suffix = parts.path.rstrip("/")
        # RFC 9728 section 3.1: the well-known segment goes between the host and the resource's path; the bare one is
        # served too (clients of 2025-03-26 and some SDKs look there).
        self.metadata_paths: tuple[str, ...] = tuple(dict.fromkeys((METADATA_PATH + suffix, METADATA_PATH)))
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{suffix}"

    # -- HTTPAuthenticator ----------------------------------------------------------------------------------------

    def metadata(self, path: str) -> Mapping[str, Any] | None:
        if path not in self.metadata_paths:
            return None
        config = self.config
        document: dict[str, Any] = {
            "resource": config.resource,
            "authorization_servers": list(config.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if config.dpop is not None:
            document["dpop_signing_alg_values_supported"] = list(config.dpop.algorithms)
            document["dpop_bound_access_tokens_required"] = config.dpop.required
        supported = config.scopes_supported if config.scopes_supported is not None else self.all_scopes()
        if supported:
            document["scopes_supported"] = sorted(supported)
        if config.resource_name is not None:
            document["resource_name"] = config.resource_name
        if config.resource_documentation is not None:
            document["resource_documentation"] = config.resource_documentation
        return document

    async def authenticate(self, authorization: str | None) -> Authenticated | AuthRefusal:
        return await self.authenticate_request(authorization, None)

    async def authenticate_request(
        self, authorization: str | None, scope: Mapping[str, Any] | None
    ) -> Authenticated | AuthRefusal:
        """``authenticate`` with the request's ASGI ``scope``, which a DPoP proof is checked against (without it,
        no DPoP token can be accepted)."""
        dpop = self.config.dpop
        scheme, token = _credentials(authorization)
        accepted = ("bearer", "dpop") if dpop is not None and not dpop.required else ("dpop",) if dpop else ("bearer",)
        if token is None or scheme not in accepted:
            error = None if authorization is None else f"the Authorization header is not a {self._schemes()} token"
            return self._unauthorized(error)
        try:
            access = await self.config.verifier.verify(token)
        except VerifierUnavailableError as unavailable:
            logger.warning("a bearer token could not be verified now (answered 503): %s", unavailable)
            return self._unavailable(retry_after_seconds(unavailable))
        except InvalidTokenError as refused:
            logger.info("refused a bearer token: %s", refused)
            return self._unauthorized(str(refused))
        except Exception:  # a broken verifier refuses: it must never let a request through
            logger.exception("the token verifier failed")
            return self._unauthorized("the token could not be verified")
        if self.config.resource not in access.audience:
            logger.info("refused a bearer token for another audience: %s", access.audience)
            return self._unauthorized("the token is not for this resource")
        bound = _bound_thumbprint(access.claims)
        if scheme == "bearer" and bound is not None:
            logger.info("refused a DPoP-bound token presented as Bearer")
            return self._unauthorized("this token is DPoP-bound: present it with the DPoP scheme and a proof")
        if scheme == "dpop":
            refusal = self._check_proof(scope, token, bound)
            if refusal is not None:
                return refusal
        if not self._required <= access.scopes:
            return self._insufficient(self._required)
        return Authenticated(access, access.owner)

    def authorize(self, identity: Any, method: str, params: Mapping[str, Any] | None) -> AuthRefusal | None:
        needed = self.scopes_needed(method, params)
        if not isinstance(identity, AccessToken) or not needed <= identity.scopes:
            return self._insufficient(needed)
        return None

    # -- scopes ---------------------------------------------------------------------------------------------------

    def scopes_needed(self, method: str, params: Mapping[str, Any] | None) -> frozenset[str]:
        """Every scope a request of ``method`` with ``params`` needs (the server's, the method's, the tool's)."""
        needed = self._required | self._method_scopes.get(method, frozenset())
        if method == "tools/call" and params is not None:
            name = params.get("name")
            if isinstance(name, str):
                needed |= frozenset(self._tool_scopes.get(name, ()))
        return needed

    def all_scopes(self) -> frozenset[str]:
        scopes = set(self._required)
        for method_scopes in self._method_scopes.values():
            scopes |= method_scopes
        for tool_scopes in self._tool_scopes.values():
            scopes |= set(tool_scopes)
        return frozenset(scopes)

    # -- refusals -------------------------------------------------------------------------------------------------

    def _check_proof(self, scope: Mapping[str, Any] | None, token: str, bound: str | None) -> AuthRefusal | None:
        """None when the request's DPoP proof holds for ``token`` (bound to ``bound``), else the refusal."""
        from .dpop import DPoPError, request_url

        dpop = self.config.dpop
        if dpop is None or scope is None:
            return self._unauthorized("this server cannot check DPoP proofs here", error="invalid_dpop_proof")
        proofs = [value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == b"dpop"]
        urls = (request_url(scope), self.config.resource)
        try:
            dpop.verify(proofs, str(scope.get("method", "")), urls, token, bound)
        except DPoPError as refused:
            logger.info("refused a DPoP proof: %s", refused)
            return self._dpop_refusal(refused)
        return None

    def _dpop_refusal(self, refused: DPoPError) -> AuthRefusal:
        if refused.retry_after is not None:
            logger.warning("refused a DPoP proof for now (answered 503): %s", refused)
            return self._unavailable(refused.retry_after, str(refused))
        refusal = self._unauthorized(str(refused), error=refused.error, dpop_first=True)
        if refused.nonce is None:
            return refusal
        return replace(refusal, headers={**refusal.headers, "DPoP-Nonce": refused.nonce})

    def _schemes(self) -> str:
        dpop = self.config.dpop
        return "DPoP" if dpop is not None and dpop.required else "Bearer or DPoP" if dpop is not None else "Bearer"

    def _unauthorized(
        self, description: str | None, *, error: str = "invalid_token", dpop_first: bool = False
    ) -> AuthRefusal:
        params: dict[str, str] = {}
        if description is not None:
            params |= {"error": error, "error_description": description}
        params["resource_metadata"] = self.metadata_url
        if self._required:
            params["scope"] = " ".join(sorted(self._required))
        schemes = self._schemes() if self.config.dpop is not None else "bearer"
        message = "Unauthorized: " + (description or f"a {schemes} token is required")
        dpop = self.config.dpop
        if dpop is None:
            return AuthRefusal(401, _challenge(params), message)
        algs = {"algs": " ".join(dpop.algorithms)}
        if dpop.required or dpop_first:
            return AuthRefusal(401, _challenge({**params, **algs}, "DPoP"), message)
        # Both schemes are accepted: the Bearer challenge first (what Bearer-only clients read), then DPoP's.
        return AuthRefusal(401, f"{_challenge(params)}, {_challenge(algs, 'DPoP')}", message)

    def _unavailable(
        self,
        retry_after: int,
        reason: str = "the token cannot be verified now (the authorization server is unreachable)",
    ) -> AuthRefusal:
        message = f"Service Unavailable: {reason}; retry in {retry_after} s"
        return AuthRefusal(503, "", message, UNAVAILABLE_CODE, retry_after)

    def _insufficient(self, needed: frozenset[str]) -> AuthRefusal:
        scope = " ".join(sorted(needed))
        params = {
            "error": "insufficient_scope",
            "error_description": f"this request needs the scopes {scope}",
            "scope": scope,
            "resource_metadata": self.metadata_url,
        }
        return AuthRefusal(403, _challenge(params), f"Forbidden: this request needs the scopes {scope}")


def _credentials(authorization: str | None) -> tuple[str, str | None]:
    """The scheme (lower case) and token of an ``Authorization`` value (token None: none usable)."""
    if authorization is None or len(authorization) > MAX_AUTHORIZATION_BYTES:
        return "", None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if not token or " " in token:
        return scheme.lower(), None
    return scheme.lower(), token


def _bound_thumbprint(claims: Mapping[str, Any]) -> str | None:
    """The ``cnf.jkt`` of a token's claims (RFC 9449 §6: the key it is bound to), or None for an unbound token."""
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, Mapping) else None
    return jkt if isinstance(jkt, str) else None


def _challenge(params: Mapping[str, str], scheme: str = "Bearer") -> str:
    """``Bearer k="v", ...`` (RFC 6750 section 3; quotes and backslashes escaped, so a description cannot break
    out of its value)."""
    quoted = (f'{key}="{_escape(value)}"' for key, value in params.items())
    return f"{scheme} " + ", ".join(quoted)


def _escape(value: str) -> str:
    printable = "".join(ch for ch in value if " " <= ch <= "~")
    return printable.replace("\\", "\\\\").replace('"', '\\"')
