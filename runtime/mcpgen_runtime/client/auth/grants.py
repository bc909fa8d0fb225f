"""Token grants without a user at the MCP authorization server: the RFC 7523 JWT bearer grant, fed either by an
enterprise identity provider (Enterprise-Managed Authorization, SEP-990: ``EnterpriseAuthProvider``) or by the
workload's own identity token (workload identity federation, SEP-1933: ``WorkloadIdentityProvider``).

- ``EnterpriseAuthProvider``: on a 401 it finds the MCP authorization server (``discovery``, or the pinned
  ``authorization_server``), trades the user's ID token for an Identity Assertion JWT Authorization Grant (ID-JAG)
  at the IdP (RFC 8693 token exchange: ``audience`` the MCP authorization server's issuer, ``resource`` the MCP
  server), then presents the ID-JAG at the MCP authorization server (RFC 7523, ``client_secret_basic`` by
  default). The user is never redirected to the MCP authorization server.
- ``WorkloadIdentityProvider``: presents a JWT the platform issued to the workload (a string, a callable or a
  file read on each grant: projected tokens rotate) as the RFC 7523 assertion.

A refused grant raises ``GrantError`` (``error`` is the server's OAuth error code: ``invalid_grant``,
``invalid_scope``, ``unauthorized_client`` ...) from ``authorize()``; under a request, the request fails with
``AuthorizationError``, ``last_error`` says why and ``last_exception`` is the typed error. Nothing is retried and no
other grant is tried: a credential (assertion, ID token) that a server refused is not sent again, a new one from
the source is. Each exchange has a total deadline, the provider's ``timeout`` (default ``DEFAULT_AUTH_TIMEOUT``,
30 s); answers are read up to ``MAX_TOKEN_BYTES`` (64 KiB) and checked before they are used.

Both take ``dpop`` (RFC 9449) as ``OAuthProvider`` does: ``True`` (a new ES256 key) or a ``DPoP``. The grant at the
MCP authorization server then carries a proof (its ``use_dpop_nonce`` answered once with its nonce), a ``DPoP``
token is presented as ``Authorization: DPoP`` with a fresh proof on each request (``http_auth``, which the HTTP
transport's own client runs). The IdP's token exchange carries none: the ID-JAG is a grant, not a token to bind.

The client declares ``ENTERPRISE_MANAGED_AUTHORIZATION`` among its capabilities' ``extensions``:
``EnterpriseAuthProvider.client_capabilities``, which ``Client.connect`` adds under the caller's own capabilities
when the provider is the target's ``auth``.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import time
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import quote, urlencode

import anyio
import httpx2

from ...transports.http.client.auth import AuthChallenge
from .discovery import AuthServerMetadata, ResourceMetadata, discover_authorization_server, discover_resource
from .dpop import DPoP
from .errors import OAuthFlowError
from .provider import DEFAULT_AUTH_TIMEOUT, DEFAULT_REFRESH_SKEW, TokenHook
from .registration import ClientInfo
from .storage import TokenStorage
from .tokens import MAX_TOKEN_BYTES, Token

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ENTERPRISE_MANAGED_AUTHORIZATION",
    "ID_JAG_TOKEN_TYPE",
    "ID_TOKEN_TYPE",
    "JWT_BEARER_GRANT",
    "TOKEN_EXCHANGE_GRANT",
    "AssertionSource",
    "EnterpriseAuthProvider",
    "GrantError",
    "GrantSettings",
    "WorkloadIdentityProvider",
]

ENTERPRISE_MANAGED_AUTHORIZATION = "io.modelcontextprotocol/enterprise-managed-authorization"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
MAX_ASSERTION_BYTES = 16 * 1024  # a JWT assertion is a few hundred bytes to a few KiB; a larger one is refused
# An assertion that expired this long ago is refused locally (a little slack for the clocks of the two machines).
EXPIRY_SLACK = 30.0
# How many refused credentials a provider remembers (so as not to send them again): a bound, since a source may
# keep minting new ones that are refused too.
MAX_REMEMBERED_REFUSALS = 64

# What gives the assertion: the JWT itself, or a callable (sync or async) called with the audience, the MCP
# authorization server's issuer, each time a grant is made.
AssertionSource = str | Callable[[str], str | Awaitable[str]]


class GrantError(OAuthFlowError):
    """A token endpoint refused a grant (or answered something unusable). ``error`` is the OAuth error code it
    sent (None when it sent none), ``status`` the HTTP status (0: no answer), ``endpoint`` where it was sent."""

    def __init__(
        self, message: str, *, endpoint: str, status: int = 0, error: str | None = None, description: str | None = None
    ) -> None:
        self.endpoint, self.status, self.error, self.description = endpoint, status, error, description
        detail = f" ({error}{': ' + description if description else ''})" if error else ""
        super().__init__(f"{message}{detail}")


def _client_auth(client: ClientInfo | None, form: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The headers and form with the client's authentication (RFC 6749 §2.3.1: each part URL-encoded for Basic)."""
    headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
    if client is None:
        return headers, form
    if client.token_endpoint_auth_method == "client_secret_basic" and client.client_secret is not None:
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        headers["authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
        return headers, form
    if client.token_endpoint_auth_method == "client_secret_post" and client.client_secret is not None:
        return headers, {**form, "client_id": client.client_id, "client_secret": client.client_secret}
    return headers, {**form, "client_id": client.client_id}  # a public client names itself


async def post_grant(
    http: httpx2.AsyncClient,
    endpoint: str,
    client: ClientInfo | None,
    form: dict[str, str],
    dpop: DPoP | None = None,
) -> dict[str, Any]:
    """POST a grant's form to a token endpoint; its JSON answer (200), else ``GrantError`` with the error code.
    With ``dpop`` the request carries a proof, and a 400 ``use_dpop_nonce`` that brings a nonce is answered by
    sending it once more with a proof of that nonce (RFC 9449 §8)."""
    headers, form = _client_auth(client, form)
    status, answer = await _post_form(http, endpoint, headers, form, dpop)
    if dpop is not None and _nonce_wanted(status, answer) and dpop.nonce_for(endpoint) is not None:
        status, answer = await _post_form(http, endpoint, headers, form, dpop)
    if status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        description = answer.get("error_description") if isinstance(answer, dict) else None
        raise GrantError(
            f"{endpoint} refused the grant with HTTP {status}",
            endpoint=endpoint,
            status=status,
            error=error if isinstance(error, str) else None,
            # Bounded: the description is shown in logs and messages, and it is the peer's text.
            description=description[:200] if isinstance(description, str) else None,
        )
    return answer


def _nonce_wanted(status: int, answer: Any) -> bool:
    return status == 400 and isinstance(answer, dict) and answer.get("error") == "use_dpop_nonce"


async def _post_form(
    http: httpx2.AsyncClient, endpoint: str, headers: dict[str, str], form: dict[str, str], dpop: DPoP | None
) -> tuple[int, Any]:
    """One token request (with a fresh DPoP proof when ``dpop``): the status and the JSON answer (None when it is
    not JSON), read up to ``MAX_TOKEN_BYTES``."""
    if dpop is not None:
        headers = {**headers, "DPoP": dpop.proof("POST", endpoint)}
    body = bytearray()
    try:
        async with http.stream("POST", endpoint, content=urlencode(form).encode(), headers=headers) as response:
            if dpop is not None:
                dpop.remember(endpoint, response.headers)  # its DPoP-Nonce, bounded by DPoP itself
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_TOKEN_BYTES:
                    raise GrantError("the token response is too large", endpoint=endpoint, status=response.status_code)
    except httpx2.HTTPError as exc:
        raise GrantError(f"the token request to {endpoint} failed: {exc!r}", endpoint=endpoint) from exc
    try:
        return response.status_code, json.loads(bytes(body))
    except ValueError:
        return response.status_code, None


def bearer_token(answer: Mapping[str, Any], endpoint: str, scope: str | None, dpop: bool = False) -> Token:
    """The access token of a token response, checked: present, and a Bearer token (or, when the request carried a
    DPoP proof, a DPoP one: bound to that key)."""
    access, token_type = answer.get("access_token"), answer.get("token_type")
    if not isinstance(access, str) or not access or not isinstance(token_type, str):
        raise GrantError("the token response has no access_token or token_type", endpoint=endpoint, status=200)
    accepted = ("bearer", "dpop") if dpop else ("bearer",)
    if token_type.lower() not in accepted:
        kinds = "DPoP or Bearer" if dpop else "only Bearer"
        raise GrantError(f"unsupported token type {token_type!r} ({kinds})", endpoint=endpoint, status=200)
    lifetime, granted = answer.get("expires_in"), answer.get("scope")
    return Token(
        access_token=access,
        token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
        expires_at=time.time() + lifetime if isinstance(lifetime, int | float) and lifetime > 0 else None,
        scope=granted if isinstance(granted, str) else scope,
    )


def check_assertion(assertion: object, what: str) -> str:
    """``assertion`` when it looks like a usable JWT (compact form, bounded, not expired by its own ``exp``);
    else ``OAuthFlowError`` before anything is sent. The signature is the authorization server's to check."""
    if not isinstance(assertion, str) or not assertion.strip():
        raise OAuthFlowError(f"the {what} is empty")
    assertion = assertion.strip()
    if len(assertion) > MAX_ASSERTION_BYTES or assertion.count(".") != 2:
        raise OAuthFlowError(f"the {what} is not a compact JWT")
    try:
        payload = assertion.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError as exc:
        raise OAuthFlowError(f"the {what}'s claims are not JSON") from exc
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    if isinstance(expiry, int | float) and expiry + EXPIRY_SLACK < time.time():
        raise OAuthFlowError(f"the {what} expired at {int(expiry)}: not sending it")
    return assertion


async def resolve_assertion(source: AssertionSource, audience: str, what: str) -> str:
    value = source(audience) if callable(source) else source
    if inspect.isawaitable(value):
        value = await value
    return check_assertion(value, what)


def assertion_file(path: str | Path) -> Callable[[str], Awaitable[str]]:
    """An assertion source reading a file on each grant (a platform's projected token rotates): at most
    ``MAX_ASSERTION_BYTES``."""

    async def read(audience: str) -> str:
        try:
            async with await anyio.open_file(path, "rb") as file:
                data = await file.read(MAX_ASSERTION_BYTES + 1)  # never more: the file may be anything
        except OSError as exc:
            raise OAuthFlowError(f"cannot read the assertion file {str(path)!r}: {exc.strerror}") from exc
        if len(data) > MAX_ASSERTION_BYTES:
            raise OAuthFlowError(f"the assertion file {str(path)!r} is larger than {MAX_ASSERTION_BYTES} bytes")
        return data.decode("ascii", errors="replace").strip()

    return read


def _client_info(client_id: str | None, client_secret: str | None, method: str | None) -> ClientInfo | None:
    if client_id is None:
        if client_secret is not None:
            raise ValueError("client_secret needs a client_id")
        return None
    chosen = method or ("client_secret_basic" if client_secret is not None else "none")
    if chosen not in ("client_secret_basic", "client_secret_post", "none"):
        raise ValueError(f"unsupported token_endpoint_auth_method {chosen!r}")
    if (chosen != "none") != (client_secret is not None):
        raise ValueError(f"{chosen} {'needs' if chosen != 'none' else 'takes no'} client_secret")
    return ClientInfo(client_id, client_secret, chosen)


class GrantSettings(TypedDict, total=False):
    """The keyword arguments both providers take besides their credentials: ``scope`` asked for;
    ``authorization_server`` pins the issuer the assertion may be sent to; ``storage`` keeps the token (default: in
    memory); ``timeout`` bounds each exchange (default ``DEFAULT_AUTH_TIMEOUT``); ``refresh_skew`` (default
    ``DEFAULT_REFRESH_SKEW``); ``dpop``: ``True`` or a ``DPoP`` for DPoP-bound tokens (default: Bearer)."""

    scope: str | None
    authorization_server: str | None
    storage: TokenStorage | None
    timeout: float
    refresh_skew: float
    dpop: DPoP | bool | None


class _JWTBearerHook(TokenHook):
    """What both providers share: the discovery (pinned or not), the RFC 7523 grant (DPoP-bound with ``dpop``), and
    no resending of an assertion that was refused."""

    def __init__(
        self,
        server_url: str,
        *,
        client: ClientInfo | None,
        scope: str | None = None,
        authorization_server: str | None = None,
        storage: TokenStorage | None = None,
        timeout: float = DEFAULT_AUTH_TIMEOUT,
        refresh_skew: float = DEFAULT_REFRESH_SKEW,
        dpop: DPoP | bool | None = None,
    ) -> None:
        super().__init__(server_url, storage, timeout, refresh_skew, dpop)
        self.client = client
        self.scope = scope
        self.authorization_server = authorization_server
        self.last_exception: OAuthFlowError | None = None  # the typed error of the last failed authorization
        self._refused: set[str] = set()  # sha256 of the assertions a server refused: never sent again

    async def _client(self, record: Mapping[str, Any]) -> ClientInfo | None:
        return self.client  # configured, never stored: the secret stays out of the token store

    async def _discover(
        self, http: httpx2.AsyncClient, challenge: AuthChallenge
    ) -> tuple[ResourceMetadata, AuthServerMetadata]:
        """The resource's metadata, and the authorization server's: the pinned one when configured (the resource
        server then cannot send the assertion elsewhere), else the first the resource names. Never the 2025-03-26
        fallback: the grant is addressed to an issuer, so there must be one."""
        resource = await discover_resource(http, self.server_url, challenge.resource_metadata)
        issuer = self.authorization_server or resource.authorization_servers[0]
        metadata = await discover_authorization_server(http, issuer, legacy_fallback=False)
        self._check_dpop(metadata)  # a key the server does not accept stops here, before any credential is sent
        return resource, metadata

    async def _present(
        self,
        http: httpx2.AsyncClient,
        endpoint: str,
        client: ClientInfo | None,
        form: dict[str, str],
        sent: str,
        dpop: DPoP | None = None,
    ) -> dict[str, Any]:
        """``post_grant``, unless the credential ``sent`` (an assertion or a subject token) was refused already:
        a refusal (4xx) is final for that credential, so it is remembered and not sent again. A failure that says
        nothing about it (no answer, 5xx, a refused DPoP proof) is not remembered."""
        digest = hashlib.sha256(sent.encode()).hexdigest()
        if digest in self._refused:
            raise OAuthFlowError(f"{endpoint} refused this credential before: not sending it again")
        try:
            with anyio.fail_after(self.timeout):
                return await post_grant(http, endpoint, client, form, dpop)
        except TimeoutError:
            raise GrantError(f"{endpoint} did not answer within {self.timeout} s", endpoint=endpoint) from None
        except GrantError as exc:
            about_the_proof = exc.error in ("use_dpop_nonce", "invalid_dpop_proof")
            if 400 <= exc.status < 500 and not about_the_proof and len(self._refused) < MAX_REMEMBERED_REFUSALS:
                self._refused.add(digest)
            raise

    async def _grant(
        self, http: httpx2.AsyncClient, metadata: AuthServerMetadata, resource: str, assertion: str
    ) -> Token:
        """The RFC 7523 grant: ``assertion`` for an access token to ``resource``."""
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion, "resource": resource}
        if self.scope:
            form["scope"] = self.scope
        answer = await self._present(http, metadata.token_endpoint, self.client, form, assertion, self.dpop)
        return bearer_token(answer, metadata.token_endpoint, self.scope, dpop=self.dpop is not None)

    async def _authorize(self, challenge: AuthChallenge) -> bool:
        try:
            async with self._http() as http:
                resource, metadata = await self._discover(http, challenge)
                token = await self._obtain(http, resource, metadata)
        except OAuthFlowError as exc:
            self.last_exception = exc
            raise
        await self._keep(token, metadata, resource.resource, None)
        return True

    @abstractmethod
    async def _obtain(
        self, http: httpx2.AsyncClient, resource: ResourceMetadata, metadata: AuthServerMetadata
    ) -> Token:
        """The access token, by this provider's way to the RFC 7523 grant (the workload's JWT, or an ID-JAG)."""


class WorkloadIdentityProvider(_JWTBearerHook):
    """Workload identity federation (SEP-1933, RFC 7523 §2.1): the workload's JWT, from ``assertion`` (the JWT, or
    a callable given the authorization server's issuer, the audience the JWT must carry) or ``assertion_path`` (a
    file read on each grant), is the grant. ``client_id`` (and ``client_secret``, sent with
    ``client_secret_basic`` unless ``token_endpoint_auth_method`` says otherwise) when the authorization server
    wants the client identified. The rest (``authorization_server``, which pins the issuer the JWT may be sent to;
    ``scope``, ``storage``, ``timeout``, ``refresh_skew``, ``dpop``) are ``GrantSettings``."""

    def __init__(
        self,
        server_url: str,
        *,
        assertion: AssertionSource | None = None,
        assertion_path: str | Path | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        **settings: Unpack[GrantSettings],
    ) -> None:
        if (assertion is None) == (assertion_path is None):
            raise ValueError("give exactly one of assertion and assertion_path")
        client = _client_info(client_id, client_secret, token_endpoint_auth_method)
        super().__init__(server_url, client=client, **settings)
        self.assertion: AssertionSource = assertion if assertion is not None else assertion_file(str(assertion_path))

    async def _obtain(
        self, http: httpx2.AsyncClient, resource: ResourceMetadata, metadata: AuthServerMetadata
    ) -> Token:
        assert metadata.issuer is not None  # _discover refuses a server without metadata
        jwt = await resolve_assertion(self.assertion, metadata.issuer, "workload identity token")
        return await self._grant(http, metadata, resource.resource, jwt)


class EnterpriseAuthProvider(_JWTBearerHook):
    """Enterprise-Managed Authorization (SEP-990). ``id_token`` is the user's identity assertion from the
    enterprise IdP's single sign-on (the JWT, or a callable given the MCP authorization server's issuer);
    ``idp_token_endpoint`` the IdP's token endpoint, where ``idp_client_id`` (with ``idp_client_secret`` by
    ``client_secret_basic``, when the IdP has given one) asks for the ID-JAG. ``client_id`` / ``client_secret``
    are the client's credentials at the MCP authorization server (``client_secret_basic`` unless
    ``token_endpoint_auth_method`` says ``client_secret_post``). ``authorization_server`` pins the issuer the ID-JAG
    is made for and sent to (the SDK's stance: configuration, not discovery); without it the protected resource
    metadata's first authorization server is used. The rest (``scope``, ``storage``, ``timeout``, ``refresh_skew``,
    ``dpop``) are ``GrantSettings``.

    The client must declare the extension in its capabilities: ``Client.connect`` adds ``client_capabilities`` to
    the caller's when this provider is the target's ``auth``."""

    def __init__(
        self,
        server_url: str,
        *,
        id_token: AssertionSource,
        idp_token_endpoint: str,
        idp_client_id: str | None,
        client_id: str,
        client_secret: str,
        idp_client_secret: str | None = None,
        token_endpoint_auth_method: str = "client_secret_basic",
        **settings: Unpack[GrantSettings],
    ) -> None:
        if token_endpoint_auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("the ID-JAG is presented by a confidential client: client_secret_basic or _post")
        client = _client_info(client_id, client_secret, token_endpoint_auth_method)
        super().__init__(server_url, client=client, **settings)
        self.id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client = _client_info(idp_client_id, idp_client_secret, None)

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declares for Enterprise-Managed Authorization: ``{"extensions": {<the extension>: {}}}``
        (a new dict each time: merge it into your own capabilities)."""
        return {"extensions": {ENTERPRISE_MANAGED_AUTHORIZATION: {}}}

    async def request_id_jag(self, http: httpx2.AsyncClient, issuer: str, resource: str) -> str:
        """RFC 8693 token exchange at the IdP: the ID token for an ID-JAG made for ``issuer`` and ``resource``."""
        subject = await resolve_assertion(self.id_token, issuer, "ID token")
        form = {
            "grant_type": TOKEN_EXCHANGE_GRANT,
            "requested_token_type": ID_JAG_TOKEN_TYPE,
            "subject_token": subject,
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": issuer,
            "resource": resource,
        }
        if self.scope:
            form["scope"] = self.scope
        answer = await self._present(http, self.idp_token_endpoint, self.idp_client, form, subject)
        if answer.get("issued_token_type") != ID_JAG_TOKEN_TYPE:
            raise GrantError(
                f"the IdP issued {answer.get('issued_token_type')!r}, not an ID-JAG",
                endpoint=self.idp_token_endpoint,
                status=200,
            )
        # token_type is "N_A" (RFC 8693 §2.2.1): the ID-JAG is a grant, not an access token.
        return check_assertion(answer.get("access_token"), "ID-JAG")

    async def _obtain(
        self, http: httpx2.AsyncClient, resource: ResourceMetadata, metadata: AuthServerMetadata
    ) -> Token:
        assert metadata.issuer is not None  # _discover refuses a server without metadata
        id_jag = await self.request_id_jag(http, metadata.issuer, resource.resource)
        return await self._grant(http, metadata, resource.resource, id_jag)
