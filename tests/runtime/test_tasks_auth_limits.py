"""Tasks on a protected server, and the task limits, seen end to end: a real ``Server`` with task tools served over
streamable HTTP by uvicorn, protected by ``BearerAuth`` with a ``JWTVerifier`` against the test authorization server
(tests/auth_server.py: signed JWTs for two users, ``alice`` and ``bob``), spoken to with raw HTTP (httpx2), so that
what is checked is what goes over the wire, in both eras.

- Binding: a task belongs to the token's subject. Bob's ``tasks/get``, ``tasks/update``, ``tasks/cancel`` (and in
  2025-11-25 ``tasks/result``, ``tasks/list``) on Alice's task answer exactly as for an id that never existed (the
  same status, code, message and data, the id aside), and Alice's task is untouched by them.
- Limits: the per-principal limit of live tasks stops a flood with an error while the server goes on serving, and
  another principal is unaffected; a result over ``max_result_bytes`` makes the task ``failed`` with an error naming
  the size and the limit; a task past its TTL is gone, like an unknown one.
"""

from __future__ import annotations

import itertools
import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.tasks.engine import MIN_TTL_MS
from mcpgen_runtime.task_store import InMemoryTaskStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from auth_server import AuthServer, running_auth_server
from support.servers import serving_protected

pytestmark = pytest.mark.anyio

WAIT = 20.0  # each test's whole deadline, in seconds
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"
CAPABILITIES = {"extensions": {EXTENSION: {}}, "elicitation": {}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"protocolVersion": LEGACY, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "0"}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

request_ids = itertools.count(1)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthServer]:
    with running_auth_server() as auth:
        yield auth


def build_server(store: InMemoryTaskStore | None = None) -> Server:
    server = Server("protected-tasks", task_store=store or InMemoryTaskStore())

    @server.tool(task="optional")
    async def hold(seconds: float, ctx: Context) -> str:
        """Work for ``seconds`` (a task that stays ``working`` while a test looks at it)."""
        await ctx.task_status("holding")
        await anyio.sleep(seconds)
        return f"held {seconds:g}s"

    @server.tool(task="optional")
    async def ask_name(ctx: Context) -> str:
        """Ask the user's name (in a task: ``input_required`` until answered)."""
        answer = await ctx.elicit("Your name?", NAME_SCHEMA, input_key="name")
        return f"hello {answer.content['name']}"

    @server.tool(task="optional")
    async def big(size: int) -> str:
        """A result of about ``size`` bytes."""
        return "x" * size

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """Never a task: shows the server still serves plain calls."""
        assert ctx.auth is not None
        return ctx.auth.subject

    return server


@asynccontextmanager
async def serving(auth: AuthServer, store: InMemoryTaskStore | None = None) -> AsyncIterator[str]:
    """The protected server's MCP URL (its resource), requiring the ``mcp`` scope."""
    async with serving_protected(build_server(store), auth.issuer) as url:
        yield url


def message_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or SSE answer (the last one of the stream: the response)."""
    if response.headers["content-type"].startswith("application/json"):
        message: dict[str, Any] = response.json()
        return message
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    message = json.loads(data[-1])
    return message


class Modern:
    """One user speaking 2026-07-28 with the tasks extension declared in every request's ``_meta``."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    async def send(self, method: str, params: dict[str, Any], name: str | None = None) -> tuple[int, dict[str, Any]]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": next(request_ids), "method": method, "params": {**params, "_meta": meta}}
        headers = ACCEPT | {
            "mcp-protocol-version": MODERN,
            "mcp-method": method,
            "authorization": f"Bearer {self.token}",
        }
        routed = name if name is not None else params.get("taskId", params.get("name"))
        if routed is not None:
            headers["mcp-name"] = routed  # the routing header: the tool's name, or the task's id on tasks/*
        async with httpx2.AsyncClient(timeout=WAIT) as client:
            response = await client.post(self.url, json=body, headers=headers)
        return response.status_code, message_of(response)

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        status, message = await self.send(method, params)
        assert status == 200 and "result" in message, message
        result: dict[str, Any] = message["result"]
        return result

    async def start(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        created = await self.result("tools/call", {"name": tool, "arguments": arguments})
        assert created["resultType"] == "task", created
        return created

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        while (task := await self.result("tasks/get", {"taskId": task_id}))["status"] not in statuses:
            await anyio.sleep(0.02)
        return task


class Legacy:
    """One user speaking 2025-11-25 over a session of its own (initialized with its token)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.session_id: str | None = None

    async def post(self, body: dict[str, Any]) -> httpx2.Response:
        headers = ACCEPT | {"authorization": f"Bearer {self.token}"}
        if self.session_id is not None:
            headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": LEGACY}
        async with httpx2.AsyncClient(timeout=WAIT) as client:
            return await client.post(self.url, json=body, headers=headers)

    async def initialize(self) -> Legacy:
        response = await self.post({"jsonrpc": "2.0", "id": next(request_ids), "method": "initialize", "params": INIT})
        assert response.status_code == 200, response.text
        assert message_of(response)["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        self.session_id = response.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def send(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await self.post({"jsonrpc": "2.0", "id": next(request_ids), "method": method, "params": params})
        return response.status_code, message_of(response)

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        status, message = await self.send(method, params)
        assert status == 200 and "result" in message, message
        result: dict[str, Any] = message["result"]
        return result

    async def start(self, tool: str, arguments: dict[str, Any], ttl_ms: int = 60_000) -> dict[str, Any]:
        created = await self.result("tools/call", {"name": tool, "arguments": arguments, "task": {"ttl": ttl_ms}})
        task: dict[str, Any] = created["task"]
        return task

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        while (task := await self.result("tasks/get", {"taskId": task_id}))["status"] not in statuses:
            await anyio.sleep(0.02)
        return task


async def whoami(user: Modern | Legacy) -> str:
    """A plain (never a task) call's answer: the subject the server saw, so the server is still serving."""
    text: str = (await user.result("tools/call", {"name": "whoami", "arguments": {}}))["content"][0]["text"]
    return text


def tokens(auth: AuthServer, url: str) -> tuple[str, str]:
    alice = auth.issue_token(audience=url, scopes=["mcp"], subject="alice")
    bob = auth.issue_token(audience=url, scopes=["mcp"], subject="bob")
    return alice, bob


def without_id(answer: tuple[int, dict[str, Any]], task_id: str) -> tuple[int, str]:
    """An answer as a comparable text with the asked task id blanked out (and the request id dropped): what Bob
    learns from it beyond the id he sent himself."""
    status, message = answer
    assert "error" in message, message
    return status, json.dumps(message["error"], sort_keys=True).replace(task_id, "<id>")


async def assert_like_unknown(ask: Any, method: str, params: dict[str, Any], task_id: str) -> None:
    """``method`` on ``task_id`` answers what it answers for an id that never existed."""
    unknown_id = str(uuid.uuid4())
    seen = without_id(await ask(method, {**params, "taskId": task_id}), task_id)
    unknown = without_id(await ask(method, {**params, "taskId": unknown_id}), unknown_id)
    assert seen == unknown, (method, seen, unknown)
    assert '"code": -32602' in seen[1], seen


# -- binding: another principal's task is an unknown task ------------------------------------------------------------


async def test_modern_another_principals_task_is_unknown_to_every_task_method(issuer: AuthServer) -> None:
    with anyio.fail_after(WAIT):
        async with serving(issuer) as url:
            alice_token, bob_token = tokens(issuer, url)
            alice, bob = Modern(url, alice_token), Modern(url, bob_token)
            created = await alice.start("ask_name", {})
            task_id = created["taskId"]
            waiting = await alice.until(task_id, "input_required")
            assert set(waiting["inputRequests"]) == {"name"}

            answers = {"name": {"action": "accept", "content": {"name": "Mallory"}}}
            await assert_like_unknown(bob.send, "tasks/get", {}, task_id)
            await assert_like_unknown(bob.send, "tasks/update", {"inputResponses": answers}, task_id)
            await assert_like_unknown(bob.send, "tasks/cancel", {}, task_id)
            # (subscriptions/listen: test_modern_a_listen_request_follows_only_the_requesters_own_tasks)

            # Alice's task is as it was: Bob's answer was not taken, his cancel not requested.
            still = await alice.result("tasks/get", {"taskId": task_id})
            assert still["status"] == "input_required" and set(still["inputRequests"]) == {"name"}, still

            # A new token for the same subject is the same principal.
            renewed = Modern(url, issuer.issue_token(audience=url, scopes=["mcp"], subject="alice"))
            await renewed.result(
                "tasks/update",
                {"taskId": task_id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Alice"}}}},
            )
            done = await alice.until(task_id, "completed", "failed", "cancelled")
            assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "hello Alice", done
            # Finished, it is still unknown to Bob (not "already terminal", which would tell him it exists).
            for method in ("tasks/get", "tasks/update", "tasks/cancel"):
                await assert_like_unknown(bob.send, method, {"inputResponses": answers}, task_id)

            # Alice's own cancel works on her own running task; Bob's cancel of it did nothing before.
            running = (await alice.start("hold", {"seconds": 60}))["taskId"]
            await assert_like_unknown(bob.send, "tasks/cancel", {}, running)
            assert (await alice.result("tasks/get", {"taskId": running}))["status"] == "working"
            await alice.result("tasks/cancel", {"taskId": running})
            assert (await alice.until(running, "cancelled", "completed", "failed"))["status"] == "cancelled"


async def test_legacy_another_principals_task_is_unknown_to_every_task_method(issuer: AuthServer) -> None:
    with anyio.fail_after(WAIT):
        async with serving(issuer) as url:
            alice_token, bob_token = tokens(issuer, url)
            alice = await Legacy(url, alice_token).initialize()
            bob = await Legacy(url, bob_token).initialize()
            running = (await alice.start("hold", {"seconds": 60}))["taskId"]
            quick = (await alice.start("hold", {"seconds": 0}))["taskId"]
            await alice.until(quick, "completed")

            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                for task_id in (running, quick):
                    await assert_like_unknown(bob.send, method, {}, task_id)
            assert (await bob.result("tasks/list", {}))["tasks"] == []
            bob_own = (await bob.start("hold", {"seconds": 0}))["taskId"]
            assert [task["taskId"] for task in (await bob.result("tasks/list", {}))["tasks"]] == [bob_own]

            # Bob cannot use Alice's session either: the session is bound to its subject (404 at the transport).
            hijacker = Legacy(url, bob_token)
            hijacker.session_id = alice.session_id
            hijack = await hijacker.post({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}})
            assert hijack.status_code == 404, hijack.text

            # Alice's tasks are untouched and hers to use, from another session of hers too.
            assert (await alice.result("tasks/get", {"taskId": running}))["status"] == "working"
            listed = {task["taskId"] for task in (await alice.result("tasks/list", {}))["tasks"]}
            assert listed == {running, quick}
            other_session = await Legacy(
                url, issuer.issue_token(audience=url, scopes=["mcp"], subject="alice")
            ).initialize()
            payload = await other_session.result("tasks/result", {"taskId": quick})
            assert payload["content"][0]["text"] == "held 0s"
            assert payload["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": quick}
            cancelled = await alice.result("tasks/cancel", {"taskId": running})
            assert cancelled["status"] == "cancelled"


# -- limits ----------------------------------------------------------------------------------------------------------


async def test_a_flood_of_tasks_stops_at_the_per_principal_limit_and_others_go_on(issuer: AuthServer) -> None:
    limit = 3
    with anyio.fail_after(WAIT):
        async with serving(issuer, InMemoryTaskStore(max_tasks_per_principal=limit)) as url:
            alice_token, bob_token = tokens(issuer, url)
            alice, bob = Modern(url, alice_token), Modern(url, bob_token)
            started = [(await alice.start("hold", {"seconds": 60}))["taskId"] for _ in range(limit)]
            refused = [await alice.send("tools/call", {"name": "hold", "arguments": {"seconds": 60}}) for _ in range(5)]
            for status, message in refused:
                # -32603 is no bad request: HTTP 200 (transports/http/server/modern.py's status table)
                assert status == 200 and message["error"]["code"] == -32603, message
                assert "Cannot create the task" in message["error"]["message"], message
                assert f"limit {limit}" in message["error"]["message"], message

            # The server goes on serving: Alice's plain calls and her tasks, and Bob's own tasks.
            assert await whoami(alice) == "alice"
            assert (await alice.result("tasks/get", {"taskId": started[0]}))["status"] == "working"
            bobs = [(await bob.start("hold", {"seconds": 0}))["taskId"] for _ in range(limit)]
            for task_id in bobs:
                assert (await bob.until(task_id, "completed"))["result"]["content"][0]["text"] == "held 0s"

            # The limit counts live tasks: one of Alice's ends, and she may start another.
            await alice.result("tasks/cancel", {"taskId": started[0]})
            await alice.until(started[0], "cancelled")
            again = await alice.start("hold", {"seconds": 0})
            assert (await alice.until(again["taskId"], "completed"))["status"] == "completed"

            # In 2025-11-25 too, the same limit for the same principal: two of hers live, one more fits.
            legacy = await Legacy(url, alice_token).initialize()
            await legacy.start("hold", {"seconds": 60})
            status, message = await legacy.send(
                "tools/call", {"name": "hold", "arguments": {"seconds": 60}, "task": {"ttl": 60_000}}
            )
            assert message["error"]["code"] == -32603 and f"limit {limit}" in message["error"]["message"], message
            assert await whoami(legacy) == "alice"


async def test_a_result_over_the_size_limit_makes_the_task_failed_with_a_clear_error(issuer: AuthServer) -> None:
    limit = 2_000
    with anyio.fail_after(WAIT):
        async with serving(issuer, InMemoryTaskStore(max_result_bytes=limit)) as url:
            alice_token, _ = tokens(issuer, url)
            modern = Modern(url, alice_token)
            fits = await modern.start("big", {"size": 100})
            assert (await modern.until(fits["taskId"], "completed", "failed"))["status"] == "completed"
            too_big = await modern.start("big", {"size": 5_000})
            failed = await modern.until(too_big["taskId"], "completed", "failed")
            assert failed["status"] == "failed", failed
            assert failed["error"]["code"] == -32603, failed
            assert f"over the {limit}-byte limit" in failed["error"]["message"], failed

            # Input answers are bounded the same way: an oversized tasks/update is refused, the task still waits.
            asking = (await modern.start("ask_name", {}))["taskId"]
            await modern.until(asking, "input_required")
            huge = {"name": {"action": "accept", "content": {"name": "y" * 5_000}}}
            status, message = await modern.send("tasks/update", {"taskId": asking, "inputResponses": huge})
            assert status == 400 and message["error"]["code"] == -32602, message
            assert f"{limit}-byte limit" in message["error"]["message"], message
            assert (await modern.result("tasks/get", {"taskId": asking}))["status"] == "input_required"
            small = {"name": {"action": "accept", "content": {"name": "Al"}}}
            await modern.result("tasks/update", {"taskId": asking, "inputResponses": small})
            answered = await modern.until(asking, "completed", "failed")
            assert answered["result"]["content"][0]["text"] == "hello Al", answered

            legacy = await Legacy(url, alice_token).initialize()
            task_id = (await legacy.start("big", {"size": 5_000}))["taskId"]
            task = await legacy.until(task_id, "completed", "failed")
            assert task["status"] == "failed" and f"over the {limit}-byte limit" in task["statusMessage"], task
            status, message = await legacy.send("tasks/result", {"taskId": task_id})
            assert message["error"]["code"] == -32603 and f"{limit}-byte limit" in message["error"]["message"], message
            # The server keeps serving.
            assert await whoami(legacy) == "alice"


async def test_an_expired_task_is_gone_like_an_unknown_one(issuer: AuthServer) -> None:
    ttl_ms = 800  # short to wait out, long enough for a slow machine to poll the task once
    # 2026-07-28 clients name no ttl: the store's default applies.
    store = InMemoryTaskStore(default_ttl_ms=ttl_ms, max_ttl_ms=MIN_TTL_MS)
    with anyio.fail_after(WAIT):
        async with serving(issuer, store) as url:
            alice_token, _ = tokens(issuer, url)
            modern = Modern(url, alice_token)
            created = await modern.start("hold", {"seconds": 0})
            assert created["ttlMs"] == ttl_ms, created
            await modern.until(created["taskId"], "completed")
            running = await modern.start("hold", {"seconds": 60})  # expires while it runs: the engine stops it
            await anyio.sleep(ttl_ms / 1000 + 0.2)
            for task_id in (created["taskId"], running["taskId"]):
                await assert_like_unknown(modern.send, "tasks/get", {}, task_id)
                await assert_like_unknown(modern.send, "tasks/cancel", {}, task_id)

            # 2025-11-25: the client asks; ttl 0 would be gone before its handle arrived, so it gets MIN_TTL_MS, and a
            # negative one the store's default (the text: "Receivers MAY override the requested ttl").
            legacy = await Legacy(url, alice_token).initialize()
            assert (await legacy.start("hold", {"seconds": 0}, ttl_ms=-5))["ttl"] == ttl_ms
            task = await legacy.start("hold", {"seconds": 0}, ttl_ms=0)
            assert task["ttl"] == MIN_TTL_MS, task
            assert (await legacy.until(task["taskId"], "completed"))["ttl"] == MIN_TTL_MS
            assert (await legacy.result("tasks/result", {"taskId": task["taskId"]}))["content"][0]["text"] == "held 0s"
            await anyio.sleep(MIN_TTL_MS / 1000 + 0.2)
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                await assert_like_unknown(legacy.send, method, {}, task["taskId"])
            assert (await legacy.result("tasks/list", {}))["tasks"] == []


async def first_events(url: str, token: str, task_ids: list[str], count: int) -> list[dict[str, Any]]:
    """The first ``count`` messages of a 2026-07-28 ``subscriptions/listen`` stream following ``task_ids``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    params = {"notifications": {"taskIds": task_ids}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": next(request_ids), "method": "subscriptions/listen", "params": params}
    headers = ACCEPT | {
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
        "authorization": f"Bearer {token}",
    }
    events: list[dict[str, Any]] = []
    async with httpx2.AsyncClient(timeout=WAIT) as client:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            async for line in response.aiter_lines():
                if line.startswith("data:") and line[5:].strip():
                    events.append(json.loads(line[5:]))
                    if len(events) == count:
                        break
    return events


async def test_modern_a_listen_request_follows_only_the_requesters_own_tasks(issuer: AuthServer) -> None:
    with anyio.fail_after(WAIT):
        async with serving(issuer) as url:
            alice_token, bob_token = tokens(issuer, url)
            alice, bob = Modern(url, alice_token), Modern(url, bob_token)
            alices = (await alice.start("hold", {"seconds": 60}))["taskId"]
            bobs = (await bob.start("hold", {"seconds": 60}))["taskId"]
            ack, first = await first_events(url, bob_token, [alices, bobs], 2)
            assert ack["method"] == "notifications/subscriptions/acknowledged", ack
            assert ack["params"]["notifications"]["taskIds"] == [bobs], ack  # Alice's id is not agreed to
            assert first["method"] == "notifications/tasks" and first["params"]["taskId"] == bobs, first
            (own_ack,) = await first_events(url, alice_token, [alices, bobs], 1)
            assert own_ack["params"]["notifications"]["taskIds"] == [alices], own_ack
