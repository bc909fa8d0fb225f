"""The headers a 2026-07-28 request carries over streamable HTTP so that intermediaries can route it without reading
its body (basic/transports/streamable-http.mdx): ``Mcp-Method``, ``Mcp-Name`` and ``MCP-Protocol-Version``, and
which params member ``Mcp-Name`` mirrors for each method. The client side sets them and the server side checks them
against the body, so both read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["METHOD_HEADER", "NAME_HEADER", "NAME_PARAMS", "PROTOCOL_VERSION_HEADER"]

PROTOCOL_VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
# The methods whose Mcp-Name mirrors a params member, and that member. The tasks extension (io.modelcontextprotocol/
# tasks, "Streamable HTTP: Routing Headers") adds its methods' taskId, so that a load balancer can route a task's
# requests to the instance that holds it.
NAME_PARAMS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
