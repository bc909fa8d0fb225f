"""The server in the modern era (MCP 2026-07-28): per-request ``_meta``, ``server/discover``, -32022, the methods
that era removed, ``resultType`` and serverInfo on every result, logs only with a logLevel, cache hints, resource
not found -32602, and both eras on one connection. A real ``Server`` against a raw ``Session`` over memory streams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from support.servers import raw_session

from mcpgen_runtime import JSONParams, JSONRPCError, Session, SessionClosedError, memory_stream_pair
from mcpgen_runtime.server import CacheHint, Context, ResourceNotFoundError, Server

pytestmark = pytest.mark.anyio

WAIT = 5.0
VERSION = "2026-07-28"
CLIENT_INFO = {"name": "raw", "version": "1"}


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        **extra,
    }


def build_server() -> Server:
    server = Server(
        "modern",
        version="2.0.0",
        instructions="be brief",
        cache_hints={"tools/list": CacheHint(60_000, "public")},
    )

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def chatty(context: Context) -> str:
        await context.debug("quiet")
        await context.warning("loud")
        return "done"

    @server.tool()
    async def needs_sampling(context: Context) -> str:
        result = await context.sample("hi", max_tokens=5)
        return str(result.content)

    @server.resource("test://own", cache=CacheHint(5_000, "private"))
    async def own() -> str:
        return "mine"

    @server.resource("test://plain")
    async def plain() -> str:
        return "plain"

    @server.prompt()
    async def greet(name: str) -> str:
        return f"hello {name}"

    return server


@dataclass
class Peer:
    session: Session
    notifications: list[tuple[str, Any]] = field(default_factory=list)

    async def call(self, method: str, params: JSONParams = None) -> Any:
        with anyio.fail_after(WAIT):
            return await self.session.request(method, params)

    async def error(self, method: str, params: JSONParams = None) -> JSONRPCError:
        with pytest.raises(JSONRPCError) as caught:
            await self.call(method, params)
        return caught.value


@asynccontextmanager
async def connect(server: Server | None = None) -> AsyncIterator[Peer]:
    notifications: list[tuple[str, Any]] = []

    async def on_notification(method: str, params: JSONParams) -> None:
        notifications.append((method, params))

    async with raw_session(server or build_server(), None, on_notification) as session:
        yield Peer(session, notifications)


async def test_discover_lists_versions_capabilities_and_identity() -> None:
    async with connect() as peer:
        result = await peer.call("server/discover", {"_meta": meta()})
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == VERSION and "2025-11-25" in result["supportedVersions"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "logging"}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "modern", "version": "2.0.0"}
    assert result["instructions"] == "be brief"
    assert (result["ttlMs"], result["cacheScope"]) == (0, "public")


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}},
        {"_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}},
    ],
    ids=["no-meta", "no-version", "no-capabilities"],
)
async def test_discover_without_required_meta_is_invalid_params(params: dict[str, Any]) -> None:
    async with connect() as peer:
        error = await peer.error("server/discover", params)
    assert error.code == -32602


async def test_client_info_is_optional() -> None:
    async with connect() as peer:
        bare = {k: v for k, v in meta().items() if k != "io.modelcontextprotocol/clientInfo"}
        result = await peer.call("tools/list", {"_meta": bare})
    assert [tool["name"] for tool in result["tools"]][:1] == ["add"]


async def test_unsupported_version_lists_the_supported_ones() -> None:
    async with connect() as peer:
        error = await peer.error("tools/list", {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "v9"}})
    assert error.code == -32022
    assert error.data["requested"] == "v9" and VERSION in error.data["supported"]


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "nope/nope"])
async def test_methods_the_modern_era_removed_are_not_found(method: str) -> None:
    async with connect() as peer:
        error = await peer.error(method, {"_meta": meta(), "level": "info", "uri": "test://own"})
    assert error.code == -32601


async def test_results_carry_result_type_server_info_and_cache_hints() -> None:
    async with connect() as peer:
        called = await peer.call("tools/call", {"_meta": meta(), "name": "add", "arguments": {"a": 1, "b": 2}})
        tools = await peer.call("tools/list", {"_meta": meta()})
        own = await peer.call("resources/read", {"_meta": meta(), "uri": "test://own"})
        plain = await peer.call("resources/read", {"_meta": meta(), "uri": "test://plain"})
        prompts = await peer.call("prompts/list", {"_meta": meta()})
        templates = await peer.call("resources/templates/list", {"_meta": meta()})
    assert called["resultType"] == "complete" and called["content"][0]["text"] == "3"
    assert called["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "modern"
    assert (tools["ttlMs"], tools["cacheScope"]) == (60_000, "public")
    assert (own["ttlMs"], own["cacheScope"]) == (5_000, "private")
    assert (plain["ttlMs"], plain["cacheScope"]) == (0, "private")
    assert (prompts["ttlMs"], templates["cacheScope"]) == (0, "public")


async def test_resource_not_found_is_invalid_params_with_the_uri() -> None:
    async with connect() as peer:
        error = await peer.error("resources/read", {"_meta": meta(), "uri": "test://missing"})
    assert (error.code, error.data) == (-32602, {"uri": "test://missing"})


async def test_logs_only_at_the_requested_level_and_none_without_one() -> None:
    async with connect() as peer:
        await peer.call("tools/call", {"_meta": meta(), "name": "chatty"})
        assert not [n for n in peer.notifications if n[0] == "notifications/message"]
        level = {"io.modelcontextprotocol/logLevel": "info"}
        await peer.call("tools/call", {"_meta": meta(**level), "name": "chatty"})
        with anyio.fail_after(WAIT):
            while not [n for n in peer.notifications if n[0] == "notifications/message"]:
                await anyio.sleep(0.01)
    logged = [params["data"] for method, params in peer.notifications if method == "notifications/message"]
    assert logged == ["loud"]


async def test_an_undeclared_client_capability_is_32021() -> None:
    async with connect() as peer:
        error = await peer.error("tools/call", {"_meta": meta(), "name": "needs_sampling"})
    assert error.code == -32021
    assert error.data == {"requiredCapabilities": {"sampling": {}}}


async def test_both_eras_on_one_connection() -> None:
    async with connect() as peer:
        modern = await peer.call("tools/list", {"_meta": meta()})
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}
        await peer.call("initialize", init)
        legacy = await peer.call("tools/list")
        assert await peer.call("ping") == {}
        again = await peer.call("tools/list", {"_meta": meta()})
    assert "resultType" not in legacy and "ttlMs" not in legacy
    assert modern["resultType"] == again["resultType"] == "complete"


# -- subscriptions/listen ----------------------------------------------------------------------------------------


def subscriptions_server(unsubscribed: list[str]) -> Server:
    server = build_server()

    @server.on_subscribe
    async def subscribe(uri: str) -> None:
        if uri == "test://forbidden":
            raise ResourceNotFoundError(uri)

    @server.on_unsubscribe
    async def unsubscribe(uri: str) -> None:
        unsubscribed.append(uri)

    return server


async def wait_for(peer: Peer, count: int) -> list[tuple[str, Any]]:
    with anyio.fail_after(WAIT):
        while len(peer.notifications) < count:
            await anyio.sleep(0.01)
    return list(peer.notifications)


async def test_listen_acknowledges_then_delivers_only_what_was_asked() -> None:
    unsubscribed: list[str] = []
    server = subscriptions_server(unsubscribed)
    async with connect(server) as peer:
        wanted = {
            "toolsListChanged": True,
            "resourceSubscriptions": ["test://own", "test://forbidden"],
            "unknownKind": True,
        }
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.call, "subscriptions/listen", {"_meta": meta(), "notifications": wanted})
            ((method, ack),) = await wait_for(peer, 1)
            assert method == "notifications/subscriptions/acknowledged"
            subscription = ack["_meta"]["io.modelcontextprotocol/subscriptionId"]
            assert ack["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["test://own"]}
            await server.notify_prompts_changed()  # not asked for
            await server.notify_resource_updated("test://plain")  # not subscribed
            await server.notify_tools_changed()
            await server.notify_resource_updated("test://own")
            received = await wait_for(peer, 3)
            tg.cancel_scope.cancel()  # the client cancels the listen request (notifications/cancelled)
        assert [method for method, _ in received[1:]] == [
            "notifications/tools/list_changed",
            "notifications/resources/updated",
        ]
        assert all(params["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription for _, params in received)
        assert received[2][1]["uri"] == "test://own"
        with anyio.fail_after(WAIT):
            while unsubscribed != ["test://own"]:
                await anyio.sleep(0.01)
        # Cancelled: nothing reaches it any more.
        await server.notify_tools_changed()
        await anyio.sleep(0.05)
        assert len(peer.notifications) == 3


async def test_listen_needs_its_meta() -> None:
    async with connect() as peer:
        error = await peer.error("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert error.code == -32602


async def test_the_server_ends_a_subscription_gracefully() -> None:
    server = build_server()
    async with connect(server) as peer:
        async with anyio.create_task_group() as tg:
            answers: list[Any] = []

            async def listen() -> None:
                answers.append(await peer.call("subscriptions/listen", {"_meta": meta(), "notifications": {}}))

            tg.start_soon(listen)
            ((_, ack),) = await wait_for(peer, 1)
            server.end_subscriptions()
        (result,) = answers
    subscription = ack["_meta"]["io.modelcontextprotocol/subscriptionId"]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/subscriptionId"] == subscription
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "modern"


async def test_a_closed_connection_ends_its_subscriptions_at_once() -> None:
    server = build_server()
    server_end, client_end = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_stream, server_end)
            async with Session(client_end) as session:

                async def listen() -> None:
                    with pytest.raises(SessionClosedError):  # the client leaves without waiting for the answer
                        await session.request("subscriptions/listen", {"_meta": meta(), "notifications": {}})

                tg.start_soon(listen)
                while not any(len(connection.listeners) for connection in server.connections):
                    await anyio.sleep(0.01)
            started = anyio.current_time()
            while server.connections:
                await anyio.sleep(0.01)
            # Well within the session's 2 s shutdown grace: the listen request did not hold the connection open.
            assert anyio.current_time() - started < 1.0
            tg.cancel_scope.cancel()
