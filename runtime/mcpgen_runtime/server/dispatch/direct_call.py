"""The direct lane of a modern ``tools/call``: the commonest request of the current protocol, answered in one
function when nothing about it needs the general dispatch.

Where it sits: in the ``server`` layer, beside ``modern`` (the general one-call dispatch of a modern request), which
tries it first (``answer_http``, and ``ServerConnection`` over stdio). ``direct_plan`` decides, before anything runs,
whether the request may take the lane; only then does ``answer_direct`` call the tool. A request that may not is
served by ``modern.serve_modern`` exactly as if this module did not exist, so the lane never decides an error: every
request it takes is one the general path would answer with the tool's result.

Why: the general path is built for everything a request may do: middleware, a ``Context`` (progress, logging,
input requests, tasks), ``Mcp-Param-*`` headers, params validated into the version's model for the field paths of
its errors. A plain ``tools/call`` of a tool that takes no ``Context`` uses none of it, yet its ``ModernRequest``,
``Context``, handlers object, params model and five frames of layering cost more than the tool and the JSON together
(about half of the server's CPU for such a request).

What the lane requires (else the general path serves the request):
- no middleware (a middleware sees every request);
- params with nothing but ``name`` (a string), ``arguments`` (an object, or absent: not null) and ``_meta``, a ``_meta`` equal
  to one validated before for this version (``request_meta.ValidatedMetas``: the first request of a kind takes the
  general path, which validates and caches it) with no ``progressToken``, naming a modern version;
- the version serves ``tools/call``, the tool exists, takes no ``Context``, annotates no parameter as a header
  (``Mcp-Param-*``), and cannot run as a task (the server has no task engine or the tool forbids tasks).

What it does then is what the general path does for such a request, with the same functions: ``ToolDef.call``
(arguments validated, errors as ``isError`` results), ``handlers.tool_result``, ``modern.finished_result``, and a
``ProtocolError`` answered as ``handlers.protocol_error_answer`` and ``answers.failure_answer`` answer it.
``tests/runtime/test_modern_direct_call.py`` checks the answers are the same, byte for byte, with the lane on and
off.
"""

from __future__ import annotations

from typing import Any, Final

from ...jsonrpc.answers import failure_answer
from ...jsonrpc.envelopes import JSONParams, Request, encode_frame, success_response
from ...protocol.results import ValidResult
from ...versions import MODERN_VERSIONS, PROTOCOL_VERSION_META, resource_not_found_code
from ..authoring.errors import ProtocolError
from ..authoring.registry import ToolTable
from ..authoring.tool_definition import ToolDef
from .handlers import protocol_error_answer, tool_result
from .modern_serving import ModernServing, VersionServing, completed_result, finished_result
from .tool_headers import annotated_parameters
from .validation import source_of

__all__ = ["DirectPlan", "ToolLane", "ToolLanes", "answer_direct", "direct_plan", "direct_result"]

TOOLS_CALL: Final = "tools/call"
_ABSENT: Final = object()


class ToolLane:
    """What the lane needs of one tool in one version, derived once (see ``ToolLanes``): the version's serving,
    ``tools/call``'s route and the model of its ``_meta``, and the tool."""

    __slots__ = ("meta_model", "route", "served", "tool", "version")

    def __init__(self, served: VersionServing, version: str, route: Any, meta_model: Any, tool: ToolDef) -> None:
        self.served, self.version, self.route, self.meta_model, self.tool = served, version, route, meta_model, tool

    @property
    def name(self) -> str:  # what validation.source_of names a result by
        return self.tool.name

    def source(self) -> str:
        """Whose result it is, for the error when it is not valid."""
        return source_of(self.route, self)


class ToolLanes:
    """The lanes derived so far, per (version, tool name), or None for a tool that may not take the lane: at most
    one per modern version and registered tool, all dropped together when what they were derived from changes. Per
    request that leaves a dict look-up and one comparison, where deriving the lane again cost about as much as the
    rest of the lane's own work.

    What a lane is derived from: the tools (``ToolTable.generation`` counts every tool added, replaced or removed,
    which also decides whether ``tools/call`` is served at all), and the server's identity (``serverInfo``, in the
    lane's ``VersionServing``); nothing else of ``Registry.serving_key`` reaches a ``tools/call``'s answer, so a
    resource or prompt registered at run time keeps the lanes (their ``VersionServing`` is then an older one, equal
    in all they read of it)."""

    __slots__ = ("_key", "_lanes")

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._lanes: dict[tuple[str, str], Any] = {}  # ToolLane | None

    def get(self, serving: ModernServing, version: str, name: str) -> ToolLane | None:
        """The lane of the tool ``name`` in ``version`` (a modern version), or None."""
        server = serving.server
        tools = server.tools
        if type(tools) is not ToolTable:  # a table that does not count its changes: derived every time
            return _derived_lane(serving, version, name)
        key = (tools.generation, server.name, server.version, server.title)
        if key != self._key:
            self._lanes.clear()
            self._key = key
        lanes = self._lanes
        lane = lanes.get((version, name), _ABSENT)
        if lane is _ABSENT:
            lane = _derived_lane(serving, version, name)
            if name in tools:  # bounded by the tools: a name no tool has is not kept
                lanes[(version, name)] = lane
        return lane  # type: ignore[no-any-return]  # (a ToolLane or None: no cast, which is a call per request)


def _derived_lane(serving: ModernServing, version: str, name: str) -> ToolLane | None:
    served = serving.version(version)
    tools_call = served.tools_call
    tool = serving.server.tools.get(name)
    if tools_call is None or tool is None or tool.sig.context_param is not None:
        return None
    if serving.tasks is not None and tool.task_support != "forbidden":
        return None
    if annotated_parameters(tool.input_json_schema):
        return None
    route, meta_model = tools_call
    return ToolLane(served, version, route, meta_model, tool)


DirectPlan = tuple[ToolLane, "dict[str, Any] | None"]
"""A ``tools/call`` that may take the lane: its tool's lane, and its arguments (a tuple: made per request)."""


def direct_plan(serving: ModernServing, method: str, params: JSONParams) -> DirectPlan | None:
    """The plan of a request (``method``, ``params``) if it may take the lane (see the module docstring), else
    None."""
    if method != TOOLS_CALL or type(params) is not dict or serving.middleware:
        return None
    name, meta, arguments = params.get("name"), params.get("_meta"), params.get("arguments", _ABSENT)
    if len(params) != (2 if arguments is _ABSENT else 3):  # nothing but name, _meta and (maybe) arguments
        return None
    if arguments is _ABSENT:
        arguments = None
    elif type(arguments) is not dict:  # null too: the params model refuses it (-32602)
        return None
    if type(name) is not str or type(meta) is not dict or "progressToken" in meta:
        return None
    version = meta.get(PROTOCOL_VERSION_META)
    if type(version) is not str or version not in MODERN_VERSIONS:
        return None
    lanes = serving.lanes
    if lanes is None:
        lanes = serving.lanes = ToolLanes()
    lane = lanes.get(serving, version, name)
    if lane is None or serving.metas.get(lane.meta_model, meta) is None:
        return None
    return lane, arguments


async def direct_result(plan: DirectPlan) -> dict[str, Any]:
    """The result of the request ``plan`` was made for; its JSON-RPC error raised, as the general path raises it."""
    lane, arguments = plan
    try:
        outcome = await lane.tool.call(arguments, None)
    except ProtocolError as exc:
        code = resource_not_found_code(lane.version)
        raise protocol_error_answer(exc, "call_tool", lane.tool.name, code) from None
    served = lane.served
    if type(outcome) is ValidResult and served.server_info_valid:
        return completed_result(served, outcome, "complete")  # a tool's plain text (what tool_result keeps as is)
    returned = tool_result(outcome, served.bindings)
    return finished_result(served, lane.version, lane.route.result_type, returned, lane.source)


async def answer_direct(plan: DirectPlan, request: Request) -> tuple[dict[str, Any], bytes]:
    """The response to ``request`` (``plan``'s), as (message, frame): what the general path answers over HTTP."""
    try:
        message = success_response(request.id, await direct_result(plan))
        return message, encode_frame(message)
    except Exception as exc:
        return failure_answer(request, exc)
