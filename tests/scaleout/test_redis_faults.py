"""A Redis that stalls, dies or holds junk costs a fast, clear error (issue 27, "Scale-out"): a real redis-server that
each test starts, freezes (SIGSTOP), kills, restarts and fills with junk (written with redis-py directly), under a
real scaled-out server. Every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis
from scale_support import HEADERS, VERSION, Client, ScaledServer, scaled_server, start_redis
from support.ports import free_port

from mcpgen_runtime.transports.http.server.stores import session_stream_key

TIMEOUT = 1.0  # MCPGEN_REDIS_TIMEOUT of these servers
ENV = {"MCPGEN_REDIS_TIMEOUT": str(TIMEOUT), "MCPGEN_SESSION_REFRESH": "0"}


class OwnRedis:
    def __init__(self, directory: Path) -> None:
        self.port, self.directory = free_port(), directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = start_redis(self.port, directory)

    def restart(self) -> None:
        self.process = start_redis(self.port, self.directory)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.terminate()
            self.process.wait(10)


@contextmanager
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    server = OwnRedis(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def initialize(url: str, params: dict[str, Any] | None = None, timeout: float = 8) -> httpx2.Response:
    params = params or {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    return httpx2.post(url, content=json.dumps(body), headers=HEADERS, timeout=timeout)


def call(client: Client, timeout: float = 8) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    return httpx2.post(client.url, content=json.dumps(body), headers=client.headers(), timeout=timeout)


def assert_unavailable(response: httpx2.Response, started: float) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.headers.get("retry-after") == "1"
    assert "error" in response.json()
    assert time.monotonic() - started < TIMEOUT + 3  # the deadline, not the client's timeout


def assert_logged(server: ScaledServer, text: str, limit: float = 5) -> None:
    deadline = time.monotonic() + limit
    while text not in "".join(server.stderr):
        assert time.monotonic() < deadline, f"not logged: {text!r}"
        time.sleep(0.05)


def wait_until_served(server: ScaledServer, limit: float = 20) -> Client:
    deadline = time.monotonic() + limit
    while True:
        try:
            response = initialize(server.url)
            if response.status_code == 200:
                client = Client(server.url, response.headers["mcp-session-id"])
                client.notify("notifications/initialized")
                return client
        except httpx2.TransportError:
            pass
        assert time.monotonic() < deadline, "the service did not recover"
        time.sleep(0.2)


def test_frozen_redis_answers_503_within_the_timeout_then_recovers(tmp_path: Path) -> None:
    with own_redis(tmp_path) as store, scaled_server(store.url, workers=1, env=ENV) as server:
        client = Client(server.url)
        client.initialize()
        os.kill(store.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            assert_unavailable(initialize(server.url), started)
            started = time.monotonic()
            assert_unavailable(call(client), started)
            for method, accept in (("GET", "text/event-stream"), ("DELETE", None)):
                headers = client.headers(accept=accept) if accept else client.headers()
                started = time.monotonic()
                assert_unavailable(httpx2.request(method, server.url, headers=headers, timeout=8), started)
        finally:
            os.kill(store.process.pid, signal.SIGCONT)
        wait_until_served(server)
        assert call(client).status_code == 200
        assert_logged(server, "answered 503")


def test_killed_redis_answers_503_within_the_timeout_then_recovers(tmp_path: Path) -> None:
    with own_redis(tmp_path) as store, scaled_server(store.url, workers=1, env=ENV) as server:
        client = Client(server.url)
        client.initialize()
        store.process.kill()
        store.process.wait(10)
        started = time.monotonic()
        assert_unavailable(initialize(server.url), started)
        started = time.monotonic()
        assert_unavailable(call(client), started)
        store.restart()
        wait_until_served(server)
        assert call(client).status_code == 404  # Redis came back empty: the session ended


def test_max_sessions_answers_503_with_retry_after(redis_url: str) -> None:
    with scaled_server(redis_url, workers=1, env={"MCPGEN_MAX_SESSIONS": "1"}) as server:
        # the fixture's own session is the one allowed
        started = time.monotonic()
        response = initialize(server.url)
        assert_unavailable(response, started)
        assert "too many sessions" in response.text
        assert "mcp-session-id" not in response.headers


def test_an_oversized_initialize_is_refused_and_nothing_is_kept(redis_url: str) -> None:
    with scaled_server(redis_url, workers=1) as server:
        store = redis.Redis.from_url(redis_url)
        before = set(store.scan_iter(f"{server.prefix}:session:*"))
        params = {
            "protocolVersion": VERSION,
            "capabilities": {"experimental": {"junk": {"data": "x" * 3_000_000}}},
            "clientInfo": {"name": "t", "version": "1"},
        }
        response = initialize(server.url, params)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == -32602
        assert "65536" in response.json()["error"]["message"]
        assert set(store.scan_iter(f"{server.prefix}:session:*")) == before
        fine = {**params, "capabilities": {"experimental": {"junk": {"data": "x" * 60_000}}}}
        assert initialize(server.url, fine).status_code == 200


JUNK_RECORDS = {
    "init-not-json": {b"version": VERSION.encode(), b"init": b"\xff not json"},
    "init-1mb": {b"version": VERSION.encode(), b"init": b"x" * 1_000_000},
    "level-1mb": {
        b"version": VERSION.encode(),
        b"init": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode(),
        b"level": b"x" * 1_000_000,
    },
    "no-version": {b"init": b"{}"},
}


@pytest.mark.parametrize("kind", sorted(JUNK_RECORDS))
def test_a_damaged_session_record_is_dropped_as_unknown(redis_url: str, kind: str) -> None:
    with scaled_server(redis_url, workers=2, env=ENV) as server:
        store = redis.Redis.from_url(redis_url)
        session_id = f"junk-{kind}"
        store.hset(f"{server.prefix}:session:{session_id}", mapping=JUNK_RECORDS[kind])  # type: ignore[arg-type]
        store.zadd(f"{server.prefix}:sessions", {session_id: time.time() + 600})
        response = call(Client(server.url, session_id))
        assert response.status_code == 404, response.text
        assert not store.exists(f"{server.prefix}:session:{session_id}")  # dropped
        assert_logged(server, "damaged")
        wait_until_served(server, limit=5).call("whoami")  # and the service goes on


def test_keys_of_the_wrong_type_are_dropped(redis_url: str) -> None:
    with scaled_server(redis_url, workers=2, env=ENV) as server:
        store = redis.Redis.from_url(redis_url)
        client = Client(server.url)
        client.initialize()
        prefix = server.prefix
        # the index of live sessions: a string
        store.delete(f"{prefix}:sessions")
        store.set(f"{prefix}:sessions", b"\x00junk")
        fresh = wait_until_served(server, limit=5)
        assert fresh.call("whoami")
        assert client.call("whoami")
        assert store.type(f"{prefix}:sessions") == b"zset"
        # the session's own hash: a list
        store.delete(f"{prefix}:session:{client.session_id}")
        store.rpush(f"{prefix}:session:{client.session_id}", b"junk")
        assert call(client).status_code == 404
        # every alive key: a list; the GET stream of a session (where DELETE marks its end): a string
        for key in store.scan_iter(f"{prefix}:alive:*"):
            store.delete(key)
            store.rpush(key, b"junk")
        assert fresh.session_id is not None
        store.set(f"{prefix}:events:{session_stream_key(fresh.session_id)}.0", b"junk")
        for _ in range(3):
            events = fresh.request_events("tools/call", {"name": "whoami", "arguments": {}})
            assert "result" in events[-1].data
        # a server-wide notification skips the junk and reaches the other sessions' GET streams
        third = wait_until_served(server, limit=5)
        assert third.session_id is not None
        third_stream = f"{prefix}:events:{session_stream_key(third.session_id)}.0"
        deadline = time.monotonic() + 10
        while not store.exists(third_stream):
            assert time.monotonic() < deadline, "the notification never reached the other session"
            third.call("announce", kind="tools")
            time.sleep(0.2)
        response = httpx2.delete(server.url, headers=fresh.headers(), timeout=8)
        assert response.status_code == 200, response.text
        assert_logged(server, "held no stream")
        assert_logged(server, "wrong type")
        wait_until_served(server, limit=5)


def test_binary_junk_on_every_channel_is_ignored(redis_url: str) -> None:
    with scaled_server(redis_url, workers=2, env=ENV) as server:
        store = redis.Redis.from_url(redis_url)
        client = Client(server.url)
        client.initialize()
        channels = [channel for channel in store.pubsub_channels(f"{server.prefix}:*")]
        assert channels
        for channel in channels:
            for junk in (b"\xff\x00\xfe", b"\n", b"x\n\xff", b"{}", b"[]", b"x" * 100_000):
                store.publish(channel, junk)
        for _ in range(6):
            assert client.call("whoami")
            started = time.monotonic()
            response = initialize(server.url)
            assert response.status_code == 200 and time.monotonic() - started < 3
