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

from ..jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ..jsonrpc.streams import MessageStream
from ..transports.stdio import DEFAULT_MAX_FRAME_BYTES, stdio_server_stream
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

    async def serve_stream(
        self,
        stream: MessageStream,
        *,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    ) -> None:
        """Serve one client over ``stream`` until it closes its side.

        ``max_requests_in_flight`` (default 100): requests handled at once; as many more may wait, read but not
        started, and beyond that the server stops reading until one finishes (over stdio the client's writes then
        block). ``max_batch_size`` (default 100): messages in one JSON-RPC batch (2025-03-26); longer ones are
        refused whole with -32600."""
        connection = ServerConnection(
            self, stream, max_requests_in_flight=max_requests_in_flight, max_batch_size=max_batch_size
        )
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)

    async def serve_stdio(
        self,
        *,
        max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        """Serve one client over this process's stdin/stdout. The limits: see ``serve_stream``;
        ``max_frame_bytes`` (default 256 MiB): the longest line read, longer ones are answered -32600."""
        async with stdio_server_stream(max_frame_bytes=max_frame_bytes) as stream:
            await self.serve_stream(
                stream, max_requests_in_flight=max_requests_in_flight, max_batch_size=max_batch_size
            )

    async def serve_http(
        self, host: str = "127.0.0.1", port: int = 8000, *, task_status: Any = anyio.TASK_STATUS_IGNORED, **options: Any
    ) -> None:
        """Serve over streamable HTTP at http://host:port/mcp until cancelled; each HTTP session gets its own
        connection. Binds to 127.0.0.1 unless told otherwise. ``options`` (limits, timeouts, resumability): see
        ``transports.http_server.StreamableHTTPApp``; its per-session in-flight and batch limits also bound each
        connection's own session."""
        from ..transports.http_server import run_http  # only HTTP servers need starlette and uvicorn

        limits = {
            "max_requests_in_flight": options.get("max_requests_in_flight", DEFAULT_MAX_REQUESTS_IN_FLIGHT),
            "max_batch_size": options.get("max_batch_size", DEFAULT_MAX_BATCH_SIZE),
        }
        await run_http(functools.partial(self.serve_stream, **limits), host, port, task_status=task_status, **options)

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, **options: Any) -> None:
        """Blocking form of ``serve_http``."""
        anyio.run(functools.partial(self.serve_http, host, port, **options))

    def run_stdio(self, **options: Any) -> None:
        """Serve one client over this process's stdin/stdout (logs go to stderr; stdout carries only protocol).
        ``options``: the limits of ``serve_stdio``."""
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
        anyio.run(functools.partial(self.serve_stdio, **options))
