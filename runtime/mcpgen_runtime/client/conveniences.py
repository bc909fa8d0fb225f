"""What ``Client`` offers beyond the generated stub, the same in both eras: ``call_tool``, ``get_prompt`` and
``read_resource`` by name (no params model to build, and in 2026-07-28 no ``_meta`` either), ``request_meta`` for
those who build the 2026-07-28 params models themselves, and ``listen`` (``subscriptions/listen``).

Where it sits: in the ``client`` layer, a base class of ``Client`` (``client.py``), which provides the members
declared here; split out to keep that module about the connection and the request path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

from .client_support import ClientError
from .subscriptions import DEFAULT_MAX_PENDING, Subscription, Subscriptions, open_subscription

if TYPE_CHECKING:
    from types import ModuleType

    from ..jsonrpc.context import ProgressCallback
    from ..jsonrpc.session import Session
    from .modern import ModernState

__all__ = ["ConveniencesMixin"]


class ConveniencesMixin:
    """Calls by name and subscriptions, for ``Client``."""

    _modern: ModernState | None
    _subscriptions: Subscriptions

    @property
    def protocol_version(self) -> str:
        raise NotImplementedError

    @property
    def bindings(self) -> ModuleType:
        raise NotImplementedError

    @property
    def session(self) -> Session:
        raise NotImplementedError

    async def _invoke(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> Any:
        raise NotImplementedError

    async def _call(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
    ) -> Any:
        """``tools/call``: the negotiated version's ``CallToolResult`` (input rounds handled, as for ``request``)."""
        params: dict[str, Any] = {"name": name, **({"arguments": dict(arguments)} if arguments is not None else {})}
        return await self._invoke("tools/call", params, timeout, progress_callback)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> Any:
        """``prompts/get``: the negotiated version's ``GetPromptResult``."""
        params: dict[str, Any] = {"name": name, **({"arguments": dict(arguments)} if arguments is not None else {})}
        return await self._invoke("prompts/get", params, timeout, None)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> Any:
        """``resources/read``: the negotiated version's ``ReadResourceResult``."""
        return await self._invoke("resources/read", {"uri": uri}, timeout, None)

    def request_meta(self) -> dict[str, Any]:
        """The ``_meta`` a modern request carries (``client.bindings.RequestMetaObject.model_validate`` of it builds
        the params models of 2026-07-28, whose ``_meta`` is required; the client fills it in on sending anyway)."""
        if self._modern is None:
            raise ClientError(f"MCP {self.protocol_version} has no per-request _meta")
        return cast(dict[str, Any], self._modern.stamp(None)["_meta"])

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        ack_timeout: float | None = 30.0,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream (modern era) for the list changes and resource updates asked for,
        and yield it once the server acknowledged it (within ``ack_timeout`` seconds); see ``subscriptions``."""
        if self._modern is None:
            raise ClientError(
                f"subscriptions/listen needs MCP 2026-07-28; this connection speaks {self.protocol_version}"
            )
        wanted: dict[str, Any] = {}
        for key, on in (
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ):
            if on:
                wanted[key] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)

        async def call() -> None:
            await self._call("subscriptions/listen", {"notifications": wanted}, math.inf, None)

        # The subscription id is the listen request's JSON-RPC id: the one the session gives its next request (read
        # here, and the request is sent with no await in between, so no other request can take it first).
        return open_subscription(
            call,
            self.session.next_request_id,
            self.bindings,
            self._subscriptions,
            ack_timeout=ack_timeout,
            max_pending=max_pending,
        )
