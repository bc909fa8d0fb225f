"""Testing a server in process: ``connect_in_memory(server)`` is a ``Client`` connected to a ``Server`` over memory
streams, with no subprocess and no port. Everything of a real connection runs (version negotiation, capabilities,
the server's lifespan and middleware, server -> client requests to the client's handlers); only the bytes do not
leave the process. The machinery is the client's (``client.targets.InProcess``: ``Client.connect(server)`` does the
same); this name stays for the tests that use it.

Where it sits: above both ``server`` and ``client`` (which never import each other), below the package's
``__init__``. May import: the public entry points of ``server`` and ``client``. In use::

    async with connect_in_memory(server, version="2025-11-25") as client:
        api = client.stub(ClientStub)
        result = await api.call_tool(CallToolRequestParams(name="add", arguments={"a": 1, "b": 2}))
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Unpack

from .client import Client, ConnectOptions
from .client.targets import SERVER_SHUTDOWN_TIMEOUT, InProcess
from .server import Server

__all__ = ["SERVER_SHUTDOWN_TIMEOUT", "connect_in_memory"]


def connect_in_memory(
    server: Server[Any],
    *,
    guard_answers: bool = True,
    max_requests_in_flight: int | None = None,
    **options: Unpack[ConnectOptions],
) -> AbstractAsyncContextManager[Client]:
    """``Client.connect(InProcess(server, max_requests_in_flight=...), **options)``, kept for existing tests (new
    code can pass the server itself: ``Client.connect(server)``). Options as for ``Client.connect``: the default
    ``mode="auto"`` negotiates 2026-07-28 with a mcpgen server; ``version="2025-11-25"`` the legacy era. See
    ``client.targets.InProcess`` for the lifespan and shutdown rules (``SERVER_SHUTDOWN_TIMEOUT``)."""
    target = InProcess(server, max_requests_in_flight=max_requests_in_flight)
    return Client.connect(target, guard_answers=guard_answers, **options)
