"""2025-11-25 tasks on the wire: a real server with task tools, driven with raw JSON-RPC in memory, over stdio (this
module run as a script) and over streamable HTTP, so that what is checked is what a client sees; and the official
TypeScript SDK's task client against it. ``test_tasks_legacy`` drives ``server.tasks.legacy.LegacyTasks`` itself.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_bindings import v2025_11_25 as bindings
from mcpgen_runtime import memory_stream_pair
from mcpgen_runtime.jsonrpc.envelopes import JSONRPCError
from mcpgen_runtime.jsonrpc.session import Session
from mcpgen_runtime.server.tasks.legacy import RELATED_TASK
from mcpgen_runtime.transports.http.client.stream import open_http_stream
from mcpgen_runtime.transports.stdio.ndjson import open_subprocess_stream

if __name__ == "__main__":  # run as the stdio server of the tests below: tests/ is not on the path then
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.servers import raw_session, serving_server

pytestmark = pytest.mark.anyio


# -- a real server, raw JSON-RPC ------------------------------------------------------------------------------------
# The server below is served in memory (a bare JSON-RPC Session as the client), over stdio (this module run as a
# script) and over streamable HTTP; the client side is raw JSON so that what is checked is the wire.

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "raw", "version": "0"},
}


def task_server() -> Any:
    from mcpgen_runtime.server import Context, ProtocolError, Server, ToolError

    server = Server("tasks-legacy", version="1.0.0")
    release = anyio.Event()

    @server.tool(task="optional")
    async def slow(text: str, ctx: Context) -> str:
        """Echo ``text`` once released (a tool call that takes a while)."""
        await ctx.task_status("waiting for the release")
        if text != "now":
            await release.wait()
        return text.upper()

    @server.tool(task="optional")
    async def count(n: int, ctx: Context) -> str:
        """Count to ``n``, reporting progress and logging at each step."""
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"{step} of {n}")
            await ctx.info(f"step {step}")
        return f"counted to {n}"

    @server.tool()
    async def release_slow() -> str:
        """Let every ``slow`` call go on."""
        release.set()
        return "released"

    @server.tool(task="required")
    async def confirm_delete(name: str, ctx: Context) -> str:
        """Delete ``name`` once the user confirms (elicitation inside a task)."""
        answer = await ctx.elicit(
            f"Delete {name}?",
            {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]},
        )
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return f"deleted {name}" if confirmed else f"kept {name}"

    @server.tool(task="optional")
    async def broken(kind: str) -> str:
        """Fail: as a tool error (isError) or as a JSON-RPC error."""
        if kind == "tool":
            raise ToolError("the city does not exist")
        raise ProtocolError(-32602, "bad kind", {"kind": kind})

    @server.tool()
    async def plain() -> str:
        """A tool that never runs as a task."""
        return "plain"

    return server


class RawClient:
    """A bare JSON-RPC session on the client's side: answers elicitation with ``confirm`` and records what the
    server sent (requests and notifications)."""

    def __init__(self, confirm: bool = True) -> None:
        self.confirm = confirm
        self.requests: list[tuple[str, Any]] = []
        self.notifications: list[tuple[str, Any]] = []

    async def on_request(self, method: str, params: Any, request: Any) -> dict[str, Any]:
        self.requests.append((method, params))
        assert method == "elicitation/create"
        return {"action": "accept", "content": {"confirm": self.confirm}}

    async def on_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))


@asynccontextmanager
async def connected(transport: str, client: RawClient) -> AsyncIterator[Session]:
    """The task server over ``transport``, a bare session to it, initialized as 2025-11-25."""
    async with AsyncExitStack() as stack:
        if transport == "memory":
            server_end, stream = memory_stream_pair()
            group = await stack.enter_async_context(anyio.create_task_group())
            group.start_soon(task_server().serve_stream, server_end)
            stack.callback(group.cancel_scope.cancel)
        elif transport == "stdio":
            stream = await stack.enter_async_context(open_subprocess_stream([sys.executable, __file__]))
        else:
            url = await stack.enter_async_context(serving_server(task_server()))
            stream = await stack.enter_async_context(open_http_stream(url))
        session = Session(stream, request_handler=client.on_request, notification_handler=client.on_notification)
        await stack.enter_async_context(session)
        initialized = await session.request("initialize", INIT)
        assert initialized["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        await session.notify("notifications/initialized")
        yield session


TRANSPORTS = ["memory", "stdio", "http"]


async def wait_for_status(session: Session, task_id: str, wanted: str) -> dict[str, Any]:
    """Poll tasks/get until the task is ``wanted`` (the client's way; bounded by the test's deadline)."""
    while (task := await session.request("tasks/get", {"taskId": task_id}))["status"] != wanted:
        await anyio.sleep(0.02)
    return task


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_runs_is_polled_and_gives_its_result(transport: str) -> None:
    client = RawClient()
    with anyio.fail_after(30):
        async with connected(transport, client) as session:
            tools = {tool["name"]: tool for tool in (await session.request("tools/list"))["tools"]}
            assert tools["slow"]["execution"] == {"taskSupport": "optional"}
            assert tools["confirm_delete"]["execution"] == {"taskSupport": "required"}
            assert "execution" not in tools["plain"]

            created = await session.request(
                "tools/call", {"name": "slow", "arguments": {"text": "hi"}, "task": {"ttl": 60_000}}
            )
            bindings.CreateTaskResult.model_validate(created)
            task = created["task"]
            assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] > 0
            working = await wait_for_status(session, task["taskId"], "working")
            assert working["createdAt"] == task["createdAt"]
            listed = await session.request("tasks/list")
            assert [t["taskId"] for t in listed["tasks"]] == [task["taskId"]]

            await session.request("tools/call", {"name": "release_slow"})
            result = await session.request("tasks/result", {"taskId": task["taskId"]})
            assert result["content"] == [{"type": "text", "text": "HI"}]
            assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
            done = await session.request("tasks/get", {"taskId": task["taskId"]})
            assert done["status"] == "completed"
            # The same tool without params.task is a plain call (optional).
            plain = await session.request("tools/call", {"name": "slow", "arguments": {"text": "now"}})
            assert plain["content"] == [{"type": "text", "text": "NOW"}] and "task" not in plain
        statuses = [
            params["status"] for method, params in client.notifications if method == "notifications/tasks/status"
        ]
        assert statuses[-1:] == ["completed"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tasks_progress_and_log_messages_carry_the_related_task(transport: str) -> None:
    # The text: "All requests, notifications, and responses related to a task MUST include the
    # io.modelcontextprotocol/related-task key in their _meta"; the call's progress token stays valid for the task.
    client = RawClient()
    with anyio.fail_after(30):
        async with connected(transport, client) as session:
            await session.request("logging/setLevel", {"level": "info"})
            created = await session.request(
                "tools/call",
                {"name": "count", "arguments": {"n": 2}, "task": {}, "_meta": {"progressToken": "count-1"}},
            )
            task_id = created["task"]["taskId"]
            result = await session.request("tasks/result", {"taskId": task_id})
            assert result["content"] == [{"type": "text", "text": "counted to 2"}]
        progress = [params for method, params in client.notifications if method == "notifications/progress"]
        logs = [params for method, params in client.notifications if method == "notifications/message"]
    assert [(p["progress"], p["total"], p["message"]) for p in progress] == [(1, 2, "1 of 2"), (2, 2, "2 of 2")]
    assert [log["data"] for log in logs] == ["step 1", "step 2"]
    for params in progress + logs:
        assert params["_meta"] == {RELATED_TASK: {"taskId": task_id}}, params


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_elicitation_inside_a_task_is_asked_during_tasks_result(transport: str) -> None:
    client = RawClient(confirm=True)
    with anyio.fail_after(30):
        async with connected(transport, client) as session:
            created = await session.request(
                "tools/call", {"name": "confirm_delete", "arguments": {"name": "notes.txt"}, "task": {}}
            )
            task_id = created["task"]["taskId"]
            await wait_for_status(session, task_id, "input_required")
            result = await session.request("tasks/result", {"taskId": task_id})
    assert result["content"] == [{"type": "text", "text": "deleted notes.txt"}]
    [(method, params)] = client.requests
    assert method == "elicitation/create" and params["message"] == "Delete notes.txt?"
    assert params["_meta"][RELATED_TASK] == {"taskId": task_id}


async def test_task_support_is_enforced_per_tool() -> None:
    client = RawClient()
    with anyio.fail_after(30):
        async with connected("memory", client) as session:
            with pytest.raises(JSONRPCError) as raised:  # required, called without a task: MUST be -32601
                await session.request("tools/call", {"name": "confirm_delete", "arguments": {"name": "x"}})
            assert raised.value.code == -32601
            with pytest.raises(JSONRPCError) as raised:  # forbidden, called as a task: SHOULD be -32601
                await session.request("tools/call", {"name": "plain", "task": {}})
            assert raised.value.code == -32601
            assert (await session.request("tools/call", {"name": "plain"}))["content"][0]["text"] == "plain"
            with pytest.raises(JSONRPCError) as raised:
                await session.request("tasks/get", {"taskId": "no-such-task"})
            assert raised.value.code == -32602
            with pytest.raises(JSONRPCError) as raised:
                await session.request("tasks/list", {"cursor": "no-such-cursor"})
            assert raised.value.code == -32602
            assert (await session.request("ping")) == {}  # and the server goes on serving


async def test_failures_tool_errors_and_cancellation_over_the_wire() -> None:
    client = RawClient()
    with anyio.fail_after(30):
        async with connected("memory", client) as session:
            tool_error = await session.request(
                "tools/call", {"name": "broken", "arguments": {"kind": "tool"}, "task": {}}
            )
            task_id = tool_error["task"]["taskId"]
            failed = await wait_for_status(session, task_id, "failed")  # 2025-11-25: isError is failed
            assert failed["taskId"] == task_id
            payload = await session.request("tasks/result", {"taskId": task_id})
            assert payload["isError"] is True

            rpc_error = await session.request(
                "tools/call", {"name": "broken", "arguments": {"kind": "rpc"}, "task": {}}
            )
            with pytest.raises(JSONRPCError) as raised:
                await session.request("tasks/result", {"taskId": rpc_error["task"]["taskId"]})
            assert (raised.value.code, raised.value.message) == (-32602, "bad kind")

            running = await session.request("tools/call", {"name": "slow", "arguments": {"text": "later"}, "task": {}})
            running_id = running["task"]["taskId"]
            cancelled = await session.request("tasks/cancel", {"taskId": running_id})
            assert cancelled["status"] == "cancelled"
            bindings.CancelTaskResult.model_validate(cancelled)
            with pytest.raises(JSONRPCError) as raised:
                await session.request("tasks/cancel", {"taskId": running_id})
            assert raised.value.code == -32602
            await anyio.sleep(0.1)  # the tool was stopped: the task stays cancelled
            assert (await session.request("tasks/get", {"taskId": running_id}))["status"] == "cancelled"


async def test_tasks_are_bound_to_the_session_that_created_them() -> None:
    with anyio.fail_after(30):
        server = task_server()
        async with AsyncExitStack() as stack:
            url = await stack.enter_async_context(serving_server(server))
            sessions = []
            for _ in range(2):
                stream = await stack.enter_async_context(open_http_stream(url))
                session = await stack.enter_async_context(Session(stream))
                await session.request("initialize", INIT)
                await session.notify("notifications/initialized")
                sessions.append(session)
            first, second = sessions
            created = await first.request("tools/call", {"name": "slow", "arguments": {"text": "x"}, "task": {}})
            task_id = created["task"]["taskId"]
            for method in ("tasks/get", "tasks/cancel", "tasks/result"):
                with pytest.raises(JSONRPCError) as raised:
                    await second.request(method, {"taskId": task_id})
                assert raised.value.code == -32602, method
            assert (await second.request("tasks/list"))["tasks"] == []
            assert (await first.request("tasks/get", {"taskId": task_id}))["status"] == "working"


async def test_older_versions_have_no_tasks_and_ignore_params_task() -> None:
    server = task_server()
    with anyio.fail_after(30):
        async with raw_session(server) as session:
            init = {**INIT, "protocolVersion": "2025-06-18"}
            assert "tasks" not in (await session.request("initialize", init))["capabilities"]
            answer = await session.request("tools/call", {"name": "slow", "arguments": {"text": "now"}, "task": {}})
            assert answer["content"] == [{"type": "text", "text": "NOW"}]  # processed normally (the text)
            with pytest.raises(JSONRPCError) as raised:
                await session.request("tasks/get", {"taskId": "x"})
            assert raised.value.code == -32601


# -- interop: the official TypeScript SDK's task client (1.32, the conformance suite's dependency) ------------------

TS_CLIENT = """
import { Client } from "SDK/client/index.js";
import { StdioClientTransport } from "SDK/client/stdio.js";
import { CreateTaskResultSchema, ElicitRequestSchema } from "SDK/types.js";

const [python, script] = process.argv.slice(2);
const client = new Client({ name: "ts-tasks", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params);
  return { action: "accept", content: { confirm: true } };
});
await client.connect(new StdioClientTransport({ command: python, args: [script], stderr: "inherit" }));
const out = { asked };
out.taskSupport = Object.fromEntries(
  (await client.listTools()).tools.map((tool) => [tool.name, tool.execution?.taskSupport ?? null]));
async function asTask(name, args) {
  const seen = [];
  const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, undefined, { task: { ttl: 60000 } });
  for await (const message of stream) {
    seen.push(message.type === "error" ? { type: "error", message: message.error.message } : message);
  }
  return seen;
}
out.slow = await asTask("slow", { text: "now" });
out.confirm = await asTask("confirm_delete", { name: "a.txt" });
const created = await client.request(
  { method: "tools/call", params: { name: "slow", arguments: { text: "later" }, task: {} } }, CreateTaskResultSchema);
out.cancelled = await client.experimental.tasks.cancelTask(created.task.taskId);
out.listed = await client.experimental.tasks.listTasks();
await client.close();
console.log(JSON.stringify(out));
"""


def test_the_typescript_sdk_task_client_runs_our_tasks_over_stdio(tmp_path: Path) -> None:
    import json
    import subprocess

    from conformance.harness import install_suite

    suite = install_suite()  # installs the pinned suite (and its SDK) on first use, as the conformance tests do
    sdk = suite.entry.parents[2] / "sdk" / "dist" / "esm"
    assert (sdk / "experimental" / "tasks" / "client.js").is_file(), f"no task client in {sdk}"
    script = tmp_path / "ts_tasks_client.mjs"
    script.write_text(TS_CLIENT.replace("SDK/", sdk.as_uri() + "/"), encoding="utf-8")
    ran = subprocess.run(
        [str(suite.node.node), str(script), sys.executable, __file__],
        capture_output=True,
        text=True,
        timeout=60,
        env=suite.node.env(),
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    out = json.loads(ran.stdout.strip().splitlines()[-1])
    assert out["taskSupport"]["slow"] == "optional" and out["taskSupport"]["plain"] is None
    slow = out["slow"]
    assert slow[0]["type"] == "taskCreated" and slow[-1]["type"] == "result"
    assert slow[-1]["result"]["content"] == [{"type": "text", "text": "NOW"}]
    confirm = out["confirm"]
    assert confirm[-1]["type"] == "result", confirm
    assert confirm[-1]["result"]["content"] == [{"type": "text", "text": "deleted a.txt"}]
    assert "input_required" in [m["task"]["status"] for m in confirm if m["type"] == "taskStatus"]
    assert [params["message"] for params in out["asked"]] == ["Delete a.txt?"]
    assert out["cancelled"]["status"] == "cancelled"
    assert len(out["listed"]["tasks"]) == 3


if __name__ == "__main__":  # the stdio server of the tests above
    task_server().run_stdio()
