"""The conformance client's grants scenarios (see client_kit.ClientScenario; run by client.py): Enterprise-Managed
Authorization (SEP-990), workload identity federation (SEP-1933), and the JSON Schema 2020-12 round trip.

- auth/enterprise-managed-authorization: the context gives the user's ID token, the IdP's token endpoint and the
  client's credentials at the MCP authorization server; ``EnterpriseAuthProvider`` trades the ID token for an
  ID-JAG at the IdP and the ID-JAG for an access token (``client_secret_basic``).
- auth/wif-jwt-bearer: the context gives the workload JWTs (valid, wrong audience, expired) and the client id;
  ``WorkloadIdentityProvider`` presents the valid one.
- json-schema-2020-12-preservation: the focal tool's ``inputSchema``, exactly as the client received it, sent back
  through the echo tool (keywords such as ``$schema``, ``$defs``, ``$anchor``, ``if``/``then``/``else`` must
  survive the client's parsing).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from client_kit import ClientScenario

from mcpgen_runtime import Client
from mcpgen_runtime.client.auth import (
    EnterpriseAuthProvider,
    WorkloadIdentityProvider,
)

logger = logging.getLogger("conformance-client")

FOCAL_TOOL = "json_schema_2020_12_tool"
ECHO_TOOL = "json_schema_echo"


def enterprise(url: str, given: Mapping[str, Any]) -> EnterpriseAuthProvider:
    return EnterpriseAuthProvider(
        url,
        id_token=given["idp_id_token"],
        idp_token_endpoint=given["idp_token_endpoint"],
        idp_client_id=given.get("idp_client_id"),
        client_id=given["client_id"],
        client_secret=given["client_secret"],
    )


def workload(url: str, given: Mapping[str, Any]) -> WorkloadIdentityProvider:
    return WorkloadIdentityProvider(url, assertion=given["valid_jwt"], client_id=given.get("client_id"))


async def schema_round_trip(client: Client) -> None:
    tools = {tool.name: tool for tool in await client.tools()}
    if FOCAL_TOOL not in tools or ECHO_TOOL not in tools:
        raise RuntimeError(f"the server lists {sorted(tools)}, not {FOCAL_TOOL} and {ECHO_TOOL}")
    schema = tools[FOCAL_TOOL].model_dump(mode="json", by_alias=True, exclude_unset=True)["inputSchema"]
    result = await client.call_tool(ECHO_TOOL, {"schema": schema})
    logger.info("tools/call %s -> %s", ECHO_TOOL, result.model_dump(mode="json", by_alias=True))


SCENARIOS: dict[str, ClientScenario] = {
    # The provider's client_capabilities (the extension) are declared by Client.connect itself.
    "auth/enterprise-managed-authorization": ClientScenario(auth=enterprise),
    "auth/wif-jwt-bearer": ClientScenario(auth=workload),
    "json-schema-2020-12-preservation": ClientScenario(body=schema_round_trip),
}
