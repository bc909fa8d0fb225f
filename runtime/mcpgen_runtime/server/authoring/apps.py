"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension, ext-apps specification 2026-01-26): a tool names a ``ui://``
resource in its ``_meta.ui.resourceUri``; the resource is an HTML document (``text/html;profile=mcp-app``) that the
host renders in a sandboxed iframe, under the CSP, permissions, domain and border its ``_meta.ui`` asks for.

Where it sits: in ``authoring``, above ``registry``: functions over a ``Registry`` (a ``Server`` is one) that build
the ``_meta`` Apps puts on a resource and a tool and register them with ``meta=``; the wire names and the origin
rule are ``protocol.apps``'s, shared with the host side (``client.apps``):

    add_ui_resource(server, "ui://clock/app.html", CLOCK_HTML, csp=Csp(connect_domains=["https://api.example.com"]))

    @app_tool(server, "ui://clock/app.html", visibility=["model", "app"])
    def get_time(context: Context) -> str:
        ...  # text for every client; client_supports_apps(context) says whether the UI will be shown

The wire is the official Python SDK's (``mcp.server.apps``, 2.3.0), field for field: the UI resource is listed and
read with ``mimeType`` ``text/html;profile=mcp-app`` and its ``_meta.ui`` (only the keys given; none: no ``_meta``),
its ``name`` defaults to its URI; a tool gets ``_meta.ui`` = ``{"resourceUri", "visibility"?}`` (the flat
``_meta["ui/resourceUri"]`` is deprecated by the text: not written); the extension is declared with empty settings
(``capabilities.extensions``, which the 2025-11-25 fitting drops: there the tools' ``_meta`` is the whole signal).

Everything is checked at registration, with ``ValueError`` / ``TypeError`` naming the fix: a URI that is not
``ui://``; a tool bound to a UI resource not registered yet (register the resource first: a tool whose
``resourceUri`` cannot be read is a broken UI in every host); an unknown visibility; a CSP or permissions key that
does not exist (a typo would silently loosen nothing and confuse everyone); a CSP source that is not a bare origin
(``scheme://host[:port]``, ``*.`` subdomain wildcards allowed): hosts paste these into a ``Content-Security-Policy``
header, so a ``;``, a quote or a space would inject directives.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from ...protocol.apps import (
    APP_MIME_TYPE,
    CSP_KEYS,
    EXTENSION_ID,
    PERMISSION_KEYS,
    UI_SCHEME,
    VISIBILITIES,
    is_csp_origin,
    is_sandbox_domain,
)
from .caching import CacheHint
from .context import Context
from .definitions import AnyFunction, ResourceDef
from .registry import Registry

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "Csp",
    "Permissions",
    "Visibility",
    "add_ui_resource",
    "app_tool",
    "client_supports_apps",
]

Visibility = Literal["model", "app"]
"""Who may call a UI-bound tool (``_meta.ui.visibility``; absent means both): the model, the app, or both."""

F = TypeVar("F", bound=AnyFunction)

# The Python field names of ``Csp`` / ``Permissions`` -> the wire keys (protocol.apps), in the wire's order.
_CSP_KEYS: Final = dict(
    zip(("connect_domains", "resource_domains", "frame_domains", "base_uri_domains"), CSP_KEYS, strict=True)
)
_PERMISSION_KEYS: Final = dict(
    zip(("camera", "microphone", "geolocation", "clipboard_write"), PERMISSION_KEYS, strict=True)
)


def _origins(field_name: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise TypeError(f"Csp {field_name}: a list of origins such as ['https://api.example.com'], got {value!r}")
    origins = tuple(value)
    for origin in origins:
        if not is_csp_origin(origin):
            raise ValueError(
                f"Csp {field_name}: {origin!r} is not an origin (scheme://host[:port], scheme http(s) or ws(s), a "
                "leading '*.' allowed, nothing after the port): hosts build a Content-Security-Policy header from it"
            )
    return origins


def _by_field(what: str, typed: str, value: object, keys: Mapping[str, str]) -> dict[str, Any]:
    """A ``_meta.ui`` object in its wire shape (``keys``: field name -> wire key) by field name; an unknown key is an
    error (a typo would otherwise silently ask for nothing)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: a {typed} or a mapping of {', '.join(keys.values())}, got {value!r}")
    by_wire = {wire: name for name, wire in keys.items()}
    unknown = sorted(key for key in value if key not in by_wire)
    if unknown:
        raise ValueError(f"{what}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(by_wire)}")
    return {by_wire[key]: item for key, item in value.items()}


@dataclass(frozen=True)
class Csp:
    """The origins a UI resource needs (``_meta.ui.csp``); each omitted list means none (the host's strict default).
    ``connect_domains``: fetch/XHR/WebSocket; ``resource_domains``: scripts, styles, images, fonts, media;
    ``frame_domains``: nested iframes; ``base_uri_domains``: the document's base URI."""

    connect_domains: Sequence[str] | None = None
    resource_domains: Sequence[str] | None = None
    frame_domains: Sequence[str] | None = None
    base_uri_domains: Sequence[str] | None = None

    def __post_init__(self) -> None:
        for name in _CSP_KEYS:
            object.__setattr__(self, name, _origins(name, getattr(self, name)))

    @classmethod
    def of(cls, value: Csp | Mapping[str, Any]) -> Csp:
        """A ``Csp``, or one from its wire shape (``{"connectDomains": [...], ...}``); an unknown key is an error."""
        if isinstance(value, Csp):
            return value
        return cls(**_by_field("csp", "Csp", value, _CSP_KEYS))

    def wire(self) -> dict[str, list[str]]:
        return {wire: list(getattr(self, name)) for name, wire in _CSP_KEYS.items() if getattr(self, name) is not None}


@dataclass(frozen=True)
class Permissions:
    """The browser features a UI resource asks for (``_meta.ui.permissions``); hosts MAY grant them."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def __post_init__(self) -> None:
        for name in _PERMISSION_KEYS:
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"Permissions {name}: True or False, got {getattr(self, name)!r}")

    @classmethod
    def of(cls, value: Permissions | Mapping[str, Any]) -> Permissions:
        """A ``Permissions``, or one from its wire shape (``{"camera": {}, ...}``: each value an empty object)."""
        if isinstance(value, Permissions):
            return value
        requested = _by_field("permissions", "Permissions", value, _PERMISSION_KEYS)
        for name, granted in requested.items():
            if granted != {}:
                raise ValueError(
                    f"permissions: {_PERMISSION_KEYS[name]!r} is requested with an empty object {{}}, got {granted!r}"
                )
        return cls(**dict.fromkeys(requested, True))

    def wire(self) -> dict[str, dict[str, Any]]:
        return {wire: {} for name, wire in _PERMISSION_KEYS.items() if getattr(self, name)}


def _require_ui_uri(uri: object, what: str) -> str:
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME) or uri != uri.strip():
        raise ValueError(f"{what}: MCP Apps URIs use the ui:// scheme (e.g. 'ui://my-server/app.html'), got {uri!r}")
    if any(character.isspace() for character in uri):
        raise ValueError(f"{what}: a URI has no whitespace, got {uri!r}")
    return uri


def _declare(registry: Registry) -> None:
    # The SDK declares the extension with empty settings: the ext-apps text defines settings for clients only.
    if EXTENSION_ID not in registry.extensions:
        registry.declare_extension(EXTENSION_ID, {})


def add_ui_resource(
    registry: Registry,
    uri: str,
    html: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    csp: Csp | Mapping[str, Any] | None = None,
    permissions: Permissions | Mapping[str, Any] | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
    cache: CacheHint | None = None,
    replace: bool = False,
) -> ResourceDef:
    """Serve ``html`` as the UI resource ``uri`` (``ui://``), listed and read with ``mimeType``
    ``text/html;profile=mcp-app``; ``name`` defaults to the URI (the SDK's default). ``csp``, ``permissions``,
    ``domain`` (host-specific: the host's documentation says its format) and ``prefers_border`` become its
    ``_meta.ui``, in the listing and in the read. Declares the extension. ``replace``: as ``@server.resource``."""
    _require_ui_uri(uri, "add_ui_resource")
    if not isinstance(html, str):
        raise TypeError(f"add_ui_resource {uri!r}: the HTML document as a str, got {type(html).__name__}")
    ui: dict[str, Any] = {}
    if csp is not None:
        ui["csp"] = Csp.of(csp).wire()
    if permissions is not None:
        ui["permissions"] = Permissions.of(permissions).wire()
    if domain is not None:
        if not is_sandbox_domain(domain):
            raise ValueError(
                f"add_ui_resource {uri!r}: domain is a host name such as 'abc.example.com', got {domain!r}"
            )
        ui["domain"] = domain
    if prefers_border is not None:
        if not isinstance(prefers_border, bool):
            raise TypeError(f"add_ui_resource {uri!r}: prefers_border is True, False or None, got {prefers_border!r}")
        ui["prefersBorder"] = prefers_border
    meta = {"ui": ui} if ui else None
    # What resources/read answers: the same _meta on the content as in the listing (the SDK's wire, the text's
    # example). Built once: the document is fixed at registration.
    content: dict[str, Any] = {"text": html, **({"_meta": meta} if meta else {})}

    def read_ui_resource() -> dict[str, Any]:
        return content

    registry.resource(
        uri, name=uri if name is None else name, title=title, description=description, mime_type=APP_MIME_TYPE,
        cache=cache, replace=replace, meta=meta,
    )(read_ui_resource)  # fmt: skip
    _declare(registry)
    return registry.resources[uri]


def _tool_ui(resource_uri: str, visibility: Collection[Visibility] | None) -> dict[str, Any]:
    ui: dict[str, Any] = {"resourceUri": resource_uri}
    if visibility is not None:
        if isinstance(visibility, str) or not isinstance(visibility, Collection):
            raise TypeError(f"visibility: a list such as ['model', 'app'], got {visibility!r}")
        chosen = list(visibility)
        unknown = [v for v in chosen if v not in VISIBILITIES]
        if unknown or not chosen or len(set(chosen)) != len(chosen):
            raise ValueError(
                f"visibility: one or both of 'model' and 'app', each once (omit it for both), got {chosen!r}"
            )
        ui["visibility"] = chosen
    return ui


def app_tool(
    registry: Registry,
    resource_uri: str,
    *,
    visibility: Collection[Visibility] | None = None,
    meta: Mapping[str, Any] | None = None,
    **tool_options: Any,
) -> Callable[[F], F]:
    """Register a tool (``tool_options``: those of ``Registry.tool``: ``name``, ``description``, ``scopes`` ...)
    bound to the UI resource ``resource_uri``, registered before with ``add_ui_resource`` (or ``@server.resource``
    with ``mimeType`` ``text/html;profile=mcp-app``). ``visibility``: ``["model"]``, ``["app"]`` (hidden from the
    model: hosts MUST leave it out of the model's tools) or both; None omits it (the text's default: both).
    ``meta``: more ``_meta`` keys besides ``ui`` (which this function owns). Declares the extension.

    The tool must still answer meaningful content: a client without Apps (``client_supports_apps``) shows only that.
    Annotations naming classes defined inside a function must be resolvable at module level (the registry looks for
    them in its caller's scope, which is this function's)."""
    _require_ui_uri(resource_uri, "app_tool resource_uri")
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"app_tool meta: a mapping of more _meta keys besides 'ui', got {meta!r}")
    if meta is not None and "ui" in meta:
        raise ValueError("app_tool owns _meta['ui']: pass resource_uri= and visibility= instead of meta={'ui': ...}")
    tool_meta = {**(meta or {}), "ui": _tool_ui(resource_uri, visibility)}
    resource = registry.resources.get(resource_uri)
    if resource is None:
        raise ValueError(
            f"app_tool: no resource {resource_uri!r} is registered; register its HTML first with "
            "add_ui_resource(server, uri, html)"
        )
    if resource.mime_type != APP_MIME_TYPE:
        raise ValueError(
            f"app_tool: resource {resource_uri!r} is served as {resource.mime_type!r}, not {APP_MIME_TYPE}"
        )

    def register(fn: F) -> F:
        registry.tool(meta=tool_meta, **tool_options)(fn)
        _declare(registry)
        return fn

    return register


def client_supports_apps(context: Context[Any]) -> bool:
    """Whether the client of this request declared MCP Apps with the HTML MIME type (``capabilities.extensions
    ["io.modelcontextprotocol/ui"].mimeTypes``): otherwise a UI-bound tool's text is all its user sees. Read from
    ``initialize`` (legacy era, where the 2025-11-25 models keep the extra key) or from the request (modern)."""
    extensions = context.client_capabilities.get("extensions")
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, Mapping) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, Mapping) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types
