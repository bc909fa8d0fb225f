"""The OAuth 2.1 providers, the ``HTTPAuth`` hooks that ``Client.connect_http(url, auth=...)`` takes.

``OAuthProvider`` (a user's client: authorization code with PKCE S256) on a 401: finds the authorization server
(``discovery``), identifies the client there (``registration``: pre-registered, client ID metadata document or
dynamic registration, kept per issuer), picks the scopes (the challenge's ``scope``, else the resource's
``scopes_supported``, else none; plus ``offline_access`` when the server offers it and the client wants refresh
tokens), sends the user to the authorization endpoint through ``redirect_handler`` (with ``state``, the PKCE
challenge and the RFC 8707 ``resource``), checks the redirect (``state``, and ``iss`` by exact comparison, RFC 9207)
and trades the code for a token. A held token is refreshed when it expires (or is refused); a 403
``insufficient_scope`` re-authorizes with the union of the scopes asked before and the challenged ones, unless they
were all asked already (that step-up can never succeed, so it is not tried again). When the protected resource
names another authorization server, the flow starts over there (a new registration: credentials are per issuer).

``ClientCredentialsProvider`` (machine to machine, the client-credentials extension): ``client_secret_basic`` or
``private_key_jwt``.

Both take ``dpop`` (RFC 9449): ``True`` (a new ES256 key) or a ``DPoP`` (your key). Token requests then carry DPoP
proofs (the authorization server's nonce honoured), a ``DPoP`` token is presented as ``Authorization: DPoP``, and
``http_auth`` is the per-request part (a fresh proof on every MCP request, the resource server's nonce), which the
HTTP transport's own client runs (give an ``http_client`` of your own ``auth=provider.http_auth``). A key the authorization server does not list in ``dpop_signing_alg_values_supported`` stops
the flow; a held DPoP token is only used with the key it is bound to.

Each HTTP exchange has a timeout (``timeout``, default ``DEFAULT_AUTH_TIMEOUT``), redirects are never followed,
and flow errors are logged without secrets (the request then fails with ``AuthorizationError``).
"""

from __future__ import annotations

import hmac
import logging
import secrets
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from ...transports.http.client.auth import AuthChallenge
from .discovery import AuthServerMetadata, ResourceMetadata, discover_authorization_server, discover_resource
from .dpop import DPoP, DPoPHTTPAuth
from .errors import OAuthFlowError
from .registration import ClientInfo, ClientMetadata, PreRegisteredClient, register_client, token_auth_method
from .storage import InMemoryTokenStorage, TokenStorage
from .tokens import PrivateKeyJWT, Token, request_token

__all__ = [
    "DEFAULT_AUTH_TIMEOUT",
    "DEFAULT_REFRESH_SKEW",
    "ClientCredentialsProvider",
    "OAuthProvider",
    "RedirectHandler",
    "TokenHook",
]

logger = logging.getLogger(__name__)

DEFAULT_AUTH_TIMEOUT = 30.0  # seconds, for each metadata, registration and token exchange
DEFAULT_REFRESH_SKEW = 30.0  # refresh this long before the token's expiry
OFFLINE_ACCESS = "offline_access"
# The user's part: given the authorization URL, return the URL the authorization server redirected back to.
RedirectHandler = Callable[[str], Awaitable[str]]


class TokenHook(ABC):
    """The base of every provider (these two, and those of ``grants``): the token held for the server (kept in
    ``storage`` with the endpoint and issuer it came from), its headers, its refresh and its DPoP key (if any).
    Subclass it for another grant (``grants``): implement ``_authorize``; ``_discover``, ``_keep``, ``_client``,
    ``_http`` are the hooks a subclass uses."""

    def __init__(
        self,
        server_url: str,
        storage: TokenStorage | None,
        timeout: float,
        refresh_skew: float,
        dpop: DPoP | bool | None = None,
    ) -> None:
        self.server_url = server_url
        self.dpop: DPoP | None = DPoP() if dpop is True else dpop if isinstance(dpop, DPoP) else None
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.timeout = timeout
        self.refresh_skew = refresh_skew
        self.last_error: str | None = None  # why the last authorization failed (no secrets)
        self._lock = anyio.Lock()
        self._requested: set[str] = set()  # the scopes the held token was asked for

    @property
    def http_auth(self) -> DPoPHTTPAuth | None:
        """The per-request DPoP flow for the HTTP client (None without DPoP)."""
        return self.dpop.http_auth if self.dpop is not None else None

    def _check_dpop(self, metadata: AuthServerMetadata) -> None:
        algorithms = metadata.dpop_signing_alg_values_supported
        if self.dpop is not None and algorithms is not None and self.dpop.algorithm not in algorithms:
            raise OAuthFlowError(
                f"the authorization server accepts DPoP proofs signed with {', '.join(algorithms) or 'nothing'}, "
                f"not {self.dpop.algorithm}: give a key of one of those"
            )

    def _http(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False)

    @property
    def _token_key(self) -> str:
        return f"tokens {self.server_url}"

    async def _held(self) -> tuple[Token, dict[str, Any]] | None:
        record = await self.storage.load(self._token_key)
        token = Token.from_json(record.get("token") or {}) if record else None
        if token is None or record is None:
            return None
        if token.token_type == "DPoP" and (self.dpop is None or record.get("dpop_jkt") != self.dpop.thumbprint):
            return None  # bound to another key (e.g. one of a previous run): useless here
        return token, record

    async def _keep(self, token: Token, metadata: AuthServerMetadata, resource: str, jwt_audience: str | None) -> None:
        record = {
            "token": token.to_json(),
            "issuer": metadata.issuer,
            "token_endpoint": metadata.token_endpoint,
            "resource": resource,
            "audience": jwt_audience,
            "dpop_jkt": self.dpop.thumbprint if self.dpop is not None else None,
        }
        await self.storage.save(self._token_key, record)

    async def headers(self) -> Mapping[str, str]:
        async with self._lock:
            held = await self._held()
            if held is None:
                return {}
            token, record = held
            if token.expired(self.refresh_skew):
                refreshed = await self._refresh(token, record)
                if refreshed is None:
                    return {}
                token = refreshed
            return {"authorization": _authorization(token)}

    async def _client(self, record: Mapping[str, Any]) -> ClientInfo | None:
        stored = await self.storage.load(f"client {record.get('issuer') or record.get('token_endpoint')}")
        return ClientInfo.from_json(stored) if stored else None

    async def _refresh(self, token: Token, record: dict[str, Any]) -> Token | None:
        """A new token from the refresh token (RFC 6749 §6, with the resource), or None (the token is dropped)."""
        client = await self._client(record)
        if token.refresh_token is None or client is None:
            await self.storage.delete(self._token_key)
            return None
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
        if isinstance(record.get("resource"), str):
            form["resource"] = record["resource"]
        try:
            async with self._http() as http:
                fresh = await request_token(
                    http,
                    record["token_endpoint"],
                    client,
                    form,
                    audience=record.get("audience"),
                    jwt=self._jwt(),
                    previous_refresh_token=token.refresh_token,
                    dpop=self.dpop,
                )
        except OAuthFlowError as exc:
            logger.info("token refresh failed: %s", exc)
            await self.storage.delete(self._token_key)
            return None
        await self.storage.save(self._token_key, {**record, "token": fresh.to_json()})
        return fresh

    def _jwt(self) -> PrivateKeyJWT | None:
        return None

    async def on_challenge(self, challenge: AuthChallenge) -> bool:
        async with self._lock:
            held = await self._held()
            if held is not None and challenge.authorization not in (None, _authorization(held[0])):
                return True  # another request got a new token meanwhile: send with that one
            if challenge.error in ("use_dpop_nonce", "invalid_dpop_proof"):
                # The proof, not the token, was refused: a new token cannot help (DPoPHTTPAuth retries nonces).
                self.last_error = f"the server refused the DPoP proof ({challenge.error}): is http_auth installed?"
                return False
            if held is not None and challenge.status == 401 and held[0].refresh_token is not None:
                if await self._refresh(*held) is not None:
                    return True
            try:
                return await self._authorize(challenge)
            except OAuthFlowError as exc:
                self.last_error = str(exc)
                logger.warning("authorization for %s failed: %s", self.server_url, exc)
                return False

    async def authorize(self) -> None:
        """Authorize now, before connecting, unless a token is held: the flow then runs outside any request's
        timeout (an interactive login can take longer than ``Client``'s ``discover_timeout``). Raises
        ``OAuthFlowError`` when it cannot complete."""
        async with self._lock:
            if await self._held() is None and not await self._authorize(AuthChallenge(401, self.server_url)):
                raise OAuthFlowError(self.last_error or "authorization failed")

    @abstractmethod
    async def _authorize(self, challenge: AuthChallenge) -> bool:
        """Run the grant (authorization code with PKCE, or client credentials) for ``challenge``: True once a token
        is kept."""

    async def _discover(
        self, http: httpx2.AsyncClient, challenge: AuthChallenge
    ) -> tuple[ResourceMetadata, AuthServerMetadata]:
        resource = await discover_resource(http, self.server_url, challenge.resource_metadata)
        issuer = resource.authorization_servers[0]
        metadata = await discover_authorization_server(http, issuer, legacy_fallback=not resource.found)
        return resource, metadata


def _authorization(token: Token) -> str:
    return f"{'DPoP' if token.token_type == 'DPoP' else 'Bearer'} {token.access_token}"


def _scopes(text: str | None) -> list[str]:
    return [scope for scope in (text or "").split() if scope]


class OAuthProvider(TokenHook):
    """Authorization code + PKCE for a user's client. ``redirect_handler`` does the user's part (open the URL in a
    browser, wait for the redirect: ``LoopbackRedirectHandler`` does both for a CLI); ``client_metadata`` is what
    dynamic registration sends (its first redirect URI is used); ``client_id_metadata_url`` is the HTTPS URL of the
    client's metadata document, used as its client id where the server supports it; ``pre_registered`` are
    credentials registered out of band. ``storage`` keeps tokens and registrations (default: in memory)."""

    def __init__(
        self,
        server_url: str,
        *,
        client_metadata: ClientMetadata,
        redirect_handler: RedirectHandler,
        storage: TokenStorage | None = None,
        client_id_metadata_url: str | None = None,
        pre_registered: PreRegisteredClient | None = None,
        timeout: float = DEFAULT_AUTH_TIMEOUT,
        refresh_skew: float = DEFAULT_REFRESH_SKEW,
        dpop: DPoP | bool | None = None,
    ) -> None:
        if not client_metadata.redirect_uris:
            raise ValueError("client_metadata needs at least one redirect URI")
        super().__init__(server_url, storage, timeout, refresh_skew, dpop)
        self.client_metadata = client_metadata
        self.redirect_handler = redirect_handler
        self.client_id_metadata_url = client_id_metadata_url
        self.pre_registered = pre_registered

    async def _identify(self, http: httpx2.AsyncClient, metadata: AuthServerMetadata) -> ClientInfo:
        """The client's identity at this issuer: stored, pre-registered, a metadata document URL, or registered."""
        key = f"client {metadata.issuer or metadata.token_endpoint}"
        stored = await self.storage.load(key)
        if stored and (info := ClientInfo.from_json(stored)) is not None:
            return info
        pre = self.pre_registered
        if pre is not None and pre.issuer in (None, metadata.issuer):
            method = token_auth_method(metadata, pre.client_secret is not None, pre.token_endpoint_auth_method)
            info = ClientInfo(pre.client_id, pre.client_secret, method)
        elif metadata.client_id_metadata_document_supported and self.client_id_metadata_url:
            info = ClientInfo(self.client_id_metadata_url, None, "none")
        else:
            info = await register_client(http, metadata, self.client_metadata)
        await self.storage.save(key, info.to_json())
        return info

    def _select_scopes(
        self, challenge: AuthChallenge, resource: ResourceMetadata, metadata: AuthServerMetadata
    ) -> list[str]:
        scopes = _scopes(challenge.scope) or list(resource.scopes_supported or ())
        if challenge.status == 403:
            # Step-up (SEP-2350): keep what was granted, add what the operation needs.
            scopes = sorted(self._requested) + [scope for scope in scopes if scope not in self._requested]
        offered = metadata.scopes_supported or ()
        wants_refresh = "refresh_token" in self.client_metadata.grant_types
        if scopes and wants_refresh and OFFLINE_ACCESS in offered and OFFLINE_ACCESS not in scopes:
            scopes.append(OFFLINE_ACCESS)
        return scopes

    async def _authorize(self, challenge: AuthChallenge) -> bool:
        if challenge.status == 403 and set(_scopes(challenge.scope)) <= self._requested:
            # The token was asked with every scope the server now wants: asking again cannot help.
            self.last_error = f"the server still refuses with scope {challenge.scope!r}: not retrying"
            return False
        async with self._http() as http:
            resource, metadata = await self._discover(http, challenge)
            if metadata.issuer is not None and "S256" not in (metadata.code_challenge_methods_supported or ()):
                raise OAuthFlowError("the authorization server does not advertise PKCE S256: refusing to use it")
            self._check_dpop(metadata)
            client = await self._identify(http, metadata)
            scopes = self._select_scopes(challenge, resource, metadata)
            verifier = secrets.token_urlsafe(64)  # 86 characters of the unreserved set (RFC 7636 §4.1)
            state = secrets.token_urlsafe(32)
            redirect_uri = self.client_metadata.redirect_uris[0]
            query = {
                "response_type": "code",
                "client_id": client.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "code_challenge": create_s256_code_challenge(verifier),
                "code_challenge_method": "S256",
                "resource": resource.resource,
                **({"scope": " ".join(scopes)} if scopes else {}),
            }
            endpoint = metadata.authorization_endpoint
            url = f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"
            code = check_redirect(await self.redirect_handler(url), state, metadata)
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": resource.resource,
            }
            token = await request_token(http, metadata.token_endpoint, client, form, dpop=self.dpop)
        await self._keep(token, metadata, resource.resource, None)
        self._requested = set(scopes)
        return True


def check_redirect(redirect_url: str, state: str, metadata: AuthServerMetadata) -> str:
    """The authorization code of the redirect, once its ``state`` and ``iss`` are checked (RFC 9207: a present
    ``iss`` must equal the recorded issuer exactly, and a server that advertises it must send it)."""
    query = {key: values[0] for key, values in parse_qs(urlsplit(redirect_url).query).items() if values}
    if "error" in query:
        raise OAuthFlowError(f"the authorization server refused: {query['error']}")
    if not hmac.compare_digest(query.get("state", ""), state):
        raise OAuthFlowError("the redirect's state does not match the request's: refusing it")
    issuer = query.get("iss")
    if issuer is not None and issuer != metadata.issuer:
        raise OAuthFlowError(f"the redirect's iss {issuer!r} is not the issuer {metadata.issuer!r}: refusing it")
    if issuer is None and metadata.iss_parameter_supported:
        raise OAuthFlowError("the authorization server advertises iss but the redirect has none: refusing it")
    code = query.get("code")
    if not code:
        raise OAuthFlowError("the redirect carries no authorization code")
    return code


class ClientCredentialsProvider(TokenHook):
    """Machine to machine (the client-credentials extension): a token for the client itself, authenticated with
    ``client_secret`` (``client_secret_basic``) or ``private_key`` (``private_key_jwt``, audience the issuer)."""

    def __init__(
        self,
        server_url: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: PrivateKeyJWT | None = None,
        scope: str | None = None,
        storage: TokenStorage | None = None,
        timeout: float = DEFAULT_AUTH_TIMEOUT,
        refresh_skew: float = DEFAULT_REFRESH_SKEW,
        dpop: DPoP | bool | None = None,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ValueError("give exactly one of client_secret and private_key")
        super().__init__(server_url, storage, timeout, refresh_skew, dpop)
        method = "private_key_jwt" if private_key is not None else "client_secret_basic"
        self.client = ClientInfo(client_id, client_secret, method)
        self.private_key = private_key
        self.scope = scope

    def _jwt(self) -> PrivateKeyJWT | None:
        return self.private_key

    async def _client(self, record: Mapping[str, Any]) -> ClientInfo | None:
        return self.client  # configured, never stored: the secret stays out of the token store

    async def _authorize(self, challenge: AuthChallenge) -> bool:
        async with self._http() as http:
            resource, metadata = await self._discover(http, challenge)
            self._check_dpop(metadata)
            scopes = _scopes(challenge.scope or self.scope) or list(resource.scopes_supported or ())
            form = {"grant_type": "client_credentials", "resource": resource.resource}
            if scopes:
                form["scope"] = " ".join(scopes)
            audience = metadata.issuer or metadata.token_endpoint
            token = await request_token(
                http,
                metadata.token_endpoint,
                self.client,
                form,
                audience=audience,
                jwt=self.private_key,
                dpop=self.dpop,
            )
        await self._keep(token, metadata, resource.resource, audience)
        return True
