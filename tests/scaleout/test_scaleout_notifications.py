"""Server-wide notifications of the legacy era over 3 workers sharing Redis (issue 14): a list change raised by a
background task of one worker, or a resource update raised by another session's tool call, reaches every live
session's GET stream exactly once, whichever worker holds its copy or serves its GET stream, and resumably."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
from scale_support import Client, Event, ScaledServer, sse_events

FAN_URI = "test://fan"


def _read_get_stream(client: Client, url: str, *, quiet: float = 1.5, last_event_id: str | None = None) -> list[Event]:
    """The events of the session's GET stream until it stays quiet for ``quiet`` seconds."""
    extra = {"last-event-id": last_event_id} if last_event_id else {}
    headers = client.headers(accept="text/event-stream", **extra)
    events: list[Event] = []
    with httpx2.stream("GET", url, headers=headers, timeout=httpx2.Timeout(10, read=quiet)) as stream:
        assert stream.status_code == 200, stream.read()
        try:
            for event in sse_events(stream.iter_lines()):
                if event.data is not None:
                    events.append(event)
        except httpx2.ReadTimeout:
            pass
    return events


def _methods(events: list[Event]) -> list[str]:
    return [event.data.get("method", "answer") for event in events]


def _spread(clients: list[Client]) -> Iterator[int]:
    """Requests of every client, so that several workers hold a copy of each session (the pids that answered)."""
    for client in clients:
        for _ in range(4):
            yield client.call("whoami")


def test_server_wide_notifications_reach_every_session_once_on_any_worker(scaled: ScaledServer) -> None:
    clients = [Client(scaled.url) for _ in range(6)]
    for client in clients:
        client.initialize()
    subscribed, others = clients[:3], clients[3:]
    for client in subscribed:
        assert client.request("resources/subscribe", {"uri": FAN_URI}) == {}
    assert len(set(_spread(clients))) > 1

    # A background task (no request, no session) raises list changes; prompts are not declared: nobody gets them.
    for kind in ("tools", "prompts", "resources"):
        clients[3].call("announce", kind=kind)
    # Another session's tool call raises a resource update: only the subscribers get it.
    clients[4].call("touch", uri=FAN_URI)
    # A subscriber's own tool call: it gets the update once, on its POST stream (as with one worker) or its GET stream.
    own = clients[0].request_events("tools/call", {"name": "touch", "arguments": {"uri": FAN_URI}})
    own_updates = _methods(own).count("notifications/resources/updated")
    time.sleep(0.3)  # the fan-out runs in each worker's publisher task, after the tool answered

    with ThreadPoolExecutor(len(clients)) as pool:
        streams = list(pool.map(lambda client: _read_get_stream(client, scaled.url), clients))
    lists = ["notifications/tools/list_changed", "notifications/resources/list_changed"]
    for client, events in zip(others, streams[3:], strict=True):
        assert _methods(events) == lists, (client.session_id, _methods(events))
    first = _methods(streams[0])
    assert first[:2] == lists and first[2:].count("notifications/resources/updated") + own_updates == 2, first
    for events in streams[1:3]:
        methods = _methods(events)
        assert methods == [*lists, "notifications/resources/updated", "notifications/resources/updated"], methods
        assert all(event.data["params"] == {"uri": FAN_URI} for event in events[2:])

    # Resumable like any other event: from the first event's id, the rest again (on whichever worker serves it).
    events = streams[1]
    assert all(event.event_id for event in events)
    again = _read_get_stream(subscribed[1], scaled.url, quiet=1.0, last_event_id=events[0].event_id)
    assert [event.event_id for event in again] == [event.event_id for event in events[1:]]


def test_a_notification_raised_while_a_get_stream_is_open_arrives_live(scaled: ScaledServer) -> None:
    listener, raiser = Client(scaled.url), Client(scaled.url)
    listener.initialize()
    raiser.initialize()
    headers = listener.headers(accept="text/event-stream")
    received: list[Any] = []
    with httpx2.stream("GET", scaled.url, headers=headers, timeout=httpx2.Timeout(10, read=5)) as stream:
        holder = scaled.holder(stream.extensions["network_stream"].get_extra_info("client_addr")[1])
        raised_on = {raiser.call("announce", kind="tools") for _ in range(6)}  # (on several workers)
        for event in sse_events(stream.iter_lines()):
            if event.data is not None:
                received.append(event.data)
            if len(received) == 6:
                break
    assert [m["method"] for m in received] == ["notifications/tools/list_changed"] * 6
    assert holder is not None and raised_on  # (raised on any worker, the holder among them or not)
