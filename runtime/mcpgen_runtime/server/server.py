"""The typed MCP server: ``Server``, a ``Registry`` of tools, resources, prompts and completions that serves them.

Where it sits: the top of the ``server`` layer. ``Server`` adds to ``registry.Registry`` (what is served, filled
by the decorators) the serving: one ``connection.ServerConnection`` per client (``serve_stream``), change
notifications to the live connections, and the transports to run on (``transports.stdio``; the streamable HTTP
server is imported only when it is used, so that a stdio server does not import starlette and uvicorn).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import anyio

from ..jsonrpc.streams import MessageStream
from ..transports.stdio import stdio_server_stream
from .connection import ServerConnection
from .registry import Registry

__all__ = ["Server"]


class Server(Registry):
    """An MCP server: register functions with the decorators, then ``run_stdio()`` or ``await serve_stream(s)``."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        logging: bool = True,
    ) -> None:
        """``logging``: declare the logging capability (``Context.log`` sends nothing without it)."""
        super().__init__(name, version, title=title, instructions=instructions, logging=logging)
        self.connections: set[ServerConnection] = set()  # the live ones, for change notifications

    # -- change notifications -------------------------------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        await self._broadcast("tools.listChanged", "notifications/tools/list_changed")

    async def notify_resources_changed(self) -> None:
        await self._broadcast("resources.listChanged", "notifications/resources/list_changed")

    async def notify_prompts_changed(self) -> None:
        await self._broadcast("prompts.listChanged", "notifications/prompts/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to the connections subscribed to ``uri``."""
        for connection in list(self.connections):
            if uri in connection.subscriptions:
                await connection.notify("resources.subscribe", "notifications/resources/updated", {"uri": uri})

    async def _broadcast(self, capability: str, method: str) -> None:
        for connection in list(self.connections):
            await connection.notify(capability, method, None)

    # -- running --------------------------------------------------------------------------------------------------

    async def serve_stream(self, stream: MessageStream) -> None:
        """Serve one client over ``stream`` until it closes its side."""
        connection = ServerConnection(self, stream)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)

    async def serve_stdio(self) -> None:
        async with stdio_server_stream() as stream:
            await self.serve_stream(stream)

    async def serve_http(
        self, host: str = "127.0.0.1", port: int = 8000, *, task_status: Any = anyio.TASK_STATUS_IGNORED, **options: Any
    ) -> None:
        """Serve over streamable HTTP at http://host:port/mcp until cancelled; each HTTP session gets its own
        connection. Binds to 127.0.0.1 unless told otherwise. ``options``: see
        ``transports.http_server.StreamableHTTPApp``."""
        from ..transports.http_server import run_http  # only HTTP servers need starlette and uvicorn

        await run_http(self.serve_stream, host, port, task_status=task_status, **options)

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Blocking form of ``serve_http``."""
        anyio.run(functools.partial(self.serve_http, host, port, **options))

    def run_stdio(self) -> None:
        """Serve one client over this process's stdin/stdout (logs go to stderr; stdout carries only protocol)."""
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        anyio.run(self.serve_stdio)
