"""The request path of the typed client: ``RequestPath``, the part of ``Client`` every call goes through (the
generated stubs, ``client.request``, ``call_tool`` and friends, the list walks).

Where it sits: in the ``client`` layer, on top of ``connection`` (which sends, and knows what was negotiated). For
one request it checks that the message type belongs to the negotiated version, gates the call by the server's
capabilities (``CapabilityError``, nothing sent), applies the client's ``request_timeout`` when the call names
none, and parses the result as the negotiated version's model (``InvalidResultError``). In the legacy era the
request is sent as it is. In the modern era it is stamped with the request ``_meta`` and its result completed
(``modern.complete_result``); an ``InputRequiredResult`` is answered by the handlers and the request retried
(``input_required``); over HTTP a ``tools/call`` first learns the tool's ``x-mcp-header`` annotations (the
``ToolLists`` it is given lists the tools), and a ``HeaderMismatch`` answer has the tools listed again and the call
retried once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast

from pydantic import BaseModel, ValidationError

from mcp_bindings import base as _base

from ..jsonrpc.context import ProgressCallback
from ..jsonrpc.envelopes import JSONRPCError
from .capabilities import has_path
from .connection import Connection
from .errors import CapabilityError, InvalidResultError, VersionMismatchError
from .handlers import HandlerDispatch
from .input_required import call_with_rounds
from .modern import HEADER_MISMATCH, ModernState, complete_result
from .settings import ClientSettings
from .versions import MODELS_MODULE_VERSION, VersionSpec

__all__ = ["RequestPath", "ToolLists", "model_params"]

ParamsT = TypeVar("ParamsT")


class ToolLists(Protocol):
    """What the request path needs of the tool list for the ``Mcp-Param-*`` headers of a modern ``tools/call`` over
    HTTP (``lists.ServerLists`` is it)."""

    async def learn_tool_headers(self, name: object) -> None:
        """List the tools first if ``name`` was never seen, so its annotations are known."""
        ...

    async def relist_tools(self) -> None:
        """List the tools again (their annotations may have changed)."""
        ...


def model_params(params: object) -> dict[str, Any] | None:
    """The wire params of a generated params model (None: no params)."""
    if params is None:
        return None
    if not isinstance(params, BaseModel):
        raise TypeError(f"params must be a generated model, not {type(params).__name__}")
    return params.model_dump(mode="json")


class RequestPath:
    """Gating, sending and parsing one request, in either era."""

    def __init__(
        self, connection: Connection, settings: ClientSettings, dispatch: HandlerDispatch, tools: ToolLists
    ) -> None:
        self._connection = connection
        self._settings = settings
        self._dispatch = dispatch
        self._tools = tools

    def allows(self, method: str) -> bool:
        """Whether the server's capabilities allow calling ``method``; True for any method of the version when they
        are unknown (a pinned modern mode)."""
        route = self._connection.negotiated().server_routes.get(method)
        if route is None:
            return False
        gated = self._connection.capabilities_known and route.capability is not None
        return not gated or has_path(self._connection.server_capabilities, cast(str, route.capability))

    def check_version(self, message_type: type[Any]) -> VersionSpec:
        """The negotiated version, after checking that ``message_type`` is one of its generated classes."""
        spec = self._connection.negotiated()
        version = MODELS_MODULE_VERSION.get(message_type.__module__)
        if version != spec.version:
            # Parsing the answer as another version's class would hand the caller a model its type does not match.
            raise VersionMismatchError(
                f"{message_type.__name__} is from MCP {version or message_type.__module__}, "
                f"but this connection speaks {spec.version}"
            )
        return spec

    async def notify(self, notification_type: type[_base.Notification[ParamsT]], params: ParamsT) -> None:
        """Send one typed notification, gated by our own capabilities (for notifications they are the sender's)."""
        spec = self.check_version(notification_type)
        method = notification_type.METHOD
        route = spec.server_notification_routes.get(method)
        capability = route.capability if route is not None else None
        if capability is not None and not has_path(self._connection.client_capabilities, capability):
            raise CapabilityError(method, capability, whose="client")
        await self._connection.notify(method, model_params(params))

    async def invoke(
        self, method: str, params: dict[str, Any] | None, timeout: float | None, progress: ProgressCallback | None
    ) -> Any:
        """Gate, send (with the input rounds of a modern request) and parse one request as the negotiated version's
        model."""
        return self.parse(method, await self.gated_call(method, params, timeout, progress))

    def parse(self, method: str, raw: dict[str, Any]) -> Any:
        """A raw result as the negotiated version's model of ``method``'s result."""
        spec = self._connection.negotiated()
        try:
            return spec.package.parse_result(method, raw)
        except ValidationError as exc:
            raise InvalidResultError(f"invalid {method} result for MCP {spec.version}: {exc}") from exc

    async def gated_call(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
        declare: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``call`` after gating by the server's capabilities, with the client's ``request_timeout`` when
        ``timeout`` is None: the raw result (``declare``: see ``call``)."""
        connection = self._connection
        spec = connection.negotiated()
        route = spec.server_routes.get(method)
        capability = route.capability if route is not None else None
        if (
            connection.capabilities_known
            and capability is not None
            and not has_path(connection.server_capabilities, capability)
        ):
            raise CapabilityError(method, capability)
        timeout = timeout if timeout is not None else self._settings.request_timeout
        if connection.modern is None:  # the legacy era: sent as it is (what `call` does, one call less)
            return await connection.send(method, params, timeout, progress)
        return await self.call(method, params, timeout, progress, declare)

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
        declare: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The raw result of one request: as sent in the legacy era; in the modern one stamped with ``_meta``,
        completed (``resultType``, cache hints) and driven through its input rounds. ``declare``: capabilities
        this request declares on top of the client's (modern era; the tasks extension for a task request)."""
        state = self._connection.modern
        if state is None:
            return await self._connection.send(method, params, timeout, progress)

        async def send(again: dict[str, Any] | None) -> dict[str, Any]:
            return await self._send_modern(state, method, again, timeout, progress, declare)

        async def answer(input_method: str, input_params: Mapping[str, Any]) -> dict[str, Any]:
            return await self._dispatch.answer_input(input_method, input_params, self._connection.negotiated().package)

        # The generated route says whether the server may answer this method with InputRequiredResult.
        route = self._connection.negotiated().server_routes.get(method)
        multi_round = route is not None and route.input_required_result is not None
        rounds = self._settings.max_input_rounds if multi_round else None
        return await call_with_rounds(method, params, send, answer, rounds)

    async def _send_modern(
        self,
        state: ModernState,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
        declare: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        connection = self._connection
        if method == "tools/call" and connection.http and isinstance(params, dict):
            await self._tools.learn_tool_headers(params.get("name"))
        try:
            raw = await connection.send(method, state.stamp(params, declare), timeout, progress)
        except JSONRPCError as exc:
            if exc.code != HEADER_MISMATCH or method != "tools/call" or not connection.http:
                raise
            # The tool's x-mcp-header annotations may have changed: list the tools again and retry once (the spec's
            # SHOULD for a HeaderMismatch answer).
            await self._tools.relist_tools()
            raw = await connection.send(method, state.stamp(params, declare), timeout, progress)
        result = complete_result(method, raw)
        state.observe(result)
        return result
