"""mcpgen_runtime.client against a real peer: a fake MCP server built from nothing but a raw ``Session`` and a request
handler written here, over in-memory streams. Covers the handshake (each version, unsupported answers), capability
gating, the list caches and their re-fetch on list_changed, server -> client requests, notifications, concurrency,
timeouts and cancellation, and what the client does with answers it cannot use and lists that never end."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from client_fakes import PACKAGES, FakeServer, connected, wait_for

import mcp_bindings.v2024_11_05 as v1
import mcp_bindings.v2025_06_18 as v3
import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONParams, JSONRPCError, Session, memory_stream_pair
from mcpgen_runtime.client import (
    LEGACY_VERSIONS,
    CapabilityError,
    Client,
    ClientContext,
    InvalidResultError,
    ListCache,
    MalformedResponseError,
    PaginationError,
    UnsupportedVersionError,
    VersionMismatchError,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_negotiates_each_version(version: str) -> None:
    fake = FakeServer(version=version)
    async with connected(fake) as client:
        package = PACKAGES[version]
        assert client.protocol_version == version
        assert client.bindings is package
        assert isinstance(client.api, package.client.ClientStub)
        assert client.server_info.name == "fake" and client.instructions == "be nice"
        assert isinstance(client.initialize_result, package.InitializeResult)
        # The offer is always the newest version; initialized follows the handshake.
        assert fake.initialize_params()["protocolVersion"] == "2025-11-25"
        await wait_for(lambda: fake.notifications)
        assert fake.notifications[0] == ("notifications/initialized", None)
        # Calls go through that version's generated stub and come back as that version's models.
        result = await client.api.call_tool(package.CallToolRequestParams(name="echo", arguments={"value": 7}))
        assert isinstance(result, package.CallToolResult)
        assert result.content[0].text == "7"
        tools = await client.api.list_all_tools()
        assert [t.name for t in tools] == fake.tools and all(isinstance(t, package.Tool) for t in tools)


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_requested_version_is_offered_and_required(version: str) -> None:
    fake = FakeServer()
    async with connected(fake, version=version) as client:
        assert fake.initialize_params()["protocolVersion"] == version
        assert client.protocol_version == version


@pytest.mark.parametrize(
    ("requested", "answered"), [(None, "2099-01-01"), (None, "2026-07-28"), ("2025-06-18", "2025-03-26")]
)
async def test_unsupported_answer_closes_the_connection(requested: str | None, answered: str) -> None:
    fake = FakeServer(version=answered)
    client_end, server_end = memory_stream_pair()
    async with Session(server_end, request_handler=fake.handle, notification_handler=fake.on_notification) as server:
        with pytest.raises(UnsupportedVersionError, match=answered) as info:
            async with Client.connect(client_end, version=requested):
                pytest.fail("connected despite an unsupported version")
        assert info.value.answered == answered
        with anyio.fail_after(2):
            await server.wait_closed()  # our side closed the stream
        assert fake.notifications == []  # never sent notifications/initialized


async def test_unknown_requested_version_is_refused_before_sending() -> None:
    fake = FakeServer()
    with pytest.raises(UnsupportedVersionError):
        # 2026-07-28 is a modern version now (mode="2026-07-28", no handshake): an unknown one stands in.
        async with connected(fake, version="2099-01-01"):
            pass
    assert fake.requests == []


# -- capability gating -------------------------------------------------------------------------------------------


async def test_calls_the_server_did_not_declare_are_refused_before_sending() -> None:
    fake = FakeServer(version="2025-11-25", capabilities={"resources": {"subscribe": False}})
    async with connected(fake) as client:
        api = client.stub(v4.client.ClientStub)
        calls: list[tuple[str, Any]] = [
            ("tools", api.call_tool(v4.CallToolRequestParams(name="echo"))),
            ("tools", api.list_tools()),
            ("prompts", api.get_prompt(v4.GetPromptRequestParams(name="p"))),
            ("resources.subscribe", api.subscribe(v4.SubscribeRequestParams(uri="file:///a"))),
            ("logging", api.set_level(v4.SetLevelRequestParams(level="debug"))),
            ("completions", api.complete(v4.CompleteRequestParams.model_validate(COMPLETE_PARAMS))),
            ("tools", client.tools()),
        ]
        for capability, call in calls:
            with pytest.raises(CapabilityError, match=capability) as info:
                await call
            assert info.value.capability == capability
        # resources is declared (subscribe: false is not): list/read are allowed.
        assert client.allows("resources/read") and not client.allows("resources/subscribe")
        assert [r.uri for r in await client.resources()] == fake.resources
        await api.ping()  # no capability needed (the fake's session answers pings itself)
        assert fake.methods() == ["initialize", "resources/list", "resources/list"]


COMPLETE_PARAMS = {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}


async def test_declared_capabilities_allow_the_calls() -> None:
    fake = FakeServer(version="2025-06-18")
    async with connected(fake) as client:
        api = client.stub(v3.client.ClientStub)
        await api.set_level(v3.SetLevelRequestParams(level="debug"))
        await api.subscribe(v3.SubscribeRequestParams(uri="file:///a"))
        await api.unsubscribe(v3.UnsubscribeRequestParams(uri="file:///a"))
        assert fake.methods()[1:] == ["logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
        assert fake.requests[1][1] == {"level": "debug"}


async def test_2024_11_05_completion_needs_no_capability() -> None:
    # completion/complete has no capability in 2024-11-05 ("completions" came with 2025-03-26).
    fake = FakeServer(version="2024-11-05", capabilities={})
    async with connected(fake) as client:
        assert client.allows("completion/complete")
        with pytest.raises(JSONRPCError):  # reaches the server, which does not serve it
            await client.stub(v1.client.ClientStub).complete(v1.CompleteRequestParams.model_validate(COMPLETE_PARAMS))
        assert fake.methods()[-1] == "completion/complete"


async def test_models_of_another_version_are_refused() -> None:
    async with connected(FakeServer(version="2025-06-18")) as client:
        with pytest.raises(VersionMismatchError):
            client.stub(v4.client.ClientStub)
        with pytest.raises(VersionMismatchError, match="2025-11-25"):
            await v4.client.ClientStub(client).call_tool(v4.CallToolRequestParams(name="echo"))


async def test_roots_list_changed_needs_our_own_capability() -> None:
    async with connected(FakeServer(version="2025-11-25")) as client:
        with pytest.raises(CapabilityError, match=r"roots\.listChanged"):
            await client.stub(v4.client.ClientStub).notify_roots_list_changed()
    fake = FakeServer(version="2025-11-25")
    async with connected(fake, handlers=Handlers()) as client:
        await client.stub(v4.client.ClientStub).notify_roots_list_changed()
        await wait_for(lambda: ("notifications/roots/list_changed", None) in fake.notifications)


# -- results and errors ------------------------------------------------------------------------------------------


async def test_server_errors_and_invalid_results() -> None:
    async with connected(FakeServer(version="2025-11-25")) as client:
        api = client.stub(v4.client.ClientStub)
        with pytest.raises(JSONRPCError) as info:
            await api.call_tool(v4.CallToolRequestParams(name="fail"))
        assert (info.value.code, info.value.message, info.value.data) == (-32000, "tool exploded", {"why": "test"})
        with pytest.raises(InvalidResultError, match="tools/call"):
            await api.call_tool(v4.CallToolRequestParams(name="bad_result"))
        # The connection is still fine afterwards.
        result = await api.call_tool(v4.CallToolRequestParams(name="echo", arguments={"value": "ok"}))
        assert result.content[0].text == "ok"  # type: ignore[union-attr]


# -- caches ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "list_method", "notification", "attribute"),
    [
        ("tools", "tools/list", "notifications/tools/list_changed", "tools"),
        ("prompts", "prompts/list", "notifications/prompts/list_changed", "prompts"),
        ("resources", "resources/list", "notifications/resources/list_changed", "resources"),
    ],
)
async def test_list_cache_refetches_after_list_changed(
    kind: str, list_method: str, notification: str, attribute: str
) -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake) as client:
        get = getattr(client, kind)

        def names(items: Sequence[Any]) -> list[str]:
            return [item.uri if kind == "resources" else item.name for item in items]

        def pages() -> int:
            return -(-len(getattr(fake, attribute)) // fake.page_size)

        first = await get()
        assert names(first) == getattr(fake, attribute)
        sent = pages()
        assert fake.methods().count(list_method) == sent  # every page was fetched
        first.clear()  # callers get a copy
        assert names(await get()) == getattr(fake, attribute)
        assert fake.methods().count(list_method) == sent  # cached: nothing sent
        getattr(fake, attribute).append("file:///new" if kind == "resources" else "new")
        await fake.announce(notification)
        await wait_for(lambda: not client.cache(kind).cached)
        assert names(await get()) == getattr(fake, attribute)
        assert fake.methods().count(list_method) == sent + pages()


async def test_concurrent_cache_users_share_one_fetch() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake) as client:
        results: list[list[Any]] = []

        async def get() -> None:
            results.append(await client.tools())

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(get)
        assert len(results) == 10 and all(len(r) == 5 for r in results)
        assert client.cache("tools").fetches == 1 and fake.methods().count("tools/list") == 3


async def test_list_changed_during_a_fetch_is_not_lost() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake) as client:
        announced = False

        async def change_during_first_fetch() -> None:
            # Change the list while the client's first fetch is under way, and make sure the notification is
            # processed before the answer: the fetched list may be stale and must not be kept.
            nonlocal announced
            if not announced:
                announced = True
                fake.tools.append("late")
                await fake.announce("notifications/tools/list_changed")
                await wait_for(lambda: client.cache("tools")._generation == 1)

        fake.tools_list_hook = change_during_first_fetch
        assert [t.name for t in await client.tools()][-1] == "late"
        assert client.cache("tools").fetches == 2


@pytest.mark.parametrize("kind", ["tools", "prompts", "resources"])
async def test_list_walks_stop_at_max_pages(kind: str) -> None:
    fake = FakeServer(version="2025-11-25")
    fake.page_size = 1  # 5 tools, 3 prompts, 3 resources: one page each
    async with connected(fake, max_pages=2) as client:
        with pytest.raises(PaginationError, match="max_pages=2") as info:
            await getattr(client, kind)()
        assert info.value.pages == 2 and info.value.cursor == "2"
        assert not client.cache(kind).cached
        client.max_pages = 10
        assert len(await getattr(client, kind)()) == len(getattr(fake, kind))


async def test_a_cursor_the_server_repeats_stops_the_walk() -> None:
    fake = FakeServer(version="2025-11-25")
    fake.page_size = 1
    original = fake.page

    def cycling(items: list[dict[str, Any]], key: str, params: JSONParams) -> dict[str, Any]:
        page = original(items, key, params)
        if page.get("nextCursor") == "3":
            page["nextCursor"] = "1"  # 1 -> 2 -> 3 is sent as 1 again
        return page

    fake.page = cycling  # type: ignore[method-assign]
    async with connected(fake) as client:
        with pytest.raises(PaginationError, match="repeated a cursor") as info:
            await client.tools()
        assert info.value.pages == 3 and info.value.cursor == "1"
        assert fake.methods().count("tools/list") == 3


async def test_list_cache_gives_up_refetching_when_the_list_never_settles() -> None:
    cache: ListCache[int] = ListCache(lambda: changing(), max_refetches=2)
    calls = 0

    async def changing() -> list[int]:
        nonlocal calls
        calls += 1
        cache.invalidate()
        return [calls]

    assert await cache.get() == [3]
    assert not cache.cached and calls == 3


# -- server -> client ----------------------------------------------------------------------------------------------


class Handlers(v4.client.ClientHandlers[ClientContext]):
    def __init__(self) -> None:
        self.logs: list[v4.LoggingMessageNotificationParams] = []
        self.progress: list[v4.ProgressNotificationParams] = []
        self.tool_list_changes = 0

    async def create_message(
        self, params: v4.CreateMessageRequestParams, context: ClientContext
    ) -> v4.CreateMessageResult:
        assert context.request is not None and context.method == "sampling/createMessage"
        question = params.messages[0].content
        assert isinstance(question, v4.TextContent)
        return v4.CreateMessageResult(
            role="assistant", model="fake-llm", content=v4.TextContent(text=question.text.upper())
        )

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        return v4.ElicitResult(action="accept", content={"name": "Ada"})

    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> v4.ListRootsResult:
        return v4.ListRootsResult(roots=[v4.Root(uri="file:///work", name="work")])

    async def on_logging_message(self, params: v4.LoggingMessageNotificationParams, context: ClientContext) -> None:
        self.logs.append(params)

    async def on_progress(self, params: v4.ProgressNotificationParams, context: ClientContext) -> None:
        self.progress.append(params)

    async def on_tool_list_changed(self, params: v4.NotificationParams | None, context: ClientContext) -> None:
        # The cache is already invalidated when the hook runs, so re-listing here sees the new list.
        assert not context.client.cache("tools").cached
        self.tool_list_changes += 1


class RootsOnly(v4.client.ClientHandlers[ClientContext]):
    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> v4.ListRootsResult:
        return v4.ListRootsResult(roots=[])


async def ask(client: Client, method: str, params: dict[str, Any] | None = None) -> Any:
    arguments: dict[str, Any] = {"method": method, "params": params}
    result = await client.api.call_tool(client.bindings.CallToolRequestParams(name="ask", arguments=arguments))
    return result.model_dump(mode="json")["structuredContent"]  # an extension field before 2025-06-18


SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
ELICIT = {"message": "name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}


async def test_server_to_client_requests_reach_the_handlers() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake, handlers=Handlers()) as client:
        advertised = fake.initialize_params()["capabilities"]
        assert advertised == {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
        assert await ask(client, "sampling/createMessage", SAMPLING) == {
            "role": "assistant",
            "model": "fake-llm",
            "content": {"type": "text", "text": "HI"},
        }
        assert await ask(client, "elicitation/create", ELICIT) == {"action": "accept", "content": {"name": "Ada"}}
        assert await ask(client, "roots/list") == {"roots": [{"uri": "file:///work", "name": "work"}]}
        assert await ask(client, "ping") == {}
        with pytest.raises(JSONRPCError, match="-32602"):  # the server's ask failed with our invalid-params answer
            await ask_raw(fake, "sampling/createMessage", {"messages": "nope"})
        with pytest.raises(JSONRPCError, match="-32601"):
            await ask_raw(fake, "tasks/list", None)  # defined in 2025-11-25, but not overridden
        with pytest.raises(JSONRPCError, match="-32601"):
            await ask_raw(fake, "no/such/method", {})


async def ask_raw(fake: FakeServer, method: str, params: Any) -> Any:
    assert fake.session is not None
    try:
        return await fake.session.request(method, params, timeout=2)
    except JSONRPCError as exc:
        raise JSONRPCError(exc.code, f"{exc.code} {exc.message}") from exc


async def test_only_overridden_handlers_are_advertised_and_answered() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake, handlers=RootsOnly(), capabilities={"experimental": {"x": {}}}) as client:
        assert fake.initialize_params()["capabilities"] == {"roots": {"listChanged": True}, "experimental": {"x": {}}}
        assert client.client_capabilities == {"roots": {"listChanged": True}, "experimental": {"x": {}}}
        assert await ask(client, "roots/list") == {"roots": []}
        with pytest.raises(JSONRPCError, match="-32601"):
            await ask_raw(fake, "sampling/createMessage", SAMPLING)
    fake = FakeServer(version="2025-11-25")
    async with connected(fake):
        assert fake.initialize_params()["capabilities"] == {}
        with pytest.raises(JSONRPCError, match="-32601"):
            await ask_raw(fake, "roots/list", None)


async def test_methods_the_negotiated_version_lacks_are_not_served() -> None:
    # 2025-11-25 handlers on a 2025-03-26 connection: elicitation does not exist there, sampling does.
    fake = FakeServer(version="2025-03-26")
    async with connected(fake, handlers=Handlers()) as client:
        assert client.protocol_version == "2025-03-26"
        with pytest.raises(JSONRPCError, match="-32601"):
            await ask_raw(fake, "elicitation/create", ELICIT)
        assert (await ask(client, "sampling/createMessage", SAMPLING))["model"] == "fake-llm"


def test_handlers_must_come_from_a_supported_version() -> None:
    class NotHandlers:
        async def list_roots(self, params: Any, context: Any) -> Any: ...

    with pytest.raises(TypeError, match="ClientHandlers"):
        Client(handlers=NotHandlers())  # type: ignore[arg-type]


async def test_progress_and_logging_reach_the_callbacks() -> None:
    fake = FakeServer(version="2025-11-25")
    handlers = Handlers()
    async with connected(fake, handlers=handlers) as client:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        api = client.stub(v4.client.ClientStub, progress_callback=on_progress)
        await api.call_tool(v4.CallToolRequestParams(name="progress"))
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        await wait_for(lambda: handlers.logs and handlers.progress)
        assert handlers.logs[0].level == "info" and handlers.logs[0].data == "halfway"
        assert handlers.progress[0].progress_token == "other"
        await fake.announce("notifications/tools/list_changed")
        await wait_for(lambda: handlers.tool_list_changes == 1)
        # Invalid notification params are dropped, not fatal.
        assert fake.session is not None
        await fake.session.notify("notifications/message", {"level": "nonsense"})
        await api.ping()


# -- concurrency, timeouts, cancellation -------------------------------------------------------------------------


async def test_many_concurrent_calls() -> None:
    async with connected(FakeServer(version="2025-11-25")) as client:
        api = client.stub(v4.client.ClientStub)
        results: dict[int, str] = {}

        async def call(i: int) -> None:
            result = await api.call_tool(v4.CallToolRequestParams(name="echo", arguments={"value": i}))
            text = result.content[0]
            assert isinstance(text, v4.TextContent)
            results[i] = text.text

        async with anyio.create_task_group() as tg:
            for i in range(200):
                tg.start_soon(call, i)
        assert results == {i: str(i) for i in range(200)}


async def test_timeout_raises_and_cancels_on_the_server() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake) as client:
        api = client.stub(v4.client.ClientStub, timeout=0.1)
        with pytest.raises(TimeoutError):
            await api.call_tool(v4.CallToolRequestParams(name="slow", arguments={"tag": "per-call"}))
        await wait_for(lambda: fake.cancelled == ["per-call"])
        client.request_timeout = 0.1  # the client-wide default
        with pytest.raises(TimeoutError):
            await client.stub(v4.client.ClientStub).call_tool(
                v4.CallToolRequestParams(name="slow", arguments={"tag": "default"})
            )
        await wait_for(lambda: fake.cancelled == ["per-call", "default"])
        client.request_timeout = None
        result = await client.stub(v4.client.ClientStub).ping()
        assert isinstance(result, v4.EmptyResult)


async def test_cancelling_a_call_cancels_it_on_the_server() -> None:
    fake = FakeServer(version="2025-11-25")
    async with connected(fake) as client:
        api = client.stub(v4.client.ClientStub)
        async with anyio.create_task_group() as tg:
            for tag in ("a", "b"):
                tg.start_soon(api.call_tool, v4.CallToolRequestParams(name="slow", arguments={"tag": tag}))
            await wait_for(lambda: fake.methods().count("tools/call") == 2)
            tg.cancel_scope.cancel()
        await wait_for(lambda: sorted(fake.cancelled) == ["a", "b"])
        # Other calls are unaffected.
        result = await api.call_tool(v4.CallToolRequestParams(name="echo", arguments={"value": 1}))
        assert not result.is_error


async def test_an_infinite_per_call_timeout_waits_without_limit() -> None:
    async with connected(FakeServer(version="2025-11-25"), request_timeout=0.001) as client:
        api = client.stub(v4.client.ClientStub, timeout=math.inf)
        result = await api.call_tool(v4.CallToolRequestParams(name="echo", arguments={"value": 1}))
        assert not result.is_error


async def test_an_answer_with_an_id_but_no_result_fails_the_call_at_once_over_any_stream() -> None:
    """Client.connect guards every stream (here an in-memory one): the session alone would take the frame for a
    request without a method, answer it, and leave the call waiting."""
    client_end, server_end = memory_stream_pair()

    async def serve() -> None:
        while True:
            try:
                message = json.loads(await server_end.receive())
            except anyio.EndOfStream:
                return
            if "id" not in message or "method" not in message:
                continue
            if message["method"] == "initialize":
                result = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                }
                answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            else:
                answer = {"jsonrpc": "2.0", "id": message["id"]}
            await server_end.send(json.dumps(answer).encode())

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            async with Client.connect(client_end, request_timeout=60, mode="legacy") as client:
                with pytest.raises(MalformedResponseError, match='neither "result" nor "error"'):
                    await client.stub(v4.client.ClientStub).ping()
            tg.cancel_scope.cancel()


async def test_calls_after_close_fail_cleanly() -> None:
    from mcpgen_runtime import SessionClosedError

    async with connected(FakeServer(version="2025-11-25")) as client:
        pass
    with pytest.raises(SessionClosedError):
        await client.api.ping()
