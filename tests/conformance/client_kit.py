"""What the conformance client's scenario modules share (``client.py`` runs them; ``client_skills``,
``client_dpop`` and ``client_grants`` each add the scenarios of one extension).

A ``ClientScenario`` is what ``client.py`` needs to run one scenario: the body that drives the connected client,
and, for an authorization scenario, the provider built from the server's URL and the suite's context
(``MCP_CONFORMANCE_CONTEXT``), plus any further ``Client.connect_http`` options (capabilities to declare, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from mcpgen_runtime import Client
from mcpgen_runtime.client.auth import ClientMetadata, OAuthProvider, PreRegisteredClient

ScenarioBody = Callable[[Client], Awaitable[None]]
AuthFactory = Callable[[str, Mapping[str, Any]], Any]
logger = logging.getLogger("conformance-client")

# The auth scenarios' client: a redirect URI nobody listens on (the mock authorization server redirects at once,
# and ``follow_redirect`` reads its Location instead of a browser), and the client ID metadata document URL the
# suite expects (auth/basic-cimd).
REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def follow_redirect(authorization_url: str) -> str:
    """The user's part of the flow, for a mock server that consents at once: where it redirects to."""
    async with httpx2.AsyncClient(timeout=10.0, follow_redirects=False) as http:
        response = await http.get(authorization_url)
    location = response.headers.get("location")
    if response.status_code not in (302, 303) or not location:
        raise RuntimeError(f"the authorization endpoint answered HTTP {response.status_code} without a redirect")
    return str(location)


def oauth_provider(url: str, *, pre_registered: PreRegisteredClient | None = None, dpop: bool = False) -> OAuthProvider:
    """The authorization code flow's provider of the auth scenarios (``dpop``: with DPoP proofs)."""
    return OAuthProvider(
        url,
        client_metadata=ClientMetadata([REDIRECT_URI], client_name="mcpgen-conformance-client"),
        redirect_handler=follow_redirect,
        client_id_metadata_url=CLIENT_METADATA_URL,
        pre_registered=pre_registered,
        dpop=dpop,
    )


async def authorized_calls(client: Client) -> None:
    """auth/*: list the tools and call each with no arguments (a step-up scenario wants more scope for tools/call)."""
    for tool in await client.tools():
        result = await client.call_tool(tool.name, {})
        logger.info("tools/call %s -> %s", tool.name, result.model_dump(mode="json", by_alias=True))


@dataclass(frozen=True)
class ClientScenario:
    body: ScenarioBody = authorized_calls
    auth: AuthFactory | None = None  # (server URL, the suite's context) -> the auth provider
    options: Mapping[str, Any] = field(default_factory=dict)  # more keyword arguments for Client.connect_http
