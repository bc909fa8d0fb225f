"""Scale-out in the modern era (MCP 2026-07-28): any worker answers any request, with a real redis-server.

- Real processes: a server with 3 workers on one port (`python -m mcpgen_runtime.server.runner FILE --transport http
  --workers 3 --redis URL`, the shared requestState key from MCPGEN_REQUEST_STATE_KEY) and clients that open a new
  connection for every request, so that the kernel spreads them over the workers. The server records which process
  ran what in a log file, which is how a test knows the workers it reached.
  - an `input_required` flow (three rounds, the state carrying the earlier answers) continued on other workers, by
    raw HTTP and by the runtime's `Client`; across separately started servers only with the same configured key;
    and with Redis stopped (the stateless path needs none);
  - a list change raised by a tool call on one worker arrives, exactly once, on listen streams held by the others;
    a resource update only on the streams watching that resource.
- In one process, two servers (two "workers" on two ports) with a `NotificationBroadcast` each: while Redis is down
  the raising worker still delivers to its own streams; when Redis is back the other worker's streams are resynced;
  messages on the channel that are not change notifications are ignored; a full outbox drops with a warning.
- docs/how-to/deploy.md: its quick start and uvicorn command line run as printed; it names every setting.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from redis.asyncio import Redis
from support.ports import free_port

import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime.client import Client, ClientContext, Subscription
from mcpgen_runtime.scaleout.broadcast import NotificationBroadcast
from mcpgen_runtime.scaleout.settings import ENVIRONMENT
from mcpgen_runtime.server import Server

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1"
MODERN = "2026-07-28"
WORKERS = 3
WAIT = 10.0
TRIES = 60  # new connections tried to reach another worker (the kernel picks the worker of each)
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "scaleout-test", "version": "1"},
}

SERVER_SOURCE = """
import json
import os

from mcpgen_runtime.server import Context, Server

server = Server("scaleout-modern", version="1.0.0")
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}


def record(event, **fields):
    with open(os.environ["SCALEOUT_TEST_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"pid": os.getpid(), "event": event, **fields}) + "\\n")


@server.tool()
async def two_steps(context: Context) -> str:
    record("two_steps")
    name = await context.elicit("Step 1", NAME)
    color = await context.elicit("Step 2", COLOR)
    return f"{name.content['name']} likes {color.content['color']}"


@server.tool()
def whoami() -> int:
    return os.getpid()


@server.tool()
async def change_tools() -> int:
    await server.notify_tools_changed()
    return os.getpid()


@server.tool()
async def touch(uri: str) -> int:
    await server.notify_resource_updated(uri)
    return os.getpid()


@server.resource("file:///{name}")
def item(name: str) -> str:
    return name


@server.on_subscribe
def watched(uri: str) -> None:
    record("subscribe", uri=uri)
"""


# -- processes: a Redis to stop and start again, and the workers of this module's server ---------------------------


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on {port} within {timeout:g} s") from None
            time.sleep(0.05)


@dataclass
class RedisProcess:
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no"]
        command += ["--dir", str(self.directory)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        wait_for_port(self.port, self.process, "redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@contextmanager
def redis_process(directory: Path) -> Iterator[RedisProcess]:
    redis = RedisProcess(free_port(), directory)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@dataclass
class Workers:
    url: str
    log: Path

    def records(self, event: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [record for record in map(json.loads, lines) if record["event"] == event]


@contextmanager
def serving(directory: Path, redis_url: str, *, workers: int, key: str, prefix: str) -> Iterator[Workers]:
    """This module's server with ``workers`` workers on a port of its own, sharing ``redis_url`` (its keys under
    ``prefix``) and signing requestState with ``key``, once every worker has answered; stopped afterwards."""
    script, log = directory / "scaleout_modern_server.py", directory / "records.jsonl"
    script.write_text(SERVER_SOURCE, encoding="utf-8")
    port = free_port()
    command = [sys.executable, "-m", "mcpgen_runtime.server.runner", str(script), "--transport", "http"]
    command += ["--port", str(port), "--workers", str(workers), "--redis", redis_url, "--log-level", "warning"]
    environment = {
        **os.environ,
        "SCALEOUT_TEST_LOG": str(log),
        "MCPGEN_REQUEST_STATE_KEY": key,
        "MCPGEN_REDIS_PREFIX": prefix,
    }
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, env=environment, start_new_session=True)
    try:
        wait_for_port(port, process, "the server")
        url, seen = f"http://{HOST}:{port}/mcp", set[int]()
        deadline = time.monotonic() + 30
        while len(seen) < workers:  # every worker up (new connections: the kernel spreads them)
            assert time.monotonic() < deadline, f"only workers {seen} answered"
            seen.add(whoami(url))
        yield Workers(url, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[Workers]:
    """WORKERS workers on one port (conftest's Redis, a key prefix of their own), for the module's tests."""
    directory = tmp_path_factory.mktemp("modern")
    with serving(directory, redis_url, workers=WORKERS, key=secrets.token_hex(32), prefix=f"m{free_port()}") as found:
        yield found


def whoami(url: str) -> int:
    """The pid of the worker that answers a new connection (synchronous: fixtures run outside the event loop)."""
    params = {"name": "whoami", "arguments": {}, "_meta": META}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "whoami"}
    headers |= {"Accept": "application/json, text/event-stream", "Connection": "close"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = httpx2.post(url, json=body, headers=headers, timeout=WAIT)
    assert response.status_code == 200, response.text
    return pid_of(response.json()["result"])


def pid_of(result: dict[str, Any]) -> int:
    """The pid a tool of this module's server returned."""
    return int(result["content"][0]["text"])


def fresh_connections() -> httpx2.AsyncClient:
    """An HTTP client that opens a new connection for every request (no keep-alive): any worker may answer."""
    return httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=WAIT)


async def post_tool_call(
    http: httpx2.AsyncClient, url: str, name: str, arguments: dict[str, Any], **extra: Any
) -> httpx2.Response:
    """One raw 2026-07-28 tools/call POST (``extra``: more params, inputResponses and requestState)."""
    params = {"name": name, "arguments": arguments, "_meta": META, **extra}
    body = {"jsonrpc": "2.0", "id": secrets.randbelow(1 << 30), "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    headers["Accept"] = "application/json, text/event-stream"
    return await http.post(url, json=body, headers=headers)


async def call_tool(
    http: httpx2.AsyncClient, url: str, name: str, arguments: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """One raw 2026-07-28 tools/call POST (``extra``: more params, inputResponses and requestState); its result."""
    response = await post_tool_call(http, url, name, arguments, **extra)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "result" in answer, answer
    return dict(answer["result"])


# -- requestState across workers --------------------------------------------------------------------------------


async def test_a_request_state_from_one_worker_is_accepted_by_another(workers: Workers) -> None:
    async with fresh_connections() as http:

        async def round_on_another_worker(retry: dict[str, Any], than: int) -> tuple[dict[str, Any], int]:
            """The answer to ``retry`` from a worker other than ``than`` (the same retry, sent again on new
            connections until one lands elsewhere: a token stays valid for its TTL)."""
            for _ in range(TRIES):
                result = await call_tool(http, workers.url, "two_steps", {}, **retry)
                pid = workers.records("two_steps")[-1]["pid"]
                if pid != than:
                    return result, pid
            pytest.fail(f"{TRIES} new connections all reached worker {than}: {result}")

        first = await call_tool(http, workers.url, "two_steps", {})
        first_pid = workers.records("two_steps")[-1]["pid"]
        assert first["resultType"] == "input_required"
        responses = {"elicitation-1": {"action": "accept", "content": {"name": "Cy"}}}
        retry = {"inputResponses": responses, "requestState": first["requestState"]}
        second, second_pid = await round_on_another_worker(retry, than=first_pid)
        # Verified with the shared key, the state carried round 1's answer: round 2 asks the second question.
        assert second["resultType"] == "input_required", second
        assert list(second["inputRequests"]) == ["elicitation-2"]
        responses = {"elicitation-2": {"action": "accept", "content": {"color": "blue"}}}
        third, third_pid = await round_on_another_worker(
            {"inputResponses": responses, "requestState": second["requestState"]}, than=second_pid
        )
    assert third["resultType"] == "complete" and third["content"][0]["text"] == "Cy likes blue"
    assert first_pid != second_pid != third_pid


async def test_the_client_completes_an_input_required_call_whichever_workers_answer(workers: Workers) -> None:
    class Answers(v5.client.ClientHandlers[ClientContext]):
        async def elicit(self, params: v5.ElicitRequestParams, context: ClientContext) -> v5.ElicitResult:
            content: dict[str, Any] = {"name": "Ada"} if params.message == "Step 1" else {"color": "green"}
            return v5.ElicitResult(action="accept", content=content)

    async with fresh_connections() as http:
        options: dict[str, Any] = {"mode": MODERN, "handlers": Answers(), "request_timeout": WAIT}
        async with Client.connect_http(workers.url, http_client=http, **options) as client:
            for _ in range(10):  # until the rounds of one call were answered by more than one worker
                done = len(workers.records("two_steps"))
                result = await client.call_tool("two_steps", {})
                assert result.content[0].text == "Ada likes green"
                if len({record["pid"] for record in workers.records("two_steps")[done:]}) > 1:
                    return
    pytest.fail("10 calls of 3 rounds each were all answered by one worker")


async def test_hosts_sharing_the_configured_key_accept_each_others_state_and_no_other_does(
    tmp_path: Path, redis_url: str
) -> None:
    """Workers forked by one ``--workers N`` share even a random key; separate processes (hosts, or uvicorn's
    workers) share only the configured one: two of them take turns, a third with another key refuses."""
    key, prefix = secrets.token_hex(32), f"h{free_port()}"
    with ExitStack() as stack:
        hosts = []
        for name, own_key in (("a", key), ("b", key), ("c", secrets.token_hex(32))):
            (tmp_path / name).mkdir()
            hosts.append(
                stack.enter_context(serving(tmp_path / name, redis_url, workers=1, key=own_key, prefix=prefix))
            )
        async with fresh_connections() as http:
            first = await call_tool(http, hosts[0].url, "two_steps", {})
            responses = {"elicitation-1": {"action": "accept", "content": {"name": "Di"}}}
            retry = {"inputResponses": responses, "requestState": first["requestState"]}
            refused = await post_tool_call(http, hosts[2].url, "two_steps", {}, **retry)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32602, refused.text
            second = await call_tool(http, hosts[1].url, "two_steps", {}, **retry)
            responses = {"elicitation-2": {"action": "accept", "content": {"color": "red"}}}
            third = await call_tool(
                http, hosts[0].url, "two_steps", {}, inputResponses=responses, requestState=second["requestState"]
            )
    assert third["content"][0]["text"] == "Di likes red"


async def test_stateless_requests_and_their_state_need_no_redis(tmp_path: Path) -> None:
    (tmp_path / "redis").mkdir()
    with redis_process(tmp_path / "redis") as redis:
        key, prefix = secrets.token_hex(32), f"d{free_port()}"
        with serving(tmp_path, redis.url, workers=2, key=key, prefix=prefix) as workers:
            redis.stop()
            async with fresh_connections() as http:
                url = workers.url
                first = await call_tool(http, url, "two_steps", {})
                name = {"elicitation-1": {"action": "accept", "content": {"name": "Ed"}}}
                second = await call_tool(
                    http, url, "two_steps", {}, inputResponses=name, requestState=first["requestState"]
                )
                color = {"elicitation-2": {"action": "accept", "content": {"color": "teal"}}}
                third = await call_tool(
                    http, url, "two_steps", {}, inputResponses=color, requestState=second["requestState"]
                )
                pids = {pid_of(await call_tool(http, url, "whoami", {})) for _ in range(20)}
    assert third["content"][0]["text"] == "Ed likes teal"
    assert len(pids) == 2  # both workers kept answering


# -- change notifications across workers -------------------------------------------------------------------------


@dataclass
class HeldStream:
    subscription: Subscription
    pid: int  # the worker holding it
    uri: str  # the resource it watches


@asynccontextmanager
async def listen_streams(workers: Workers, http: httpx2.AsyncClient) -> AsyncIterator[list[HeldStream]]:
    """Listen streams (tools list changes, and each its own resource) held by at least two different workers, each
    stream on its own connection."""
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client.connect_http(workers.url, http_client=http, mode=MODERN, request_timeout=WAIT)
        )
        streams: list[HeldStream] = []
        for index in range(TRIES):
            uri = f"file:///stream-{index}-{secrets.token_hex(4)}"
            subscription = await stack.enter_async_context(client.listen(tools=True, resource_uris=[uri]))
            assert subscription.acknowledged.tools_list_changed is True
            assert subscription.acknowledged.resource_subscriptions == [uri]
            (record,) = [record for record in workers.records("subscribe") if record["uri"] == uri]
            streams.append(HeldStream(subscription, record["pid"], uri))
            if len(streams) >= WORKERS and len({stream.pid for stream in streams}) > 1:
                break
        else:
            pytest.fail(f"{TRIES} listen streams were all held by one worker")
        await anyio.sleep(0.5)  # every worker's subscriber is up (they start with the workers)
        yield streams


async def collect(subscription: Subscription, seconds: float) -> list[Any]:
    """What ``subscription`` delivers within ``seconds``."""
    found: list[Any] = []
    with anyio.move_on_after(seconds):
        while True:
            found.append(await subscription.next())
    return found


async def collect_all(streams: list[HeldStream], seconds: float) -> list[list[Any]]:
    """What each of ``streams`` delivers within the same ``seconds``."""
    found: list[list[Any]] = [[] for _ in streams]

    async def one(index: int) -> None:
        found[index] = await collect(streams[index].subscription, seconds)

    async with anyio.create_task_group() as tg:
        for index in range(len(streams)):
            tg.start_soon(one, index)
    return found


async def test_a_list_change_on_one_worker_reaches_every_listen_stream_exactly_once(workers: Workers) -> None:
    async with fresh_connections() as http, listen_streams(workers, http) as streams:
        # The streams are held by two workers or more: whichever worker the call lands on, some are elsewhere.
        raiser = pid_of(await call_tool(http, workers.url, "change_tools", {}))
        received = await collect_all(streams, 2.0)
    assert any(stream.pid != raiser for stream in streams)
    for stream, notifications in zip(streams, received, strict=True):
        where = "the raising worker" if stream.pid == raiser else "another worker"
        kinds = [type(notification).__name__ for notification in notifications]
        assert kinds == ["ToolListChangedNotification"], f"stream on {where} ({stream.pid}, raised on {raiser})"


async def test_a_resource_update_reaches_only_the_stream_watching_it(workers: Workers) -> None:
    async with fresh_connections() as http, listen_streams(workers, http) as streams:
        for watched in streams[:2]:
            result = await call_tool(http, workers.url, "touch", {"uri": watched.uri})
            assert pid_of(result) > 0
        received = await collect_all(streams, 2.0)
    for index, (stream, notifications) in enumerate(zip(streams, received, strict=True)):
        uris = [notification.params.uri for notification in notifications]
        assert uris == ([stream.uri] if index < 2 else []), f"stream {index} (worker {stream.pid})"


# -- one process, two "workers": Redis outages and bad messages ----------------------------------------------------


def notifying_server(name: str) -> Server:
    server = Server(name)

    @server.tool()
    def hello() -> str:
        return "hello"

    return server


@asynccontextmanager
async def two_workers(redis: RedisProcess, **options: Any) -> AsyncIterator[tuple[list[Server], list[Any]]]:
    """Two servers on two ports, each with its broadcast on ``redis``, and a tools listen stream on each."""
    async with AsyncExitStack() as stack:
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)
        servers, streams = [notifying_server("a"), notifying_server("b")], []
        for server in servers:
            url = await tg.start(lambda task_status, s=server: s.serve_http(port=0, task_status=task_status))
            client = Redis.from_url(redis.url, socket_timeout=2, retry_on_timeout=False)
            stack.push_async_callback(client.aclose)
            broadcast = NotificationBroadcast(client, "test", timeout=2, max_backoff=0.5, **options)
            await stack.enter_async_context(broadcast.running(server))
            with anyio.fail_after(WAIT):
                await broadcast.subscribed.wait()
            client_ = await stack.enter_async_context(Client.connect_http(f"{url}/mcp", mode=MODERN))
            streams.append(await stack.enter_async_context(client_.listen(tools=True)))
        yield servers, streams


async def test_while_redis_is_down_the_raising_worker_delivers_and_the_others_resync_after(tmp_path: Path) -> None:
    with redis_process(tmp_path) as redis:
        async with two_workers(redis) as ((first, _), (here, there)):
            redis.stop()
            await first.notify_tools_changed()  # must not wait for Redis, nor fail
            assert [type(n).__name__ for n in await collect(here, 1.0)] == ["ToolListChangedNotification"]
            assert await collect(there, 1.0) == []  # lost on the way: Redis is down
            redis.start()
            # Back: the subscription is renewed, and the other worker's stream is told the list may have changed.
            with anyio.fail_after(WAIT):
                assert isinstance(await there.next(), v5.ToolListChangedNotification)


async def test_what_is_not_a_change_notification_is_ignored(tmp_path: Path) -> None:
    with redis_process(tmp_path) as redis:
        async with two_workers(redis) as (_, (here, _)):
            outsider = Redis.from_url(redis.url)
            try:
                for junk in (b"not json", b"[1]", json.dumps({"origin": "x", "capability": "logging", "method": "x"})):
                    await outsider.publish("test:notifications", junk)
                resource = {"origin": "x", "capability": "resources.subscribe"}
                await outsider.publish(
                    "test:notifications", json.dumps({**resource, "method": "notifications/resources/updated"})
                )
                valid = {"origin": "x", "capability": "tools.listChanged", "method": "notifications/tools/list_changed"}
                await outsider.publish("test:notifications", json.dumps(valid))
            finally:
                await outsider.aclose()
            assert [type(n).__name__ for n in await collect(here, 1.0)] == ["ToolListChangedNotification"]


async def test_a_full_outbox_drops_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    server = notifying_server("lonely")
    unreachable = Redis(host=HOST, port=free_port(), socket_connect_timeout=0.2)
    broadcast = NotificationBroadcast(unreachable, "test", max_queued=2, timeout=0.2, max_backoff=0.2)
    try:
        async with broadcast.running(server):
            assert server.relay is broadcast
            for _ in range(5):
                await server.notify_tools_changed()
            await anyio.sleep(0.3)
        assert server.relay is None
    finally:
        await unreachable.aclose()
    assert broadcast.published == 0 and broadcast.dropped >= 2
    assert caplog.text.count("notifications wait for Redis") == 1  # one warning for the whole outage
    assert "lost the Redis subscription test:notifications" in caplog.text


def test_without_redis_a_server_relays_nothing() -> None:
    assert notifying_server("alone").relay is None


# -- docs/how-to/deploy.md ----------------------------------------------------------------------------------------------

DEPLOY_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "deploy.md"
SHELL_BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_deploy_guide_names_every_setting() -> None:
    text = DEPLOY_GUIDE.read_text(encoding="utf-8")
    missing = [variable for variable in ENVIRONMENT.values() if f"`{variable}`" not in text]
    assert not missing, f"docs/how-to/deploy.md does not describe {missing}"


def test_the_deploy_guide_runs_as_printed(tmp_path: Path) -> None:
    """The quick start, then the uvicorn command line, pasted into bash in an empty directory (the guide's ports
    swapped for free ones: other tests run at the same time); and the key one-liner."""
    blocks = SHELL_BLOCK.findall(DEPLOY_GUIDE.read_text(encoding="utf-8"))
    # From the quick start on (tests/test_docs_shell.py leaves these blocks to this test: they need redis-server).
    blocks = blocks[next(index for index, block in enumerate(blocks) if "cat > server.py" in block) :]
    write_server, start, request, stop, uvicorn, make_key = blocks[:6]
    assert "cat > server.py" in write_server and "--workers 4 --redis" in start and "shutdown" in stop
    assert "uvicorn --factory" in uvicorn and "token_hex" in make_key
    wait = "until curl -s -o /dev/null http://127.0.0.1:8000/mcp; do sleep 0.2; done\n"
    assert wait in start
    script = "\n".join(
        [
            "set -e",
            write_server,
            start,
            request.rstrip() + " > answer-runner.json",
            "kill %1; wait %1 || true",
            uvicorn.rstrip() + " 2> uvicorn.log &",
            wait,
            request.rstrip() + " > answer-uvicorn.json",
            stop,
        ]
    )
    script = script.replace("6379", str(free_port())).replace("8000", str(free_port()))
    environment = {key: value for key, value in os.environ.items() if not key.startswith("MCPGEN_")}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ("answer-runner.json", "answer-uvicorn.json"):
        answer = json.loads((tmp_path / name).read_text())
        assert answer["result"]["content"] == [{"type": "text", "text": "5"}], name
    key = subprocess.run(["bash", "-c", make_key], env=environment, capture_output=True, text=True, check=True)
    assert re.fullmatch(r"[0-9a-f]{64}\n", key.stdout)
