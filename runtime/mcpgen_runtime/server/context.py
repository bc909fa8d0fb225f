"""The ``Context`` a tool, resource or prompt function receives when it declares a parameter annotated with it.

Where it sits: the bottom of the ``server`` layer. Created by ``connection.ServerConnection`` for each incoming
request and handed to the functions registered through ``authoring``; it wraps the session's ``RequestContext``
(progress, request id) and the connection (negotiated version, client capabilities, log level) so that a function
can talk back to the client: progress, log messages, sampling and elicitation. What it needs of the connection is
the ``ConnectionView`` protocol below, so that this module (which ``authoring`` needs at import time) does not import
``connection`` (which needs ``authoring``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Final, Protocol

from pydantic import BaseModel

from ..jsonrpc.context import RequestContext
from ..jsonrpc.envelopes import RequestId
from ..protocol.results import ResultValidationError
from ..transports.http_session import close_sse_stream

__all__ = ["LOG_LEVELS", "CapabilityError", "ConnectionView", "Context", "InvalidClientResultError"]

# RFC 5424 severities in increasing order, as MCP names them.
LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class CapabilityError(RuntimeError):
    """The client did not declare (or the negotiated protocol version does not have) what a call needs."""


class InvalidClientResultError(ResultValidationError):
    """The client answered ``sampling/createMessage`` / ``elicitation/create`` with something the negotiated
    version's result model rejects (raised by ``Context.sample`` and ``Context.elicit``)."""


class ConnectionView(Protocol):
    """What a ``Context`` uses of the connection it serves a request on (``connection.ServerConnection``)."""

    @property
    def protocol_version(self) -> str:
        """The negotiated version ("" until ``initialize`` has been answered)."""
        ...

    @property
    def bindings(self) -> ModuleType:
        """The generated package of the negotiated version (``mcp_bindings.v2025_06_18`` ...)."""
        ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...

    @property
    def client_info(self) -> dict[str, Any]: ...

    async def send_log(self, level: str, data: Any, logger_name: str | None = None) -> None: ...

    async def request_client(self, method: str, params: dict[str, Any], *, timeout: float | None = None) -> Any: ...


class Context:
    """What a registered function can do for the request it is serving."""

    def __init__(self, connection: ConnectionView, request: RequestContext) -> None:
        self._connection = connection
        self._request = request

    # -- about the request and the connection ---------------------------------------------------------------------

    @property
    def request_id(self) -> RequestId:
        return self._request.request_id

    @property
    def meta(self) -> dict[str, Any] | None:
        """The request's ``_meta``, if any."""
        return self._request.meta

    @property
    def protocol_version(self) -> str:
        return self._connection.protocol_version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared in ``initialize``, as JSON."""
        return self._connection.client_capabilities

    @property
    def client_info(self) -> dict[str, Any]:
        return self._connection.client_info

    @property
    def connection(self) -> ConnectionView:
        """The connection this request came in on (a ``ServerConnection``)."""
        return self._connection

    # -- progress and logging -------------------------------------------------------------------------------------

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for progress on this request (else nothing)."""
        if message is not None and self._connection.protocol_version == "2024-11-05":
            message = None  # 2024-11-05 progress notifications have no message
        await self._request.report_progress(progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` at ``level`` (one of ``LOG_LEVELS``) with any JSON ``data``.

        Dropped when the server did not declare ``logging`` or the level is below the one the client set with
        ``logging/setLevel``."""
        await self._connection.send_log(level, data, logger)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # -- the transport --------------------------------------------------------------------------------------------

    async def close_sse_stream(self) -> bool:
        """End the HTTP connection that carries this request's SSE stream, without ending the stream (SEP-1699,
        MCP 2025-11-25 "polling"): the client reconnects after the server's ``retry`` interval with GET and
        ``Last-Event-ID`` and receives what was sent meanwhile, this request's result included. Call it before long
        work so that no connection is held open for it.

        True if the connection was ended. False, and nothing done, when the client could not resume: not
        streamable HTTP, JSON answers, resumability off, or a client older than 2025-11-25 (no priming event)."""
        return await close_sse_stream()

    # -- requests to the client -----------------------------------------------------------------------------------

    async def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any] | BaseModel],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Mapping[str, Any] | None = None,
        include_context: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Ask the client's LLM for a completion (``sampling/createMessage``); returns the negotiated version's
        ``CreateMessageResult``. A str message is a user text message. Raises ``CapabilityError`` if the client did
        not declare ``sampling``, ``JSONRPCError`` if it refused, ``InvalidClientResultError`` (naming the
        fields) if its answer is not a valid ``CreateMessageResult`` of the negotiated version."""
        self._require("sampling", "sampling/createMessage")
        params: dict[str, Any] = {"messages": _sampling_messages(messages), "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
            "modelPreferences": dict(model_preferences) if model_preferences is not None else None,
            "includeContext": include_context,
            "metadata": dict(metadata) if metadata is not None else None,
        }
        params.update({key: value for key, value in optional.items() if value is not None})
        return await self._connection.request_client("sampling/createMessage", params, timeout=timeout)

    async def elicit(
        self, message: str, schema: type[BaseModel] | Mapping[str, Any], *, timeout: float | None = None
    ) -> Any:
        """Ask the user for structured input (``elicitation/create``, 2025-06-18 and later); returns the negotiated
        version's ``ElicitResult`` (``action`` is accept / decline / cancel; ``content`` holds the answers). ``schema``
        is a pydantic model (flat, primitive fields) or a JSON schema object. Raises ``CapabilityError`` if the
        client did not declare ``elicitation`` or the protocol version has none, ``InvalidClientResultError``
        (naming the fields) if the answer is not a valid ``ElicitResult`` of the negotiated version."""
        self._require("elicitation", "elicitation/create")
        requested = schema.model_json_schema() if isinstance(schema, type) else dict(schema)
        requested.pop("title", None)
        params = {"message": message, "requestedSchema": requested}
        return await self._connection.request_client("elicitation/create", params, timeout=timeout)

    def _require(self, capability: str, method: str) -> None:
        if method not in self._connection.bindings.REQUEST_TYPES:
            raise CapabilityError(f"{method} does not exist in MCP {self.protocol_version}")
        if capability not in self.client_capabilities:
            raise CapabilityError(f"the client did not declare the {capability!r} capability; cannot send {method}")


def _sampling_messages(messages: str | Sequence[str | Mapping[str, Any] | BaseModel]) -> list[dict[str, Any]]:
    items = [messages] if isinstance(messages, str) else list(messages)
    result: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            result.append({"role": "user", "content": {"type": "text", "text": item}})
        elif isinstance(item, BaseModel):
            result.append(item.model_dump(mode="json", by_alias=True))
        else:
            result.append(dict(item))
    return result
