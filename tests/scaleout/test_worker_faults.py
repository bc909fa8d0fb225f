"""Workers that die and a shared key that goes missing (issue 27, "Scale-out"), with real processes: a redis-server
of the test's own (flushed, filled with junk) under a server of 3 workers (`--workers 3 --redis URL`, no configured
requestState key: the workers share one in Redis), workers killed with SIGKILL. Every wait is bounded.

- Redis flushed, then one worker restarted: every 2026-07-28 input-round retry succeeds, whichever worker sealed the
  state and whichever verifies it (the restarted worker takes the key its peers put back, not a new one).
- A 1-byte requestState key written into Redis: the replacement of a killed worker starts and serves, the key is
  replaced by a sound one, one WARNING line says so.
- The supervisor outlives a worker that is SIGKILLed again and again (more than the old 10 restarts a minute): the
  port stays served; and it gives up (exit 1) only when workers cannot start at all.
- A legacy-era call whose worker is SIGKILLed ends its resumed stream with a -32603 answer (another worker finds the
  writer's heartbeat gone and answers the requests the stream recorded when it opened).
- In one process: a ``KeyRing`` signs with its current key and accepts the tokens of its recent ones.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import redis
from scale_support import Client, ScaledServer, redis_server, scaled_server, sse_events

from mcpgen_runtime.scaleout.worker import MAX_ACCEPTED_KEYS, KeyRing
from mcpgen_runtime.server.dispatch.request_state import InvalidRequestStateError, RequestStateCodec

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ROUNDS = 30
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "worker-faults-test", "version": "1"},
}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "fine"}, "model": "test"}
BACKOFF_ENV = {"MCPGEN_RESTART_BACKOFF": "0.05", "MCPGEN_RESTART_BACKOFF_MAX": "0.2"}


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


async def tool_call(http: httpx2.AsyncClient, url: str, **extra: Any) -> dict[str, Any]:
    """One raw 2026-07-28 call of the test server's ``ask`` (a sampling round); its JSON-RPC answer."""
    params = {"name": "ask", "arguments": {"question": "how?"}, "_meta": META, **extra}
    body = {"jsonrpc": "2.0", "id": secrets.randbelow(1 << 30), "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "ask"}
    headers["Accept"] = "application/json, text/event-stream"
    response = await http.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def input_rounds(url: str, count: int) -> tuple[list[str], set[int]]:
    """``count`` calls of ``ask``, each round on a new connection (any worker); the errors, the pids that
    completed a retry."""
    errors: list[str] = []
    pids: set[int] = set()
    async with httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=10) as http:
        for _ in range(count):
            first = (await tool_call(http, url))["result"]
            assert first["resultType"] == "input_required", first
            (key,) = first["inputRequests"]
            retry = await tool_call(http, url, inputResponses={key: SAMPLED}, requestState=first["requestState"])
            if "error" in retry:
                errors.append(str(retry["error"]))
            else:
                pids.add(int(retry["result"]["content"][0]["text"].split(":")[0]))
    return errors, pids


async def replace_a_worker(server: ScaledServer) -> int:
    """SIGKILL one worker; the pid of its replacement once it is up (every worker answering again)."""
    before = server.workers()
    os.kill(before[0], signal.SIGKILL)
    with anyio.fail_after(20):
        while True:
            now = server.workers()
            new = set(now) - set(before)
            if len(now) == len(before) and new:
                break
            await anyio.sleep(0.05)
    (pid,) = new
    with anyio.fail_after(20):  # the replacement serves (it completes a retry on some new connection)
        while pid not in (await input_rounds(server.url, 1))[1]:
            pass
    return pid


async def test_after_flushall_a_restarted_worker_serves_with_its_peers_key(own_redis: str) -> None:
    with scaled_server(own_redis) as server:
        assert (await input_rounds(server.url, 3))[0] == []
        store = redis.Redis.from_url(own_redis)
        store.flushall()
        new = await replace_a_worker(server)
        errors, pids = await input_rounds(server.url, ROUNDS)
        assert errors == [], f"{len(errors)} of {ROUNDS} retries failed: {errors[:2]}"
        assert new in pids and len(pids) > 1  # the retries reached the new worker and the others
        assert len(store.get(f"{server.prefix}:request-state-key") or b"") == 32


async def test_a_damaged_shared_key_is_replaced_and_the_new_worker_starts(own_redis: str) -> None:
    with scaled_server(own_redis) as server:
        store = redis.Redis.from_url(own_redis)
        store.set(f"{server.prefix}:request-state-key", b"x")
        await replace_a_worker(server)
        errors, pids = await input_rounds(server.url, 12)
        assert errors == [] and len(pids) > 1
        assert len(store.get(f"{server.prefix}:request-state-key") or b"") == 32
        assert sum("was damaged" in line for line in server.stderr) == 1, "".join(server.stderr)


async def test_the_supervisor_keeps_serving_while_a_worker_is_killed_again_and_again(own_redis: str) -> None:
    with scaled_server(own_redis, workers=2, env=BACKOFF_ENV) as server:
        for _ in range(15):  # more than the 10 restarts a minute that used to stop the server
            await replace_a_worker(server)
        assert server.process.poll() is None
        errors, pids = await input_rounds(server.url, 4)
        assert errors == [] and pids


BROKEN_SERVER = """
from contextlib import asynccontextmanager

from mcpgen_runtime import Server


@asynccontextmanager
async def lifespan(server):
    raise RuntimeError("this server cannot start")
    yield


server = Server("broken", version="1.0.0", lifespan=lifespan)
"""


def test_the_supervisor_exits_when_workers_cannot_start_at_all(own_redis: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN_SERVER)
    command = [sys.executable, "-m", "mcpgen_runtime.server.runner", str(broken), "--transport", "http"]
    command += ["--port", "0", "--workers", "2", "--redis", own_redis, "--log-level", "warning"]
    environment = {**os.environ, **BACKOFF_ENV, "MCPGEN_MAX_FAILED_STARTS": "4"}
    process = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=60, check=False)
    assert process.returncode == 1, process.stderr
    assert "4 workers in a row died before they could serve: stopping" in process.stderr


def test_a_key_ring_accepts_the_tokens_of_its_recent_keys_and_signs_with_the_current_one() -> None:
    ring = KeyRing(b"a" * 32)
    codec = RequestStateCodec(ring)
    old = codec.seal({"x": 1})
    assert ring.use(b"b" * 32) and not ring.use(b"b" * 32)
    new = codec.seal({"x": 2})
    assert codec.unseal(old)["x"] == 1 and codec.unseal(new)["x"] == 2
    assert RequestStateCodec(b"b" * 32).unseal(new)["x"] == 2  # signed with the current key
    for filler in (b"c", b"d", b"e"):
        ring.use(filler * 32)
    assert len(ring.accepted) == MAX_ACCEPTED_KEYS
    with pytest.raises(InvalidRequestStateError):
        codec.unseal(old)  # older than the last MAX_ACCEPTED_KEYS keys
    assert codec.unseal(new)["x"] == 2


def test_a_call_whose_worker_is_killed_ends_with_an_error_on_its_resumed_stream(own_redis: str) -> None:
    with scaled_server(own_redis) as server:
        client = Client(server.url)
        client.initialize()
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "sleepy", "arguments": {}}}
        body["params"]["arguments"] = {"seconds": 60}
        last_id = None
        with httpx2.stream("POST", server.url, json=body, headers=client.headers(), timeout=10) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            holder = server.holder(stream.extensions["network_stream"].get_extra_info("client_addr")[1])
            assert holder is not None
            for event in sse_events(stream.iter_lines()):
                last_id = event.event_id
                break  # the priming event: the call runs
            os.kill(holder, signal.SIGKILL)
        assert last_id is not None
        resume = client.headers(accept="text/event-stream", **{"last-event-id": last_id})
        answers = []
        for _ in range(5):  # a new connection may reach the worker just killed (its queue is reset): again
            try:
                # bounded: the worker's heartbeat expires within HEARTBEAT_TTL (10 s); read timeout 20 s
                with httpx2.stream("GET", server.url, headers=resume, timeout=20) as resumed:
                    answers = [event.data for event in sse_events(resumed.iter_lines()) if event.data is not None]
                break
            except httpx2.TransportError:
                time.sleep(0.2)
        assert answers and answers[-1].get("id") == 7, answers
        assert answers[-1]["error"]["code"] == -32603, answers
