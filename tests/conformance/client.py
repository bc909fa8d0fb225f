"""The MCP client the official conformance suite runs for its client scenarios, written with mcpgen_runtime's Client.

The suite runs ``<command> <server-url>`` with the scenario's name in ``MCP_CONFORMANCE_SCENARIO`` (and the spec
version it runs at in ``MCP_CONFORMANCE_PROTOCOL_VERSION``), then judges what its mock server saw. Exit status:
0 when the client did what the scenario asks, 1 when a call failed (the suite reports a non-zero exit), 2 for a
scenario this client does not implement.

    python tests/conformance/client.py http://localhost:PORT/mcp     (MCP_CONFORMANCE_SCENARIO=sse-retry)
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio

from mcpgen_runtime import Client

# Bounded below the suite's own per-scenario timeout, so that a hung call is reported as ours, with a message.
REQUEST_TIMEOUT = 20.0
logger = logging.getLogger("conformance-client")


async def call_tool(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    params = client.bindings.CallToolRequestParams(name=name, arguments=arguments)
    result = await client.api.call_tool(params)
    logger.info("tools/call %s -> %s", name, result.model_dump(mode="json", by_alias=True))
    return result


async def basic(client: Client) -> None:
    """initialize, tools_call: list the tools, if the server has any, and call the first one with {a: 2, b: 3} (the
    add_numbers tool of tools_call)."""
    if not client.allows("tools/list"):
        return
    tools = await client.tools()
    logger.info("tools/list -> %s", [tool.name for tool in tools])
    if tools:
        await call_tool(client, tools[0].name, {"a": 2, "b": 3})


async def sse_retry(client: Client) -> None:
    """sse-retry (SEP-1699): the server ends the tools/call POST stream after a priming event with ``retry``; the
    client must reconnect with GET and Last-Event-ID after that delay and receive the result there."""
    await client.tools()
    result = await call_tool(client, "test_reconnection", {})
    if result.is_error:
        raise RuntimeError(f"test_reconnection answered isError: {result.content}")


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: the task groups of the transport wrap the real error."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


SCENARIOS = {"initialize": basic, "tools_call": basic, "sse-retry": sse_retry}


async def main(url: str, scenario: str) -> None:
    async with Client.connect_http(
        url, client_info={"name": "mcpgen-conformance-client", "version": "1.0.0"}, request_timeout=REQUEST_TIMEOUT
    ) as client:
        logger.info("connected: MCP %s, server %s", client.protocol_version, client.server_info.name)
        await SCENARIOS[scenario](client)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) != 2 or scenario not in SCENARIOS:
        print(f"usage: MCP_CONFORMANCE_SCENARIO={{{','.join(SCENARIOS)}}} {sys.argv[0]} SERVER_URL", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, sys.argv[1], scenario)
    except Exception as exc:
        logger.exception("scenario %s failed", scenario)
        # Last, so that it is the line a truncated report still shows.
        print(f"scenario {scenario} failed: {'; '.join(map(repr, leaves(exc)))}", file=sys.stderr)
        sys.exit(1)
