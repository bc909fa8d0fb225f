"""The options of a ``Client`` (``ClientSettings``), checked once and shared by its parts, and their defaults.

Where it sits: in the ``client`` layer, below the parts of ``Client`` that read the options (``requests`` the
timeout and the round limit, ``lists`` the page limit, ``connection`` the mode, identity and log level). The
settings stay mutable, as the client's attributes always were: ``client.request_timeout = 5`` (a ``Setting``)
changes the next call.

Every option is a typed keyword parameter of ``Client`` and of each ``connect*`` function, so a misspelt one fails
in mypy and, at run time, with Python's own ``TypeError: ... got an unexpected keyword argument 'mdoe'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar, cast, overload

from .input_required import DEFAULT_MAX_INPUT_ROUNDS
from .modern import DEFAULT_DISCOVER_TIMEOUT, MODES
from .versions import VERSIONS

__all__ = [
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_INITIALIZE_TIMEOUT",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_REQUEST_TIMEOUT",
    "ClientSettings",
    "Setting",
]

T = TypeVar("T")

# Seconds a request may take before it raises TimeoutError (and the server is sent notifications/cancelled). The
# official Python SDK gives up on an SSE stream after 300 s of silence (its HTTP read timeout) and sets no timeout on
# the request itself; 300 s as a whole-request limit bounds the same wait on every transport (a server answering
# with the wrong id over stdio, one that holds a stream open and never answers) while leaving room for slow tools.
# None (on the client) or math.inf (per call) waits forever.
DEFAULT_REQUEST_TIMEOUT: Final = 300.0
# Pages a list walk (client.tools() and friends) requests at most: each page is a round trip and its items are kept,
# so a server that hands out a new nextCursor forever must be stopped (the stubs' own default, MAX_PAGES, is the same).
DEFAULT_MAX_PAGES: Final = 1000
# Seconds `initialize` (legacy era) may take.
DEFAULT_INITIALIZE_TIMEOUT: Final = 30.0
DEFAULT_CLIENT_INFO: Final = {"name": "mcpgen-client", "version": "0.1.0"}


@dataclass(slots=True)
class ClientSettings:
    """What ``Client(...)`` was configured with (see ``Client`` for each option); checked on creation."""

    client_info: dict[str, Any]
    capabilities: dict[str, Any]  # merged over the advertised ones
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    max_pages: int = DEFAULT_MAX_PAGES
    mode: str = "auto"
    log_level: str | None = None
    max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS
    discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT
    tasks: bool = False  # declare the 2026-07-28 tasks extension on every modern request (see tasks)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            hint = (
                " (a legacy, handshake version: pass it as version= with mode='legacy')"
                if self.mode in VERSIONS
                else ""
            )
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}{hint}")
        if self.max_pages < 1:
            raise ValueError(f"max_pages must be at least 1, not {self.max_pages}")
        if self.max_input_rounds < 0:
            raise ValueError(f"max_input_rounds must not be negative, not {self.max_input_rounds}")


class HasSettings(Protocol):
    @property
    def settings(self) -> ClientSettings: ...


class Setting(Generic[T]):
    """An attribute of ``Client`` that reads and writes the ``ClientSettings`` field of the same name: the parts
    hold the settings, so a change through the client reaches them."""

    def __init__(self) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, instance: HasSettings, owner: type) -> T: ...

    def __get__(self, instance: HasSettings | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        return cast(T, getattr(instance.settings, self.name))

    def __set__(self, instance: HasSettings, value: T) -> None:
        setattr(instance.settings, self.name, value)
