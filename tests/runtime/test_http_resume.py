"""Resumable SSE streams of the streamable HTTP server (spec 2025-11-25, basic/transports "Resumability and
Redelivery", SEP-1699 polling): event ids, the priming event with ``retry``, a handler closing its stream mid-call
(``Context.close_sse_stream``), replay on GET with ``Last-Event-ID``, and the event store.

Real uvicorn servers on 127.0.0.1; the clients are httpx2 with a small SSE parser (to see the wire exactly, as the
official conformance suite's ``server-sse-polling`` and ``server-sse-multiple-streams`` do) and the official SDK's
client (``mcp==2.3.0``), which resumes by itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import serving_streamable

from mcpgen_runtime import JSONParams, MessageStream, MethodNotFound, RequestContext, Session
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.transports.http.server.event_store import EventStore, InMemoryEventStore, Replay, StoredEvent

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
WAIT = 10.0


@dataclass
class SSE:
    id: str | None
    data: str
    retry: int | None
    event: str


def parse_sse(text: str) -> list[SSE]:
    """Events as a browser's EventSource would dispatch them (an event needs a data line; comments are skipped)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields.setdefault(name, []).append(value[1:] if value.startswith(" ") else value)
        if "data" in fields:
            retry = fields.get("retry", [None])[-1]
            events.append(
                SSE(fields.get("id", [None])[-1], "\n".join(fields["data"]), int(retry) if retry else None, "message")
            )
    return events


class EventReader:
    """The SSE events of a streaming response, read as far as a test needs."""

    def __init__(self, response: httpx2.Response) -> None:
        self._chunks = response.aiter_text()
        self._text = ""

    async def read(self, count: int = 1) -> list[SSE]:
        """The next ``count`` events (fewer if the response ends)."""
        events: list[SSE] = []
        while len(events) < count:
            while "\n\n" not in self._text:
                try:
                    self._text += await self._chunks.__anext__()
                except StopAsyncIteration:
                    return events
            block, _, self._text = self._text.partition("\n\n")
            events += parse_sse(block + "\n\n")
        return events


def message(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def init_params(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


async def initialize(client: httpx2.AsyncClient, url: str, version: str = "2025-11-25") -> dict[str, str]:
    response = await client.post(url, json=message(0, "initialize", init_params(version)), headers=HEADERS)
    assert response.status_code == 200, response.text
    return {**HEADERS, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}


def build_server() -> Server:
    server = Server("resumable")

    @server.tool()
    async def test_reconnection(ctx: Context) -> str:
        """Closes its SSE stream mid-call (the conformance suite's tool of that name), then answers."""
        closed = await ctx.close_sse_stream()
        await anyio.sleep(0.05)
        await ctx.info("after the close")
        return f"closed={closed}"

    @server.tool()
    async def add(a: int, b: int) -> int:
        return a + b

    return server


class DictEventStore:
    """A user's own ``EventStore``: the interface is two methods."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, bytes | None]] = []

    async def store(self, stream_id: str, message: bytes | None) -> str:
        event_id = f"e{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_after(self, last_event_id: str) -> Replay | None:
        index = next((n for n, event in enumerate(self.events) if event[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        later = [StoredEvent(e, m) for e, s, m in self.events[index + 1 :] if s == stream_id and m is not None]
        return Replay(stream_id, later)


# -- priming and event ids ---------------------------------------------------------------------------------------


async def test_a_2025_11_25_post_stream_starts_with_a_priming_event_and_every_event_has_an_id() -> None:
    async with serving_streamable(build_server().serve_stream, retry_interval=0.25) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                call = message(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
                events = parse_sse((await client.post(url, json=call, headers=headers)).text)
                priming, answer = events
                assert priming.id and priming.data == "" and priming.retry == 250
                assert answer.id and answer.id != priming.id and '"text":"3"' in answer.data

                # Older clients get no priming event (they could not parse it), but ids all the same.
                headers = await initialize(client, url, "2025-06-18")
                events = parse_sse((await client.post(url, json=call, headers=headers)).text)
                assert len(events) == 1 and events[0].id and events[0].retry is None

    async with serving_streamable(build_server().serve_stream, resumable=False) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                events = parse_sse((await client.post(url, json=call, headers=headers)).text)
                assert len(events) == 1 and events[0].id is None


async def test_multiple_concurrent_post_streams_each_primed_whatever_supported_version_the_header_says() -> None:
    """The conformance suite's server-sse-multiple-streams: three POSTs at once on a 2025-11-25 session, with
    ``MCP-Protocol-Version: 2025-03-26``."""
    async with serving_streamable(build_server().serve_stream) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = {**await initialize(client, url), "mcp-protocol-version": "2025-03-26"}
                responses: dict[int, httpx2.Response] = {}

                async def post(n: int) -> None:
                    responses[n] = await client.post(url, json=message(1000 + n, "tools/list"), headers=headers)

                async with anyio.create_task_group() as tg:
                    for n in range(3):
                        tg.start_soon(post, n)
                for response in responses.values():
                    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
                    first, answer = parse_sse(response.text)
                    assert first.id and first.data == "" and '"name":"add"' in answer.data
                ids = {event.id for response in responses.values() for event in parse_sse(response.text)}
                assert len(ids) == 6  # unique across the session's streams


# -- a handler closes its stream; the client resumes ---------------------------------------------------------------


@pytest.mark.parametrize("store", ["memory", "custom"])
async def test_handler_closes_its_stream_and_the_answer_comes_on_resumption(store: str) -> None:
    """The conformance suite's server-sse-polling, step by step."""
    event_store: EventStore = InMemoryEventStore() if store == "memory" else DictEventStore()
    async with serving_streamable(build_server().serve_stream, event_store=event_store) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                call = message(1, "tools/call", {"name": "test_reconnection", "arguments": {}})
                response = await client.post(url, json=call, headers=headers)
                # The POST's response ended early: the priming event (with retry) and no answer.
                events = parse_sse(response.text)
                assert [event.data for event in events] == [""]
                assert events[0].id and events[0].retry == 1000
                assert response.text.endswith("retry: 1000\n\n")  # a last retry hint before the close

                get_headers = {**headers, "accept": "text/event-stream", "last-event-id": events[0].id}
                resumed = await client.get(url, headers=get_headers)
                assert resumed.status_code == 200
                replayed = parse_sse(resumed.text)  # the stream ends with the answer
                assert '"after the close"' in replayed[0].data
                assert '"id":1' in replayed[-1].data and '"text":"closed=True"' in replayed[-1].data
                assert all(event.id for event in replayed)

                # Resuming again from the last id gets nothing more: the stream is done.
                get_headers["last-event-id"] = replayed[-1].id or ""
                again = await client.get(url, headers=get_headers)
                assert again.status_code == 200 and parse_sse(again.text) == []


async def test_close_sse_stream_is_a_no_op_where_nothing_could_be_resumed() -> None:
    async with serving_streamable(build_server().serve_stream) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url, "2025-06-18")  # no priming event for this client
                call = message(1, "tools/call", {"name": "test_reconnection", "arguments": {}})
                response = await client.post(url, json=call, headers=headers)
                assert '"text":"closed=False"' in response.text
    async with serving_streamable(build_server().serve_stream, json_response=True) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                response = await client.post(url, json=call, headers=headers)
                assert response.json()["result"]["content"][0]["text"] == "closed=False"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_the_official_sdk_client_resumes_a_stream_the_server_closed() -> None:
    from mcp import Client

    logs: list[Any] = []

    async def logging_callback(params: Any) -> None:
        logs.append(params)

    async with serving_streamable(build_server().serve_stream, retry_interval=0.05) as (url, _app):
        with anyio.fail_after(20):
            # Resumability is a legacy-era feature (2026-07-28 removed it): the legacy mode, which "auto" no
            # longer picks now that the server answers server/discover.
            async with Client(url, mode="legacy", logging_callback=logging_callback) as client:
                assert client.protocol_version == "2025-11-25"
                result = await client.call_tool("test_reconnection", {})
                assert result.content[0].text == "closed=True"  # type: ignore[union-attr]
                assert (await client.call_tool("add", {"a": 2, "b": 3})).content[0].text == "5"  # type: ignore[union-attr]
    assert [log.data for log in logs] == ["after the close"]


# -- disconnects, other streams, refusals ------------------------------------------------------------------------


class Held:
    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self.sessions: list[Session] = []

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "initialize":
            assert isinstance(params, dict)
            return {"protocolVersion": params["protocolVersion"], "capabilities": {}, "serverInfo": {"name": "h"}}
        if method == "hold":
            self.started.append(context.request_id)
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(context.request_id)
                raise
            return {"held": context.request_id}
        raise MethodNotFound(method)

    async def connection(self, stream: MessageStream) -> None:
        async with Session(stream, request_handler=self.handle) as session:
            self.sessions.append(session)
            await session.wait_closed()


async def test_a_client_leaving_a_resumable_stream_does_not_cancel_and_gets_the_answer_later() -> None:
    """Spec: disconnection SHOULD NOT be taken as cancellation, when the client can resume."""
    held = Held()
    async with serving_streamable(held.connection) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = await initialize(client, url)
                async with client.stream("POST", url, json=message(1, "hold"), headers=headers) as response:
                    priming = (await EventReader(response).read())[0]
                    assert priming.id and priming.data == ""
                # The server notices the disconnect; the request goes on.
                session = app.sessions[headers["mcp-session-id"]]
                stream = session.find_stream(priming.id.rpartition("/")[0])
                assert stream is not None
                while stream.connected:
                    await anyio.sleep(0.01)
                assert app.requests_in_flight == 1 and held.cancelled == []
                held.release.set()
                while app.requests_in_flight:
                    await anyio.sleep(0.01)
                resumed = await client.get(url, headers={**headers, "accept": SSE_ONLY, "last-event-id": priming.id})
                assert [event.data for event in parse_sse(resumed.text)] == [
                    '{"jsonrpc":"2.0","id":1,"result":{"held":1}}'
                ]
                assert held.cancelled == []


SSE_ONLY = "text/event-stream"


async def test_the_standalone_stream_resumes_without_loss_or_duplicates() -> None:
    held = Held()
    async with serving_streamable(held.connection) as (url, app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                headers = {**await initialize(client, url), "accept": SSE_ONLY}
                session_stream = app.sessions[headers["mcp-session-id"]]
                server = held.sessions[0]
                async with client.stream("GET", url, headers=headers) as response:
                    while not session_stream.standalone_open:
                        await anyio.sleep(0.01)
                    await server.notify("notifications/message", {"level": "info", "data": "a"})
                    first = (await EventReader(response).read())[0]
                    assert '"data":"a"' in first.data and first.id
                while session_stream.standalone_open:  # the server noticed the client left
                    await anyio.sleep(0.01)
                for data in ("b", "c"):
                    await server.notify("notifications/message", {"level": "info", "data": data})
                resumed_headers = {**headers, "last-event-id": first.id}
                async with client.stream("GET", url, headers=resumed_headers) as response:
                    assert response.status_code == 200
                    reader = EventReader(response)
                    replayed = await reader.read(2)
                    await server.notify("notifications/message", {"level": "info", "data": "d"})
                    live = await reader.read()
                payloads = [event.data for event in replayed + live]
                assert [p.split('"data":"')[1][0] for p in payloads] == ["b", "c", "d"]


async def test_unknown_or_foreign_last_event_ids_are_refused() -> None:
    async with serving_streamable(build_server().serve_stream) as (url, _app):
        async with httpx2.AsyncClient(timeout=5) as client:
            with anyio.fail_after(WAIT):
                mine, theirs = await initialize(client, url), await initialize(client, url)
                call = message(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
                their_id = parse_sse((await client.post(url, json=call, headers=theirs)).text)[0].id
                assert their_id
                for last_event_id in ["nope", their_id, their_id + "0", "x/1"]:
                    get = {**mine, "accept": SSE_ONLY, "last-event-id": last_event_id}
                    response = await client.get(url, headers=get)
                    assert response.status_code == 400, last_event_id
                    assert response.json()["error"]["code"] == -32600


# -- the in-memory event store -----------------------------------------------------------------------------------


async def test_in_memory_event_store_replays_what_came_after() -> None:
    store = InMemoryEventStore()
    assert isinstance(store, EventStore)
    priming = await store.store("s1", None)
    ids = [await store.store("s1", f"m{n}".encode()) for n in range(3)]
    other = await store.store("s2", b"elsewhere")
    assert len({priming, *ids, other}) == 5
    replay = await store.replay_after(priming)
    assert replay is not None and replay.stream_id == "s1"
    assert [(e.event_id, e.message) for e in replay.events] == [(ids[n], f"m{n}".encode()) for n in range(3)]
    replay = await store.replay_after(ids[1])
    assert replay is not None and [e.message for e in replay.events] == [b"m2"]
    for unknown in ["s1/999", "s3/1", "garbage", "", "s1/0", "s1/-1"]:
        assert await store.replay_after(unknown) is None


async def test_in_memory_event_store_is_bounded() -> None:
    async def messages(store: InMemoryEventStore, last_event_id: str) -> Sequence[bytes]:
        replay = await store.replay_after(last_event_id)
        assert replay is not None
        return [event.message for event in replay.events]

    per_stream = InMemoryEventStore(max_events_per_stream=3)
    first = await per_stream.store("s", None)
    for n in range(5):
        await per_stream.store("s", b"%d" % n)
    assert await messages(per_stream, first) == [b"2", b"3", b"4"] and per_stream.events == 3

    overall = InMemoryEventStore(max_events=4)
    a, b = await overall.store("a", None), await overall.store("b", None)
    for n in range(3):
        await overall.store("a", b"a%d" % n)
        await overall.store("b", b"b%d" % n)
    assert overall.events == 4
    assert await messages(overall, a) == [b"a1", b"a2"] and await messages(overall, b) == [b"b1", b"b2"]

    by_size = InMemoryEventStore(max_bytes=10)
    start = await by_size.store("s", None)
    for n in range(4):
        await by_size.store("s", b"12345" + b"%d" % n)  # 6 bytes each
    assert await messages(by_size, start) == [b"123453"] and by_size.bytes == 6

    expiring = InMemoryEventStore(ttl=0.5)
    start = await expiring.store("s", None)
    await expiring.store("s", b"old")
    await anyio.sleep(0.6)
    assert await messages(expiring, start) == []  # expired, but the stream is still known: resumable
    await expiring.store("s", b"new")
    assert await messages(expiring, start) == [b"new"] and expiring.events == 1

    few_streams = InMemoryEventStore(max_streams=2)
    oldest = await few_streams.store("s1", None)
    await few_streams.store("s2", None)
    await few_streams.store("s3", None)
    assert await few_streams.replay_after(oldest) is None and few_streams.events == 2

    with pytest.raises(ValueError):
        InMemoryEventStore(ttl=0)
