"""Testing a server in process: ``connect_in_memory(server)`` is a ``Client`` connected to a ``Server`` over memory
streams, with no subprocess and no port. Everything of a real connection runs (``initialize`` and version
negotiation, capabilities, the server's lifespan and middleware, server -> client requests to the client's
handlers); only the bytes do not leave the process.

Where it sits: above both ``server`` and ``client`` (which never import each other), below the package's
``__init__``. May import: the public entry points of ``server`` and ``client``, ``jsonrpc`` and anyio. In use::

    async with connect_in_memory(server, version="2025-11-25") as client:
        api = client.stub(ClientStub)
        result = await api.call_tool(CallToolRequestParams(name="add", arguments={"a": 1, "b": 2}))
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, Unpack

import anyio

from .client import Client, ConnectOptions
from .jsonrpc.streams import memory_stream_pair
from .server import Server

__all__ = ["SERVER_SHUTDOWN_TIMEOUT", "connect_in_memory"]

# After the client has gone: how long the server may take to finish (its handlers get the session's 2 s grace,
# then its lifespan exits) before it is cancelled.
SERVER_SHUTDOWN_TIMEOUT: Final = 5.0


@asynccontextmanager
async def connect_in_memory(
    server: Server[Any],
    *,
    guard_answers: bool = True,
    max_requests_in_flight: int | None = None,
    **options: Unpack[ConnectOptions],
) -> AsyncIterator[Client]:
    """Serve ``server`` in a background task and yield a ``Client`` connected to it (options as for
    ``Client.connect``: ``mode="auto"`` or ``mode="2026-07-28"`` for the modern era; ``max_requests_in_flight``, if
    given, the server's limit as for ``serve_stream``).

    The server's lifespan is entered first (a failing one raises ``LifespanError`` here, before any client exists),
    or joined if the server is running already (``async with server.running()`` around several clients shares one
    lifespan). On exit the client closes its stream, the server finishes as on a closed stdin, and the lifespan
    exits; a server that takes longer than ``SERVER_SHUTDOWN_TIMEOUT`` is cancelled. An exception raised in the
    ``async with`` body comes out as itself."""
    server_end, client_end = memory_stream_pair()
    limits = {} if max_requests_in_flight is None else {"max_requests_in_flight": max_requests_in_flight}
    async with server.running():
        done = anyio.Event()

        async def serve() -> None:
            try:
                await server.serve_stream(server_end, **limits)
            finally:
                done.set()

        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        try:
            task_group.start_soon(serve)
            async with Client.connect(client_end, guard_answers=guard_answers, **options) as client:
                yield client
        finally:
            try:
                # The client's exit closed its end, so the server's receive ends; a failed connect may not have.
                await client_end.aclose()
                with anyio.move_on_after(SERVER_SHUTDOWN_TIMEOUT):
                    await done.wait()
            finally:
                task_group.cancel_scope.cancel()
                # Not the body's exception: it would come out of the task group wrapped in an ExceptionGroup.
                await task_group.__aexit__(None, None, None)
