"""The auth hook of the streamable HTTP client (``stream``): what a 401/403 looks like to it, and what it must do.

Where it sits: beside ``stream`` in ``transports.http.client``, below the client. The OAuth provider that implements
``HTTPAuth`` lives in ``client.auth`` (the transport only knows this small protocol); ``AuthChallenge`` is the
parsed ``WWW-Authenticate`` of a refusal, and ``unauthorized_challenge`` recovers it from the error response the
transport delivers when the hook cannot resolve a refusal (the typed client raises ``AuthorizationError`` from it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from ....jsonrpc.envelopes import ErrorCode

if TYPE_CHECKING:
    import httpx2  # for the annotations only: the typed client imports this module, stdio ones too

__all__ = [
    "DEFAULT_MAX_AUTH_RETRIES",
    "AuthChallenge",
    "HTTPAuth",
    "parse_www_authenticate",
    "unauthorized_challenge",
]

# How many times one request is sent again after its auth hook authorized (a step-up that never satisfies the
# server must not loop).
DEFAULT_MAX_AUTH_RETRIES: Final = 2
# The error data marker of a refusal the auth hook could not resolve (never something a server sends: see
# ``unauthorized_challenge``).
_UNAUTHORIZED_MARKER: Final = "mcpgen/unauthorized"
_AUTH_PARAM = re.compile(r'\s*([A-Za-z0-9_!#$%&\'*+.^`|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*,?')


def parse_www_authenticate(value: str) -> tuple[str, dict[str, str]]:
    """The scheme and the auth-params of a ``WWW-Authenticate`` value (RFC 9110 §11.6.1), e.g. ``Bearer
    error="insufficient_scope", scope="a b"`` -> ``("bearer", {"error": ..., "scope": "a b"})``. Only the first
    challenge is read: MCP servers send one Bearer challenge."""
    scheme, _, rest = value.strip().partition(" ")
    params: dict[str, str] = {}
    position = 0
    while position < len(rest) and len(params) < 32:  # bounded: a hostile header cannot make us loop long
        match = _AUTH_PARAM.match(rest, position)
        if match is None or match.end() == position:
            break
        raw = match.group(2)
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        params.setdefault(match.group(1).lower(), raw)
        position = match.end()
    return scheme.lower(), params


@dataclass(frozen=True, slots=True)
class AuthChallenge:
    """A 401 or 403 the server answered, with its ``WWW-Authenticate`` parameters (``resource_metadata``,
    ``scope``, ``error``, ``error_description``...)."""

    status: int
    url: str
    scheme: str = ""
    params: Mapping[str, str] = field(default_factory=dict)
    authorization: str | None = None  # the Authorization header the refused request carried

    @classmethod
    def from_response(cls, response: httpx2.Response, url: str, authorization: str | None) -> AuthChallenge:
        scheme, params = parse_www_authenticate(response.headers.get("www-authenticate", ""))
        return cls(response.status_code, url, scheme, params, authorization)

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        return self.params.get("scope")

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")

    def failure(self) -> tuple[int, str, dict[str, Any]]:
        """The error response's (code, message, data) for a request this refusal could not be resolved for."""
        return ErrorCode.INTERNAL_ERROR, f"HTTP error {self.status}: not authorized", self.to_data()

    def to_data(self) -> dict[str, Any]:
        return {
            "_mcpgen": _UNAUTHORIZED_MARKER,
            "status": self.status,
            "scheme": self.scheme,
            "params": dict(self.params),
        }


def unauthorized_challenge(data: Any) -> AuthChallenge | None:
    """The challenge inside one of our own unauthorized error responses' ``data`` (None for anything else)."""
    if not isinstance(data, dict) or data.get("_mcpgen") != _UNAUTHORIZED_MARKER:
        return None
    params = data.get("params")
    params = {str(key): str(value) for key, value in params.items()} if isinstance(params, dict) else {}
    return AuthChallenge(int(data.get("status", 0)), "", str(data.get("scheme", "")), params)


class HTTPAuth(Protocol):
    """The auth hook of the HTTP client (``client.auth.OAuthProvider`` is one)."""

    async def headers(self) -> Mapping[str, str]:
        """Headers for the next request (``Authorization: Bearer ...``; refreshed first when due)."""
        ...

    async def on_challenge(self, challenge: AuthChallenge) -> bool:
        """React to a 401/403: True once it has authorized (the request is then sent again), False to give up."""
        ...
