"""The errors of the client's authorization: what a refusal the auth hook could not resolve raises, and what the
OAuth provider raises when a peer's answer cannot be trusted.

Where it sits: imported by ``client.client`` (``AuthorizationError`` maps the transport's unauthorized error
responses) without importing authlib, which only the provider modules need.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ClientError

__all__ = ["AuthorizationError", "OAuthFlowError"]


class AuthorizationError(ClientError):
    """The server refused a request (HTTP 401 or 403) and the auth hook could not resolve it (or there was none).
    ``status`` is the HTTP status; ``params`` all of the ``WWW-Authenticate`` parameters, with the usual ones as
    attributes: ``error`` (e.g. ``insufficient_scope``), ``scope``, ``resource_metadata``, ``error_description``."""

    def __init__(self, method: str, status: int, scheme: str = "", params: Mapping[str, str] | None = None) -> None:
        self.method = method
        self.status = status
        self.scheme = scheme
        self.params = dict(params or {})
        self.error = self.params.get("error")
        self.scope = self.params.get("scope")
        self.resource_metadata = self.params.get("resource_metadata")
        self.error_description = self.params.get("error_description")
        detail = f": {self.error}" if self.error else ""
        super().__init__(f"{method!r} was refused with HTTP {status}{detail} (not authorized)")


class OAuthFlowError(ClientError):
    """The OAuth flow could not complete: a discovery, registration, authorization or token step failed, or a peer
    sent something that must not be trusted (a metadata issuer that does not match, a redirect with the wrong
    ``state`` or ``iss``, a protected resource that is not this server). The message says which; it never
    contains a secret."""
