"""The typed MCP client side: ``Client`` connects to a server, negotiates a version and sends through its stubs.

``Client`` is put together from parts with one job each, every one given what it needs when it is made:

- ``targets``: what ``Client.connect(target)`` takes (a URL, a command, an in-process server, a stream, or
  ``Stdio`` / ``HTTP`` / ``InProcess`` with the transport's settings) and how each is opened.
- ``client``: ``Client`` (the public face: connecting to a target; what was negotiated; the
  ``Peer`` the generated stubs send through; calls by name; the lists; ``listen``) and ``ClientContext``.
- ``settings``: ``ClientSettings``, the options, checked once and shared by the parts; the defaults.
- ``connection``: ``Connection``, the session and what was negotiated over it: the era (``mode``), the version,
  both sides' capabilities, the ``initialize`` / ``server/discover`` result; ``send`` turns the transport's own
  errors into the client's.
- ``requests``: ``RequestPath``, how one request goes: version check, capability gating, timeout, the modern
  ``_meta`` and input rounds, parsing the result.
- ``lists``: ``ServerLists``, the cached ``tools()`` / ``prompts()`` / ``resources()`` / ``resource_templates()``
  and their page walks in either era; ``list_cache``: ``ListCache``, one cached list.
- ``handlers``: ``HandlerDispatch``, the user's ``ClientHandlers``: what they advertise and how they answer the
  server's requests (legacy), input requests (modern) and notifications.
- ``input_required``: multi round-trip requests (modern): answering ``InputRequiredResult`` rounds, within a limit.
- ``subscriptions``: ``subscriptions/listen`` (modern): ``Subscriptions`` opens them, ``Subscription`` is one.
- ``tasks``: tool calls run as tasks in either era (the 2026-07-28 extension ``io.modelcontextprotocol/tasks``,
  2025-11-25 core tasks): ``Tasks`` starts and follows them, ``TaskHandle`` is one (``status``, ``result``,
  ``cancel``); ``task_info``: ``TaskInfo``, a task's state read from either era's wire shape.
- ``tool_headers``: ``x-mcp-header`` (modern, HTTP): the rules, and ``ToolHeaders``, what the listed tools ask to be
  mirrored into ``Mcp-Param-*`` headers.
- ``modern``: what the modern era needs without a connection: the modes, the ``_meta`` stamp (``ModernState``),
  the ``server/discover`` probe, completing results.
- ``versions``: the versions the client speaks (``VersionSpec``: bindings, stubs, routes, loaded on first use) and
  the type aliases over them (``AnyClientStub``, ``AnyTool`` ...); ``errors``: the client's exceptions;
  ``capabilities``: capability paths.
- ``skills`` (package): the skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): ``SkillsClient``
  (``client.skills``) lists and loads skills, every fetched file verified against the listed entry; PyYAML (the
  ``skills`` extra) loads only when a skill is loaded.
- ``apps``: MCP Apps on the host side: the ``io.modelcontextprotocol/ui`` capability (``apps_capabilities``), a
  tool's ``_meta.ui`` (``tool_ui``, ``model_tools``) and reading a checked ``ui://`` resource (``read_ui_resource``).
- ``auth`` (package): OAuth 2.1 (``OAuthProvider`` for ``connect_http(url, auth=...)``; authlib loads only when it
  is used).

May import: ``jsonrpc`` (the session), ``transports`` (stdio, ``answer_guard`` and ``undeliverable`` eagerly, and the
httpx2-free modules of ``http.client``; ``http.client.stream`` only when ``targets`` opens an HTTP target, so that stdio
clients do not import httpx2), ``protocol`` (result validation), the runtime's ``versions``, the standard library,
anyio, pydantic and ``mcp_bindings``; never ``server`` (the two sides share only what is below them). This package
re-exports the names a client author needs.
"""

from typing import TYPE_CHECKING, Any

from ..versions import (
    LATEST_LEGACY_VERSION,
    LATEST_MODERN_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
)
from . import versions
from .apps import AppsError, UiResource, apps_capabilities, model_tools, read_ui_resource, tool_ui
from .auth.errors import AuthorizationError
from .client import Client, ClientContext, ClientOptions, ConnectOptions
from .errors import (
    CapabilityError,
    ClientError,
    InvalidResultError,
    MalformedResponseError,
    PaginationError,
    TaskCancelledError,
    UnsupportedVersionError,
    VersionMismatchError,
)
from .input_required import DEFAULT_MAX_INPUT_ROUNDS, InputRequiredError
from .list_cache import ListCache
from .modern import DEFAULT_DISCOVER_TIMEOUT
from .settings import DEFAULT_MAX_PAGES, DEFAULT_REQUEST_TIMEOUT
from .skills import (
    SKILLS_EXTENSION,
    InvalidSkillEntryError,
    LoadedSkill,
    SkillEntry,
    SkillError,
    SkillFile,
    SkillsClient,
    SkillVerificationError,
    UnknownSkillError,
    UnverifiableSkillError,
)
from .subscriptions import DEFAULT_MAX_PENDING, Subscription, SubscriptionLostError
from .targets import HTTP, ConnectTarget, InProcess, InProcessServer, Stdio
from .task_info import TASKS_EXTENSION, TaskInfo
from .tasks import (
    DEFAULT_MAX_POLL_INTERVAL,
    DEFAULT_MIN_POLL_INTERVAL,
    DEFAULT_POLL_INTERVAL,
    TaskHandle,
    TaskPolling,
)

_UNIONS = (
    "AnyCallToolResult",
    "AnyClientHandlers",
    "AnyClientStub",
    "AnyGetPromptResult",
    "AnyReadResourceResult",
)

if TYPE_CHECKING:
    from .versions import (
        AnyCallToolResult,
        AnyClientHandlers,
        AnyClientStub,
        AnyGetPromptResult,
        AnyReadResourceResult,
    )
else:

    def __getattr__(name: str) -> Any:
        # The unions over every version's stubs and results, built on first use (see versions): not on import.
        if name in _UNIONS:
            value = getattr(versions, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_DISCOVER_TIMEOUT",
    "DEFAULT_MAX_INPUT_ROUNDS",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_MAX_PENDING",
    "DEFAULT_MAX_POLL_INTERVAL",
    "DEFAULT_MIN_POLL_INTERVAL",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_REQUEST_TIMEOUT",
    "HTTP",
    "LATEST_LEGACY_VERSION",
    "LATEST_MODERN_VERSION",
    "LEGACY_VERSIONS",
    "MODERN_VERSIONS",
    "SKILLS_EXTENSION",
    "SUPPORTED_VERSIONS",
    "TASKS_EXTENSION",
    "AnyCallToolResult",
    "AnyClientHandlers",
    "AnyClientStub",
    "AnyGetPromptResult",
    "AnyReadResourceResult",
    "AppsError",
    "AuthorizationError",
    "CapabilityError",
    "Client",
    "ClientContext",
    "ClientError",
    "ClientOptions",
    "ConnectOptions",
    "ConnectTarget",
    "InProcess",
    "InProcessServer",
    "InputRequiredError",
    "InvalidResultError",
    "InvalidSkillEntryError",
    "ListCache",
    "LoadedSkill",
    "MalformedResponseError",
    "PaginationError",
    "SkillEntry",
    "SkillError",
    "SkillFile",
    "SkillVerificationError",
    "SkillsClient",
    "Stdio",
    "Subscription",
    "SubscriptionLostError",
    "TaskCancelledError",
    "TaskHandle",
    "TaskInfo",
    "TaskPolling",
    "UiResource",
    "UnknownSkillError",
    "UnsupportedVersionError",
    "UnverifiableSkillError",
    "VersionMismatchError",
    "apps_capabilities",
    "model_tools",
    "read_ui_resource",
    "tool_ui",
]
