"""MCP Apps (``io.modelcontextprotocol/ui``): our authoring (``server.authoring.apps``) against the official Python
SDK's ``mcp.server.apps`` on the wire, and our host-side helpers (``client.apps``) against both.

The comparison: ``sdk_apps_server.py`` builds one Apps server twice from the same constants (``sdk``: the SDK's
``Apps`` on an ``MCPServer``; ``mcpgen``: ours on a ``Server``); both run as real stdio subprocesses and are read by
one client, in each era (2025-11-25 by ``initialize``, 2026-07-28 pinned, and ``auto`` for ``server/discover``).
Compared field by field: each tool's ``name``, ``description`` and ``_meta`` (schemas are left out: the two SDKs
derive them differently from the same signature, which has nothing to do with Apps), every field of the UI
resources in ``resources/list``, the ``contents`` of their ``resources/read``, the extension in the discovered
capabilities, and what ``client_supports_apps`` answers with and without the client's capability.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from sdk_apps_server import APP_HTML, APP_URI, BARE_URI, CSP, DOMAIN, PERMISSIONS

import mcpgen_runtime.client.apps
import mcpgen_runtime.server.authoring.apps
from mcpgen_runtime.client import AppsError, Client, apps_capabilities, model_tools, read_ui_resource, tool_ui
from mcpgen_runtime.client.apps import ToolUi, ui_resource_from_contents
from mcpgen_runtime.jsonrpc import JSONRPCError
from mcpgen_runtime.protocol.apps import APP_MIME_TYPE, EXTENSION_ID, is_csp_origin, is_sandbox_domain
from mcpgen_runtime.server import (
    Context,
    Csp,
    Permissions,
    Server,
    add_ui_resource,
    app_tool,
    client_supports_apps,
)
from mcpgen_runtime.server.authoring.tool_definition import ToolDef

pytestmark = pytest.mark.anyio

SERVER = [sys.executable, str(Path(__file__).with_name("sdk_apps_server.py"))]
IMPLEMENTATIONS = ("sdk", "mcpgen")
MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28", "auto": "2026-07-28"}


def dumped(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", by_alias=True, exclude_none=True))


async def wire_of(implementation: str, mode: str, capabilities: dict[str, Any] | None) -> dict[str, Any]:
    """What one server answers to the Apps-relevant requests, as JSON."""
    with anyio.fail_after(60):
        async with Client.connect_stdio(
            [*SERVER, implementation], mode=mode, capabilities=capabilities, request_timeout=20
        ) as client:
            assert client.protocol_version == MODES[mode]
            tools = await client.tools()
            seen: dict[str, Any] = {
                "tools": {
                    tool.name: {key: dumped(tool).get(key) for key in ("name", "description", "_meta")}
                    for tool in tools
                },
                "tool_ui": {tool.name: tool_ui(tool) for tool in tools},
                "model_tools": sorted(tool.name for tool in model_tools(tools)),
                "resources": {r.uri: dumped(r) for r in await client.resources()},
                "reads": {
                    uri: [dumped(item) for item in (await client.read_resource(uri)).contents]
                    for uri in (APP_URI, BARE_URI)
                },
                "checked": await read_ui_resource(client, APP_URI),
                "supports_apps": (await client.call_tool("supports_apps", {})).content[0].text,  # type: ignore[union-attr]
            }
            if mode == "auto":
                seen["extensions"] = client.discover_result.capabilities.extensions
            return seen


@pytest.mark.sdk  # the SDK's server in a subprocess: not the quick tier (tests/conftest.py)
@pytest.mark.parametrize("mode", list(MODES))
async def test_our_apps_server_answers_like_the_sdk_one(mode: str) -> None:
    sdk, ours = [await wire_of(implementation, mode, apps_capabilities()) for implementation in IMPLEMENTATIONS]
    assert ours["tools"] == sdk["tools"]
    assert ours["tools"]["get_time"]["_meta"] == {
        "com.example/trace": "on",
        "ui": {"resourceUri": APP_URI, "visibility": ["model", "app"]},
    }
    assert ours["resources"] == sdk["resources"]
    assert ours["resources"][APP_URI]["_meta"] == {
        "ui": {"csp": CSP, "permissions": PERMISSIONS, "domain": DOMAIN, "prefersBorder": True}
    }
    assert ours["resources"][BARE_URI] == {"uri": BARE_URI, "name": BARE_URI, "mimeType": APP_MIME_TYPE}
    assert ours["reads"] == sdk["reads"]
    assert ours["reads"][APP_URI][0]["text"] == APP_HTML
    # The host-side view is the same of both, and what the constants say.
    assert ours["tool_ui"] == sdk["tool_ui"]
    assert sdk["tool_ui"]["refresh"] == ToolUi(APP_URI, ("app",))
    assert sdk["tool_ui"]["plain_clock"] == ToolUi(BARE_URI, ("model", "app"))
    assert sdk["tool_ui"]["supports_apps"] is None
    assert ours["model_tools"] == sdk["model_tools"] == ["get_time", "plain_clock", "supports_apps"]
    assert ours["checked"] == sdk["checked"]
    checked = sdk["checked"]
    assert checked.html == APP_HTML and checked.domain == DOMAIN and checked.prefers_border is True
    assert checked.csp == {key: tuple(origins) for key, origins in CSP.items()}
    assert checked.permissions == frozenset(PERMISSIONS)
    assert ours["supports_apps"] == sdk["supports_apps"] == "yes"
    if mode == "auto":
        # Both declare the extension with empty settings (SEP-2133: an empty object declares it).
        assert ours["extensions"] == sdk["extensions"]
        assert ours["extensions"][EXTENSION_ID] == {}


@pytest.mark.sdk
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_without_the_capability_both_servers_fall_back_to_text(mode: str) -> None:
    for implementation in IMPLEMENTATIONS:
        with anyio.fail_after(60):
            async with Client.connect_stdio([*SERVER, implementation], mode=mode, request_timeout=20) as client:
                result = await client.call_tool("supports_apps", {})
                assert result.content[0].text == "no", implementation  # type: ignore[union-attr]
                # Without the capability the tools still answer their text.
                assert (await client.call_tool("get_time", {})).content[0].text == "12:00"  # type: ignore[union-attr]


# -- registration: mistakes fail loudly, with the fix ------------------------------------------------------------


def apps_server() -> Server:
    server = Server("apps")
    add_ui_resource(server, "ui://app/main.html", "<html></html>")
    return server


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"uri": "https://app/main.html"}, "ui:// scheme"),
        ({"uri": "ui://"}, "ui:// scheme"),
        ({"uri": "ui://app/ main.html"}, "whitespace"),
        ({"html": b"<html></html>"}, "as a str"),
        ({"csp": {"connectDomain": ["https://a.example"]}}, "unknown key(s) 'connectDomain'"),
        ({"csp": {"connectDomains": "https://a.example"}}, "a list of origins"),
        ({"csp": {"connectDomains": ["https://a.example; script-src *"]}}, "is not an origin"),
        ({"csp": {"resourceDomains": ["https://cdn.example/path"]}}, "is not an origin"),
        ({"csp": {"frameDomains": ["javascript://x"]}}, "is not an origin"),
        ({"permissions": {"camera": True}}, "empty object"),
        ({"permissions": {"usb": {}}}, "unknown key(s) 'usb'"),
        ({"csp": "https://a.example"}, "a Csp or a mapping of connectDomains"),
        ({"permissions": ["camera"]}, "a Permissions or a mapping of camera"),
        ({"domain": "a.example; frame-ancestors *"}, "host name"),
        ({"prefers_border": "yes"}, "True, False or None"),
    ],
)
def test_a_bad_ui_resource_is_refused_at_registration(options: dict[str, Any], message: str) -> None:
    arguments = {"uri": "ui://app/main.html", "html": "<html></html>", **options}
    server = Server("apps")
    with pytest.raises((ValueError, TypeError)) as raised:
        add_ui_resource(server, arguments.pop("uri"), arguments.pop("html"), **arguments)
    assert message in str(raised.value)
    assert not server.resources and not server.extensions  # nothing half-registered


def test_typed_csp_and_permissions_give_the_same_wire_as_mappings() -> None:
    server = Server("apps")
    typed = add_ui_resource(
        server,
        "ui://a/1",
        "x",
        csp=Csp(connect_domains=["https://api.example.com", "wss://live.example.com"]),
        permissions=Permissions(camera=True, clipboard_write=True),
    )
    plain = add_ui_resource(
        server,
        "ui://a/2",
        "x",
        csp={"connectDomains": ["https://api.example.com", "wss://live.example.com"]},
        permissions={"camera": {}, "clipboardWrite": {}},
    )
    assert typed.meta == plain.meta
    assert server.extensions == {EXTENSION_ID: {}}


@pytest.mark.parametrize(
    ("resource_uri", "options", "message"),
    [
        ("ui://app/missing.html", {}, "register its HTML first"),
        ("file:///app.html", {}, "ui:// scheme"),
        ("ui://app/main.html", {"visibility": ["agent"]}, "'model' and 'app'"),
        ("ui://app/main.html", {"visibility": []}, "'model' and 'app'"),
        ("ui://app/main.html", {"visibility": ["app", "app"]}, "'model' and 'app'"),
        ("ui://app/main.html", {"visibility": "app"}, "a list"),
        ("ui://app/main.html", {"meta": {"ui": {}}}, "owns _meta['ui']"),
        ("ui://app/main.html", {"meta": ["ui"]}, "a mapping of more _meta keys"),
        (
            "ui://app/main.html",
            {"meta": {"com.example/x": {1, 2}}},
            "_meta.com.example/x is a set, which has no JSON form",
        ),
        ("ui://app/text.txt", {}, "not text/html;profile=mcp-app"),
    ],
)
def test_a_bad_app_tool_is_refused_at_registration(resource_uri: str, options: dict[str, Any], message: str) -> None:
    server = apps_server()

    @server.resource("ui://app/text.txt", mime_type="text/plain")
    def text() -> str:
        return "not an app"

    with pytest.raises((ValueError, TypeError)) as raised:

        @app_tool(server, resource_uri, **options)
        def show() -> str:
            return "shown"

    assert message in str(raised.value)
    assert "show" not in server.tools


def test_app_tool_keeps_the_registry_options() -> None:
    server = apps_server()

    @app_tool(server, "ui://app/main.html", name="show.app", description="Shows", scopes=["read"], task="optional")
    def show() -> str:
        return "shown"

    tool = server.tools["show.app"]
    assert type(tool) is ToolDef  # the registry's own definition, its _meta from meta=
    assert tool.describe()["_meta"] == {"ui": {"resourceUri": "ui://app/main.html"}}
    assert tool.describe()["execution"] == {"taskSupport": "optional"}
    assert server.tool_scopes["show.app"] == frozenset({"read"})
    with pytest.raises(ValueError, match="already registered"):
        app_tool(server, "ui://app/main.html", name="show.app")(show)


# -- the host side: what a hostile server sends is refused, and the connection goes on ----------------------------


def hostile_server() -> Server:
    """UI resources registered with plain ``@server.resource``, which checks nothing of Apps: what a hostile or
    broken server could send."""
    server = apps_server()

    def ui(meta: dict[str, Any]) -> dict[str, Any]:
        return {"text": "<html></html>", "_meta": {"ui": meta}}

    def reader(content: dict[str, Any]) -> Callable[[], dict[str, Any]]:
        return lambda: content

    bad = {
        "ui://bad/inject": ui({"csp": {"connectDomains": ["https://a.example; script-src *"]}}),
        "ui://bad/csp-shape": ui({"csp": {"resourceDomains": "https://a.example"}}),
        "ui://bad/domain": ui({"domain": "x.example'"}),
        "ui://bad/border": ui({"prefersBorder": "yes"}),
        "ui://bad/permissions": ui({"permissions": {"camera": True}}),
        "ui://bad/big": {"text": "x" * 2048},
        "ui://bad/blob": {"blob": "not base64!"},
    }
    for uri, content in bad.items():
        server.resource(uri, mime_type=APP_MIME_TYPE)(reader(content))
    server.resource("ui://bad/mime", mime_type="text/html")(lambda: "<html></html>")
    good_blob = base64.b64encode("<html>é</html>".encode()).decode()
    server.resource("ui://good/blob", mime_type=APP_MIME_TYPE)(lambda: {"blob": good_blob})
    return server


@pytest.fixture
async def hostile_client() -> AsyncIterator[Client]:
    async with Client.connect(hostile_server()) as client:
        yield client


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("ui://bad/inject", "not an origin"),
        ("ui://bad/csp-shape", "list of origins"),
        ("ui://bad/domain", "host name"),
        ("ui://bad/border", "boolean"),
        ("ui://bad/permissions", "maps features to objects"),
        ("ui://bad/big", "over 1024 bytes"),
        ("ui://bad/blob", "not base64"),
        ("ui://bad/mime", "hosts render only"),
    ],
)
async def test_the_host_side_refuses_a_bad_ui_resource(hostile_client: Client, uri: str, message: str) -> None:
    with pytest.raises(AppsError, match=message):
        await read_ui_resource(hostile_client, uri, max_bytes=1024)
    # The connection is still good: the next read works.
    assert (await read_ui_resource(hostile_client, "ui://good/blob")).html == "<html>é</html>"


async def test_reading_a_missing_ui_resource_is_the_servers_error(hostile_client: Client) -> None:
    with pytest.raises(JSONRPCError):
        await read_ui_resource(hostile_client, "ui://nowhere")
    with pytest.raises(AppsError, match="ui:// URI"):
        await read_ui_resource(hostile_client, "https://example.com")


def test_contents_for_another_uri_or_twice_are_refused() -> None:
    item = {"uri": "ui://a", "mimeType": APP_MIME_TYPE, "text": "<html></html>"}
    with pytest.raises(AppsError, match="0 contents"):
        ui_resource_from_contents("ui://b", [item])
    with pytest.raises(AppsError, match="2 contents"):
        ui_resource_from_contents("ui://a", [item, item])
    with pytest.raises(AppsError, match="neither text nor blob"):
        ui_resource_from_contents("ui://a", [{"uri": "ui://a", "mimeType": APP_MIME_TYPE}])


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (None, None),
        ({"other": 1}, None),
        ({"ui/resourceUri": "ui://old"}, ToolUi("ui://old")),  # the deprecated flat key, still read
        ({"ui": {"visibility": ["app"]}}, ToolUi(None, ("app",))),
        ({"ui": {"resourceUri": "ui://x", "visibility": ["model"]}}, ToolUi("ui://x", ("model",))),
    ],
)
def test_tool_ui_reads_what_the_text_allows(meta: dict[str, Any] | None, expected: ToolUi | None) -> None:
    tool = {"name": "t", "inputSchema": {"type": "object"}, **({"_meta": meta} if meta is not None else {})}
    assert tool_ui(tool) == expected


@pytest.mark.parametrize(
    "ui",
    [
        "ui://x",
        {"resourceUri": "https://x"},
        {"resourceUri": "ui://x", "visibility": ["agent"]},
        {"resourceUri": "ui://x", "visibility": "app"},
    ],
)
def test_tool_ui_refuses_a_malformed_one(ui: Any) -> None:
    with pytest.raises(AppsError):
        tool_ui({"name": "t", "inputSchema": {"type": "object"}, "_meta": {"ui": ui}})


def test_apps_capabilities() -> None:
    assert apps_capabilities() == {"extensions": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}
    with pytest.raises(ValueError):
        apps_capabilities([])
    with pytest.raises(ValueError):
        apps_capabilities("text/html")  # type: ignore[arg-type]


async def test_client_supports_apps_in_process() -> None:
    server = apps_server()
    answers: list[bool] = []

    @app_tool(server, "ui://app/main.html")
    def show(context: Context) -> str:
        answers.append(client_supports_apps(context))
        return "shown"

    for capabilities in (apps_capabilities(), apps_capabilities(["text/uri-list"]), None):
        for version in ("2025-11-25", "2026-07-28"):
            async with Client.connect(server, version=version, capabilities=capabilities) as client:
                await client.call_tool("show", {})
    assert answers == [True, True, False, False, False, False]


def test_both_sides_share_the_wire_names_and_the_origin_rule() -> None:
    for side in (mcpgen_runtime.server.authoring.apps, mcpgen_runtime.client.apps):
        assert (side.EXTENSION_ID, side.APP_MIME_TYPE) == (EXTENSION_ID, APP_MIME_TYPE)
    for origin in ("https://a.example", "wss://*.live.example:8443", "http://localhost:3000"):
        assert is_csp_origin(origin)
    for not_origin in ("https://a.example/", "https://a.example; script-src *", "ftp://a.example", "'self'", 1):
        assert not is_csp_origin(not_origin)
    assert is_sandbox_domain("abc.example.com:8080") and not is_sandbox_domain("abc.example.com/x")
