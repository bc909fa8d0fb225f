"""The wire names and rules of MCP Apps (the ``io.modelcontextprotocol/ui`` extension, ext-apps specification
2026-01-26) that the server's authoring and the client's host helpers both apply.

Where it sits: in the ``protocol`` layer, below ``server.authoring.apps`` (which checks what an author registers)
and ``client.apps`` (which checks what a server sent): one definition, so that what a server may publish and what
a host accepts cannot drift apart. Only names and rules: no models, no I/O.

Why CSP sources are bare origins only (``scheme://host[:port]``, a leading ``*.`` allowed, nothing after the port):
hosts paste them into a ``Content-Security-Policy`` header, so a ``;``, a quote or a space would inject directives.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "APP_MIME_TYPE",
    "CSP_KEYS",
    "EXTENSION_ID",
    "PERMISSION_KEYS",
    "UI_SCHEME",
    "VISIBILITIES",
    "is_csp_origin",
    "is_sandbox_domain",
]

EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
"""The extension's identifier: the key under ``capabilities.extensions`` on both sides."""
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The MIME type of an app's HTML document: the only one hosts render, and what a client lists in ``mimeTypes``."""
UI_SCHEME: Final = "ui://"
VISIBILITIES: Final = ("model", "app")
"""Who may call a UI-bound tool (``_meta.ui.visibility``; absent means both), in the text's order."""
CSP_KEYS: Final = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
"""The keys of ``_meta.ui.csp``, each a list of origins."""
PERMISSION_KEYS: Final = ("camera", "microphone", "geolocation", "clipboardWrite")
"""The keys of ``_meta.ui.permissions``, each an empty object when asked for."""

_ORIGIN: Final = re.compile(r"(https?|wss?)://(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?")
# The sandbox origin a resource asks for: its format is the host's, but it is always a host name, maybe with a port.
_DOMAIN: Final = re.compile(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?")


def is_csp_origin(value: object) -> bool:
    """Whether ``value`` may be a CSP source of ``_meta.ui.csp``: an http(s) or ws(s) origin and nothing more."""
    return isinstance(value, str) and _ORIGIN.fullmatch(value) is not None


def is_sandbox_domain(value: object) -> bool:
    """Whether ``value`` may be ``_meta.ui.domain``: a host name, optionally with a port."""
    return isinstance(value, str) and _DOMAIN.fullmatch(value) is not None
