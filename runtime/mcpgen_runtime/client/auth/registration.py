"""Who the client is at an authorization server, in the spec's order of preference: credentials registered
beforehand for that issuer, a client ID metadata document (the URL is the client id) when the server supports
them, else RFC 7591 dynamic registration (with ``application_type``, SEP-837). The result is kept per issuer: a
client id from one authorization server is never shown to another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from .discovery import AuthServerMetadata
from .errors import OAuthFlowError

__all__ = ["ClientInfo", "ClientMetadata", "PreRegisteredClient", "register_client", "token_auth_method"]

# Preferred first: a confidential client's secret stays out of the body when the server takes Basic.
_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """What the client tells an authorization server about itself (RFC 7591 client metadata). ``application_type``
    defaults to ``native`` for loopback / custom-scheme redirects (a CLI or desktop app), else ``web``."""

    redirect_uris: Sequence[str]
    client_name: str = "mcpgen client"
    grant_types: Sequence[str] = ("authorization_code", "refresh_token")
    response_types: Sequence[str] = ("code",)
    token_endpoint_auth_method: str | None = None  # None: chosen from what the server supports
    application_type: str | None = None
    scope: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def kind(self) -> str:
        if self.application_type:
            return self.application_type
        hosts = {urlsplit(uri).hostname for uri in self.redirect_uris}
        schemes = {urlsplit(uri).scheme for uri in self.redirect_uris}
        loopback = hosts <= {"127.0.0.1", "localhost", "::1"} or not schemes <= {"http", "https"}
        return "native" if loopback else "web"


@dataclass(frozen=True, slots=True)
class PreRegisteredClient:
    """Credentials registered out of band. ``issuer`` (when set) limits them to that authorization server."""

    client_id: str
    client_secret: str | None = None
    issuer: str | None = None
    token_endpoint_auth_method: str | None = None


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """The client's identity at one issuer, as stored."""

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str = "none"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientInfo | None:
        client_id, secret, method = (
            data.get("client_id"),
            data.get("client_secret"),
            data.get("token_endpoint_auth_method"),
        )
        if not isinstance(client_id, str):
            return None
        return cls(
            client_id, secret if isinstance(secret, str) else None, method if isinstance(method, str) else "none"
        )


def token_auth_method(metadata: AuthServerMetadata, has_secret: bool, wanted: str | None = None) -> str:
    """The token endpoint authentication to use: the wanted one, else the first the server supports (RFC 8414's
    default is ``client_secret_basic``) that this client can do."""
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    if wanted is not None:
        return wanted
    for method in _AUTH_METHODS:
        if method in supported and (has_secret or method == "none"):
            return method
    return "none" if not has_secret else supported[0]


async def register_client(http: httpx2.AsyncClient, metadata: AuthServerMetadata, client: ClientMetadata) -> ClientInfo:
    """RFC 7591 dynamic registration at the server's ``registration_endpoint``."""
    if metadata.registration_endpoint is None:
        raise OAuthFlowError(
            "the authorization server supports neither dynamic client registration nor client ID metadata "
            "documents, and no pre-registered client was configured for it"
        )
    supported = metadata.token_endpoint_auth_methods_supported or ("client_secret_basic",)
    method = client.token_endpoint_auth_method or next((m for m in _AUTH_METHODS if m in supported), "none")
    body: dict[str, Any] = {
        "redirect_uris": list(client.redirect_uris),
        "client_name": client.client_name,
        "grant_types": list(client.grant_types),
        "response_types": list(client.response_types),
        "token_endpoint_auth_method": method,
        "application_type": client.kind(),
        **({"scope": client.scope} if client.scope else {}),
        **client.extra,
    }
    try:
        response = await http.post(metadata.registration_endpoint, json=body)
    except httpx2.HTTPError as exc:
        raise OAuthFlowError(f"dynamic client registration failed: {exc!r}") from exc
    if response.status_code not in (200, 201):
        raise OAuthFlowError(f"dynamic client registration answered HTTP {response.status_code}")
    try:
        answer = response.json()
    except ValueError as exc:
        raise OAuthFlowError("dynamic client registration answered something that is not JSON") from exc
    info = ClientInfo.from_json({**(answer if isinstance(answer, dict) else {}), "token_endpoint_auth_method": None})
    if info is None:
        raise OAuthFlowError("dynamic client registration answered without a client_id")
    answered_method = answer.get("token_endpoint_auth_method")
    if not isinstance(answered_method, str):
        answered_method = method if info.client_secret or method == "none" else "none"
    return ClientInfo(info.client_id, info.client_secret, answered_method)
