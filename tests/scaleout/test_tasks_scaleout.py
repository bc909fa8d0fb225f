"""Tasks (the 2026-07-28 extension ``io.modelcontextprotocol/tasks``) on a scaled-out server: real processes, a
server run with ``--workers 3 --redis URL`` (its task store is then ``scaleout.task_store.RedisTaskStore``) and a
real redis-server. Every wait is bounded.

A client here is one kept-alive HTTP connection, so it stays with the worker that accepted it; ``whoami`` says
which. With one client per worker, a test starts a task through one worker and follows it through the others:

- polled and completed through the others (the body ran on the worker that started it);
- cancelled through another worker: the running body stops and the task is ``cancelled``;
- input: the task's question seen through one worker, answered with ``tasks/update`` through another;
- the worker running a task SIGKILLed: a surviving worker fails the task (-32603, "lease") within two leases;
- a task completed on a worker that is then SIGKILLed: its result is in Redis, not in the worker, so the other
  workers and the supervisor's replacement answer ``completed`` with it until the task's TTL; after, it is gone
  (unknown, as an id never handed out) on every worker;
  the same in 2025-11-25 (``tasks/get`` and ``tasks/result`` of the session's task, through the replacement too);
- Redis restarted (no persistence, as the test Redis runs): every task is forgotten, ``tasks/get`` answers that the
  task is unknown, and new tasks work at once. With persistence (appendonly) they would survive: that is Redis's
  setting, not the server's (docs/how-to/deploy.md).
- 2025-11-25: a legacy session's task followed (tasks/get, the blocking tasks/result) over new connections, so any
  worker; another session does not see it.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from scale_support import Client, RequestFailed, sse_events, start_redis
from support.ports import free_port

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1"
MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
WORKERS = 3
LEASE = 2.0  # the engine's lease in these servers: a dead worker's task fails within two of them
WAIT = 15.0
TRIES = 60  # connections opened to find one per worker (the kernel picks the worker of each)
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}, "elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "tasks-scaleout-test", "version": "1"},
}

SERVER_SOURCE = """
import os

import anyio

from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.task_store import DEFAULT_TTL_MS, InMemoryTaskStore

# The runner swaps this store for the Redis one with the same bounds: a test may shorten the TTL of every task.
TTL_MS = int(os.environ.get("TASKS_TEST_TTL_MS", DEFAULT_TTL_MS))
server = Server("tasks-scaleout", version="1.0.0", task_store=InMemoryTaskStore(default_ttl_ms=TTL_MS))
server.task_engine.lease_seconds = float(os.environ["TASKS_TEST_LEASE"])
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
def whoami() -> int:
    return os.getpid()


@server.tool(task="optional")
async def slow_compute(seconds: float, context: Context) -> str:
    await context.task_status(f"computing on {os.getpid()}")
    await anyio.sleep(seconds)
    return f"{os.getpid()}"


@server.tool(task="required")
async def run_until_cancelled(context: Context) -> str:
    await context.task_status(f"running on {os.getpid()}")
    await anyio.sleep_forever()
    return "never"


@server.tool(task="optional")
async def ask_name(context: Context) -> str:
    answer = await context.elicit("Your name?", NAME)
    return f"{answer.content['name']} (asked by {os.getpid()})"
"""


@dataclass
class Workers:
    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def serving(directory: Path, redis_url: str, ttl_ms: int | None = None) -> Iterator[Workers]:
    """The server above with WORKERS workers on a port of its own (keys under a prefix of its own), its tasks kept
    ``ttl_ms`` (default: the store's hour); stopped after."""
    script = directory / "tasks_scaleout_server.py"
    script.write_text(SERVER_SOURCE, encoding="utf-8")
    port = free_port()
    command = [sys.executable, "-m", "mcpgen_runtime.server.runner", str(script), "--transport", "http"]
    command += ["--port", str(port), "--workers", str(WORKERS), "--redis", redis_url, "--log-level", "warning"]
    environment = {**os.environ, "MCPGEN_REDIS_PREFIX": f"tasks{free_port()}", "TASKS_TEST_LEASE": str(LEASE)}
    environment["MCPGEN_REDIS_TIMEOUT"] = "1"
    if ttl_ms is not None:
        environment["TASKS_TEST_TTL_MS"] = str(ttl_ms)
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=environment, start_new_session=True)
    url = f"http://{HOST}:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        seen: set[int] = set()
        while len(seen) < WORKERS:  # every worker up (new connections: the kernel spreads them)
            assert process.poll() is None, "the server exited"
            assert time.monotonic() < deadline, f"only workers {seen} answered"
            try:
                seen.add(whoami_once(url))
            except httpx2.TransportError:
                time.sleep(0.05)
        yield Workers(url, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def headers(method: str, name: str) -> dict[str, str]:
    return {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        "Mcp-Name": name,
        "Accept": "application/json, text/event-stream",
    }


def whoami_once(url: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    body["params"]["_meta"] = META  # type: ignore[index]
    response = httpx2.post(url, json=body, headers=headers("tools/call", "whoami") | {"Connection": "close"})
    assert response.status_code == 200, response.text
    return int(response.json()["result"]["content"][0]["text"])


@dataclass
class WorkerClient:
    """One kept-alive connection, so one worker (``pid``), speaking raw 2026-07-28 JSON-RPC."""

    http: httpx2.AsyncClient
    url: str
    pid: int = 0

    async def send(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": secrets.randbelow(1 << 30), "method": method}
        body["params"] = {**params, "_meta": META}
        response = await self.http.post(self.url, json=body, headers=headers(method, name))
        answer: dict[str, Any] = response.json()  # an error answer may come with a 4xx status, as JSON too
        assert response.status_code == 200 or "error" in answer, response.text
        return answer

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = await self.send("tools/call", {"name": name, "arguments": arguments}, name)
        assert "result" in answer, answer
        return dict(answer["result"])

    async def start_task(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.call_tool(name, arguments)
        assert result.get("resultType") == "task", result
        return str(result["taskId"])

    async def task(self, method: str, task_id: str, **params: Any) -> dict[str, Any]:
        return await self.send(method, {"taskId": task_id, **params}, task_id)

    async def get(self, task_id: str) -> dict[str, Any]:
        answer = await self.task("tasks/get", task_id)
        assert "result" in answer, answer
        return dict(answer["result"])

    async def until(self, task_id: str, *statuses: str, within: float = WAIT) -> dict[str, Any]:
        with anyio.fail_after(within):
            while True:
                task = await self.get(task_id)
                if task["status"] in statuses:
                    return task
                await anyio.sleep(0.05)


@asynccontextmanager
async def one_client_per_worker(url: str) -> AsyncIterator[list[WorkerClient]]:
    """WORKERS clients, each on a connection accepted by a different worker."""
    async with AsyncExitStack() as stack:
        found: dict[int, WorkerClient] = {}
        for _ in range(TRIES):
            http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=1), timeout=WAIT)
            client = WorkerClient(http, url)
            client.pid = int((await client.call_tool("whoami", {}))["content"][0]["text"])
            if client.pid in found:
                await http.aclose()
                continue
            stack.push_async_callback(http.aclose)
            found[client.pid] = client
            if len(found) == WORKERS:
                break
        assert len(found) == WORKERS, f"reached only workers {sorted(found)}"
        clients = list(found.values())
        for client in clients:  # still on the same worker (the connection was kept)
            assert int((await client.call_tool("whoami", {}))["content"][0]["text"]) == client.pid
        yield clients


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Workers]:
    with serving(tmp_path_factory.mktemp("tasks"), redis_url) as found:
        yield found


async def test_a_task_started_on_one_worker_is_polled_to_its_result_through_the_others(workers: Workers) -> None:
    async with one_client_per_worker(workers.url) as (starter, first, second):
        task_id = await starter.start_task("slow_compute", {"seconds": 0.5})
        seen = await first.get(task_id)  # durable before the handle was sent: found at once elsewhere
        assert seen["status"] == "working" and seen["taskId"] == task_id
        done = await second.until(task_id, "completed", "failed", "cancelled")
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == str(starter.pid)  # it ran where it was started
        again = await first.get(task_id)
        assert again["status"] == "completed" and again["result"] == done["result"]


async def test_a_task_is_cancelled_through_another_worker(workers: Workers) -> None:
    async with one_client_per_worker(workers.url) as (starter, canceller, watcher):
        task_id = await starter.start_task("run_until_cancelled", {})
        running = await watcher.until(task_id, "working")
        assert running["status"] == "working"
        ack = await canceller.task("tasks/cancel", task_id)
        assert "result" in ack, ack
        started = time.monotonic()
        cancelled = await watcher.until(task_id, "cancelled", "completed", "failed", within=LEASE + 5)
        assert cancelled["status"] == "cancelled", cancelled
        # The body's worker learnt it through Redis: at once by the change channel, at worst at the lease interval.
        assert time.monotonic() - started < LEASE + 2
        again = await starter.task("tasks/cancel", task_id)  # terminal now: acked, and the outcome stands
        assert "result" in again, again
        assert (await starter.get(task_id))["status"] == "cancelled"


async def test_a_question_seen_through_one_worker_is_answered_through_another(workers: Workers) -> None:
    async with one_client_per_worker(workers.url) as (starter, poller, answerer):
        task_id = await starter.start_task("ask_name", {})
        waiting = await poller.until(task_id, "input_required")
        requests = waiting["inputRequests"]
        assert len(requests) == 1, waiting
        key = next(iter(requests))
        response = {"action": "accept", "content": {"name": "Ada"}}
        ack = await answerer.task("tasks/update", task_id, inputResponses={key: response})
        assert "result" in ack, ack
        done = await poller.until(task_id, "completed", "failed", "cancelled")
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == f"Ada (asked by {starter.pid})"


async def test_the_task_of_a_killed_worker_fails_within_two_leases(tmp_path: Path, redis_url: str) -> None:
    with serving(tmp_path, redis_url) as server:
        async with one_client_per_worker(server.url) as (doomed, watcher, _other):
            task_id = await doomed.start_task("run_until_cancelled", {})
            await watcher.until(task_id, "working")
            os.kill(doomed.pid, signal.SIGKILL)
            killed = time.monotonic()
            failed = await watcher.until(task_id, "failed", "completed", "cancelled", within=2 * LEASE + 8)
            elapsed = time.monotonic() - killed
        assert failed["status"] == "failed", failed
        assert failed["error"]["code"] == -32603 and "lease" in failed["error"]["message"], failed
        assert elapsed < 2 * LEASE + 4  # the lease ran out, then the next sweep of a survivor


async def test_a_result_outlives_its_worker_until_its_ttl(tmp_path: Path, redis_url: str) -> None:
    with serving(tmp_path, redis_url, ttl_ms=SHORT_TTL_MS) as server:
        async with one_client_per_worker(server.url) as (runner, first, second):
            before = workers_pids(server)
            sent = time.monotonic()  # the task is created after this, so it expires no earlier than sent + TTL
            task_id = await runner.start_task("slow_compute", {"seconds": 0.2})
            answered = time.monotonic()  # ... and no later than answered + TTL
            done = await first.until(task_id, "completed", "failed", "cancelled")
            assert done["status"] == "completed" and done["ttlMs"] == SHORT_TTL_MS, done
            assert done["result"]["content"][0]["text"] == str(runner.pid)  # it ran, and ended, on the runner
            os.kill(runner.pid, signal.SIGKILL)
            replacement = await replaced(server, before, runner.pid)
            async with client_on_worker(server.url, replacement) as restarted:
                for client in (first, second, restarted):
                    again = await client.get(task_id)
                    assert again["status"] == "completed" and again["result"] == done["result"], again
                    assert again["createdAt"] == done["createdAt"] and again["ttlMs"] == SHORT_TTL_MS, again
                # Each of those answers came before the TTL could have passed: they prove the result outlived the
                # worker, not that the TTL was long.
                assert time.monotonic() < sent + SHORT_TTL_MS / 1000, "the TTL passed before the checks: raise it"
                unknown = await first.task("tasks/get", "no-such-task")
                with anyio.fail_after(answered + SHORT_TTL_MS / 1000 + WAIT - time.monotonic()):
                    while "result" in (gone := await restarted.task("tasks/get", task_id)):
                        assert gone["result"]["status"] == "completed", gone
                        await anyio.sleep(0.1)
                assert time.monotonic() >= sent + SHORT_TTL_MS / 1000 - CLOCK_SLACK  # not gone before its TTL
                for client in (first, second, restarted):  # gone everywhere: answered as an id never handed out
                    gone = await client.task("tasks/get", task_id)
                    assert gone["error"] == expected_unknown(unknown["error"], task_id), gone


async def test_a_legacy_result_outlives_its_worker_until_its_ttl(tmp_path: Path, redis_url: str) -> None:
    """2025-11-25: the session (in Redis) and its task outlive the worker that ran the task; ``params.task.ttl``
    asked by the client is the one kept."""
    with serving(tmp_path, redis_url) as server:
        session = Client(server.url)  # a new connection per request: any worker
        session.initialize()
        before = workers_pids(server)
        sent = time.monotonic()
        created = session.request("tools/call", {**SLOW, "task": {"ttl": SHORT_TTL_MS}})["task"]
        answered = time.monotonic()
        assert created["ttl"] == SHORT_TTL_MS, created
        task_id = created["taskId"]
        result = session.request("tasks/result", {"taskId": task_id})
        runner = int(result["content"][0]["text"])
        os.kill(runner, signal.SIGKILL)
        replacement = await replaced(server, before, runner)
        async with client_on_worker(server.url, replacement) as restarted:
            legacy = LegacyOn(restarted, session.session_id or "")
            anywhere = session.request("tasks/get", {"taskId": task_id})
            there = await legacy.request("tasks/get", {"taskId": task_id})  # the replacement itself
            for task in (anywhere, there):
                assert task["status"] == "completed" and task["ttl"] == SHORT_TTL_MS, task
            assert await legacy.request("tasks/result", {"taskId": task_id}) == result
            assert session.request("tasks/result", {"taskId": task_id}) == result
            assert time.monotonic() < sent + SHORT_TTL_MS / 1000, "the TTL passed before the checks: raise it"
            with anyio.fail_after(answered + SHORT_TTL_MS / 1000 + WAIT - time.monotonic()):
                while "result" in (gone := await legacy.answer("tasks/get", {"taskId": task_id})):
                    await anyio.sleep(0.1)
            assert time.monotonic() >= sent + SHORT_TTL_MS / 1000 - CLOCK_SLACK
            assert gone["error"]["code"] == -32602 and gone["error"]["data"] == {"taskId": task_id}, gone
            with pytest.raises(RequestFailed, match="not found"):  # gone on the other workers too
                session.request("tasks/result", {"taskId": task_id})


SLOW = {"name": "slow_compute", "arguments": {"seconds": 0.2}}
SHORT_TTL_MS = 8_000  # long enough for a worker's restart and three polls, short enough to wait out
CLOCK_SLACK = 0.5  # the server's clock (the record's createdAt, Redis's expiry) against this process's


def expected_unknown(error: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The error for ``task_id`` that ``error`` (the answer for the id "no-such-task") is for that id."""
    assert error["code"] == -32602, error
    return {**error, "message": error["message"].replace("no-such-task", task_id)}


async def replaced(workers: Workers, before: list[int], killed: int) -> int:
    """The pid of the worker the supervisor starts in place of ``killed`` (``before``: the workers then)."""
    with anyio.fail_after(WAIT):
        while True:
            now = workers_pids(workers)
            new = set(now) - set(before)
            if killed not in now and len(now) == len(before) and new:
                (pid,) = new
                return pid
            await anyio.sleep(0.05)


@dataclass
class LegacyOn:
    """2025-11-25 requests of session ``session_id`` on ``client``'s connection (so on its worker)."""

    client: WorkerClient
    session_id: str

    async def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": secrets.randbelow(1 << 30), "method": method, "params": params}
        headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": self.session_id}
        response = await self.client.http.post(self.client.url, json=body, headers=headers | LEGACY_VERSION)
        assert response.status_code == 200, response.text
        if response.headers["content-type"].startswith("application/json"):
            return dict(response.json())
        events = [event.data for event in sse_events(iter(response.text.splitlines())) if event.data is not None]
        return dict(events[-1])

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self.answer(method, params)
        assert "result" in answer, answer
        return dict(answer["result"])


LEGACY_VERSION = {"MCP-Protocol-Version": "2025-11-25"}


@asynccontextmanager
async def client_on_worker(url: str, pid: int) -> AsyncIterator[WorkerClient]:
    """A client whose kept-alive connection was accepted by worker ``pid`` (new connections until one is; the
    worker may still be starting, so a refused or reset connection is tried again)."""
    with anyio.fail_after(WAIT):
        while True:
            http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=1), timeout=WAIT)
            client = WorkerClient(http, url)
            try:
                client.pid = int((await client.call_tool("whoami", {}))["content"][0]["text"])
            except httpx2.TransportError:
                client.pid = 0
            if client.pid == pid:
                break
            await http.aclose()
            await anyio.sleep(0.02)
    try:
        yield client
    finally:
        await http.aclose()


async def test_after_a_redis_restart_old_tasks_are_unknown_and_new_ones_work(tmp_path: Path) -> None:
    port = free_port()
    redis_process = start_redis(port, tmp_path)
    try:
        with serving(tmp_path, f"redis://{HOST}:{port}/0") as server:
            async with one_client_per_worker(server.url) as (starter, watcher, _other):
                task_id = await starter.start_task("slow_compute", {"seconds": 0.2})
                await watcher.until(task_id, "completed")
                redis_process.terminate()
                redis_process.wait(10)
                redis_process = start_redis(port, tmp_path)  # empty: the test Redis keeps nothing on disk
                with anyio.fail_after(WAIT):
                    while True:  # the workers reconnect (a command during the restart may fail fast)
                        answer = await watcher.task("tasks/get", task_id)
                        if "error" in answer and answer["error"]["code"] != -32603:
                            break
                        await anyio.sleep(0.1)
                assert answer["error"]["code"] == -32602, answer  # unknown: Redis forgot it
                fresh = await starter.start_task("slow_compute", {"seconds": 0.1})
                done = await watcher.until(fresh, "completed")
                assert done["result"]["content"][0]["text"] == str(starter.pid)
    finally:
        redis_process.terminate()
        redis_process.wait(10)


def test_a_legacy_session_follows_its_task_through_any_worker(workers: Workers) -> None:
    """2025-11-25: a task-augmented tools/call, then tasks/get and the blocking tasks/result, each request on a new
    connection (so spread over the workers); the session, and the task bound to it, are found on every one."""
    client = Client(workers.url)
    client.initialize()
    created = client.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3}, "task": {}})
    task_id = created["task"]["taskId"]
    statuses = {client.request("tasks/get", {"taskId": task_id})["status"] for _ in range(6)}
    assert statuses <= {"working", "completed"}, statuses
    result = client.request("tasks/result", {"taskId": task_id})
    assert int(result["content"][0]["text"]) in workers_pids(workers)
    assert client.request("tasks/get", {"taskId": task_id})["status"] == "completed"
    stranger = Client(workers.url)
    stranger.initialize()
    with pytest.raises(RequestFailed):  # bound to the session: another session does not see it
        stranger.request("tasks/get", {"taskId": task_id})


def workers_pids(workers: Workers) -> list[int]:
    return [
        int(pid) for pid in Path(f"/proc/{workers.process.pid}/task/{workers.process.pid}/children").read_text().split()
    ]
