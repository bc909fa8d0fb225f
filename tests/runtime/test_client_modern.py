"""The client in the modern era (MCP 2026-07-28) against a server written here on the raw JSON-RPC session, over
in-memory streams, so that each test decides exactly what the server answers and sees exactly what the client puts
on the wire: the modes and the ``server/discover`` fallback, the per-request ``_meta``, results without
``resultType``, multi round-trip requests and their round limit, cache hints, and ``subscriptions/listen``.
(The official SDK server and the conformance suite's mock servers are the peers of ``test_interop_sdk_server`` and
``tests/conformance/test_conformance_client``.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from client_fakes import FakeServer, connected

import mcp_bindings.v2025_11_25 as v4
import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.client import (
    Client,
    ClientContext,
    InputRequiredError,
    UnsupportedVersionError,
)

pytestmark = pytest.mark.anyio

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
Handler = Callable[[str, JSONParams, RequestContext], Awaitable[dict[str, Any]]]


class ModernServer:
    """A 2026-07-28 server on the raw session: ``server/discover``, tools, and whatever ``answers`` the test sets."""

    def __init__(self) -> None:
        self.requests: list[tuple[Any, str, dict[str, Any]]] = []  # (id, method, params)
        self.notifications: list[tuple[str, JSONParams]] = []
        self.answers: dict[str, Handler] = {}
        self.tools_ttl_ms: int | None = 60_000
        self.session: Session | None = None

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        self.requests.append((context.request_id, method, params))
        if method in self.answers:
            return await self.answers[method](method, params, context)
        if method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": True}},
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-fake", "version": "1.0"}},
            }
        if method == "tools/list":
            result: dict[str, Any] = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
            if self.tools_ttl_ms is not None:
                result |= {"resultType": "complete", "ttlMs": self.tools_ttl_ms, "cacheScope": "private"}
            return result  # without resultType and cache hints when tools_ttl_ms is None: an older server's shape
        if method == "tools/call":
            return {"content": [{"type": "text", "text": "done"}]}  # no resultType: complete
        raise MethodNotFound(method)

    async def on_notification(self, method: str, params: JSONParams) -> None:
        self.notifications.append((method, params))

    def methods(self) -> list[str]:
        return [method for _, method, _ in self.requests]


@asynccontextmanager
async def connect(server: ModernServer, **options: Any) -> AsyncIterator[Client]:
    client_end, server_end = memory_stream_pair()
    async with Session(server_end, request_handler=server.handle, notification_handler=server.on_notification) as peer:
        server.session = peer
        async with Client.connect(client_end, **{"mode": "auto", "request_timeout": 10, **options}) as client:
            yield client


class Asker(v4.client.ClientHandlers[ClientContext]):
    """Answers elicitation (with what it was asked) and sampling; records the questions."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        self.asked.append(params.message)
        assert context.request is None  # an MRTR input request arrives inside a result, not as a request
        return v4.ElicitResult(action="accept", content={"answer": params.message.upper()})


# -- modes and the discover probe -----------------------------------------------------------------------------------


async def test_auto_mode_adopts_the_modern_era_after_discover() -> None:
    server = ModernServer()
    async with connect(server, client_info={"name": "probe", "version": "1"}, log_level="debug") as client:
        assert (client.protocol_version, client.is_modern, client.bindings) == ("2026-07-28", True, v5)
        assert client.server_info is not None and client.server_info.name == "modern-fake"
        assert client.discover_result.supported_versions == ["2026-07-28"]
        assert client.allows("tools/call") and not client.allows("prompts/get")
        result = await client.call_tool("echo", {})
        assert isinstance(result, v5.CallToolResult) and result.result_type == "complete"
    assert server.methods() == ["server/discover", "tools/call"]  # no tools/list: x-mcp-header is for HTTP
    for _, _method, params in server.requests:
        meta = params["_meta"]
        assert meta[META_VERSION] == "2026-07-28" and meta[META_INFO] == {"name": "probe", "version": "1"}
        assert meta[META_CAPABILITIES] == {}
        assert meta["io.modelcontextprotocol/logLevel"] == "debug"  # the per-request opt-in to log messages
    assert server.notifications == []  # no notifications/initialized in 2026-07-28


async def test_auto_mode_falls_back_to_initialize_for_a_legacy_server() -> None:
    fake = FakeServer()  # answers server/discover with -32601, as a legacy-era server does
    async with connected(fake, mode="auto") as client:
        assert client.protocol_version == "2025-11-25" and not client.is_modern
        assert client.initialize_result.server_info.name == "fake"
    assert fake.methods()[:2] == ["server/discover", "initialize"]


async def test_auto_mode_falls_back_when_discover_is_not_answered_in_time() -> None:
    fake = FakeServer()
    original = fake.handle

    async def silent_discover(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "server/discover":
            await anyio.sleep_forever()
        return await original(method, params, context)

    fake.handle = silent_discover  # type: ignore[method-assign]
    with anyio.fail_after(10):
        async with connected(fake, mode="auto", discover_timeout=0.3) as client:
            assert client.protocol_version == "2025-11-25"


async def test_unsupported_version_naming_ours_is_probed_again() -> None:
    server = ModernServer()
    probes: list[str] = []

    async def picky(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        probes.append(params["_meta"][META_VERSION])
        if len(probes) == 1:
            raise JSONRPCError(-32022, "Unsupported protocol version", {"supported": ["2026-07-28"], "requested": "x"})
        del server.answers["server/discover"]
        return await server.handle(method, params, context)

    server.answers["server/discover"] = picky
    async with connect(server) as client:
        assert client.protocol_version == "2026-07-28"
    assert probes == ["2026-07-28", "2026-07-28"]


async def test_a_modern_server_without_a_version_of_ours_is_refused() -> None:
    server = ModernServer()

    async def future_only(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        raise JSONRPCError(-32022, "Unsupported protocol version", {"supported": ["2099-01-01"], "requested": "x"})

    server.answers["server/discover"] = future_only
    with pytest.raises(UnsupportedVersionError):
        async with connect(server):
            pass
    assert server.methods() == ["server/discover"]  # never fell back to initialize


async def test_pinned_mode_sends_no_probe_and_does_not_gate() -> None:
    server = ModernServer()
    async with connect(server, mode="2026-07-28") as client:
        assert client.protocol_version == "2026-07-28" and client.server_info is None
        assert client.allows("prompts/get")  # the server's capabilities are unknown
        await client.call_tool("echo", {})
    assert server.methods() == ["tools/call"]


def test_modes_are_checked() -> None:
    with pytest.raises(ValueError, match="handshake version"):
        Client(mode="2025-11-25")
    with pytest.raises(ValueError, match="max_input_rounds"):
        Client(max_input_rounds=-1)


# -- results --------------------------------------------------------------------------------------------------------


async def test_results_without_result_type_or_cache_hints_are_complete_and_stale() -> None:
    server = ModernServer()
    server.tools_ttl_ms = None  # an older server's tools/list: no resultType, ttlMs or cacheScope
    async with connect(server) as client:
        assert [tool.name for tool in await client.tools()] == ["echo"]
        assert [tool.name for tool in await client.tools()] == ["echo"]
    # No ttlMs counts as 0 (immediately stale): each tools() asks the server again.
    assert server.methods().count("tools/list") == 2


async def test_cache_hints_keep_a_list_fresh_and_list_changed_invalidates_it() -> None:
    server = ModernServer()
    async with connect(server) as client:
        await client.tools()
        await client.tools()
        assert server.methods().count("tools/list") == 1  # fresh for 60 s
        assert client.cache("tools").cached
        assert server.session is not None
        await server.session.notify("notifications/tools/list_changed")
        with anyio.fail_after(5):
            while client.cache("tools").cached:
                await anyio.sleep(0.01)
        await client.tools()
        assert server.methods().count("tools/list") == 2


async def test_tools_with_invalid_x_mcp_header_are_left_out() -> None:
    server = ModernServer()

    async def tools(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        number = {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
        region = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
        return {
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "public",
            "tools": [{"name": "bad", "inputSchema": number}, {"name": "good", "inputSchema": region}],
        }

    server.answers["tools/list"] = tools
    async with connect(server) as client:
        assert [tool.name for tool in await client.tools()] == ["good"]


# -- multi round-trip requests --------------------------------------------------------------------------------------


def input_required(key: str, message: str, state: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "resultType": "input_required",
        "inputRequests": {
            key: {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {}}},
            }
        },
    }
    if state is not None:
        result["requestState"] = state
    return result


async def test_input_required_is_answered_by_the_handlers_and_retried() -> None:
    server = ModernServer()

    async def two_rounds(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        responses, state = params.get("inputResponses"), params.get("requestState")
        if responses is None:
            return input_required("first", "name?", "s1")
        if state == "s1":
            assert responses == {"first": {"action": "accept", "content": {"answer": "NAME?"}}}
            return input_required("second", "city?", None)
        assert state is None and responses == {"second": {"action": "accept", "content": {"answer": "CITY?"}}}
        return {"resultType": "complete", "content": [{"type": "text", "text": "all answered"}]}

    server.answers["tools/call"] = two_rounds
    asker = Asker()
    async with connect(server, handlers=asker) as client:
        assert client.client_capabilities == {"elicitation": {}}
        result = await client.call_tool("echo", {"x": 1})
        assert result.content[0].text == "all answered"
    assert asker.asked == ["name?", "city?"]
    calls = [(request_id, params) for request_id, method, params in server.requests if method == "tools/call"]
    assert len(calls) == 3 and len({request_id for request_id, _ in calls}) == 3  # a new id each time
    assert all(params["arguments"] == {"x": 1} and params["name"] == "echo" for _, params in calls)
    assert all(params["_meta"][META_CAPABILITIES] == {"elicitation": {}} for _, params in calls)


async def test_the_round_limit_ends_a_call_that_never_completes() -> None:
    server = ModernServer()

    async def forever(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return input_required("again", "more?", "s")

    server.answers["tools/call"] = forever
    async with connect(server, handlers=Asker(), max_input_rounds=3) as client:
        with pytest.raises(InputRequiredError, match="after 3 rounds"):
            await client.call_tool("echo", {})
    assert server.methods().count("tools/call") == 4  # the call and three retries


async def test_an_input_request_no_handler_answers_fails_the_call() -> None:
    server = ModernServer()

    async def ask(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return input_required("q", "name?", None)

    server.answers["tools/call"] = ask
    async with connect(server) as client:  # no handlers: nothing answers elicitation
        with pytest.raises(InputRequiredError, match="elicitation/create"):
            await client.call_tool("echo", {})


async def test_handlers_of_2026_07_28_answer_input_requests_too() -> None:
    server = ModernServer()

    class Modern(v5.client.ClientHandlers[ClientContext]):
        async def elicit(self, params: v5.ElicitRequestParams, context: ClientContext) -> v5.ElicitResult:
            return v5.ElicitResult(action="decline")

    async def ask(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        if "inputResponses" not in params:
            return input_required("q", "name?", None)
        return {
            "resultType": "complete",
            "content": [{"type": "text", "text": params["inputResponses"]["q"]["action"]}],
        }

    server.answers["tools/call"] = ask
    async with connect(server, handlers=Modern()) as client:
        assert (await client.call_tool("echo", {})).content[0].text == "decline"


# -- subscriptions ----------------------------------------------------------------------------------------------------


async def test_listen_yields_typed_notifications_until_the_server_ends_it() -> None:
    server = ModernServer()
    finished = anyio.Event()

    async def listen(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict) and server.session is not None
        assert params["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
        tag = {"_meta": {SUBSCRIPTION_ID: context.request_id}}
        await server.session.notify(
            "notifications/subscriptions/acknowledged", {**tag, "notifications": {"toolsListChanged": True}}
        )
        await server.session.notify("notifications/tools/list_changed", tag)
        await server.session.notify("notifications/resources/updated", {**tag, "uri": "file:///a"})
        await finished.wait()
        return {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: context.request_id}}

    server.answers["subscriptions/listen"] = listen
    async with connect(server) as client:
        await client.tools()
        async with client.listen(tools=True, resource_uris=["file:///a"]) as subscription:
            assert subscription.acknowledged.tools_list_changed is True
            assert subscription.acknowledged.resource_subscriptions is None  # the server did not agree to it
            first = await subscription.next()
            assert isinstance(first, v5.ToolListChangedNotification)
            assert not client.cache("tools").cached  # the list_changed invalidated the tools cache
            second = await subscription.next()
            assert isinstance(second, v5.ResourceUpdatedNotification) and second.params.uri == "file:///a"
            finished.set()
            assert [n async for n in subscription] == []  # the graceful end ends the iteration


async def test_leaving_a_subscription_cancels_the_listen_request() -> None:
    server = ModernServer()
    cancelled = anyio.Event()

    async def listen(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert server.session is not None
        tag = {"_meta": {SUBSCRIPTION_ID: context.request_id}}
        await server.session.notify("notifications/subscriptions/acknowledged", {**tag, "notifications": {}})
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return {}

    server.answers["subscriptions/listen"] = listen
    async with connect(server) as client:
        async with client.listen(prompts=True):
            pass
        with anyio.fail_after(5):
            await cancelled.wait()  # notifications/cancelled reached the server's session, which cancelled it


async def test_listen_needs_the_modern_era() -> None:
    async with connected(FakeServer()) as client:
        with pytest.raises(Exception, match="2026-07-28"):
            client.listen(tools=True)


async def test_a_server_that_refuses_listen_fails_the_subscription_at_once() -> None:
    server = ModernServer()  # no subscriptions/listen: -32601
    async with connect(server) as client:
        with anyio.fail_after(5), pytest.raises(JSONRPCError) as refused:
            async with client.listen(tools=True):
                pytest.fail("a refused subscription must not be entered")
        assert refused.value.code == -32601
        await client.call_tool("echo", {})  # the connection goes on
