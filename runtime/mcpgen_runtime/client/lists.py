"""The client's cached lists: ``tools()``, ``prompts()``, ``resources()`` and ``resource_templates()``, in both eras.

Where it sits: in the ``client`` layer, a base class of ``Client`` (``client.py``), split out to keep that module
about the connection. Each list is a ``client_support.ListCache``:

- handshake era: walked through the negotiated stub's ``list_all_*``, kept until the matching ``list_changed``;
- modern era (2026-07-28): walked page by page with the request ``_meta``; the list is kept for the smallest
  ``ttlMs`` of its pages (caching.mdx: 0 means "re-fetch every time"), or until a ``list_changed`` arrives on a
  subscription. Tools whose ``x-mcp-header`` annotations are invalid are left out of the list (with a warning), and
  the annotations of the others are what the client mirrors into ``Mcp-Param-*`` headers when it calls them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mcp_bindings import base as _base

from ..jsonrpc.envelopes import JSONRPCError
from .client_support import ClientError, ListCache, PaginationError
from .tool_headers import header_map, invalid_x_mcp_header, param_headers

if TYPE_CHECKING:
    from types import ModuleType

    from ..jsonrpc.context import ProgressCallback
    from .client_support import AnyClientStub, AnyPrompt, AnyResource, AnyResourceTemplate, AnyTool
    from .modern import ModernState

__all__ = ["ListsMixin"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
# cache name -> (list method, result attribute)
_LISTS = {
    "tools": ("tools/list", "tools"),
    "prompts": ("prompts/list", "prompts"),
    "resources": ("resources/list", "resources"),
    "resource_templates": ("resources/templates/list", "resource_templates"),
}


class ListsMixin:
    """The cached lists of ``Client`` (which provides the members declared here)."""

    max_pages: int
    request_timeout: float | None
    _modern: ModernState | None

    @property
    def api(self) -> AnyClientStub:
        raise NotImplementedError

    @property
    def bindings(self) -> ModuleType:
        raise NotImplementedError

    async def _invoke(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> Any:
        raise NotImplementedError

    def __init__(self) -> None:
        self._caches: dict[str, ListCache[Any]] = {
            "tools": ListCache(self._fetch_tools),
            "prompts": ListCache(lambda: self._fetch("prompts")),
            "resources": ListCache(lambda: self._fetch("resources")),
            "resource_templates": ListCache(lambda: self._fetch("resource_templates")),
        }

    async def tools(self) -> list[AnyTool]:
        """Every tool (all pages), cached until ``notifications/tools/list_changed`` (or, in the modern era, for
        the server's ``ttlMs``)."""
        return cast("list[AnyTool]", await self._caches["tools"].get())

    async def prompts(self) -> list[AnyPrompt]:
        """Every prompt, cached until ``notifications/prompts/list_changed`` (modern era: or ``ttlMs``)."""
        return cast("list[AnyPrompt]", await self._caches["prompts"].get())

    async def resources(self) -> list[AnyResource]:
        """Every resource, cached until ``notifications/resources/list_changed`` (modern era: or ``ttlMs``)."""
        return cast("list[AnyResource]", await self._caches["resources"].get())

    async def resource_templates(self) -> list[AnyResourceTemplate]:
        """Every resource template, cached until ``notifications/resources/list_changed`` (modern era: or
        ``ttlMs``)."""
        return cast("list[AnyResourceTemplate]", await self._caches["resource_templates"].get())

    def cache(self, name: str) -> ListCache[Any]:
        """The cache behind ``tools()`` and friends ("tools", "prompts", "resources", "resource_templates")."""
        return self._caches[name]

    async def _fetch_tools(self) -> Sequence[AnyTool]:
        tools = await self._fetch("tools")
        state = self._modern
        if state is None:
            return tools
        kept: list[AnyTool] = []
        headers: dict[str, Any] = {}
        for tool in tools:
            schema = tool.model_dump(mode="json").get("inputSchema")
            reason = invalid_x_mcp_header(schema)
            if reason is not None:
                # 2026-07-28 (server/tools.mdx): a client MUST exclude such a tool, and SHOULD say why.
                logger.warning("leaving out tool %r: invalid x-mcp-header (%s)", tool.name, reason)
                continue
            headers[tool.name] = header_map(schema)
            kept.append(tool)
        state.tool_headers = headers
        return kept

    async def _fetch(self, name: str) -> Sequence[Any]:
        if self._modern is None:
            walks: dict[str, Callable[..., Awaitable[Sequence[Any]]]] = {
                "tools": self.api.list_all_tools,
                "prompts": self.api.list_all_prompts,
                "resources": self.api.list_all_resources,
                "resource_templates": self.api.list_all_resource_templates,
            }
            return await self._walk(walks[name])
        return await self._walk_modern(name)

    async def _walk(self, list_all: Callable[..., Awaitable[Sequence[T]]]) -> Sequence[T]:
        """One stub walk bounded by ``max_pages``; the bindings' PaginationError (every version's stub raises the
        one in ``mcp_bindings.base``) becomes ours, a ``ClientError``."""
        try:
            return await list_all(max_pages=self.max_pages)
        except _base.PaginationError as exc:
            raise PaginationError(str(exc), exc.pages, exc.cursor) from exc

    async def _walk_modern(self, name: str) -> list[Any]:
        """The pages of one modern list, each request with ``_meta``; the cache is kept for the smallest ``ttlMs``."""
        method, attribute = _LISTS[name]
        cache = self._caches[name]
        items: list[Any] = []
        cursors = _base.PageWalk(f"{name}()", self.max_pages)
        cursor: str | None = None
        while True:
            result = await self._invoke(method, {"cursor": cursor} if cursor else None, None, None)
            cache.fresh_for(result.ttl_ms / 1000)
            items.extend(getattr(result, attribute))
            cursor = result.next_cursor
            if not cursor:
                return items
            try:
                cursors.follow(cursor)
            except _base.PaginationError as exc:
                raise PaginationError(str(exc), exc.pages, exc.cursor) from exc

    # -- x-mcp-header: what a modern tools/call mirrors into Mcp-Param-* headers -----------------------------------

    async def _know_tool_headers(self, state: ModernState, name: object) -> None:
        """Mcp-Param-* headers come from the tool's inputSchema: list the tools first if this one was never seen."""
        if isinstance(name, str) and name not in state.tool_headers and not self.cache("tools").cached:
            try:
                await self.tools()
            except (JSONRPCError, ClientError) as exc:
                logger.info("could not list the tools to learn their x-mcp-header annotations: %s", exc)

    def _param_headers(self, method: str, params: Mapping[str, Any]) -> Mapping[str, str]:
        """``HTTPClientStream.param_headers``: the Mcp-Param-* headers of a modern tools/call."""
        state = self._modern
        name = params.get("name")
        if state is None or method != "tools/call" or not isinstance(name, str):
            return {}
        headers = state.tool_headers.get(name)
        arguments = params.get("arguments")
        return param_headers(headers, arguments if isinstance(arguments, Mapping) else {}) if headers else {}
