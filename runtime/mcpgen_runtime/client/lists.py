"""The server's lists as the client caches them: ``ServerLists``, the part of ``Client`` behind ``tools()``,
``prompts()``, ``resources()`` and ``resource_templates()``, in both eras.

Where it sits: in the ``client`` layer; each list is a ``list_cache.ListCache`` whose fetch walks the pages through
the request path (it is handed the function that sends one list request, and the negotiated stub):

- legacy era: walked through the negotiated stub's ``list_all_*``, kept until the matching ``list_changed``;
- modern era (2026-07-28): walked page by page with the request ``_meta``; the list is kept for the smallest
  ``ttlMs`` of its pages (caching.mdx: 0 means "re-fetch every time"), or until a ``list_changed`` arrives on a
  subscription. Tools whose ``x-mcp-header`` annotations are invalid are left out of the list (with a warning), and
  the annotations of the others are what ``tool_headers.ToolHeaders`` mirrors into ``Mcp-Param-*`` headers when a
  tool is called (``requests`` asks for them through ``learn_tool_headers`` and ``relist_tools``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from mcp_bindings import base as _base

from ..jsonrpc.envelopes import JSONParams, JSONRPCError
from .connection import Connection
from .errors import ClientError, PaginationError
from .list_cache import ListCache
from .settings import ClientSettings
from .tool_headers import ToolHeaders

if TYPE_CHECKING:
    from .versions import AnyClientStub, AnyPrompt, AnyResource, AnyResourceTemplate, AnyTool

__all__ = ["LISTS", "LIST_CHANGED", "ListRequest", "ServerLists"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
# cache name -> (list method, result attribute)
LISTS: Final = {
    "tools": ("tools/list", "tools"),
    "prompts": ("prompts/list", "prompts"),
    "resources": ("resources/list", "resources"),
    "resource_templates": ("resources/templates/list", "resource_templates"),
}
# Which cache a list_changed notification invalidates (resource templates go with resources: one notification).
LIST_CHANGED: Final = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resource_templates"),
}
# (list method, params) -> the parsed result of one page, sent through the request path.
ListRequest = Callable[[str, dict[str, Any] | None], Awaitable[Any]]


class ServerLists:
    """The four cached lists of one client."""

    def __init__(
        self,
        connection: Connection,
        settings: ClientSettings,
        tool_headers: ToolHeaders,
        request: ListRequest,
        api: Callable[[], AnyClientStub],
    ) -> None:
        self._connection = connection
        self._settings = settings
        self._tool_headers = tool_headers
        self._request = request
        self._api = api
        self._caches: dict[str, ListCache[Any]] = {
            "tools": ListCache(self._fetch_tools),
            "prompts": ListCache(lambda: self._fetch("prompts")),
            "resources": ListCache(lambda: self._fetch("resources")),
            "resource_templates": ListCache(lambda: self._fetch("resource_templates")),
        }

    async def tools(self) -> list[AnyTool]:
        return cast("list[AnyTool]", await self._caches["tools"].get())

    async def tool(self, name: str) -> AnyTool | None:
        """The listed tool called ``name`` (the cached list), or None."""
        return next((tool for tool in await self.tools() if tool.name == name), None)

    async def prompts(self) -> list[AnyPrompt]:
        return cast("list[AnyPrompt]", await self._caches["prompts"].get())

    async def resources(self) -> list[AnyResource]:
        return cast("list[AnyResource]", await self._caches["resources"].get())

    async def resource_templates(self) -> list[AnyResourceTemplate]:
        return cast("list[AnyResourceTemplate]", await self._caches["resource_templates"].get())

    def cache(self, name: str) -> ListCache[Any]:
        return self._caches[name]

    def on_notification(self, method: str, params: JSONParams) -> None:
        """A ``list_changed`` forgets the lists it names (before any hook runs, so a hook that lists again sees the
        new list)."""
        for name in LIST_CHANGED.get(method, ()):
            self._caches[name].invalidate()

    # -- ToolLists: what a modern tools/call over HTTP needs -----------------------------------------------------

    async def learn_tool_headers(self, name: object) -> None:
        """Mcp-Param-* headers come from the tool's inputSchema: list the tools first if this one was never seen."""
        if isinstance(name, str) and not self._tool_headers.knows(name) and not self._caches["tools"].cached:
            try:
                await self.tools()
            except (JSONRPCError, ClientError) as exc:
                logger.info("could not list the tools to learn their x-mcp-header annotations: %s", exc)

    async def relist_tools(self) -> None:
        self._caches["tools"].invalidate()
        await self.tools()

    # -- fetching ------------------------------------------------------------------------------------------------

    async def _fetch_tools(self) -> Sequence[AnyTool]:
        tools = await self._fetch("tools")
        if self._connection.modern is None:
            return tools
        return self._tool_headers.learn(tools)

    async def _fetch(self, name: str) -> Sequence[Any]:
        if self._connection.modern is None:
            api = self._api()
            walks: dict[str, Callable[..., Awaitable[Sequence[Any]]]] = {
                "tools": api.list_all_tools,
                "prompts": api.list_all_prompts,
                "resources": api.list_all_resources,
                "resource_templates": api.list_all_resource_templates,
            }
            return await self._walk(walks[name])
        return await self._walk_modern(name)

    async def _walk(self, list_all: Callable[..., Awaitable[Sequence[T]]]) -> Sequence[T]:
        """One stub walk bounded by ``max_pages``; the bindings' PaginationError (every version's stub raises the
        one in ``mcp_bindings.base``) becomes ours, a ``ClientError``."""
        try:
            return await list_all(max_pages=self._settings.max_pages)
        except _base.PaginationError as exc:
            raise PaginationError(str(exc), exc.pages, exc.cursor) from exc

    async def _walk_modern(self, name: str) -> list[Any]:
        """The pages of one modern list, each request with ``_meta``; the cache is kept for the smallest ``ttlMs``."""
        method, attribute = LISTS[name]
        cache = self._caches[name]
        items: list[Any] = []
        cursors = _base.PageWalk(f"{name}()", self._settings.max_pages)
        cursor: str | None = None
        while True:
            result = await self._request(method, {"cursor": cursor} if cursor else None)
            cache.fresh_for(result.ttl_ms / 1000)
            items.extend(getattr(result, attribute))
            cursor = result.next_cursor
            if not cursor:
                return items
            try:
                cursors.follow(cursor)
            except _base.PaginationError as exc:
                raise PaginationError(str(exc), exc.pages, exc.cursor) from exc
