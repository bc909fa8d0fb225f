"""An independent implementation of the 2026-07-28 tasks extension (``io.modelcontextprotocol/tasks``) on the other
side: FastMCP's, in both directions.

Which FastMCP. FastMCP's client and server speak the extension only through its companion package ``fastmcp-tasks``
(``fastmcp/client/extension_hooks.py``: "Core ships the client wiring ... but no extension of its own"). The newest
``fastmcp`` (4.2.3) names ``fastmcp-tasks==4.2.3`` in its ``tasks`` extra, which was never published (PyPI has
fastmcp-tasks up to 4.1.4, and 4.1.4 pins ``fastmcp-slim==4.1.4``), so ``fastmcp[tasks]==4.2.3`` cannot be
installed. ``fastmcp[tasks]==4.1.4`` is the newest release whose task support installs; it runs on the official
Python SDK (``mcp`` 2.3, ``mcp-types`` 2.3). It is installed into a venv of its own (``support.isolated_venv``), apart
from the project's dependencies, and its client and server run as subprocesses.

- FastMCP's client against our ``Server`` (stdio and streamable HTTP): ``call_tool`` on a task-optional tool, which
  our server runs as a task because the client declares the extension, is followed to its result; ``call_tool_task``
  gives the ``CreateTaskResult`` (``resultType: "task"``, status ``working``, ttl, ``pollIntervalMs``), ``tasks/get``
  shows the tool's status message, the result comes inline once ``completed``; an elicitation inside a task is
  ``input_required`` and answered through ``tasks/update``; ``tasks/cancel`` ends in ``cancelled``; a tool error is a
  ``completed`` task whose result has ``isError`` (the text: only a JSON-RPC error is ``failed``).
- Where FastMCP disagrees with the text: over HTTP its ``tasks/get|update|cancel`` carry no ``Mcp-Name`` header
  (fastmcp_tasks/client_models.py declares no ``name_param``, so ``mcp.client.session.send_request`` adds none),
  while the extension says the client **MUST** set it to ``params.taskId`` ("Streamable HTTP: Routing Headers").
  Our server answers such a request -32020 (the 2026-07-28 transport: a required ``Mcp-Name`` missing), which one
  test pins; the HTTP life is then run with a three-line shim in the client script that makes FastMCP send the
  header, so everything else is still checked over HTTP.
- Our client (``start_tool_task``, ``TaskHandle``, ``call_tool`` with ``tasks=True``) against FastMCP's task server
  (``TasksExtension`` on its in-memory Docket) over stdio: created, polled, result; elicitation answered by our
  handlers through ``tasks/update``; cancel.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.isolated_venv import isolated_venv, run_script
from support.servers import serving_server
from support.task_servers import task_server

import mcp_bindings.v2026_07_28 as v5
from mcpgen_runtime.client import Client, ClientContext, Stdio

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

# Pinned: the newest FastMCP whose tasks extra installs (see the module docstring).
FASTMCP: tuple[str, ...] = ("fastmcp[tasks]==4.1.4",)
WAIT = 60.0  # seconds for one whole scenario (a subprocess starts, a few tasks run)
TASK_SERVER = str(Path(__file__).resolve().parents[1] / "support" / "task_servers.py")  # run as a stdio child


@pytest.fixture(scope="module")
def fastmcp_python() -> Path:
    return isolated_venv("fastmcp-4.1.4", FASTMCP)


def test_an_install_that_fails_skips_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No index, so pip fails at once and offline: the skip names what is missing, for conftest's NOT TESTED list.
    monkeypatch.setenv("MCPGEN_VENV_CACHE", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match=r"^not tested: system program missing: --no-index mcpgen-absent"):
        isolated_venv("absent", ["--no-index", "mcpgen-absent==0.0.0"])
    assert not (tmp_path / "venv-absent").exists()  # nothing half-built is left to be taken for an install


# -- our server ------------------------------------------------------------------------------------------------


# -- FastMCP's client --------------------------------------------------------------------------------------------

FASTMCP_CLIENT = r"""
import asyncio, json, sys

import fastmcp_tasks  # importing it registers the tasks extension on every fastmcp Client
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp_tasks import call_tool_task, client_models
from mcp.shared.exceptions import MCPError


def say(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


async def elicit(message, response_type, params, context):
    say("elicited", message=message)
    return {"confirm": True}


async def main(scenario, target):
    if scenario == "life+mcp-name":
        # What the text asks of a client over HTTP and fastmcp-tasks 4.1.4 leaves out: Mcp-Name = params.taskId.
        for request in (client_models.GetTaskRequest, client_models.UpdateTaskRequest, client_models.CancelTaskRequest):
            request.name_param = "taskId"
    transport = StdioTransport(command=target[0], args=target[1:]) if len(target) > 1 else target[0]
    async with Client(transport, elicitation_handler=elicit, timeout=30) as client:
        say("connected", protocol=client.protocol_version)
        task = await call_tool_task(client, "slow_compute", {"seconds": 0.5})
        created = task.create_result
        say("created", task_id=created.task_id, status=created.status, ttl_ms=created.ttl_ms,
            poll_interval_ms=created.poll_interval_ms, result_type=created.result_type)
        if scenario == "no-mcp-name":
            try:
                await task.status()
            except MCPError as error:
                say("refused", code=error.error.code, message=error.error.message)
            return
        await asyncio.sleep(0.1)
        polled = await task.status()
        say("polled", task_id=polled.task_id, status=polled.status, message=polled.status_message)
        say("result", text=(await task.result()).content[0].text)

        followed = await client.call_tool("slow_compute", {"seconds": 0.1})
        say("followed", text=followed.content[0].text)

        confirm = await call_tool_task(client, "confirm_delete", {"filename": "a.txt"})
        say("confirmed", text=(await confirm.result()).content[0].text)

        hanging = await call_tool_task(client, "slow_compute", {"seconds": 60})
        await hanging.cancel()
        say("cancelled", status=(await hanging.wait(timeout=15)).status)

        broken = await call_tool_task(client, "broken", {}, raise_on_error=False)
        final = await broken.wait(timeout=15)
        say("broken", status=final.status, result=final.result, error=final.error)


asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


async def run_fastmcp_client(python: Path, tmp_path: Path, scenario: str, *target: str) -> dict[str, dict[str, Any]]:
    """Runs the FastMCP client script; its events by name (each event is said once)."""
    events = await run_script(
        python, FASTMCP_CLIENT, tmp_path, scenario, *target, timeout=WAIT, name="fastmcp_client.py"
    )
    return {event.pop("event"): event for event in events}


def assert_the_life_of_tasks(events: dict[str, dict[str, Any]]) -> None:
    assert events["connected"]["protocol"] == "2026-07-28"
    created = events["created"]
    assert created["status"] == "working" and created["result_type"] == "task"
    assert created["ttl_ms"] > 0 and created["poll_interval_ms"] > 0
    assert events["polled"] == {"task_id": created["task_id"], "status": "working", "message": "computing"}
    assert events["result"]["text"] == f"computed in 0.5s (task {created['task_id']})"
    # A plain call_tool was answered with a task (the client declared the extension) and followed to its result.
    followed = events["followed"]["text"]
    assert followed.startswith("computed in 0.1s (task ") and "task None" not in followed
    assert events["elicited"]["message"] == "Delete a.txt?"
    assert events["confirmed"]["text"] == "deleted a.txt"
    assert events["cancelled"]["status"] == "cancelled"
    broken = events["broken"]
    assert broken["status"] == "completed" and broken["error"] is None
    assert broken["result"]["isError"] is True
    assert broken["result"]["content"][0]["text"] == "the city does not exist"


async def test_the_fastmcp_client_follows_our_tasks_over_stdio(fastmcp_python: Path, tmp_path: Path) -> None:
    events = await run_fastmcp_client(fastmcp_python, tmp_path, "life", sys.executable, TASK_SERVER, "--name-the-task")
    assert_the_life_of_tasks(events)


async def test_the_fastmcp_client_follows_our_tasks_over_http(fastmcp_python: Path, tmp_path: Path) -> None:
    async with serving_server(task_server(name_the_task=True)) as url:
        events = await run_fastmcp_client(fastmcp_python, tmp_path, "life+mcp-name", url)
    assert_the_life_of_tasks(events)


async def test_over_http_a_tasks_request_without_mcp_name_is_refused(fastmcp_python: Path, tmp_path: Path) -> None:
    # fastmcp-tasks 4.1.4 sends tasks/get without the Mcp-Name the extension requires: -32020, per the text.
    async with serving_server(task_server(name_the_task=True)) as url:
        events = await run_fastmcp_client(fastmcp_python, tmp_path, "no-mcp-name", url)
    assert events["created"]["status"] == "working"
    refused = events["refused"]
    assert refused["code"] == -32020 and "Mcp-Name" in refused["message"], refused


# -- FastMCP's server --------------------------------------------------------------------------------------------

FASTMCP_SERVER = r"""
import asyncio
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-task-server")
mcp.add_extension(TasksExtension(url="memory://"))  # Docket in memory: one process, nothing else to run
FAST = timedelta(milliseconds=100)  # the pollIntervalMs it tells clients (5 s by default)


@mcp.tool(task=TaskConfig(mode="optional", poll_interval=FAST))
async def slow_compute(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"computed in {seconds}s"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=FAST))
async def confirm_delete(filename: str, ctx: Context):
    # FastMCP's way to ask inside a task (ctx.elicit is refused there): return the question; the task runs the tool
    # again with the answer once the client's tasks/update brings it.
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
        question = mcp_types.ElicitRequestFormParams(message=f"Delete {filename}?", requested_schema=schema)
        return mcp_types.InputRequiredResult(input_requests={"confirm": mcp_types.ElicitRequest(params=question)})
    confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
    return f"deleted {filename}" if confirmed else f"kept {filename}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
"""


class Confirmer(v5.client.ClientHandlers[ClientContext]):
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: v5.ElicitRequestParams, context: ClientContext) -> v5.ElicitResult:
        self.asked.append(params.message)
        return v5.ElicitResult(action="accept", content={"confirm": True})


async def test_our_client_follows_a_fastmcp_task_server_over_stdio(fastmcp_python: Path, tmp_path: Path) -> None:
    script = tmp_path / "fastmcp_task_server.py"
    script.write_text(FASTMCP_SERVER, encoding="utf-8")
    confirmer = Confirmer()
    with anyio.fail_after(WAIT):
        target = Stdio([str(fastmcp_python), str(script)])
        async with Client.connect(target, handlers=confirmer, request_timeout=30, tasks=True) as client:
            assert client.protocol_version == "2026-07-28"
            handle = await client.start_tool_task("slow_compute", {"seconds": 0.5}, ttl_ms=60_000)
            assert handle.task_id and handle.info.status == "working"
            assert handle.info.poll_interval_ms == 100 and handle.info.ttl_ms  # FastMCP picks the ttl itself
            assert (await handle.status()).status in ("working", "completed")
            result = await handle.result(timeout=20)
            assert result.content[0].text == "computed in 0.5s"  # type: ignore[union-attr]

            followed = await client.call_tool("slow_compute", {"seconds": 0.1})  # run as a task, followed
            assert followed.content[0].text == "computed in 0.1s"  # type: ignore[union-attr]

            confirmed = await client.start_tool_task("confirm_delete", {"filename": "a.txt"})
            assert (await confirmed.result(timeout=20)).content[0].text == "deleted a.txt"  # type: ignore[union-attr]
            assert confirmer.asked == ["Delete a.txt?"]

            hanging = await client.start_tool_task("slow_compute", {"seconds": 60})
            await hanging.cancel()
            with anyio.fail_after(15):  # the text: cancellation is cooperative, the status follows
                while (status := (await hanging.status()).status) == "working":
                    await anyio.sleep(0.1)
            assert status == "cancelled"
