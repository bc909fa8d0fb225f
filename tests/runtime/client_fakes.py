"""The fake MCP server the client tests talk to: nothing but a raw ``Session`` and a request handler written here,
over in-memory streams, so each test decides exactly what the server answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

import mcp_bindings.v2024_11_05 as v1
import mcp_bindings.v2025_03_26 as v2
import mcp_bindings.v2025_06_18 as v3
import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.client import Client

ALL_CAPABILITIES: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "logging": {},
    "completions": {},
}
PACKAGES = {"2024-11-05": v1, "2025-03-26": v2, "2025-06-18": v3, "2025-11-25": v4}


class FakeServer:
    """An MCP server written against the raw JSON-RPC session: it sees exactly what our client puts on the wire."""

    def __init__(self, *, version: str | None = None, capabilities: dict[str, Any] | None = None) -> None:
        self.version = version  # None: answer with the version the client offered
        self.capabilities = ALL_CAPABILITIES if capabilities is None else capabilities
        self.requests: list[tuple[str, JSONParams]] = []
        self.notifications: list[tuple[str, JSONParams]] = []
        self.tools = [f"tool{i}" for i in range(5)]
        self.prompts = ["p0", "p1", "p2"]
        self.resources = ["file:///a", "file:///b", "file:///c"]
        self.page_size = 2
        self.cancelled: list[str] = []
        self.session: Session | None = None
        self.tools_list_hook: Any = None

    def initialize_params(self) -> dict[str, Any]:
        method, params = self.requests[0]
        assert method == "initialize" and isinstance(params, dict)
        return params

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]

    def page(self, items: list[dict[str, Any]], key: str, params: JSONParams) -> dict[str, Any]:
        cursor = params.get("cursor") if isinstance(params, dict) else None
        start = int(cursor) if cursor else 0
        result: dict[str, Any] = {key: items[start : start + self.page_size]}
        if start + self.page_size < len(items):
            result["nextCursor"] = str(start + self.page_size)
        return result

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        self.requests.append((method, params))
        assert isinstance(params, dict) or params is None
        if method == "initialize":
            assert params is not None
            return {
                "protocolVersion": self.version or params["protocolVersion"],
                "capabilities": self.capabilities,
                "serverInfo": {"name": "fake", "version": "9.9"},
                "instructions": "be nice",
            }
        if method == "tools/list":
            if self.tools_list_hook is not None:
                await self.tools_list_hook()
            tools = [{"name": name, "inputSchema": {"type": "object"}} for name in self.tools]
            return self.page(tools, "tools", params)
        if method == "prompts/list":
            return self.page([{"name": name} for name in self.prompts], "prompts", params)
        if method == "resources/list":
            return self.page([{"uri": uri, "name": uri[-1]} for uri in self.resources], "resources", params)
        if method == "resources/templates/list":
            return self.page([{"uriTemplate": "file:///{x}", "name": "x"}], "resourceTemplates", params)
        if method in ("logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
            return {}
        if method == "tools/call":
            assert params is not None
            return await self.call_tool(params["name"], params.get("arguments", {}), context)
        raise MethodNotFound(method)

    async def on_notification(self, method: str, params: JSONParams) -> None:
        self.notifications.append((method, params))

    async def call_tool(self, name: str, arguments: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        assert self.session is not None
        if name == "echo":
            return {"content": [{"type": "text", "text": str(arguments["value"])}]}
        if name == "slow":
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(str(arguments.get("tag")))
                raise
        if name == "progress":
            for i in range(1, 4):
                await context.report_progress(i, 3, f"step {i}")
            await self.session.notify("notifications/message", {"level": "info", "data": "halfway", "logger": "t"})
            # A progress notification for a token nobody asked for: goes to the on_progress hook.
            await self.session.notify("notifications/progress", {"progressToken": "other", "progress": 1})
            return {"content": []}
        if name == "ask":
            # The server asks the client back, as a real one would during a tool call.
            answer = await self.session.request(arguments["method"], arguments.get("params"), timeout=5)
            return {"content": [], "structuredContent": answer}
        if name == "bad_result":
            return {"content": "not a list"}
        if name == "fail":
            raise JSONRPCError(-32000, "tool exploded", {"why": "test"})
        raise JSONRPCError(-32602, f"unknown tool {name}")

    async def announce(self, method: str) -> None:
        assert self.session is not None
        await self.session.notify(method)


@asynccontextmanager
async def connected(fake: FakeServer, **options: Any) -> AsyncIterator[Client]:
    """A client connected to ``fake`` in the legacy mode unless ``options`` say otherwise: the fake speaks only the
    handshake era, and its request log (``fake.requests[0]`` is ``initialize``) has no discover probe in front."""
    options.setdefault("mode", "legacy")
    client_end, server_end = memory_stream_pair()
    async with Session(server_end, request_handler=fake.handle, notification_handler=fake.on_notification) as server:
        fake.session = server
        async with Client.connect(client_end, **options) as client:
            yield client


async def wait_for(predicate: Any, timeout: float = 2.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


# -- handshake ---------------------------------------------------------------------------------------------------
