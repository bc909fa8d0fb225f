"""One MCP Apps server written twice: with the official Python SDK (``mcp`` 2.3.0: ``mcp.server.apps.Apps`` on an
``MCPServer``, which serves both eras; ``python sdk_apps_server.py sdk``) and with ours
(``mcpgen_runtime.server.authoring.apps`` on a ``Server``; ``python sdk_apps_server.py mcpgen``), from the same
constants, each run as a real subprocess over stdio by ``test_apps``, which compares what both put on the wire.

Its UI: ``ui://clock/app.html`` with every ``_meta.ui`` field (CSP, permissions, domain, border), ``ui://clock/bare.html``
with none; tools ``get_time`` (bound to the first, visible to the model and the app, an extra ``_meta`` key),
``refresh`` (app only) and ``plain_clock`` (bound to the second, no visibility); ``supports_apps`` answers
``client_supports_apps`` for the calling client.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

APP_URI = "ui://clock/app.html"
BARE_URI = "ui://clock/bare.html"
APP_HTML = "<!DOCTYPE html><html><body><div id='clock'></div><script>/* the app */</script></body></html>"
BARE_HTML = "<!DOCTYPE html><html><body>bare</body></html>"
CSP: dict[str, list[str]] = {
    "connectDomains": ["https://api.example.com", "wss://live.example.com"],
    "resourceDomains": ["https://*.cdn.example.net"],
    "frameDomains": ["https://player.example.org"],
    "baseUriDomains": ["https://example.com"],
}
PERMISSIONS: dict[str, dict[str, Any]] = {"camera": {}, "clipboardWrite": {}}
DOMAIN = "a904794854a047f6.claudemcpcontent.com"
EXTRA_META = {"com.example/trace": "on"}


def build_sdk() -> MCPServer:
    apps = Apps()
    apps.add_html_resource(
        APP_URI,
        APP_HTML,
        title="Clock",
        description="A live clock",
        csp=ResourceCsp.model_validate(CSP),
        permissions=ResourcePermissions.model_validate(PERMISSIONS),
        domain=DOMAIN,
        prefers_border=True,
    )
    apps.add_html_resource(BARE_URI, BARE_HTML)

    @apps.tool(resource_uri=APP_URI, visibility=["model", "app"], meta=EXTRA_META, description="The current time")
    def get_time() -> str:
        return "12:00"

    @apps.tool(resource_uri=APP_URI, visibility=["app"], description="Refreshes the clock")
    def refresh() -> str:
        return "refreshed"

    @apps.tool(resource_uri=BARE_URI, description="A clock without settings")
    def plain_clock() -> str:
        return "12:00"

    server = MCPServer("sdk-apps", version="2.3.0", extensions=[apps])

    @server.tool(description="Whether the client declared MCP Apps")
    def supports_apps(ctx: Context) -> str:
        return "yes" if client_supports_apps(ctx) else "no"

    return server


def build_mcpgen() -> Any:
    from mcpgen_runtime.server import Context as OurContext
    from mcpgen_runtime.server import Server
    from mcpgen_runtime.server.authoring.apps import add_ui_resource, app_tool
    from mcpgen_runtime.server.authoring.apps import client_supports_apps as supports

    server = Server("mcpgen-apps", version="0.0.0")
    add_ui_resource(
        server,
        APP_URI,
        APP_HTML,
        title="Clock",
        description="A live clock",
        csp=CSP,
        permissions=PERMISSIONS,
        domain=DOMAIN,
        prefers_border=True,
    )
    add_ui_resource(server, BARE_URI, BARE_HTML)

    @app_tool(server, APP_URI, visibility=["model", "app"], meta=EXTRA_META, description="The current time")
    def get_time() -> str:
        return "12:00"

    @app_tool(server, APP_URI, visibility=["app"], description="Refreshes the clock")
    def refresh() -> str:
        return "refreshed"

    @app_tool(server, BARE_URI, description="A clock without settings")
    def plain_clock() -> str:
        return "12:00"

    @server.tool(description="Whether the client declared MCP Apps")
    def supports_apps(context: OurContext) -> str:
        return "yes" if supports(context) else "no"

    return server


if __name__ == "__main__":
    if sys.argv[1:] == ["sdk"]:
        build_sdk().run("stdio")
    elif sys.argv[1:] == ["mcpgen"]:
        build_mcpgen().run_stdio()
    else:
        sys.exit("usage: sdk_apps_server.py sdk | mcpgen")
