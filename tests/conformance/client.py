"""The MCP client the official conformance suite runs for its client scenarios, written with mcpgen_runtime's public
API only (``Client``, the generated ``ClientHandlers``).

The suite runs ``<command> <server-url>`` with the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, the spec version
it runs at in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some scenarios, a JSON context in
``MCP_CONFORMANCE_CONTEXT``; then it judges what its mock server saw. At a modern spec version (2026-07-28) the
client connects with ``mode="auto"`` (``server/discover``, falling back to ``initialize``), at a handshake one with
``mode="legacy"``, as the official SDKs' conformance clients do. Exit status: 0 when the client did what the
scenario asks, 1 when a call failed (the suite reports a non-zero exit), 2 for a scenario this client does not
implement.

    python tests/conformance/client.py http://localhost:PORT/mcp     (MCP_CONFORMANCE_SCENARIO=sse-retry)
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import client_dpop
import client_grants
import client_skills
from client_kit import ClientScenario, authorized_calls, oauth_provider

import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import Client
from mcpgen_runtime.client import MODERN_VERSIONS, ClientContext, apps_capabilities
from mcpgen_runtime.client.auth import (
    ClientCredentialsProvider,
    OAuthProvider,
    PreRegisteredClient,
    PrivateKeyJWT,
)
from mcpgen_runtime.client.capabilities import merge_capabilities

# Bounded below the suite's own per-scenario timeout, so that a hung call is reported as ours, with a message.
REQUEST_TIMEOUT = 20.0
CLIENT_INFO = {"name": "mcpgen-conformance-client", "version": "1.0.0"}
logger = logging.getLogger("conformance-client")


def client_mode() -> str:
    """``auto`` at a modern spec version (or outside the suite), ``legacy`` at a handshake one."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    return "auto" if version is None or version in MODERN_VERSIONS else "legacy"


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return dict(json.loads(raw)) if raw else {}


class Handlers(v4.client.ClientHandlers[ClientContext]):
    """Answers the server's sampling, roots and elicitation requests (as JSON-RPC requests in the legacy era,
    as the input requests of a multi round-trip request in 2026-07-28). Elicitation accepts with the schema's
    defaults (SEP-1034), plus ``confirmed: true`` where the schema asks for it."""

    async def create_message(
        self, params: v4.CreateMessageRequestParams, context: ClientContext
    ) -> v4.CreateMessageResult:
        return v4.CreateMessageResult(role="assistant", model="conformance-stub", content=v4.TextContent(text=""))

    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> v4.ListRootsResult:
        return v4.ListRootsResult(roots=[])

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        content: dict[str, Any] = {}
        schema = params.model_dump(mode="json").get("requestedSchema") or {}
        for name, property_schema in (schema.get("properties") or {}).items():
            if "default" in property_schema:
                content[name] = property_schema["default"]
            elif name == "confirmed" and property_schema.get("type") == "boolean":
                content[name] = True
        logger.info("elicitation %r -> accept %s", params.message, content)
        return v4.ElicitResult(action="accept", content=content)


async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    logger.info("tools/call %s -> %s", name, result.model_dump(mode="json", by_alias=True))
    return result


def stub_arguments(input_schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments that satisfy a schema's ``required`` list (the tools of http-invalid-tool-headers)."""
    by_type = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": [], "null": None}
    properties = input_schema.get("properties") or {}
    return {
        name: by_type.get((properties.get(name) or {}).get("type"), "x") for name in input_schema.get("required", [])
    }


async def basic(client: Client) -> None:
    """initialize, tools_call: list the tools, if the server has any, and call add_numbers (or the first tool)."""
    if not client.allows("tools/list"):
        return
    tools = await client.tools()
    logger.info("tools/list -> %s", [tool.name for tool in tools])
    if tools:
        names = [tool.name for tool in tools]
        await call_tool(client, "add_numbers" if "add_numbers" in names else names[0], {"a": 5, "b": 3})


async def sse_retry(client: Client) -> None:
    """sse-retry (SEP-1699): the server ends the tools/call POST stream after a priming event with ``retry``; the
    client must reconnect with GET and Last-Event-ID after that delay and receive the result there."""
    await client.tools()
    result = await call_tool(client, "test_reconnection", {})
    if result.is_error:
        raise RuntimeError(f"test_reconnection answered isError: {result.content}")


async def elicitation_defaults(client: Client) -> None:
    """elicitation-sep1034-client-defaults: the tool elicits; the handler accepts with every default filled in."""
    await client.tools()
    await call_tool(client, "test_client_elicitation_defaults", {})


async def request_metadata(client: Client) -> None:
    """request-metadata (SEP-2575): every request carries the _meta envelope and the version header; the first one
    is refused with -32022 and must be retried at a supported version (the discover probe does that)."""
    if client.allows("tools/list"):
        await client.tools()
    if client.allows("tools/call"):
        await call_tool(client, "add_numbers", {"a": 5, "b": 3})


async def mrtr(client: Client) -> None:
    """sep-2322-client-request-state: the runtime answers InputRequiredResult with the elicitation handler and
    retries (new id, requestState echoed exactly or left out); an unrelated call in between carries neither."""
    await client.tools()
    await call_tool(client, "test_mrtr_echo_state", {})
    await call_tool(client, "test_mrtr_unrelated", {})
    await call_tool(client, "test_mrtr_no_state", {})
    await call_tool(client, "test_mrtr_no_result_type", {})


async def standard_headers(client: Client) -> None:
    """http-standard-headers (SEP-2243): Mcp-Method on every POST, Mcp-Name on tools/call, resources/read and
    prompts/get."""
    for tool in await client.tools():
        await call_tool(client, tool.name, {})
    for resource in await client.resources():
        await client.read_resource(resource.uri)
    for prompt in await client.prompts():
        await client.get_prompt(prompt.name)


async def custom_headers(client: Client) -> None:
    """http-custom-headers (SEP-2243): the context's tool calls, whose x-mcp-header arguments become Mcp-Param-*."""
    listed = {tool.name for tool in await client.tools()}
    for call in context().get("toolCalls", []):
        if call["name"] in listed:
            await call_tool(client, call["name"], call.get("arguments") or {})


async def invalid_tool_headers(client: Client) -> None:
    """http-invalid-tool-headers (SEP-2243): tools with invalid x-mcp-header annotations are left out of the list;
    every tool that is listed is called."""
    for tool in await client.tools():
        await call_tool(client, tool.name, stub_arguments(tool.model_dump(mode="json").get("inputSchema") or {}))


async def list_tools(client: Client) -> None:
    """json-schema-ref-no-deref (SEP-2106): list the tools; a network $ref in an inputSchema is never fetched."""
    tools = await client.tools()
    logger.info("tools/list -> %s", [tool.name for tool in tools])


def auth_provider(url: str, scenario: str) -> OAuthProvider | ClientCredentialsProvider:
    """The provider an auth scenario needs, from what its context gives."""
    given = context()
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsProvider(url, client_id=given["client_id"], client_secret=given["client_secret"])
    if scenario == "auth/client-credentials-jwt":
        key = PrivateKeyJWT(given["private_key_pem"], given.get("signing_algorithm", "ES256"))
        return ClientCredentialsProvider(url, client_id=given["client_id"], private_key=key)
    pre = None
    if "client_id" in given:
        pre = PreRegisteredClient(given["client_id"], given.get("client_secret"), given.get("issuer"))
    return oauth_provider(url, pre_registered=pre)


SCENARIOS: dict[str, Callable[[Client], Awaitable[None]]] = {
    "initialize": basic,
    "tools_call": basic,
    "sse-retry": sse_retry,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": mrtr,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_tools,
}
# The extensions' scenarios, each module's own (body, auth provider, connect options).
EXTENSION_SCENARIOS: dict[str, ClientScenario] = {
    **client_skills.SCENARIOS,
    **client_dpop.SCENARIOS,
    **client_grants.SCENARIOS,
}
SCENARIOS.update({name: scenario.body for name, scenario in EXTENSION_SCENARIOS.items()})


def scenario_body(scenario: str) -> Callable[[Client], Awaitable[None]] | None:
    """What the client does in ``scenario`` (every other ``auth/*`` scenario: ``authorized_calls``); None: not
    implemented."""
    return SCENARIOS.get(scenario) or (authorized_calls if scenario.startswith("auth/") else None)


async def main(url: str, scenario: str) -> None:
    mode = client_mode()
    extension = EXTENSION_SCENARIOS.get(scenario)
    options: dict[str, Any] = dict(extension.options) if extension is not None else {}
    # Every connection declares MCP Apps too (a host that renders apps): no scenario checks it yet, and every one
    # then runs with the extension declared beside what it asks for.
    options["capabilities"] = merge_capabilities(apps_capabilities(), options.get("capabilities") or {})
    if extension is not None and extension.auth is not None:
        options["auth"] = extension.auth(url, context())
    elif scenario.startswith("auth/"):
        options["auth"] = auth_provider(url, scenario)
    async with Client.connect_http(
        url, mode=mode, handlers=Handlers(), client_info=CLIENT_INFO, request_timeout=REQUEST_TIMEOUT, **options
    ) as client:
        server = client.server_info.name if client.server_info is not None else "(unnamed)"
        logger.info("connected (%s): MCP %s, server %s", mode, client.protocol_version, server)
        body = scenario_body(scenario)
        assert body is not None  # checked before connecting
        await body(client)


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: the task groups of the transport wrap the real error."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) != 2 or scenario_body(scenario) is None:
        names = ",".join([*SCENARIOS, "auth/*"])
        print(f"usage: MCP_CONFORMANCE_SCENARIO={{{names}}} {sys.argv[0]} SERVER_URL", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, sys.argv[1], scenario)
    except Exception as exc:
        logger.exception("scenario %s failed", scenario)
        # Last, so that it is the line a truncated report still shows.
        print(f"scenario {scenario} failed: {'; '.join(map(repr, leaves(exc)))}", file=sys.stderr)
        sys.exit(1)
