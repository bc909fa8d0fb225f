"""The errors the typed client raises itself (a JSON-RPC error the server sends stays ``JSONRPCError``).

Where it sits: in the ``client`` layer, below every other client module. ``ClientError`` is the base of all of them,
``InputRequiredError`` (``input_required``), ``SubscriptionLostError`` (``subscriptions``), ``TaskCancelledError`` and
``client.auth.AuthorizationError`` included.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CapabilityError",
    "ClientError",
    "InvalidResultError",
    "MalformedResponseError",
    "PaginationError",
    "TaskCancelledError",
    "UnsupportedVersionError",
    "VersionMismatchError",
]


class ClientError(Exception):
    """Base of the errors the typed client raises itself (JSON-RPC errors from the server stay ``JSONRPCError``)."""


class UnsupportedVersionError(ClientError):
    """The server answered ``initialize`` with a protocol version this client does not speak (or not the one
    that was required); the connection has been closed."""

    def __init__(self, answered: object, accepted: Sequence[str]) -> None:
        super().__init__(
            f"server answered with MCP protocol version {answered!r}; this client accepts {', '.join(accepted)}"
        )
        self.answered = answered
        self.accepted = tuple(accepted)


class CapabilityError(ClientError):
    """A call the negotiated capabilities do not allow; raised before anything is sent."""

    def __init__(self, method: str, capability: str, whose: str = "server") -> None:
        super().__init__(f"{method!r} needs the {whose} capability {capability!r}, which the {whose} did not declare")
        self.method = method
        self.capability = capability


class VersionMismatchError(ClientError):
    """A model or stub of one MCP version used on a connection that negotiated another."""


class InvalidResultError(ClientError):
    """The server's result does not validate as the method's result class of the negotiated version."""


class MalformedResponseError(ClientError):
    """The answer to a call arrived but could not be delivered: not JSON, over the transport's size limit, or an
    object with the call's id but neither ``result`` nor ``error``. Raised at once, instead of a wait for the
    timeout; ``reason`` says which."""

    def __init__(self, method: str, reason: str) -> None:
        super().__init__(f"the server's answer to {method!r} cannot be used: {reason}")
        self.method = method
        self.reason = reason


class PaginationError(ClientError):
    """A list walk (``client.tools()`` and friends) stopped: the server repeated a cursor, or had more pages than the
    client's ``max_pages``. ``pages`` were fetched; ``cursor`` is the next cursor the server sent."""

    def __init__(self, message: str, pages: int, cursor: str) -> None:
        super().__init__(message)
        self.pages = pages
        self.cursor = cursor


class TaskCancelledError(ClientError):
    """The task whose result was asked for ended ``cancelled`` (by ``TaskHandle.cancel``, another client or the
    server): there is no result. A failed task raises its JSON-RPC error instead, as the call itself would have."""

    def __init__(self, task_id: str, status_message: str | None) -> None:
        detail = f": {status_message}" if status_message else ""
        super().__init__(f"task {task_id!r} was cancelled{detail}")
        self.task_id = task_id
        self.status_message = status_message
