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

from mcpgen_runtime import Client

ScenarioBody = Callable[[Client], Awaitable[None]]
AuthFactory = Callable[[str, Mapping[str, Any]], Any]
logger = logging.getLogger("conformance-client")


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
