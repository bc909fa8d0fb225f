"""The contracts of the streamable HTTP server's storage interfaces (``transports.http.server.storage``), run on the
in-memory implementations here and on the Redis ones by ``tests/scaleout/test_storage_contracts_redis.py`` (which
imports these classes and overrides the ``stores`` fixture): the same tests, whatever the store.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from mcpgen_runtime.transports.http.server.app import HTTPAppOptions, StreamableHTTPApp, run_http
from mcpgen_runtime.transports.http.server.channel import Channel
from mcpgen_runtime.transports.http.server.event_store import EventStore
from mcpgen_runtime.transports.http.server.memory import (
    InMemorySessionFanout,
    InMemorySessionStore,
    InMemoryStreamTails,
)
from mcpgen_runtime.transports.http.server.stores import (
    MAX_STREAM_REQUESTS,
    STANDALONE_STREAM,
    SessionFanout,
    SessionRecord,
    SessionStore,
    StreamTails,
    session_stream_key,
)

pytestmark = pytest.mark.anyio

RECORD = SessionRecord("2025-11-25", b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', owner="alice")


@dataclass
class Stores:
    """Factories of one kind of store (memory or Redis), each store fresh (its own keys)."""

    sessions: Callable[..., SessionStore]  # (max_sessions=, ttl=)
    tails: Callable[[], Any]  # an EventStore that is also StreamTails
    fanout: Callable[[SessionStore, Any, Callable[[], Mapping[str, frozenset[str]]]], SessionFanout]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def stores() -> Stores:
    return Stores(
        sessions=lambda max_sessions=100, ttl=60.0: InMemorySessionStore(max_sessions=max_sessions, ttl=ttl),
        tails=lambda: InMemoryStreamTails(stall_timeout=0.2),
        fanout=lambda sessions, events, local: InMemorySessionFanout(sessions, events, local, lambda _: True),
    )


async def _collect(tails: StreamTails, stream_id: str, after: str | None, *, follow: bool = False) -> list[bytes]:
    """The messages a tail of ``stream_id`` pushes; without ``follow``, it stops at the first read that finds none."""
    channel = Channel(100)

    async def go_on(entry: str | None) -> bool:
        return follow or entry is not None

    with anyio.fail_after(5):
        await tails.tail(stream_id, after, channel, go_on=go_on)
    return [event.frame for event in channel.take() if event.frame is not None]


class TestSessionStore:
    async def test_save_load_delete(self, stores: Stores) -> None:
        store = stores.sessions()
        assert isinstance(store, SessionStore)
        assert await store.load("s1") is None and await store.touch("s1") is None
        assert await store.save("s1", RECORD)
        assert await store.load("s1") == RECORD and await store.touch("s1") == RECORD
        assert await store.live() == ["s1"]
        await store.delete("s1")
        assert await store.load("s1") is None and await store.live() == []

    async def test_writes_change_the_record(self, stores: Stores) -> None:
        store = stores.sessions()
        await store.save("s1", RECORD)
        await store.write("s1", "logging/setLevel", {"level": "debug"})
        await store.write("s1", "resources/subscribe", {"uri": "file:///a"})
        await store.write("s1", "resources/subscribe", {"uri": "file:///b"})
        await store.write("s1", "resources/unsubscribe", {"uri": "file:///a"})
        record = await store.load("s1")
        assert record is not None and record.level == "debug" and record.subscriptions == {"file:///b"}
        assert (record.version, record.init, record.owner) == (RECORD.version, RECORD.init, RECORD.owner)

    async def test_max_sessions(self, stores: Stores) -> None:
        store = stores.sessions(max_sessions=2)
        assert await store.save("s1", RECORD) and await store.save("s2", RECORD)
        assert not await store.save("s3", RECORD)
        assert await store.load("s3") is None
        await store.delete("s1")
        assert await store.save("s3", RECORD)
        assert sorted(await store.live()) == ["s2", "s3"]

    async def test_idle_records_expire_and_touch_renews(self, stores: Stores) -> None:
        store = stores.sessions(ttl=2.0)
        await store.save("idle", RECORD)
        await store.save("used", RECORD)
        await anyio.sleep(1.2)
        assert await store.touch("used") is not None
        await anyio.sleep(1.2)
        assert await store.load("idle") is None and await store.touch("idle") is None
        assert await store.load("used") == RECORD and await store.live() == ["used"]


class TestEventStoreAndTails:
    async def test_replay_after(self, stores: Stores) -> None:
        events: EventStore = stores.tails()
        first = await events.store("k.1", b"1")
        await events.store("k.2", b"other")
        second = await events.store("k.1", b"2")
        assert first != second
        replay = await events.replay_after(first)
        assert replay is not None and replay.stream_id == "k.1"
        assert [(event.event_id, event.message) for event in replay.events] == [(second, b"2")]
        assert await events.replay_after("k.9/123") is None and await events.replay_after("nonsense") is None

    async def test_tail_reads_to_the_last_event(self, stores: Stores) -> None:
        tails = stores.tails()
        assert isinstance(tails, StreamTails)
        assert not await tails.exists("k.1")
        first = await tails.store("k.1", b"1")
        await tails.store("k.1", b"2")
        await tails.store_last("k.1", b"3", delivered=True)
        assert await tails.exists("k.1")
        assert await _collect(tails, "k.1", None, follow=True) == [b"1", b"2", b"3"]
        split = tails.split(first)
        assert split is not None and split[0] == "k.1" and tails.split("no id") is None
        assert await _collect(tails, "k.1", split[1], follow=True) == [b"2", b"3"]

    async def test_tail_follows_until_the_end_mark(self, stores: Stores) -> None:
        tails = stores.tails()
        await tails.store("k.0", b"before")
        channel = Channel(100)

        async def go_on(entry: str | None) -> bool:
            return True

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: tails.tail("k.0", None, channel, go_on=go_on))
            await anyio.sleep(0.1)
            await tails.store("k.0", b"after")
            await anyio.sleep(0.1)
            await tails.end("k.0")
            with anyio.fail_after(5):
                while not channel.closed:
                    await anyio.sleep(0.01)  # (channel.wait returns at once while events are queued)
        assert [event.frame for event in channel.take()] == [b"before", b"after"]

    async def test_go_on_stops_a_tail(self, stores: Stores) -> None:
        tails = stores.tails()
        await tails.store("k.3", b"1")
        assert await _collect(tails, "k.3", None) == [b"1"]  # stops at the first empty read

    async def test_a_stream_records_its_requests_until_answered(self, stores: Stores) -> None:
        tails = stores.tails()
        assert await tails.unanswered("k.5") == [] and not await tails.exists("k.5")
        await tails.note_requests("k.5", [1, "two", 3])
        assert await tails.exists("k.5")  # a primed stream with nothing stored yet can be resumed
        assert await tails.unanswered("k.5") == [1, "two", 3]
        await tails.store("k.5", b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}')
        await tails.store("k.5", b'{"jsonrpc":"2.0","id":1,"result":{}}')
        await tails.store("k.5", b'{"jsonrpc":"2.0","id":"3","error":{"code":-1,"message":"x"}}')  # not id 3
        await tails.store("k.5", b"not json")
        assert await tails.unanswered("k.5") == ["two", 3]
        await tails.store_last(
            "k.5", b'[{"jsonrpc":"2.0","id":"two","result":{}},{"jsonrpc":"2.0","id":3,"result":{}}]', delivered=False
        )
        assert await tails.unanswered("k.5") == []
        await tails.note_requests("k.6", list(range(MAX_STREAM_REQUESTS + 10)))
        assert await tails.unanswered("k.6") == list(range(MAX_STREAM_REQUESTS))  # bounded


class TestSessionFanout:
    async def test_appends_once_to_the_sessions_not_held_here(self, stores: Stores) -> None:
        sessions, events = stores.sessions(), stores.tails()
        for session_id in ("here", "there", "subscribed"):
            await sessions.save(session_id, RECORD)
        await sessions.write("subscribed", "resources/subscribe", {"uri": "file:///x"})
        fanout = stores.fanout(sessions, events, lambda: {"here": frozenset()})
        job = fanout.prepare("tools.listChanged", "notifications/tools/list_changed", None)
        assert job is not None and job.skip == {"here"}
        assert await fanout.run(job) == 2
        assert await fanout.run(job) == -1  # once
        update = fanout.prepare("resources.subscribe", "notifications/resources/updated", {"uri": "file:///x"})
        assert update is not None and await fanout.run(update) == 1
        assert fanout.prepare("resources.subscribe", "notifications/resources/updated", {}) is None

        def frames(session_id: str) -> Any:
            return _collect(events, f"{session_stream_key(session_id)}.{STANDALONE_STREAM}", None)

        assert await frames("here") == []
        assert len(await frames("there")) == 1
        subscribed = await frames("subscribed")
        assert len(subscribed) == 2 and b"notifications/resources/updated" in subscribed[1]


# -- typed options -----------------------------------------------------------------------------------------------


def test_http_app_options_are_the_apps() -> None:
    parameters = inspect.signature(StreamableHTTPApp.__init__).parameters
    assert set(HTTPAppOptions.__annotations__) == {name for name in parameters if name not in ("self", "handler")}


async def test_a_misspelt_option_names_itself() -> None:
    async def handler(stream: Any) -> None:
        pass

    with pytest.raises(TypeError, match="max_sesions"):
        await run_http(handler, "127.0.0.1", 0, max_sesions=3)  # type: ignore[call-arg]
