"""The client's tasks against real peers: mcpgen's own task ``Server`` run as a child process over stdio and served
over streamable HTTP, in both eras (2026-07-28: the extension, polled through ``tasks/get`` and answered through
``tasks/update``, with ``Mcp-Name: <taskId>`` over HTTP, which the server checks; 2025-11-25: ``params.task``, the
blocking ``tasks/result`` during which the server's elicitation arrives), and the official TypeScript SDK's
2025-11-25 task server. The wire details are ``test_client_tasks`` (raw peers).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.servers import serving_server
from support.task_servers import task_server

import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime.client import Client, ClientContext, Stdio, TaskCancelledError, TaskInfo
from mcpgen_runtime.jsonrpc.envelopes import JSONRPCError

pytestmark = pytest.mark.anyio

WAIT = 30.0
TASK_SERVER = str(Path(__file__).resolve().parents[1] / "support" / "task_servers.py")  # run as a stdio child
MODES = {"modern": "2026-07-28", "legacy": "legacy"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Confirmer(v4.client.ClientHandlers[ClientContext]):
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        self.asked.append(params.message)
        return v4.ElicitResult(action="accept", content={"confirm": True})


@asynccontextmanager
async def connected(transport: str, era: str, **options: Any) -> AsyncIterator[Client]:
    settings: dict[str, Any] = {"mode": MODES[era], "request_timeout": WAIT, **options}
    if transport == "stdio":
        async with Client.connect([sys.executable, TASK_SERVER], **settings) as client:
            yield client
    else:
        async with serving_server(task_server()) as url, Client.connect(url, **settings) as client:
            yield client


CASES = [(transport, era) for transport in ("stdio", "http") for era in ("modern", "legacy")]


@pytest.mark.parametrize(("transport", "era"), CASES)
async def test_a_task_is_started_followed_and_its_result_typed(transport: str, era: str) -> None:
    with anyio.fail_after(WAIT):
        async with connected(transport, era) as client:
            handle = await client.start_tool_task("slow_compute", {"seconds": 0.2}, ttl_ms=60_000)
            assert handle.task_id is not None and handle.info.status == "working"
            status = await handle.status()
            assert status.task_id == handle.task_id and status.status in ("working", "completed")
            result = await handle.result()
            assert isinstance(result, client.bindings.CallToolResult)
            assert result.content[0].text == "computed in 0.2s"  # type: ignore[union-attr]
            resumed = await client.task(handle.task_id)
            assert resumed.info.status == "completed"


@pytest.mark.parametrize(("transport", "era"), CASES)
async def test_input_a_task_asks_for_is_answered_by_the_handlers(transport: str, era: str) -> None:
    confirmer = Confirmer()
    with anyio.fail_after(WAIT):
        async with connected(transport, era, handlers=confirmer) as client:
            handle = await client.start_tool_task("confirm_delete", {"filename": "notes.txt"})
            result = await handle.result()
    assert result.content[0].text == "deleted notes.txt"  # type: ignore[union-attr]
    assert confirmer.asked == ["Delete notes.txt?"]


@pytest.mark.parametrize(("transport", "era"), CASES)
async def test_input_asked_before_and_inside_the_task(transport: str, era: str) -> None:
    confirmer = Confirmer()
    with anyio.fail_after(WAIT):
        async with connected(transport, era, handlers=confirmer) as client:
            handle = await client.start_tool_task("interview", {})
            assert handle.task_id is not None
            result = await handle.result()
    assert result.content[0].text == "accept then accept"  # type: ignore[union-attr]
    assert confirmer.asked == ["Start?", "Really?"]


@pytest.mark.parametrize(("transport", "era"), CASES)
async def test_errors_and_cancellation(transport: str, era: str) -> None:
    with anyio.fail_after(WAIT):
        async with connected(transport, era) as client:
            failing = await client.start_tool_task("broken", {"kind": "protocol"})
            with pytest.raises(JSONRPCError) as raised:
                await failing.result()
            assert raised.value.code == -32603 and raised.value.message == "the job broke"
            erring = await client.start_tool_task("broken", {"kind": "tool"})
            result = await erring.result()
            assert result.is_error is True
            assert result.content[0].text == "the city does not exist"  # type: ignore[union-attr]
            hanging = await client.start_tool_task("slow_compute", {"seconds": 60})
            await hanging.cancel()
            with pytest.raises(TaskCancelledError):
                await hanging.result()
            assert (await hanging.status()).status == "cancelled"


@pytest.mark.parametrize(("transport", "era"), CASES)
async def test_call_tool_follows_a_required_task_when_opted_in(transport: str, era: str) -> None:
    confirmer = Confirmer()
    with anyio.fail_after(WAIT):
        async with connected(transport, era, handlers=confirmer, tasks=True) as client:
            result = await client.call_tool("confirm_delete", {"filename": "a.txt"})
            assert result.content[0].text == "deleted a.txt"  # type: ignore[union-attr]
            assert (await client.call_tool("plain")).content[0].text == "plain"  # type: ignore[union-attr]
            started = anyio.current_time()  # the timeout bounds the whole call, the task's wait included
            with pytest.raises(TimeoutError):
                await client.call_tool("slow_compute", {"seconds": 60}, timeout=0.5)
            assert anyio.current_time() - started < 5
        async with connected(transport, era) as client:
            # Not opted in: the server refuses (2026-07-28: -32021 naming the extension; 2025-11-25: -32601).
            with pytest.raises(JSONRPCError) as raised:
                await client.call_tool("confirm_delete", {"filename": "b.txt"})
            assert raised.value.code == (-32021 if era == "modern" else -32601)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_task_status_notifications_come_as_task_infos(transport: str) -> None:
    with anyio.fail_after(WAIT):
        async with connected(transport, "modern") as client:
            handle = await client.start_tool_task("slow_compute", {"seconds": 0.3})
            assert handle.task_id is not None
            seen: list[TaskInfo] = []
            async with client.listen(task_ids=[handle.task_id]) as subscription:
                assert subscription.acknowledged.model_dump(by_alias=True)["taskIds"] == [handle.task_id]
                async for info in subscription:
                    seen.append(info)
                    if info.terminal:
                        break
    assert all(isinstance(info, TaskInfo) and info.task_id == handle.task_id for info in seen)
    assert seen[-1].status == "completed" and seen[-1].result is not None
    assert seen[-1].result["content"] == [{"type": "text", "text": "computed in 0.3s"}]


# -- interop: the official TypeScript SDK's task server (1.32, the conformance suite's dependency), 2025-11-25 ------

TS_SERVER = """
import { McpServer } from "SDK/server/mcp.js";
import { StdioServerTransport } from "SDK/server/stdio.js";
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from "SDK/experimental/tasks/stores/in-memory.js";

const server = new McpServer({ name: "ts-task-server", version: "1.0.0" }, {
  capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
  taskStore: new InMemoryTaskStore(),
  taskMessageQueue: new InMemoryTaskMessageQueue(),
});
const follow = {
  async getTask({ taskId, taskStore }) { return await taskStore.getTask(taskId); },
  async getTaskResult({ taskId, taskStore }) { return await taskStore.getTaskResult(taskId); },
};
const finish = (taskStore, taskId, text) =>
  taskStore.storeTaskResult(taskId, "completed", { content: [{ type: "text", text }] }).catch(() => {});
server.experimental.tasks.registerToolTask("delay", { execution: { taskSupport: "required" } }, {
  async createTask({ taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 50 });
    setTimeout(() => finish(taskStore, task.taskId, "waited"), 300);
    return { task };
  },
  ...follow,
});
server.experimental.tasks.registerToolTask("collect", { execution: { taskSupport: "required" } }, {
  async createTask({ taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl });
    (async () => {
      const schema = { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] };
      const stream = server.server.experimental.tasks.elicitInputStream(
        { mode: "form", message: "Collect?", requestedSchema: schema }, { relatedTask: { taskId: task.taskId } });
      let answer;
      for await (const message of stream) if (message.type === "result") answer = message.result;
      await finish(taskStore, task.taskId, `collected: ${answer.content.confirm}`);
    })();
    return { task };
  },
  ...follow,
});
await server.connect(new StdioServerTransport());
"""


async def test_the_typescript_sdk_task_server_is_followed_over_stdio(tmp_path: Path) -> None:
    from conformance.harness import install_suite

    suite = install_suite()  # installs the pinned suite (and its SDK) on first use, as the conformance tests do
    sdk = suite.entry.parents[2] / "sdk" / "dist" / "esm"
    assert (sdk / "experimental" / "tasks" / "mcp-server.js").is_file(), f"no task server in {sdk}"
    script = tmp_path / "ts_task_server.mjs"
    script.write_text(TS_SERVER.replace("SDK/", sdk.as_uri() + "/"), encoding="utf-8")
    target = Stdio([str(suite.node.node), str(script)], env=suite.node.env())
    confirmer = Confirmer()
    with anyio.fail_after(WAIT):
        async with Client.connect(target, handlers=confirmer, request_timeout=WAIT, tasks=True) as client:
            assert client.protocol_version == "2025-11-25"  # auto mode: the SDK refuses server/discover
            handle = await client.start_tool_task("delay", {}, ttl_ms=60_000)
            assert handle.info.status == "working" and handle.info.ttl_ms == 60_000
            assert handle.info.poll_interval_ms == 50
            assert (await handle.result()).content[0].text == "waited"  # type: ignore[union-attr]
            collected = await client.call_tool("collect", {})  # taskSupport "required": run as a task
            assert collected.content[0].text == "collected: true"  # type: ignore[union-attr]
            hanging = await client.start_tool_task("delay", {})
            await hanging.cancel()
            assert hanging.info.status == "cancelled"
    assert confirmer.asked == ["Collect?"]
