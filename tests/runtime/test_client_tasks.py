"""The client side of tasks in both eras, against task servers written here on the raw JSON-RPC session (in-memory
streams), so each test decides what the server answers and sees what the client sends: the 2026-07-28 extension
(its capability on each request, ``tasks/get`` at ``pollIntervalMs``, ``inputRequests`` answered once through
``tasks/update``, failed / cancelled / at-once answers, ``notifications/tasks``) and 2025-11-25 core tasks
(``params.task``, the blocking ``tasks/result`` where the elicitation arrives, ``tasks/get``, ``tasks/cancel``, the
capability gates). Against mcpgen's own servers over stdio and HTTP: ``test_client_tasks_servers``."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

import mcp_bindings.v2025_11_25 as v4
import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.client import (
    CapabilityError,
    Client,
    ClientContext,
    InputRequiredError,
    InvalidResultError,
    TaskCancelledError,
    TaskHandle,
    TaskInfo,
    TaskPolling,
)
from mcpgen_runtime.client.task_info import legacy_task_info, modern_task_info

pytestmark = pytest.mark.anyio

EXTENSION = "io.modelcontextprotocol/tasks"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
RELATED_TASK = "io.modelcontextprotocol/related-task"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ELICIT_NAME = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Please enter your name.",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
}


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


class FakeTask:
    """One task of the fake servers: its wire fields and how it goes on."""

    def __init__(self, task_id: str, tool: str, arguments: dict[str, Any]) -> None:
        self.task_id, self.tool, self.arguments = task_id, tool, arguments
        self.status = "working"
        self.status_message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.input_requests: dict[str, Any] | None = None
        self.gets = 0
        self.ended = anyio.Event()

    def finish(self, status: str, *, result: Any = None, error: Any = None, message: str | None = None) -> None:
        self.status, self.result, self.error, self.status_message = status, result, error, message
        self.input_requests = None
        self.ended.set()


class TaskServer:
    """A task server in one era (``modern``: the 2026-07-28 extension; ``legacy``: 2025-11-25 core tasks). Tools:
    ``slow`` (working for ``arguments.gets`` tasks/get, then completed), ``ask`` (input_required: an elicitation
    for a name, then "Hello, <name>!"), ``boom`` (failed with a JSON-RPC error), ``tool_error`` (completed with
    ``isError``), ``hang`` (working until cancelled), ``direct`` (answered at once, modern), ``plain`` (no task)."""

    def __init__(self, era: str, *, poll_interval_ms: int | None = 10, capabilities: Any = None) -> None:
        self.era = era
        self.poll_interval_ms = poll_interval_ms
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.tasks: dict[str, FakeTask] = {}
        self.ids = itertools.count(1)
        self.session: Session | None = None
        self.capabilities = capabilities
        self.task_answer_without_declaration = False  # a misbehaving modern server
        self.listen_ids: list[Any] = []  # the JSON-RPC ids of subscriptions/listen requests (subscription ids)

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]

    def params_of(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.requests if name == method]

    # -- wire shapes --------------------------------------------------------------------------------------------

    def task_json(self, task: FakeTask, *, detailed: bool) -> dict[str, Any]:
        ttl, poll = ("ttlMs", "pollIntervalMs") if self.era == "modern" else ("ttl", "pollInterval")
        wire: dict[str, Any] = {
            "taskId": task.task_id,
            "status": task.status,
            "createdAt": "2026-11-27T10:00:00Z",
            "lastUpdatedAt": "2026-11-27T10:00:01Z",
            ttl: 60_000,
        }
        if self.poll_interval_ms is not None:
            wire[poll] = self.poll_interval_ms
        if task.status_message is not None:
            wire["statusMessage"] = task.status_message
        if detailed and self.era == "modern":
            if task.status == "completed":
                wire["result"] = task.result
            if task.status == "failed":
                wire["error"] = task.error
            if task.status == "input_required":
                wire["inputRequests"] = task.input_requests
        return wire

    def advance(self, task: FakeTask) -> None:
        """What one tasks/get sees happen (the work is a script of polls)."""
        task.gets += 1
        if task.status not in ("working", "input_required"):
            return
        if task.tool == "slow" and task.gets >= task.arguments.get("gets", 2):
            task.finish("completed", result=text_result("slow done"))
        elif task.tool == "boom":
            task.finish("failed", error={"code": -32603, "message": "API rate limit exceeded"}, message="failed")
        elif task.tool == "tool_error":
            task.finish("completed", result=text_result("invalid input", is_error=True))
        elif task.tool == "ask" and "answered_at" in task.arguments:
            # Eventually consistent: the tasks/get right after the update still lists the request.
            if task.gets > task.arguments["answered_at"] + 1:
                task.finish("completed", result=text_result(f"Hello, {task.arguments['answered']}!"))
        elif task.tool == "ask":
            task.status, task.input_requests = "input_required", {"name": ELICIT_NAME}

    # -- the requests -------------------------------------------------------------------------------------------

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict) or params is None
        params = params or {}
        self.requests.append((method, params))
        if self.era == "modern":
            return await self.handle_modern(method, params)
        return await self.handle_legacy(method, params)

    def declared(self, params: dict[str, Any]) -> bool:
        capabilities = params.get("_meta", {}).get(META_CAPABILITIES, {})
        return EXTENSION in capabilities.get("extensions", {})

    def find(self, params: dict[str, Any]) -> FakeTask:
        task = self.tasks.get(params.get("taskId", ""))
        if task is None:
            raise JSONRPCError(-32602, "Failed to retrieve task: Task not found")
        return task

    def new_task(self, params: dict[str, Any]) -> FakeTask:
        task_id = f"task-{next(self.ids)}"
        task = self.tasks[task_id] = FakeTask(task_id, params["name"], params.get("arguments", {}))
        return task

    async def handle_modern(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert params["_meta"][META_VERSION] == "2026-07-28"
        if method == "server/discover":
            return {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                "serverInfo": {"name": "task-fake", "version": "1"},
            }
        if method.startswith("tasks/") or method == "subscriptions/listen":
            if not self.declared(params):
                raise JSONRPCError(-32021, "Missing required client capability", {"requiredCapabilities": {}})
        if method == "tools/call":
            name = params["name"]
            if name in ("direct", "plain"):
                return {"resultType": "complete", **text_result(f"{name} at once")}
            if not self.declared(params) and not self.task_answer_without_declaration:
                raise JSONRPCError(
                    -32021,
                    "Missing required client capability",
                    {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
                )
            return {"resultType": "task", **self.task_json(self.new_task(params), detailed=False)}
        if method == "tasks/get":
            task = self.find(params)
            self.advance(task)
            return {"resultType": "complete", **self.task_json(task, detailed=True)}
        if method == "tasks/update":
            task = self.find(params)
            task.arguments["answered"] = params["inputResponses"]["name"]["content"]["name"]
            task.arguments["answered_at"] = task.gets
            return {"resultType": "complete"}
        if method == "tasks/cancel":
            task = self.find(params)
            task.finish("cancelled", message="cancelled by the client")
            return {"resultType": "complete"}
        if method == "subscriptions/listen":
            return await self.listen(params)
        raise MethodNotFound(method)

    async def listen(self, params: dict[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        task_ids = params["notifications"]["taskIds"]
        request_id = self.listen_ids.pop(0)
        meta = {"_meta": {SUBSCRIPTION_ID: request_id}}
        await self.session.notify(
            "notifications/subscriptions/acknowledged", {"notifications": {"taskIds": task_ids}, **meta}
        )
        for task_id in task_ids:
            task = self.tasks[task_id]
            task.finish("completed", result=text_result("pushed"))
            await self.session.notify("notifications/tasks", {**self.task_json(task, detailed=True), **meta})
        await anyio.sleep_forever()
        return {}

    async def handle_legacy(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            default = {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
            return {
                "protocolVersion": "2025-11-25",
                "capabilities": self.capabilities if self.capabilities is not None else default,
                "serverInfo": {"name": "task-fake", "version": "1"},
            }
        if method == "tools/list":
            execution = {"taskSupport": "required"}
            return {"tools": [{"name": "slow", "inputSchema": {"type": "object"}, "execution": execution}]}
        if method == "tools/call":
            if "task" not in params:
                if params["name"] != "plain":
                    raise JSONRPCError(-32601, "the tool needs a task")
                return text_result("plain at once")
            return {"task": self.task_json(self.new_task(params), detailed=False)}
        if method == "tasks/get":
            task = self.find(params)
            return self.task_json(task, detailed=False)
        if method == "tasks/result":
            return await self.legacy_result(self.find(params))
        if method == "tasks/cancel":
            task = self.find(params)
            if task.status in ("completed", "failed", "cancelled"):
                raise JSONRPCError(-32602, "the task already ended")
            task.finish("cancelled", message="cancelled by the client")
            return self.task_json(task, detailed=False)
        raise MethodNotFound(method)

    async def legacy_result(self, task: FakeTask) -> dict[str, Any]:
        assert self.session is not None
        related = {"_meta": {RELATED_TASK: {"taskId": task.task_id}}}
        if task.tool == "ask":
            task.status = "input_required"
            params = {**ELICIT_NAME["params"], **related}
            answer = await self.session.request("elicitation/create", params, timeout=5)
            task.finish("completed", result=text_result(f"Hello, {answer['content']['name']}!"))
        elif task.tool == "slow":
            task.finish("completed", result=text_result("slow done"))
        elif task.tool == "boom":
            task.finish("failed", error={"code": -32603, "message": "API rate limit exceeded"})
        elif task.tool == "hang":
            await task.ended.wait()
        elif task.tool == "patient":  # a server that bounds its own wait, then a wait longer than request_timeout
            task.gets += 1
            if task.gets == 1:
                raise JSONRPCError(-32603, "still running: ask again", {"taskId": task.task_id, "status": "working"})
            await anyio.sleep(0.5)
            task.finish("completed", result=text_result("patience"))
        if task.status == "failed":
            assert task.error is not None
            raise JSONRPCError(task.error["code"], task.error["message"])
        if task.status == "cancelled":
            raise JSONRPCError(-32602, "the task was cancelled")
        assert task.result is not None
        return {**task.result, **related}


class Namer(v4.client.ClientHandlers[ClientContext]):
    """Answers an elicitation with a name; records what it was asked and how (inside a result or as a request)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        self.asked.append((params.message, context.request is not None))
        return v4.ElicitResult(action="accept", content={"name": "Luca"})


@asynccontextmanager
async def connect(server: TaskServer, **options: Any) -> AsyncIterator[Client]:
    client_end, server_end = memory_stream_pair()

    async def handle(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "subscriptions/listen":
            server.listen_ids.append(context.request_id)
        return await server.handle(method, params, context)

    async with Session(server_end, request_handler=handle) as peer:
        server.session = peer
        mode = "auto" if server.era == "modern" else "legacy"
        async with Client.connect(client_end, **{"mode": mode, "request_timeout": 10, **options}) as client:
            yield client


# -- 2026-07-28: the tasks extension --------------------------------------------------------------------------------


async def test_modern_task_is_polled_to_its_result_declaring_the_extension_on_each_request() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        handle = await client.start_tool_task("slow", {"gets": 3}, ttl_ms=5_000)
        assert isinstance(handle, TaskHandle) and handle.task_id == "task-1"
        assert handle.info.status == "working" and handle.info.ttl_ms == 60_000 and handle.info.poll_interval_ms == 10
        with anyio.fail_after(5):
            result = await handle.result()
        assert isinstance(result, v5.CallToolResult) and result.content[0].text == "slow done"  # type: ignore[union-attr]
        assert handle.info.status == "completed"
    assert server.methods() == ["server/discover", "tools/call", "tasks/get", "tasks/get", "tasks/get"]
    call = server.params_of("tools/call")[0]
    assert "task" not in call and "ttl" not in str(call)  # the server decides in this era: nothing to ask for
    for method, params in server.requests[1:]:
        assert server.declared(params), method
    # Only the task requests declare it: the client did not opt in to tasks=True.
    assert not server.declared(server.params_of("server/discover")[0])


async def test_modern_input_requests_are_answered_once_through_tasks_update() -> None:
    server = TaskServer("modern")
    namer = Namer()
    async with connect(server, handlers=namer) as client:
        handle = await client.start_tool_task("ask", {})
        with anyio.fail_after(5):
            result = await handle.result()
    assert result.content[0].text == "Hello, Luca!"  # type: ignore[union-attr]
    # The request is still listed by the tasks/get after the update (eventually consistent): it is not asked twice.
    assert namer.asked == [("Please enter your name.", False)]
    updates = server.params_of("tasks/update")
    assert len(updates) == 1 and updates[0]["taskId"] == "task-1"
    assert updates[0]["inputResponses"] == {"name": {"action": "accept", "content": {"name": "Luca"}}}


async def test_modern_input_request_no_handler_answers_is_a_clear_error() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        handle = await client.start_tool_task("ask", {})
        with anyio.fail_after(5), pytest.raises(InputRequiredError, match="elicitation/create"):
            await handle.result()
    assert "tasks/update" not in server.methods()


async def test_modern_failed_task_raises_its_json_rpc_error_and_a_tool_error_is_a_result() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        failing = await client.start_tool_task("boom", {})
        with anyio.fail_after(5), pytest.raises(JSONRPCError) as raised:
            await failing.result()
        assert raised.value.code == -32603 and raised.value.message == "API rate limit exceeded"
        erring = await client.start_tool_task("tool_error", {})
        with anyio.fail_after(5):
            result = await erring.result()
        assert result.is_error is True and erring.info.status == "completed"


async def test_modern_cancel_then_result_raises_task_cancelled() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        handle = await client.start_tool_task("hang", {})
        await handle.cancel()
        assert [params["taskId"] for params in server.params_of("tasks/cancel")] == ["task-1"]
        with anyio.fail_after(5), pytest.raises(TaskCancelledError, match="cancelled by the client"):
            await handle.result()
        assert (await handle.status()).status == "cancelled"


async def test_modern_result_has_a_total_deadline_and_leaves_the_task_running() -> None:
    server = TaskServer("modern", poll_interval_ms=5_000)  # longer than the deadline: the sleep is cut short
    async with connect(server) as client:
        handle = await client.start_tool_task("hang", {})
        started = anyio.current_time()
        with anyio.fail_after(5), pytest.raises(TimeoutError):
            await handle.result(timeout=0.3)
        assert anyio.current_time() - started < 2
        assert server.tasks["task-1"].status == "working"
        assert "tasks/cancel" not in server.methods()


async def test_modern_server_may_answer_at_once() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        handle = await client.start_tool_task("direct", {})
        assert handle.task_id is None and handle.info.status == "completed"
        assert (await handle.status()).status == "completed"
        await handle.cancel()  # nothing to cancel, nothing sent
        result = await handle.result()
        assert result.content[0].text == "direct at once"  # type: ignore[union-attr]
    assert server.methods() == ["server/discover", "tools/call"]


async def test_modern_call_tool_follows_a_task_only_when_the_client_opted_in() -> None:
    server = TaskServer("modern")
    async with connect(server, tasks=True) as client:
        assert EXTENSION in client.client_capabilities["extensions"]
        with anyio.fail_after(5):
            result = await client.call_tool("slow", {"gets": 2})
        assert result.content[0].text == "slow done"  # type: ignore[union-attr]
        plain = await client.call_tool("plain", {})
        assert plain.content[0].text == "plain at once"  # type: ignore[union-attr]
    assert all(server.declared(params) for _, params in server.requests)
    server = TaskServer("modern")
    async with connect(server) as client:
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool("slow", {})
        assert raised.value.code == -32021  # the server's word: this tool needs the extension
        server.task_answer_without_declaration = True
        with pytest.raises(InvalidResultError, match="did not declare the tasks extension"):
            await client.call_tool("slow", {})


async def test_modern_a_kept_task_id_is_resumed() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        task_id = (await client.start_tool_task("slow", {"gets": 2})).task_id
        assert task_id is not None
        again = await client.task(task_id)
        assert again.task_id == task_id and again.info.status == "working"
        with anyio.fail_after(5):
            assert (await again.result()).content[0].text == "slow done"  # type: ignore[union-attr]
        with pytest.raises(JSONRPCError) as raised:
            await client.task("no-such-task")
        assert raised.value.code == -32602


async def test_modern_a_task_that_is_not_one_is_refused() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        original = server.task_json

        def broken(task: FakeTask, *, detailed: bool) -> dict[str, Any]:
            return {**original(task, detailed=detailed), "status": "sleeping"}

        server.task_json = broken  # type: ignore[method-assign]
        with pytest.raises(InvalidResultError, match="unknown status 'sleeping'"):
            await client.start_tool_task("slow", {})


async def test_modern_listen_for_task_ids_yields_task_infos() -> None:
    server = TaskServer("modern")
    async with connect(server) as client:
        handle = await client.start_tool_task("hang", {})
        assert handle.task_id is not None
        with anyio.fail_after(5):
            async with client.listen(task_ids=[handle.task_id]) as subscription:
                assert subscription.acknowledged.model_dump(by_alias=True)["taskIds"] == [handle.task_id]
                pushed = await subscription.next()
        assert isinstance(pushed, TaskInfo) and pushed.status == "completed" and pushed.terminal
        assert pushed.result == text_result("pushed")
    assert server.declared(server.params_of("subscriptions/listen")[0])


# -- 2025-11-25: core tasks -----------------------------------------------------------------------------------------


async def test_legacy_task_waits_in_tasks_result_where_the_elicitation_arrives() -> None:
    server = TaskServer("legacy")
    namer = Namer()
    async with connect(server, handlers=namer) as client:
        handle = await client.start_tool_task("ask", {}, ttl_ms=30_000)
        assert handle.task_id == "task-1" and handle.info.ttl_ms == 60_000 and handle.info.poll_interval_ms == 10
        assert (await handle.status()).status == "working"
        with anyio.fail_after(5):
            result = await handle.result()
        assert isinstance(result, v4.CallToolResult) and result.content[0].text == "Hello, Luca!"  # type: ignore[union-attr]
        assert (await handle.result()).content == result.content  # kept: not asked again
    assert server.params_of("tools/call")[0]["task"] == {"ttl": 30_000}
    assert namer.asked == [("Please enter your name.", True)]  # a real server -> client request
    assert server.methods().count("tasks/result") == 1


async def test_legacy_failed_and_cancelled_tasks() -> None:
    server = TaskServer("legacy")
    async with connect(server) as client:
        failing = await client.start_tool_task("boom", {})
        with pytest.raises(JSONRPCError, match="rate limit"):
            await failing.result()
        hanging = await client.start_tool_task("hang", {})
        await hanging.cancel()
        assert hanging.info.status == "cancelled"  # 2025-11-25 answers with the task, already cancelled
        with pytest.raises(TaskCancelledError):
            await hanging.result()
        with pytest.raises(JSONRPCError):  # the text: cancelling an ended task is -32602
            await hanging.cancel()


async def test_legacy_tasks_result_is_asked_again_and_bounded_by_the_callers_deadline_only() -> None:
    server = TaskServer("legacy")
    async with connect(server, request_timeout=0.2) as client:
        handle = await client.start_tool_task("patient", {})
        with anyio.fail_after(5):
            assert (await handle.result(timeout=3)).content[0].text == "patience"  # type: ignore[union-attr]
    assert server.methods()[2:] == ["tasks/result", "tasks/get", "tasks/result"]


async def test_legacy_cancel_reaches_a_task_waited_on_elsewhere() -> None:
    server = TaskServer("legacy")
    async with connect(server) as client:
        handle = await client.start_tool_task("hang", {})
        outcome: list[BaseException] = []

        async def wait() -> None:
            try:
                await handle.result(timeout=5)
            except (TaskCancelledError, JSONRPCError) as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.sleep(0.1)
            await (await client.task("task-1")).cancel()
        assert len(outcome) == 1 and isinstance(outcome[0], TaskCancelledError)


async def test_legacy_capability_gates() -> None:
    server = TaskServer("legacy", capabilities={"tools": {}, "tasks": {"list": {}}})
    async with connect(server) as client:
        with pytest.raises(CapabilityError, match=r"tasks\.requests\.tools\.call"):
            await client.start_tool_task("slow", {})
    assert "tools/call" not in server.methods()
    server = TaskServer("legacy", capabilities={"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}})
    async with connect(server) as client:
        handle = await client.start_tool_task("hang", {})
        with pytest.raises(CapabilityError, match=r"tasks\.cancel"):
            await handle.cancel()
        with pytest.raises(ValueError, match="ttl_ms"):
            await client.start_tool_task("slow", {}, ttl_ms=-5)


async def test_legacy_call_tool_runs_a_required_task_tool_as_a_task_when_opted_in() -> None:
    server = TaskServer("legacy")
    async with connect(server, tasks=True) as client:
        result = await client.call_tool("slow", {})
        assert result.content[0].text == "slow done"  # type: ignore[union-attr]
        assert (await client.call_tool("plain", {})).content[0].text == "plain at once"  # type: ignore[union-attr]
    assert server.methods()[:4] == ["initialize", "tools/list", "tools/call", "tasks/result"]
    assert "extensions" not in server.params_of("initialize")[0]["capabilities"]  # a modern-only declaration
    server = TaskServer("legacy")
    async with connect(server) as client:  # not opted in: the server's -32601 as it is
        with pytest.raises(JSONRPCError) as raised:
            await client.call_tool("slow", {})
        assert raised.value.code == -32601


async def test_legacy_server_that_ignores_the_task_answers_at_once() -> None:
    server = TaskServer("legacy")
    async with connect(server) as client:
        original = server.handle_legacy

        async def ignoring(method: str, params: dict[str, Any]) -> dict[str, Any]:
            if method == "tools/call":
                return text_result("ignored the task")
            return await original(method, params)

        server.handle_legacy = ignoring  # type: ignore[method-assign]
        handle = await client.start_tool_task("slow", {})
        assert handle.task_id is None
        assert (await handle.result()).content[0].text == "ignored the task"  # type: ignore[union-attr]


# -- pure parts -----------------------------------------------------------------------------------------------------


def test_task_info_reads_either_era_and_refuses_what_is_not_a_task() -> None:
    modern = modern_task_info(
        {"taskId": "t", "status": "input_required", "ttlMs": None, "pollIntervalMs": 250, "inputRequests": {}},
        "tasks/get",
    )
    assert (modern.ttl_ms, modern.poll_interval_ms, modern.terminal) == (None, 250, False)
    legacy = legacy_task_info({"taskId": "t", "status": "cancelled", "ttl": 1000, "pollInterval": 5}, "tasks/get")
    assert (legacy.ttl_ms, legacy.poll_interval_ms, legacy.terminal) == (1000, 5, True)
    for bad, match in (
        ([], "must be an object"),
        ({"status": "working"}, "no taskId"),
        ({"taskId": "t", "status": "done"}, "unknown status"),
        ({"taskId": "t", "status": "working", "ttlMs": -1}, "non-negative"),
        ({"taskId": "t", "status": "working", "pollIntervalMs": True}, "non-negative"),
        ({"taskId": "t", "status": "failed"}, "carries no error"),
        ({"taskId": "t", "status": "completed"}, "carries no result"),
        ({"taskId": "t", "status": "completed", "result": "text"}, "must be an object"),
    ):
        with pytest.raises(InvalidResultError, match=match):
            modern_task_info(bad, "tasks/get")


def test_poll_intervals_are_the_servers_within_bounds() -> None:
    polling = TaskPolling()
    assert polling.interval(TaskInfo("t", "working", poll_interval_ms=0)) == polling.min_interval
    assert polling.interval(TaskInfo("t", "working", poll_interval_ms=3_600_000)) == polling.max_interval
    assert polling.interval(TaskInfo("t", "working", poll_interval_ms=1_500)) == 1.5
    assert polling.interval(TaskInfo("t", "working")) == polling.default_interval
    for bad in ({"min_interval": 0}, {"min_interval": 2, "max_interval": 1}):
        with pytest.raises(ValueError):
            TaskPolling(**bad)
