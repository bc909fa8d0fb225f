"""A server mounted in an existing Starlette app (``server.hosting.asgi``): ``mount_mcp`` with the parent's lifespan, and
``MCPApp`` routed by hand (started on its first request) or served alone.

Real uvicorn servers on 127.0.0.1 port 0 (``serve_app``), our typed Client at http://127.0.0.1:PORT/mcp; every wait
is bounded. FastAPI is not installed: its app is a Starlette subclass with the same router.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles
from support.servers import serving_app

from mcp_bindings import v2025_06_18 as mcp
from mcp_bindings.v2025_06_18.client import ClientStub
from mcpgen_runtime import Client, Server
from mcpgen_runtime.server.hosting.asgi import MCPApp, mount_mcp

pytestmark = pytest.mark.anyio

TIMEOUT = 20
ACCEPT_BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def make_server(events: list[str] | None = None) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, str]]:
        if events is not None:
            events.append("server start")
        try:
            yield {"greeting": "hello"}
        finally:
            if events is not None:
                events.append("server stop")

    server: Server = Server("mounted", version="1.0.0", lifespan=lifespan)

    @server.tool()
    async def where() -> str:
        """Says where it runs."""
        return "inside a Starlette app"

    return server


async def health(request: Request) -> Response:
    return PlainTextResponse("ok")


async def call_where(url: str) -> str:
    async with Client.connect_http(url, version="2025-06-18", request_timeout=TIMEOUT) as client:
        api = client.stub(ClientStub)
        assert [tool.name for tool in await api.list_all_tools()] == ["where"]
        result = await api.call_tool(mcp.CallToolRequestParams(name="where", arguments={}))
        block = result.content[0]
        assert isinstance(block, mcp.TextContent)
        return str(block.text)


async def test_mount_mcp_serves_mcp_at_the_exact_path_within_the_apps_lifespan() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("app start")
        yield
        events.append("app stop")

    # A catch-all Mount("/") defined first must not shadow the MCP endpoint.
    app = Starlette(routes=[Route("/health", health), Mount("/", app=Router())], lifespan=app_lifespan)
    mcp_app = mount_mcp(app, make_server(events), path="/mcp")
    assert isinstance(mcp_app, MCPApp) and not mcp_app.is_running
    with anyio.fail_after(TIMEOUT):
        async with serving_app(app) as base:
            assert mcp_app.is_running
            # Two clients, one run of the server: its lifespan started once, with the app.
            assert await call_where(f"{base}/mcp") == "inside a Starlette app"
            assert await call_where(f"{base}/mcp") == "inside a Starlette app"
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                assert (await http.get(f"{base}/health")).text == "ok"
                response = await http.post(f"{base}/mcp", json=INITIALIZE, headers=ACCEPT_BOTH)
                assert response.status_code == 200, response.text  # not a 307 to /mcp/
                assert response.headers["mcp-session-id"]
                response = await http.get(f"{base}/mcp")  # a GET is answered by MCP too, not redirected
                assert response.status_code == 400 and "Mcp-Session-Id" in response.text
            assert events == ["app start", "server start"]
    assert not mcp_app.is_running
    # Shutdown in reverse: the sessions and the server's lifespan end before the app's own shutdown.
    assert events == ["app start", "server start", "server stop", "app stop"]


async def test_mount_mcp_keeps_the_state_the_apps_lifespan_yields() -> None:
    @asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[dict[str, str]]:
        yield {"db": "connected"}

    async def state(request: Request) -> Response:
        return PlainTextResponse(request.state.db)

    app = Starlette(routes=[Route("/state", state)], lifespan=app_lifespan)
    mount_mcp(app, make_server(), path="/tools/mcp")
    with anyio.fail_after(TIMEOUT):
        async with serving_app(app) as base, httpx2.AsyncClient(timeout=TIMEOUT) as http:
            assert (await http.get(f"{base}/state")).text == "connected"
            assert await call_where(f"{base}/tools/mcp") == "inside a Starlette app"


async def test_mount_mcp_on_an_app_without_a_lifespan_and_on_a_router() -> None:
    app = Starlette()
    mount_mcp(app, make_server())
    router = Router(routes=[Route("/health", health)])
    mount_mcp(router, make_server(), path="/")
    with anyio.fail_after(TIMEOUT):
        async with serving_app(app) as base:
            assert await call_where(f"{base}/mcp") == "inside a Starlette app"
        async with serving_app(router) as base:
            assert await call_where(f"{base}/") == "inside a Starlette app"


async def test_an_mcp_app_routed_by_hand_starts_on_its_first_request() -> None:
    # No lifespan runs it: Mount does not run a sub-app's lifespan, and add_route's endpoint has none.
    events: list[str] = []
    routed, mounted = MCPApp(make_server(events)), MCPApp(make_server())
    app = Starlette(routes=[Route("/health", health)])
    app.add_route("/mcp", routed)
    app.mount("/mounted", mounted)
    try:
        with anyio.fail_after(TIMEOUT):
            async with serving_app(app) as base:
                assert not routed.is_running and events == []
                assert await call_where(f"{base}/mcp") == "inside a Starlette app"
                assert routed.is_running and events == ["server start"]
                assert await call_where(f"{base}/mcp") == "inside a Starlette app"
                assert await call_where(f"{base}/mounted/") == "inside a Starlette app"
                async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                    # A Mount's own path is the parent's to redirect: use mount_mcp (or add_route) for /mcp.
                    response = await http.post(f"{base}/mounted", json=INITIALIZE, headers=ACCEPT_BOTH)
                    assert response.status_code == 307
                    assert (await http.get(f"{base}/health")).text == "ok"
    finally:
        await routed.aclose()
        await mounted.aclose()
    assert not routed.is_running and events == ["server start", "server stop"]


async def test_an_mcp_app_served_alone_runs_in_its_own_lifespan() -> None:
    events: list[str] = []
    mcp_app = MCPApp(make_server(events))
    with anyio.fail_after(TIMEOUT):
        async with serving_app(mcp_app) as base:
            assert mcp_app.is_running and events == ["server start"]
            assert await call_where(f"{base}/mcp") == "inside a Starlette app"
    assert not mcp_app.is_running and events == ["server start", "server stop"]


async def test_a_hand_written_lifespan_can_run_it_too() -> None:
    mcp_app = MCPApp(make_server())

    @asynccontextmanager
    async def app_lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.running():
            yield

    app = Starlette(routes=[Route("/mcp", mcp_app)], lifespan=app_lifespan)
    with anyio.fail_after(TIMEOUT):
        async with serving_app(app) as base:
            assert mcp_app.is_running
            async with mcp_app.running():  # re-entrant: an inner block changes nothing
                assert await call_where(f"{base}/mcp") == "inside a Starlette app"
            assert mcp_app.is_running
    assert not mcp_app.is_running


async def test_options_reach_the_http_app() -> None:
    app = Starlette()
    mount_mcp(app, make_server(), allowed_hosts=["mcp.example.test"], max_body_size=64)
    with anyio.fail_after(TIMEOUT):
        async with serving_app(app) as base, httpx2.AsyncClient(timeout=TIMEOUT) as http:
            refused = await http.post(f"{base}/mcp", json=INITIALIZE, headers=ACCEPT_BOTH)
            assert refused.status_code == 403 and "is not allowed" in refused.text  # only the listed host
            named = {**ACCEPT_BOTH, "host": "mcp.example.test"}
            too_big = await http.post(f"{base}/mcp", json=INITIALIZE, headers=named)
            assert too_big.status_code == 413


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="must start with '/'"):
        mount_mcp(Starlette(), make_server(), path="mcp")
    with pytest.raises(ValueError, match="not end with one"):
        mount_mcp(Starlette(), make_server(), path="/mcp/")
    with pytest.raises(TypeError, match="Starlette or FastAPI app or a Router"):
        mount_mcp(StaticFiles(directory=".", check_dir=False), make_server())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="give the path to mount_mcp"):
        MCPApp(make_server(), path="/mcp")
