"""MCP Apps on the host side (the ``io.modelcontextprotocol/ui`` extension, ext-apps specification 2026-01-26): the
capability a client declares, what a listed tool says about its UI, and a ``ui://`` resource read and checked.

Where it sits: in the ``client`` layer, above ``client`` (``read_ui_resource`` reads through a connected ``Client``)
and ``errors``, and over ``protocol.apps`` (the wire names and the origin rule, the same the server's authoring
applies); nothing imports it but the package's ``__init__``. Rendering (the sandboxed iframe, the CSP header,
the ``ui/*`` postMessage dialect) is the host application's: this module hands it checked data.

    async with Client.connect_http(url, capabilities=apps_capabilities()) as client:
        for tool in model_tools(await client.tools()):     # app-only tools are not the model's (the text's MUST)
            ui = tool_ui(tool)
            if ui is not None:
                resource = await read_ui_resource(client, ui.resource_uri)   # html, csp, permissions ...

Everything read from the server is hostile until checked: a malformed ``_meta.ui`` on a tool, a resource whose
content is not ``text/html;profile=mcp-app``, not under the URI asked for, not UTF-8 or larger than the bound, or
whose CSP sources are not bare origins (a ``;`` or a quote would inject directives into the host's
``Content-Security-Policy`` header) raises ``AppsError`` naming what is wrong; nothing is silently dropped or fixed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pydantic import BaseModel

from ..protocol.apps import (
    APP_MIME_TYPE,
    CSP_KEYS,
    EXTENSION_ID,
    PERMISSION_KEYS,
    UI_SCHEME,
    VISIBILITIES,
    is_csp_origin,
    is_sandbox_domain,
)
from .errors import ClientError

if TYPE_CHECKING:
    from .client import Client

__all__ = [
    "APP_MIME_TYPE",
    "DEFAULT_MAX_UI_BYTES",
    "EXTENSION_ID",
    "AppsError",
    "ToolUi",
    "UiResource",
    "apps_capabilities",
    "model_tools",
    "read_ui_resource",
    "tool_ui",
    "ui_resource_from_contents",
]

DEFAULT_MAX_UI_BYTES: Final = 8 * 1024 * 1024
"""The largest UI document ``read_ui_resource`` accepts (UTF-8 bytes): a bundled single-file app is typically well
under 1 MiB; 8 MiB leaves room for inlined assets while a host never renders an unbounded document."""

T = TypeVar("T")


class AppsError(ClientError):
    """What the server sent for MCP Apps is malformed (a tool's ``_meta.ui``, a ``ui://`` resource): not used."""


def apps_capabilities(mime_types: Sequence[str] = (APP_MIME_TYPE,)) -> dict[str, Any]:
    """The client capabilities that declare MCP Apps, for ``Client.connect*(..., capabilities=...)``:
    ``{"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [...]}}}`` (``mimeTypes`` is required by the
    text). Sent in ``initialize`` (legacy era; the 2025-11-25 models keep the key) and in every modern request."""
    if isinstance(mime_types, str) or not mime_types or not all(isinstance(m, str) and m for m in mime_types):
        raise ValueError(f"mime_types: a non-empty list of MIME types, got {mime_types!r}")
    return {"extensions": {EXTENSION_ID: {"mimeTypes": list(mime_types)}}}


@dataclass(frozen=True)
class ToolUi:
    """A tool's ``_meta.ui``: the UI resource that renders its results (None: the text makes it optional, e.g. an
    app-only helper tool), and who may call it (absent on the wire: both)."""

    resource_uri: str | None
    visibility: tuple[str, ...] = VISIBILITIES

    @property
    def for_model(self) -> bool:
        return "model" in self.visibility

    @property
    def for_app(self) -> bool:
        return "app" in self.visibility


def _json(value: Any) -> Mapping[str, Any]:
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"a tool or resource content (a generated model or its JSON), got {type(value).__name__}")


def _ui_uri(uri: object, where: str) -> str:
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME) or any(c.isspace() for c in uri):
        raise AppsError(f"{where}: a ui:// URI, got {uri!r}")
    return uri


def tool_ui(tool: Any) -> ToolUi | None:
    """The UI of a listed tool (a generated ``Tool`` of any version, or its JSON), None when it has none. Reads
    ``_meta.ui`` and, failing that, the deprecated flat ``_meta["ui/resourceUri"]``. Raises ``AppsError`` for a
    malformed one (a tool of this server that claims a UI it does not describe is not guessed at)."""
    data = _json(tool)
    name = data.get("name")
    meta = data.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    if ui is None:
        flat = meta.get("ui/resourceUri")
        return None if flat is None else ToolUi(_ui_uri(flat, f"tool {name!r} _meta['ui/resourceUri']"))
    if not isinstance(ui, Mapping):
        raise AppsError(f"tool {name!r}: _meta.ui is an object, got {ui!r}")
    uri = ui.get("resourceUri")
    resource_uri = None if uri is None else _ui_uri(uri, f"tool {name!r} _meta.ui.resourceUri")
    visibility = ui.get("visibility", list(VISIBILITIES))
    if (
        not isinstance(visibility, list)
        or not all(v in VISIBILITIES for v in visibility)
        or len(set(visibility)) != len(visibility)
    ):
        raise AppsError(f"tool {name!r}: _meta.ui.visibility is a list of 'model' and/or 'app', got {visibility!r}")
    return ToolUi(resource_uri, tuple(visibility))


def model_tools(tools: Iterable[T]) -> list[T]:
    """The tools the model may see: without those whose ``visibility`` leaves out ``"model"`` (the text: hosts MUST
    NOT include them in the agent's tool list). A tool with a malformed ``_meta.ui`` raises ``AppsError``."""
    kept = []
    for tool in tools:
        ui = tool_ui(tool)
        if ui is None or ui.for_model:
            kept.append(tool)
    return kept


@dataclass(frozen=True)
class UiResource:
    """A ``ui://`` resource, read and checked: its HTML and the ``_meta.ui`` settings the host enforces (``csp``:
    wire key -> origins, empty when none were asked for, which means the host's strict default)."""

    uri: str
    html: str
    csp: Mapping[str, tuple[str, ...]]
    permissions: frozenset[str]
    domain: str | None
    prefers_border: bool | None


def _origins(uri: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise AppsError(f"{uri}: _meta.ui.csp.{key} is a list of origins, got {value!r}")
    for origin in value:
        if not is_csp_origin(origin):
            raise AppsError(f"{uri}: _meta.ui.csp.{key} has {origin!r}, which is not an origin (scheme://host[:port])")
    return tuple(value)


def _ui_settings(uri: str, meta: object) -> dict[str, Any]:
    """``_meta.ui`` of a resource's content, checked; unknown keys are ignored (a newer text may add some)."""
    settings: dict[str, Any] = {"csp": {}, "permissions": frozenset(), "domain": None, "prefers_border": None}
    if meta is None:
        return settings
    if not isinstance(meta, Mapping):
        raise AppsError(f"{uri}: _meta is an object, got {meta!r}")
    ui = meta.get("ui")
    if ui is None:
        return settings
    if not isinstance(ui, Mapping):
        raise AppsError(f"{uri}: _meta.ui is an object, got {ui!r}")
    csp = ui.get("csp")
    if csp is not None:
        if not isinstance(csp, Mapping):
            raise AppsError(f"{uri}: _meta.ui.csp is an object, got {csp!r}")
        settings["csp"] = {key: _origins(uri, key, csp[key]) for key in CSP_KEYS if key in csp}
    permissions = ui.get("permissions")
    if permissions is not None:
        if not isinstance(permissions, Mapping) or not all(isinstance(v, Mapping) for v in permissions.values()):
            raise AppsError(f"{uri}: _meta.ui.permissions maps features to objects, got {permissions!r}")
        settings["permissions"] = frozenset(key for key in permissions if key in PERMISSION_KEYS)
    domain = ui.get("domain")
    if domain is not None:
        if not is_sandbox_domain(domain):
            raise AppsError(f"{uri}: _meta.ui.domain is a host name, got {domain!r}")
        settings["domain"] = domain
    border = ui.get("prefersBorder")
    if border is not None:
        if not isinstance(border, bool):
            raise AppsError(f"{uri}: _meta.ui.prefersBorder is a boolean, got {border!r}")
        settings["prefers_border"] = border
    return settings


def ui_resource_from_contents(
    uri: str, contents: Iterable[Any], *, max_bytes: int = DEFAULT_MAX_UI_BYTES
) -> UiResource:
    """The ``UiResource`` in a ``resources/read`` result's ``contents`` (models or JSON), checked (see the module
    docstring); ``read_ui_resource`` reads and calls this."""
    items = [_json(item) for item in contents]
    matching = [item for item in items if item.get("uri") == uri]
    if len(matching) != 1:
        raise AppsError(f"{uri}: the read answered {len(matching)} contents for this URI, not one")
    item = matching[0]
    mime_type = item.get("mimeType")
    if mime_type != APP_MIME_TYPE:
        raise AppsError(f"{uri}: served as {mime_type!r}; hosts render only {APP_MIME_TYPE!r}")
    if isinstance(item.get("text"), str):
        text: str = item["text"]
        if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
            raise AppsError(f"{uri}: the document is over {max_bytes} bytes")
        html = text
    elif isinstance(item.get("blob"), str):
        encoded: str = item["blob"]
        if len(encoded) > (max_bytes + 2) // 3 * 4:  # bounded before decoding
            raise AppsError(f"{uri}: the document is over {max_bytes} bytes")
        try:
            html = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise AppsError(f"{uri}: the blob is not base64 of UTF-8 HTML ({exc})") from None
    else:
        raise AppsError(f"{uri}: the content has neither text nor blob")
    return UiResource(uri, html, **_ui_settings(uri, item.get("_meta")))


async def read_ui_resource(
    client: Client, uri: str, *, max_bytes: int = DEFAULT_MAX_UI_BYTES, timeout: float | None = None
) -> UiResource:
    """Read the UI resource ``uri`` (``resources/read``) and check it: ``AppsError`` when it is not a usable app
    (see the module docstring); the server's JSON-RPC errors (e.g. not found) stay ``JSONRPCError``."""
    _ui_uri(uri, "read_ui_resource")
    result = await client.read_resource(uri, timeout=timeout)
    return ui_resource_from_contents(uri, result.contents, max_bytes=max_bytes)
