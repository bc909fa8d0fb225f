"""Tasks in the modern era (the 2026-07-28 extension ``io.modelcontextprotocol/tasks``): a real ``Server`` with
task tools against a raw ``Session`` over memory streams (the wire as the client sends it), and over streamable
HTTP with raw httpx (the ``Mcp-Name`` routing header). What the engine does (durable create, cancel, input through
tasks/update, errors as ``failed``, tool errors as ``completed``, leases, bounds) is seen through the wire.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import pytest
from support.servers import raw_session, serving_server

from mcpgen_runtime import JSONParams, JSONRPCError, Session
from mcpgen_runtime.server import Context, ProtocolError, Server, ToolError
from mcpgen_runtime.server.tasks import TaskEngine
from mcpgen_runtime.task_store import InMemoryTaskStore, TaskRecord

pytestmark = pytest.mark.anyio

WAIT = 10.0
VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"extensions": {EXTENSION: {}}, "elicitation": {}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": WITH_TASKS if capabilities is None else capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }


def build_server(**options: Any) -> Server:
    server = Server("tasks", **options)

    @server.tool()
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task="optional")
    async def slow_compute(seconds: float, context: Context) -> str:
        await context.task_status("computing")
        await anyio.sleep(seconds)
        return f"computed in {seconds}s"

    @server.tool(task="required")
    async def failing_job() -> str:
        raise ToolError("the job failed")

    @server.tool(task="required")
    async def protocol_error_job() -> str:
        raise ProtocolError(-32603, "the job broke", {"why": "on purpose"})

    @server.tool(task="optional")
    async def confirm_delete(filename: str, context: Context) -> str:
        answer = await context.elicit(f"Delete {filename}?", {"type": "object", "properties": {}})
        return f"{filename}: {answer.action}"

    @server.tool(task="optional")
    async def multi_input(context: Context) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        first, second = await context.gather(context.elicit("first?", schema), context.elicit("second?", schema))
        return f"{first.content['name']} and {second.content['name']}"

    @server.tool(task="required", deferred_task=True)
    async def interview(context: Context) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        answer = await context.elicit("Your name?", schema, input_key="user_name")
        await context.start_task("working for " + answer.content["name"])
        await anyio.sleep(0.05)
        return f"Hello, {answer.content['name']}, from task {context.task_id}"

    return server


@dataclass
class Peer:
    session: Session
    notifications: list[tuple[str, Any]] = field(default_factory=list)

    async def call(self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Any:
        with anyio.fail_after(WAIT):
            return await self.session.request(method, {**params, "_meta": meta(capabilities)})

    async def error(self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> Any:
        with pytest.raises(JSONRPCError) as caught:
            await self.call(method, params, capabilities)
        return caught.value

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while True:
                task = await self.call("tasks/get", {"taskId": task_id})
                if task["status"] in statuses:
                    return dict(task)
                await anyio.sleep(0.02)


@asynccontextmanager
async def connect(server: Server | None = None) -> AsyncIterator[Peer]:
    notifications: list[tuple[str, Any]] = []

    async def on_notification(method: str, params: JSONParams) -> None:
        notifications.append((method, params))

    async with raw_session(server or build_server(), None, on_notification) as session:
        yield Peer(session, notifications)


async def test_the_extension_is_advertised_and_task_support_listed_in_the_legacy_era_only() -> None:
    async with connect() as peer:
        discovered = await peer.call("server/discover", {})
        tools = await peer.call("tools/list", {})
    assert discovered["capabilities"]["extensions"] == {EXTENSION: {}}
    assert "tasks" not in discovered["capabilities"]
    assert all("execution" not in tool for tool in tools["tools"])  # no such field in 2026-07-28's Tool
    assert build_server().tools["slow_compute"].describe()["execution"] == {"taskSupport": "optional"}
    assert "execution" not in build_server().tools["greet"].describe()


async def test_a_task_is_created_then_polled_to_its_inlined_result() -> None:
    async with connect() as peer:
        created = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.2}})
        assert created["resultType"] == "task" and created["status"] == "working"
        assert "task" not in created and "result" not in created and "requestState" not in created
        assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
        assert created["createdAt"].endswith("Z")
        working = await peer.call("tasks/get", {"taskId": created["taskId"]})  # durable: resolves at once
        assert working["resultType"] == "complete" and working["taskId"] == created["taskId"]
        done = await peer.until(created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "computed in 0.2s"
    assert "statusMessage" not in done  # "computing" was the working task's; the store clears it on finish


async def test_without_the_extension_optional_tools_run_plainly_and_required_ones_are_refused() -> None:
    async with connect() as peer:
        plain = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, {})
        refused = await peer.error("tools/call", {"name": "failing_job", "arguments": {}}, {})
        gated = await peer.error("tasks/get", {"taskId": "x"}, {})
        legacy_hint = await peer.call("tools/call", {"name": "greet", "arguments": {"name": "a"}, "task": {"ttl": 1}})
    assert plain["resultType"] == "complete" and "taskId" not in plain
    assert refused.code == -32021 and refused.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    assert gated.code == -32021
    assert legacy_hint["resultType"] == "complete" and legacy_hint["content"][0]["text"] == "Hello, a!"


async def test_tool_errors_complete_and_protocol_errors_fail() -> None:
    async with connect() as peer:
        tool_error = await peer.call("tools/call", {"name": "failing_job", "arguments": {}})
        protocol_error = await peer.call("tools/call", {"name": "protocol_error_job", "arguments": {}})
        completed = await peer.until(tool_error["taskId"], "completed", "failed")
        failed = await peer.until(protocol_error["taskId"], "completed", "failed")
    assert completed["status"] == "completed" and completed["result"]["isError"] is True
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"] == {"code": -32603, "message": "the job broke", "data": {"why": "on purpose"}}


async def test_cancel_acks_empty_reaches_the_tool_and_is_idempotent() -> None:
    async with connect() as peer:
        created = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        ack = await peer.call("tasks/cancel", {"taskId": created["taskId"]})
        assert set(ack) == {"resultType", "_meta"} and ack["resultType"] == "complete"
        cancelled = await peer.until(created["taskId"], "cancelled", "completed", "failed")
        again = await peer.call("tasks/cancel", {"taskId": created["taskId"]})
        unknown = await peer.error("tasks/cancel", {"taskId": "no-such-task"})
    assert cancelled["status"] == "cancelled"
    assert again["resultType"] == "complete"
    assert unknown.code == -32602


async def test_input_goes_through_tasks_update_one_key_at_a_time() -> None:
    async with connect() as peer:
        created = await peer.call("tools/call", {"name": "multi_input", "arguments": {}})
        with anyio.fail_after(WAIT):
            while True:
                task = await peer.until(created["taskId"], "input_required")
                if len(task["inputRequests"]) == 2:
                    break
        first, second = sorted(task["inputRequests"])
        assert task["inputRequests"][first]["method"] == "elicitation/create"
        ack = await peer.call(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {first: {"action": "accept", "content": {"name": "a"}}}},
        )
        assert ack["resultType"] == "complete" and "status" not in ack
        partial = await peer.call("tasks/get", {"taskId": created["taskId"]})
        assert partial["status"] == "input_required" and list(partial["inputRequests"]) == [second]
        await peer.call(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {second: {"action": "accept", "content": {"name": "b"}}}},
        )
        done = await peer.until(created["taskId"], "completed", "failed")
    assert done["result"]["content"][0]["text"] == "a and b"


async def test_a_deferred_task_asks_by_multi_round_trip_then_runs_as_a_task() -> None:
    async with connect() as peer:
        first = await peer.call("tools/call", {"name": "interview", "arguments": {}})
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["user_name"]
        second = await peer.call(
            "tools/call",
            {
                "name": "interview",
                "arguments": {},
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": first["requestState"],
            },
        )
        assert second["resultType"] == "task" and "requestState" not in second and "inputRequests" not in second
        done = await peer.until(second["taskId"], "completed", "failed")
    assert done["result"]["content"][0]["text"] == f"Hello, Alice, from task {second['taskId']}"


async def test_removed_methods_and_bad_params() -> None:
    async with connect() as peer:
        removed = [await peer.error(method, {"taskId": "x"}) for method in ("tasks/result", "tasks/list")]
        no_id = await peer.error("tasks/get", {})
        bad_responses = await peer.error("tasks/update", {"taskId": "x", "inputResponses": [1]})
        unknown = await peer.error("tasks/get", {"taskId": "tasks-conformance-nonexistent"})
        still_serving = await peer.call("tools/call", {"name": "greet", "arguments": {"name": "b"}})
    assert [error.code for error in removed] == [-32601, -32601]
    assert no_id.code == bad_responses.code == unknown.code == -32602
    assert still_serving["content"][0]["text"] == "Hello, b!"


async def test_the_per_principal_limit_answers_an_error_and_the_server_goes_on() -> None:
    server = build_server(task_store=InMemoryTaskStore(max_tasks_per_principal=1))
    async with connect(server) as peer:
        first = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        refused = await peer.error("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        await peer.call("tasks/cancel", {"taskId": first["taskId"]})
        await peer.until(first["taskId"], "cancelled")
        again = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}})
    assert refused.code == -32603 and "too many tasks" in refused.message
    assert again["resultType"] == "task"


async def test_a_cancel_flag_set_by_another_worker_stops_the_tool_and_leases_are_renewed() -> None:
    store = InMemoryTaskStore()
    engine = TaskEngine(store, worker_id="worker-a", lease_seconds=0.3)
    finished = anyio.Event()

    async def body(run: Any) -> dict[str, Any]:
        try:
            await anyio.sleep(60)
        finally:
            finished.set()
        return {"content": []}

    async with engine.running():
        record = await engine.launch(body, principal="alice", protocol_version=VERSION, request={})
        assert isinstance(record, TaskRecord) and record.owner == "worker-a"
        await anyio.sleep(0.35)
        renewed = await store.get(record.task_id, "alice")
        assert renewed is not None and renewed.lease_expires_at is not None
        assert renewed.lease_expires_at > time.time()  # renewed past the first lease
        await store.request_cancel(record.task_id, "alice")  # as a tasks/cancel on another worker would
        with anyio.fail_after(2):
            await finished.wait()
            while (current := await store.get(record.task_id, "alice")) is not None and not current.is_terminal:
                await anyio.sleep(0.01)
    assert current is not None and current.status == "cancelled"


async def test_an_abandoned_task_is_failed_by_the_lease_sweep() -> None:
    store = InMemoryTaskStore()
    dead = TaskRecord(task_id="t-dead", principal=None, protocol_version=VERSION)
    await store.create(dead)
    await store.renew_lease("t-dead", "worker-gone", 0.05)
    engine = TaskEngine(store, lease_seconds=0.1)
    async with engine.running():
        with anyio.fail_after(2):
            while (record := await store.get("t-dead", None)) is not None and not record.is_terminal:
                await anyio.sleep(0.02)
    assert record is not None and record.status == "failed" and "worker-gone" in str(record.error)


async def test_listen_with_task_ids_pushes_each_change_until_the_task_ends() -> None:
    async with connect() as peer:
        created = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.3}})
        refused = await peer.error(
            "subscriptions/listen", {"notifications": {"taskIds": [created["taskId"]]}}, {"elicitation": {}}
        )
        assert refused.code == -32021

        async def listen() -> None:
            with anyio.move_on_after(WAIT):
                await peer.call("subscriptions/listen", {"notifications": {"taskIds": [created["taskId"], "unknown"]}})

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            with anyio.fail_after(WAIT):
                while not any(m == "notifications/tasks" and p["status"] == "completed" for m, p in peer.notifications):
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()
    ack = next(params for method, params in peer.notifications if method == "notifications/subscriptions/acknowledged")
    assert ack["notifications"]["taskIds"] == [created["taskId"]]  # the unknown id is not agreed to
    pushed = [params for method, params in peer.notifications if method == "notifications/tasks"]
    assert pushed[0]["taskId"] == created["taskId"] and pushed[0]["status"] == "working"
    assert pushed[-1]["result"]["content"][0]["text"] == "computed in 0.3s"
    assert all("io.modelcontextprotocol/subscriptionId" in params["_meta"] for params in pushed)


async def post(url: str, method: str, params: dict[str, Any], name: str | None) -> httpx2.Response:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": VERSION, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta()}}
    async with httpx2.AsyncClient(timeout=WAIT) as client:
        return await client.post(url, json=body, headers=headers)


async def test_over_http_the_task_methods_carry_mcp_name_equal_to_the_task_id() -> None:
    async with serving_server(build_server()) as url:
        created = await post(url, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}, "slow_compute")
        task_id = created.json()["result"]["taskId"]
        matched = await post(url, "tasks/get", {"taskId": task_id}, task_id)
        mismatched = await post(url, "tasks/get", {"taskId": task_id}, "another-task")
        missing = await post(url, "tasks/cancel", {"taskId": task_id}, None)
        cancelled = await post(url, "tasks/cancel", {"taskId": task_id}, task_id)
        with anyio.fail_after(WAIT):
            while (await post(url, "tasks/get", {"taskId": task_id}, task_id)).json()["result"][
                "status"
            ] != "cancelled":
                await anyio.sleep(0.02)
    assert matched.status_code == 200 and matched.json()["result"]["status"] == "working"
    for refused in (mismatched, missing):
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020
    assert cancelled.status_code == 200 and cancelled.json()["result"]["resultType"] == "complete"


async def test_tasks_still_running_when_the_server_stops_end_failed() -> None:
    store = InMemoryTaskStore()
    server = build_server(task_store=store)
    async with connect(server) as peer:
        created = await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
    record = await store.get(created["taskId"], None)
    assert record is not None and record.status == "failed"
    assert record.error is not None and "stopped" in record.error["message"]
