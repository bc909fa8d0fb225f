"""Context.http_request / headers over real streamable HTTP (needs the transport's current_http_request)."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import pytest

from mcp_bindings import v2025_11_25 as v4
from mcpgen_runtime import CallNext, Client, Context, IncomingRequest, JSONRPCError, Server

pytestmark = pytest.mark.anyio


async def test_handlers_and_middleware_see_the_http_request_headers() -> None:
    server = Server("http")
    seen: list[tuple[str, str | None]] = []

    @server.middleware
    async def auth(request: IncomingRequest, call_next: CallNext) -> Any:
        headers = request.context.headers
        seen.append((request.method, headers.get("x-api-key") if headers is not None else None))
        if headers is None or headers.get("x-api-key") != "sesame":
            raise JSONRPCError(-32001, "Unauthorized")
        return await call_next(request)

    @server.tool()
    async def whoami(context: Context) -> str:
        request = context.http_request
        assert request is not None and request.method == "POST" and request.url.path == "/mcp"
        return str(context.headers and context.headers["X-Tenant"])

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            with pytest.raises(JSONRPCError, match="Unauthorized"):
                async with Client.connect_http(f"{base}/mcp", mode="legacy"):
                    pass
            headers = {"X-API-Key": "sesame", "X-Tenant": "acme"}
            async with Client.connect_http(f"{base}/mcp", headers=headers, mode="legacy") as client:
                api = client.stub(v4.client.ClientStub)
                for _ in range(3):
                    result = await api.call_tool(v4.CallToolRequestParams(name="whoami"))
                    block = result.content[0]
                    assert block.type == "text" and block.text == "acme"
            tg.cancel_scope.cancel()
    assert seen[0] == ("initialize", None) and seen[1] == ("initialize", "sesame")
    assert {method for method, _ in seen[2:]} == {"tools/call"}
