"""A client that does not read its SSE stream (issue 14, the bound of each connection's queue): once it falls
MCPGEN_MAX_QUEUED_EVENTS behind, the server ends that connection instead of queueing without end, and the client
resumes with Last-Event-ID and gets every event exactly once, from Redis, on whichever worker serves the resumption.
Both paths: a GET stream (followed in Redis) and a POST's own stream (queued by the worker running the request)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator

import httpx2
import pytest
from scale_support import Client, Event, ScaledServer, scaled_server, sse_events

COUNT, SIZE = 400, 32_000  # 12.8 MB: more than the socket buffers of both ends hold
QUEUE_BOUND = 20


class SlowConnection(http.client.HTTPConnection):
    """An HTTP connection with a small receive buffer: the server's writes block as soon as we stop reading."""

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(20)
        self.sock.connect((self.host, self.port))


def _lines(response: http.client.HTTPResponse) -> Iterator[str]:
    while line := response.readline():
        yield line.decode().rstrip("\r\n")


def _floods(events: list[Event]) -> list[int]:
    texts = [e.data["params"]["data"] for e in events if e.data and e.data.get("method") == "notifications/message"]
    return [int(text.split()[1]) for text in texts if text.startswith("flood ")]


@pytest.fixture(scope="module")
def bounded(redis_url: str) -> Iterator[ScaledServer]:
    with scaled_server(
        redis_url, env={"MCPGEN_MAX_QUEUED_EVENTS": str(QUEUE_BOUND), "MCPGEN_TAIL_BLOCK": "0.5"}
    ) as server:
        yield server


def _resume(client: Client, url: str, last_event_id: str, wanted: int, *, answer: bool = False) -> list[Event]:
    """The resumed stream's events until ``wanted`` floods (and its ``answer``) came."""
    headers = client.headers(accept="text/event-stream", **{"last-event-id": last_event_id})
    events: list[Event] = []
    with httpx2.stream("GET", url, headers=headers, timeout=httpx2.Timeout(20, read=10)) as resumed:
        assert resumed.status_code == 200, resumed.read()
        for event in sse_events(resumed.iter_lines()):
            if event.data is not None:
                events.append(event)
            if (event.data and "result" in event.data) or (not answer and len(_floods(events)) >= wanted):
                break
    return events


def test_a_get_stream_whose_client_falls_behind_is_ended_and_resumes_losing_nothing(bounded: ScaledServer) -> None:
    client = Client(bounded.url)
    client.initialize()
    connection = SlowConnection("127.0.0.1", bounded.port)
    connection.request("GET", "/mcp", headers=client.headers(accept="text/event-stream"))
    time.sleep(0.3)  # the GET stream is being followed
    client.call("flood", count=COUNT, size=SIZE)
    time.sleep(2.0)  # the flood is stored; the worker serving the GET could not write it all
    response = connection.getresponse()
    assert response.status == 200
    first = [event for event in sse_events(_lines(response)) if event.data is not None]  # until the server ends it
    connection.close()
    received = _floods(first)
    assert 0 < len(received) < COUNT, len(received)  # ended early: it fell behind
    rest = _resume(client, bounded.url, first[-1].event_id or "", COUNT - len(received))
    assert received + _floods(rest) == list(range(1, COUNT + 1))


def test_a_post_stream_whose_client_falls_behind_is_ended_and_resumes_with_its_answer(bounded: ScaledServer) -> None:
    client = Client(bounded.url)
    client.initialize()
    connection = SlowConnection("127.0.0.1", bounded.port)
    arguments = {"count": COUNT, "size": SIZE, "inline": True}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "flood", "arguments": arguments}}
    connection.request("POST", "/mcp", body=json.dumps(body).encode(), headers=client.headers())
    time.sleep(2.5)  # the tool has run and answered; its connection fell behind
    response = connection.getresponse()
    assert response.status == 200
    first = [event for event in sse_events(_lines(response)) if event.data is not None]
    connection.close()
    received = _floods(first)
    assert len(received) < COUNT and not any("result" in event.data for event in first)
    last_id = [event.event_id for event in first if event.event_id][-1] if first else None
    assert last_id is not None
    rest = _resume(client, bounded.url, last_id, COUNT - len(received), answer=True)
    assert received + _floods(rest) == list(range(1, COUNT + 1))
    assert rest[-1].data["id"] == 7 and "result" in rest[-1].data


def test_a_full_channel_ends_after_what_it_queued(caplog: pytest.LogCaptureFixture) -> None:
    """The bound itself (in memory, no Redis): what is queued still goes out, nothing more is queued, and losing an
    event without an id is a warning."""
    from mcpgen_runtime.transports.http.server.channel import Channel
    from mcpgen_runtime.transports.http.server.session import Event as QueuedEvent

    channel = Channel(max_queued=3)
    assert all(channel.push(QueuedEvent(b"{}", f"s/{n}")) for n in range(3))
    assert not channel.push(QueuedEvent(b"{}", "s/3")) and channel.closed and channel.overflowed
    assert [event.event_id for event in channel.take()] == ["s/0", "s/1", "s/2"] and channel.ended
    assert not channel.push(QueuedEvent(b"{}", "s/4"))

    unresumable = Channel(max_queued=1)
    unresumable.push(QueuedEvent(b"{}"))
    with caplog.at_level("WARNING", logger="mcpgen_runtime.transports.http.server.channel"):
        assert not unresumable.push(QueuedEvent(b"{}"))
    assert "cannot resume" in caplog.text
