"""The streamable HTTP server's authorization hook: what the transport asks of whoever protects the endpoint.

Where it sits: in the ``transports`` layer, used by ``app``; it imports nothing of the server layer, which
provides the implementation (``server.auth.BearerAuth`` bound to a server). The transport calls it in three places:

- ``metadata(path)`` for a GET of any path: a JSON document to serve there (RFC 9728 protected resource metadata at
  ``/.well-known/oauth-protected-resource`` and its path-suffixed form), or None;
- ``authenticate(authorization)`` before anything else of a request to the MCP endpoint (both eras, every method):
  ``Authenticated`` (its ``identity`` is then in the ASGI scope under ``AUTH_SCOPE_KEY``, where ``Context.auth``
  reads it, and its ``owner`` binds a session created by the request) or an ``AuthRefusal`` (401; 503 with
  ``Retry-After`` when the credentials cannot be checked now, e.g. the key server is unreachable). A request with
  more than one ``Authorization`` header is refused here, before ``authenticate`` (400 ``invalid_request``: which
  one would count is ambiguous, and a proxy may check another than the server; ``authorization_of``);
  An authenticator whose credentials are bound to the request itself (DPoP, RFC 9449: a proof signed over the
  method and URL) also has ``authenticate_request(authorization, scope)``, called instead with the ASGI scope
  (read-only); a refusal's ``headers`` (e.g. a ``DPoP-Nonce`` to retry with) go on the answer;
- ``authorize(identity, method, params)`` for each request a POST carries, once decoded: None, or an ``AuthRefusal``
  (403 ``insufficient_scope``, so that clients step up).

A refusal is answered with its status, its ``WWW-Authenticate`` challenge (if any), its ``Retry-After`` (if any)
and a JSON-RPC error body.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

from .asgi import JSON, Answer

__all__ = [
    "AUTH_OWNER_KEY",
    "AUTH_SCOPE_KEY",
    "AnyHTTPAuth",
    "AuthRefusal",
    "Authenticated",
    "HTTPAuthenticator",
    "ScopedAuthenticator",
    "authorization_of",
    "bound_authenticator",
    "metadata_answer",
    "refusal_answer",
]

# Keys of the ASGI scope of an authenticated request (namespaced: starlette's AuthenticationMiddleware owns "auth").
AUTH_SCOPE_KEY: Final = "mcpgen.auth"
AUTH_OWNER_KEY: Final = "mcpgen.auth_owner"
# JSON-RPC error code of a refusal's body (the HTTP status is what clients act on; the body says why).
UNAUTHORIZED_CODE: Final = -32001
INVALID_REQUEST_CODE: Final = -32600  # JSON-RPC's, for a 400 (e.g. two Authorization headers)
UNAVAILABLE_CODE: Final = -32603  # JSON-RPC's internal error, for a 503 (as the transport's other 503s)


@dataclass(frozen=True, slots=True)
class Authenticated:
    """A request whose credentials were verified: ``identity`` (what handlers see) and ``owner`` (a stable key of
    who it is, e.g. issuer and subject: a session created with it accepts requests of that owner only)."""

    identity: Any
    owner: str


@dataclass(frozen=True, slots=True)
class AuthRefusal:
    """A request refused: ``status`` (400, 401, 403 or 503), ``challenge`` (the ``WWW-Authenticate`` value; "" for
    none), a message for the JSON-RPC error body (never a secret nor an internal URL: it is sent to the client), its
    JSON-RPC ``code``, ``retry_after`` (seconds, the ``Retry-After`` of a 503; None: no header) and any other
    ``headers`` the answer carries (a DPoP nonce challenge's ``DPoP-Nonce``)."""

    status: int
    challenge: str
    message: str
    code: int = UNAUTHORIZED_CODE
    retry_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class HTTPAuthenticator(Protocol):
    """What ``StreamableHTTPApp(auth=...)`` calls (see the module docstring)."""

    def metadata(self, path: str) -> Mapping[str, Any] | None:
        """The JSON document served at ``path`` (GET), or None if ``path`` is not one of them."""
        ...

    async def authenticate(self, authorization: str | None) -> Authenticated | AuthRefusal:
        """Verify the ``Authorization`` header's value (None when the request had none)."""
        ...

    def authorize(self, identity: Any, method: str, params: Mapping[str, Any] | None) -> AuthRefusal | None:
        """Whether ``identity`` may send request ``method`` with ``params`` (e.g. the scopes of a tool)."""
        ...


class ScopedAuthenticator(Protocol):
    """What a server's ``auth=`` option may also be (``server.auth.BearerAuth``): the configuration of an
    authenticator, bound to a server's tool scopes (tool name -> scopes a call needs) to give the
    ``HTTPAuthenticator``. The server binds it to its own tools; given to the transport directly, it is bound to
    none (``bound_authenticator``)."""

    def authenticator(self, tool_scopes: Mapping[str, Collection[str]]) -> HTTPAuthenticator: ...


AnyHTTPAuth = HTTPAuthenticator | ScopedAuthenticator
"""The ``auth=`` option: an authenticator, or the configuration of one (``ScopedAuthenticator``)."""


def bound_authenticator(auth: AnyHTTPAuth | None) -> HTTPAuthenticator | None:
    """``auth`` as the transport uses it: an authenticator as it is, a configuration bound to no tool scopes (a
    server binds it to its tools before the transport sees it)."""
    if auth is None or not hasattr(auth, "authenticator") or hasattr(auth, "authenticate"):
        return cast(HTTPAuthenticator | None, auth)  # an authenticator already (structurally)
    return auth.authenticator({})


def authorization_of(scope: Mapping[str, Any]) -> str | AuthRefusal | None:
    """The request's one ``Authorization`` value (None: none), or a 400 refusal when it has more than one."""
    values = [value for key, value in scope["headers"] if key.lower() == b"authorization"]
    if len(values) > 1:
        description = "the request has more than one Authorization header"
        challenge = f'Bearer error="invalid_request", error_description="{description}"'
        return AuthRefusal(400, challenge, f"Bad Request: {description}", INVALID_REQUEST_CODE)
    return values[0].decode("latin-1") if values else None


def refusal_answer(refusal: AuthRefusal, request_id: Any = None) -> Answer:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": refusal.code, "message": refusal.message}}
    headers = {**refusal.headers, "Cache-Control": "no-store"}
    if refusal.challenge:
        headers["WWW-Authenticate"] = refusal.challenge
    if refusal.retry_after is not None:
        headers["Retry-After"] = str(refusal.retry_after)
    return Answer(json.dumps(body).encode(), refusal.status, headers, media_type=JSON)


def metadata_answer(document: Mapping[str, Any]) -> Answer:
    # Public metadata: any origin may read it (browser-based clients discover the authorization server this way).
    headers = {"Access-Control-Allow-Origin": "*", "Cache-Control": "max-age=3600"}
    return Answer(json.dumps(document).encode(), 200, headers, media_type=JSON)
