"""2025-11-25 tasks (basic/utilities/tasks): what the legacy era shows of a task and how it answers tasks/get,
tasks/result, tasks/list, tasks/cancel and notifications/tasks/status, over the real in-memory task store.

It drives ``server.tasks.legacy.LegacyTasks`` directly, with the store moved by hand where the engine would move it
(a tool finishing, asking a question): every case of the text without waiting for a tool. ``test_tasks_legacy_wire``
is a real server and raw JSON-RPC over stdio and streamable HTTP.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from mcp_bindings import v2025_11_25 as bindings
from mcpgen_runtime.jsonrpc.envelopes import JSONRPCError
from mcpgen_runtime.server.tasks.legacy import (
    RELATED_TASK,
    TASK_CANCELLED_CODE,
    LegacyTasks,
    iso_time,
    session_principal,
    wire_task,
)
from mcpgen_runtime.task_store import InMemoryTaskStore, TaskRecord

pytestmark = pytest.mark.anyio

ALICE, BOB = "session:alice", "session:bob"


class ClientSide:
    """What the connection's client would do with a question and a notification: answer and record."""

    def __init__(self, answer: dict[str, Any] | JSONRPCError | None = None) -> None:
        self.answer = answer if answer is not None else {"action": "accept", "content": {"ok": True}}
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.notified: list[dict[str, Any]] = []

    async def ask(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.asked.append((method, params))
        if isinstance(self.answer, JSONRPCError):
            raise self.answer
        return self.answer

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        assert method == "notifications/tasks/status"
        self.notified.append(params)


async def new_task(store: InMemoryTaskStore, principal: str = ALICE, ttl_ms: int | None = 60_000) -> TaskRecord:
    record = TaskRecord(
        task_id=str(uuid.uuid4()),
        principal=principal,
        protocol_version="2025-11-25",
        ttl_ms=ttl_ms,
        poll_interval_ms=500,
    )
    return await store.create(record)


@pytest.fixture
def store() -> InMemoryTaskStore:
    return InMemoryTaskStore()


@pytest.fixture
def client() -> ClientSide:
    return ClientSide()


@pytest.fixture
def tasks(store: InMemoryTaskStore, client: ClientSide) -> LegacyTasks:
    return LegacyTasks(store, client.ask, client.notify, result_wait_seconds=5)


# -- the wire shapes ----------------------------------------------------------------------------------------------


async def test_a_task_is_the_versions_task_model_with_iso_times(store: InMemoryTaskStore) -> None:
    record = await new_task(store)
    task = wire_task(record)
    bindings.Task.model_validate(task)
    bindings.GetTaskResult.model_validate(task)
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] == 500
    assert task["createdAt"].endswith("Z") and task["createdAt"] == iso_time(record.created_at)
    bindings.CreateTaskResult.model_validate({"task": task})


async def test_a_tool_error_is_failed_in_2025_11_25_but_its_result_is_returned(
    store: InMemoryTaskStore, tasks: LegacyTasks
) -> None:
    # The text: "For tool calls specifically, [failed] includes cases where the tool call result has isError set".
    record = await new_task(store)
    tool_error = {"content": [{"type": "text", "text": "no such city"}], "isError": True}
    await store.finish(record.task_id, result=tool_error)
    task = await tasks.get(record.task_id, ALICE)
    assert task["status"] == "failed" and task["statusMessage"] == "no such city"  # failed SHOULD say why
    payload = await tasks.result(record.task_id, ALICE)
    assert payload["isError"] is True and payload["content"] == tool_error["content"]
    assert payload["_meta"][RELATED_TASK] == {"taskId": record.task_id}


async def test_a_json_rpc_error_is_failed_and_tasks_result_returns_that_error(
    store: InMemoryTaskStore, tasks: LegacyTasks
) -> None:
    record = await new_task(store)
    await store.finish(record.task_id, error={"code": -32602, "message": "bad city", "data": {"city": ""}})
    task = await tasks.get(record.task_id, ALICE)
    assert task["status"] == "failed" and task["statusMessage"] == "bad city"  # failed SHOULD say why
    with pytest.raises(JSONRPCError) as raised:
        await tasks.result(record.task_id, ALICE)
    assert (raised.value.code, raised.value.message, raised.value.data) == (-32602, "bad city", {"city": ""})


# -- tasks/result blocks, bounded -----------------------------------------------------------------------------------


async def test_tasks_result_blocks_until_the_task_completes(store: InMemoryTaskStore, tasks: LegacyTasks) -> None:
    record = await new_task(store)
    answers: list[dict[str, Any]] = []

    async def wait() -> None:
        answers.append(await tasks.result(record.task_id, ALICE))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.sleep(0.1)
            assert not answers  # still blocked: the task is working
            await store.finish(record.task_id, result={"content": [{"type": "text", "text": "72F"}]})
    assert answers[0]["content"][0]["text"] == "72F"
    bindings.CallToolResult.model_validate(answers[0])


async def test_tasks_result_gives_up_after_its_bound_and_the_task_is_untouched(store: InMemoryTaskStore) -> None:
    client = ClientSide()
    tasks = LegacyTasks(store, client.ask, client.notify, result_wait_seconds=0.2)
    record = await new_task(store)
    with anyio.fail_after(5), pytest.raises(JSONRPCError) as raised:
        await tasks.result(record.task_id, ALICE)
    assert raised.value.code == -32603 and raised.value.data == {"taskId": record.task_id, "status": "working"}
    assert "call tasks/result again" in raised.value.message
    assert (await tasks.get(record.task_id, ALICE))["status"] == "working"


async def test_tasks_result_of_a_cancelled_task_is_an_error(store: InMemoryTaskStore, tasks: LegacyTasks) -> None:
    record = await new_task(store)
    await tasks.cancel(record.task_id, ALICE)
    with pytest.raises(JSONRPCError) as raised:
        await tasks.result(record.task_id, ALICE)
    assert raised.value.code == TASK_CANCELLED_CODE and raised.value.data == {"taskId": record.task_id}


# -- input_required through tasks/result ----------------------------------------------------------------------------


async def test_input_required_questions_are_asked_during_tasks_result_with_the_related_task(
    store: InMemoryTaskStore, tasks: LegacyTasks, client: ClientSide
) -> None:
    record = await new_task(store)
    question = {"method": "elicitation/create", "params": {"message": "Delete?", "requestedSchema": {}}}
    await store.update(record.task_id, status="input_required", input_requests={"confirm-1": question})
    answers: list[dict[str, Any]] = []

    async def wait() -> None:
        answers.append(await tasks.result(record.task_id, ALICE))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            # Where the engine would take the answer: it arrives in the store, for whichever worker runs the task.
            taken: dict[str, Any] = {}
            while not taken:
                await anyio.sleep(0.02)
                taken = await store.take_input_responses(record.task_id)
            assert taken == {"confirm-1": client.answer}
            await store.update(record.task_id, status="working", input_requests=None)
            await store.finish(record.task_id, result={"content": []})
    assert [method for method, _ in client.asked] == ["elicitation/create"]  # asked once, not on every change
    assert client.asked[0][1]["_meta"][RELATED_TASK] == {"taskId": record.task_id}  # the text's MUST
    assert client.asked[0][1]["message"] == "Delete?"
    assert answers[0]["_meta"][RELATED_TASK] == {"taskId": record.task_id}


async def test_a_question_the_client_refuses_is_the_answer_of_tasks_result(store: InMemoryTaskStore) -> None:
    client = ClientSide(JSONRPCError(-32601, "Method not found: elicitation/create"))
    tasks = LegacyTasks(store, client.ask, client.notify, result_wait_seconds=5)
    record = await new_task(store)
    question = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {}}}
    await store.update(record.task_id, status="input_required", input_requests={"q": question})
    with anyio.fail_after(5), pytest.raises(JSONRPCError) as raised:
        await tasks.result(record.task_id, ALICE)
    assert raised.value.code == -32601 and raised.value.data["inputKey"] == "q"
    assert (await tasks.get(record.task_id, ALICE))["status"] == "input_required"  # still waiting for an answer


# -- tasks/cancel ---------------------------------------------------------------------------------------------------


async def test_cancel_answers_cancelled_and_asks_the_runner_to_stop(
    store: InMemoryTaskStore, tasks: LegacyTasks
) -> None:
    record = await new_task(store)
    answer = await tasks.cancel(record.task_id, ALICE)
    bindings.CancelTaskResult.model_validate(answer)
    assert answer["status"] == "cancelled"  # the text: MUST be cancelled before the response
    stored = await store.get(record.task_id, ALICE)
    assert stored is not None and stored.cancel_requested and stored.status == "cancelled"


async def test_cancelling_a_terminal_task_is_invalid_params(store: InMemoryTaskStore, tasks: LegacyTasks) -> None:
    record = await new_task(store)
    await store.finish(record.task_id, result={"content": []})
    with pytest.raises(JSONRPCError) as raised:
        await tasks.cancel(record.task_id, ALICE)
    assert raised.value.code == -32602
    assert raised.value.message == "Cannot cancel task: already in terminal status 'completed'"
    assert (await tasks.get(record.task_id, ALICE))["status"] == "completed"  # and it stays so


# -- binding and listing --------------------------------------------------------------------------------------------


async def test_another_requestors_task_is_not_found_for_every_method(
    store: InMemoryTaskStore, tasks: LegacyTasks
) -> None:
    record = await new_task(store, principal=ALICE)
    for call in (tasks.get, tasks.result, tasks.cancel):
        with pytest.raises(JSONRPCError) as raised:
            await call(record.task_id, BOB)
        assert raised.value.code == -32602 and raised.value.message == "Failed to retrieve task: Task not found"
    assert (await tasks.list(BOB, None)) == {"tasks": []}
    assert (await tasks.get(record.task_id, ALICE))["status"] == "working"  # untouched by Bob's cancel


async def test_an_unknown_task_is_invalid_params(tasks: LegacyTasks) -> None:
    with pytest.raises(JSONRPCError) as raised:
        await tasks.get("no-such-task", ALICE)
    assert raised.value.code == -32602


async def test_tasks_list_pages_with_an_opaque_cursor_and_refuses_a_bad_one(
    store: InMemoryTaskStore, tasks: LegacyTasks
) -> None:
    created = [await new_task(store) for _ in range(90)]
    for record in created[:60]:  # finished tasks stay listed (until their ttl); they free the live-task limit
        await store.finish(record.task_id, result={"content": []})
    created += [await new_task(store) for _ in range(30)]
    await new_task(store, principal=BOB)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(10):
        page = await tasks.list(ALICE, cursor)
        bindings.ListTasksResult.model_validate(page)
        seen += [task["taskId"] for task in page["tasks"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert seen == [record.task_id for record in created]  # every task of Alice, once, none of Bob's
    with pytest.raises(JSONRPCError) as raised:
        await tasks.list(ALICE, "not-a-cursor")
    assert raised.value.code == -32602


def test_the_principal_is_the_authenticated_owner_else_the_session_else_the_connection() -> None:
    assert session_principal("issuer|alice", "sess-1", "conn") == "issuer|alice"
    assert session_principal(None, "sess-1", "conn") == "session:sess-1"
    assert session_principal(None, None, "conn") == "connection:conn"


# -- status notifications -------------------------------------------------------------------------------------------


async def test_every_status_change_is_notified_until_the_task_is_terminal(
    store: InMemoryTaskStore, tasks: LegacyTasks, client: ClientSide
) -> None:
    record = await new_task(store)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tasks.watch, record)
            await anyio.sleep(0.05)
            await store.renew_lease(record.task_id, "worker-1", 30)  # no status change: nothing sent
            await store.update(record.task_id, status="input_required", input_requests={"q": {"method": "x"}})
            await anyio.sleep(0.05)
            await store.update(record.task_id, status="working", input_requests=None)
            await anyio.sleep(0.05)
            await store.finish(record.task_id, result={"content": []})
    assert [n["status"] for n in client.notified] == ["input_required", "working", "completed"]
    for notification in client.notified:
        bindings.TaskStatusNotificationParams.model_validate(notification)
        assert "_meta" not in notification  # the text: SHOULD NOT carry related-task
