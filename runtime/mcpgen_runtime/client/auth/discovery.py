"""Finding the authorization server of a protected MCP server, in the spec's order, and refusing what does not fit.

- Protected resource metadata (RFC 9728): the ``resource_metadata`` URL of the ``WWW-Authenticate`` challenge,
  then ``/.well-known/oauth-protected-resource/<path>``, then ``/.well-known/oauth-protected-resource``. Its
  ``resource`` must be this server (same origin, and a prefix of its path), else the flow stops: a server must not
  get a token minted for another.
- Authorization server metadata for an issuer with a path ``/p``: ``/.well-known/oauth-authorization-server/p``,
  ``/.well-known/openid-configuration/p``, ``/p/.well-known/openid-configuration``; without a path, the first two
  with no suffix. The document's ``issuer`` must equal the issuer the URL was built from, character for character
  (RFC 8414 §3.3), else it is refused.
- No protected resource metadata (a 2025-03-26 server): the server's origin is the authorization server; without
  its metadata either, its ``/authorize``, ``/token`` and ``/register`` are used.

Every document is fetched with a timeout, without following redirects, and bounded in size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from .errors import OAuthFlowError

__all__ = [
    "MAX_METADATA_BYTES",
    "AuthServerMetadata",
    "ResourceMetadata",
    "authorization_server_urls",
    "discover_authorization_server",
    "discover_resource",
    "resource_urls",
]

MAX_METADATA_BYTES = 256 * 1024  # a metadata document is a few hundred bytes; anything this large is hostile


@dataclass(frozen=True, slots=True)
class ResourceMetadata:
    """RFC 9728 protected resource metadata (or, for a 2025-03-26 server without it, what stands in for it)."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    found: bool = True


@dataclass(frozen=True, slots=True)
class AuthServerMetadata:
    """The fields of RFC 8414 metadata the client uses (``raw`` keeps the whole document)."""

    issuer: str | None  # None: no metadata was found (2025-03-26 endpoint fallback), so nothing to compare iss to
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    # RFC 9449 §5.1: the DPoP proof algorithms the server accepts (None: not advertised)
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _path(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


def resource_urls(server_url: str, header_url: str | None) -> list[str]:
    """Where to look for protected resource metadata, in the spec's order."""
    urls = [header_url] if header_url else []
    if path := _path(server_url):
        urls.append(f"{_origin(server_url)}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{_origin(server_url)}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def authorization_server_urls(issuer: str) -> list[str]:
    """Where to look for an issuer's metadata, in the spec's order (RFC 8414, then OpenID Connect Discovery)."""
    origin, path = _origin(issuer), _path(issuer)
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


async def fetch_json(http: httpx2.AsyncClient, url: str) -> dict[str, Any] | None:
    """A JSON object at ``url`` (200 only), or None when it is not there or not a usable document."""
    if urlsplit(url).scheme not in ("https", "http"):
        return None
    try:
        async with http.stream("GET", url, headers={"accept": "application/json"}) as response:
            if response.status_code != 200:
                return None
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_METADATA_BYTES:
                    return None
    except httpx2.HTTPError:
        return None
    try:
        value = json.loads(bytes(body))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str))


def resource_matches(server_url: str, resource: str) -> bool:
    """Whether ``resource`` (from the metadata) names this server: same scheme and authority (case-insensitive),
    and its path a prefix of the server's on a segment boundary."""
    server, claimed = urlsplit(server_url), urlsplit(resource)
    if (server.scheme.lower(), server.netloc.lower()) != (claimed.scheme.lower(), claimed.netloc.lower()):
        return False
    server_path, claimed_path = server.path.rstrip("/") + "/", claimed.path.rstrip("/") + "/"
    return server_path.startswith(claimed_path)


async def discover_resource(http: httpx2.AsyncClient, server_url: str, header_url: str | None) -> ResourceMetadata:
    """The server's protected resource metadata (checked against ``server_url``), or the 2025-03-26 stand-in."""
    for url in resource_urls(server_url, header_url):
        document = await fetch_json(http, url)
        if document is None:
            continue
        resource = document.get("resource")
        servers = _strings(document.get("authorization_servers"))
        if not isinstance(resource, str) or not servers:
            continue
        if not resource_matches(server_url, resource):
            raise OAuthFlowError(
                f"the protected resource metadata at {url} names resource {resource!r}, not this server "
                f"({server_url}): refusing to authorize for it"
            )
        return ResourceMetadata(resource, servers, _strings(document.get("scopes_supported")))
    # A 2025-03-26 server: no metadata, its origin is its authorization server.
    return ResourceMetadata(server_url, (_origin(server_url),), None, found=False)


def _metadata(document: dict[str, Any], issuer: str, url: str) -> AuthServerMetadata:
    if document.get("issuer") != issuer:
        raise OAuthFlowError(
            f"the authorization server metadata at {url} names issuer {document.get('issuer')!r}, not {issuer!r}: "
            "refusing it (RFC 8414 §3.3)"
        )
    authorize, token = document.get("authorization_endpoint"), document.get("token_endpoint")
    if not isinstance(token, str):
        raise OAuthFlowError(f"the authorization server metadata at {url} has no token_endpoint")
    registration = document.get("registration_endpoint")
    return AuthServerMetadata(
        issuer=issuer,
        authorization_endpoint=authorize if isinstance(authorize, str) else "",
        token_endpoint=token,
        registration_endpoint=registration if isinstance(registration, str) else None,
        scopes_supported=_strings(document.get("scopes_supported")),
        grant_types_supported=_strings(document.get("grant_types_supported")),
        token_endpoint_auth_methods_supported=_strings(document.get("token_endpoint_auth_methods_supported")),
        code_challenge_methods_supported=_strings(document.get("code_challenge_methods_supported")),
        iss_parameter_supported=document.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=document.get("client_id_metadata_document_supported") is True,
        dpop_signing_alg_values_supported=_strings(document.get("dpop_signing_alg_values_supported")),
        raw=document,
    )


async def discover_authorization_server(
    http: httpx2.AsyncClient, issuer: str, *, legacy_fallback: bool
) -> AuthServerMetadata:
    """The issuer's metadata (its ``issuer`` checked). With ``legacy_fallback`` (a server without protected
    resource metadata), no metadata means the 2025-03-26 default endpoints at the issuer's origin."""
    for url in authorization_server_urls(issuer):
        document = await fetch_json(http, url)
        if document is not None:
            return _metadata(document, issuer, url)
    if not legacy_fallback:
        raise OAuthFlowError(f"no authorization server metadata found for issuer {issuer!r}")
    origin = _origin(issuer)
    return AuthServerMetadata(None, f"{origin}/authorize", f"{origin}/token", f"{origin}/register")
