"""The server the task tests run, in process or as a stdio child (``python tests/support/task_servers.py
[--name-the-task]``): tools that run as tasks in either era, written with the public API only.

- ``slow_compute(seconds)`` (task optional): sets the status message "computing", sleeps, answers "computed in
  {seconds}s" (with ``name_the_task``, followed by " (task ID)" so that a client's side can tell a followed task from
  a plain call);
- ``confirm_delete(filename)`` (task required): elicits ``{"confirm": bool}`` inside the task;
- ``broken(kind="tool")`` (task required): ``kind == "tool"`` is a tool error (``isError``), anything else a JSON-RPC
  error (-32603 with data);
- ``interview()`` (task required, deferred): asks once before the task exists and once inside it;
- ``plain()``: no task.
"""

from __future__ import annotations

import argparse

import anyio

from mcpgen_runtime.server import Context, ProtocolError, Server, ToolError

__all__ = ["task_server"]

CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


def task_server(name: str = "task-tests", *, name_the_task: bool = False) -> Server:
    server = Server(name)

    @server.tool(task="optional")
    async def slow_compute(seconds: float, context: Context) -> str:
        await context.task_status("computing")
        await anyio.sleep(seconds)
        return f"computed in {seconds}s" + (f" (task {context.task_id})" if name_the_task else "")

    @server.tool(task="required")
    async def confirm_delete(filename: str, context: Context) -> str:
        answer = await context.elicit(f"Delete {filename}?", CONFIRM_SCHEMA)
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
        return f"deleted {filename}" if confirmed else f"kept {filename}"

    @server.tool(task="required")
    async def broken(kind: str = "tool") -> str:
        if kind == "tool":
            raise ToolError("the city does not exist")
        raise ProtocolError(-32603, "the job broke", {"why": "on purpose"})

    @server.tool(task="required", deferred_task=True)
    async def interview(context: Context) -> str:
        # Asks before the task exists (2026-07-28: a multi round-trip request), then once more inside it.
        schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
        first = await context.elicit("Start?", schema, input_key="start")
        await context.start_task("interviewing")
        second = await context.elicit("Really?", schema, input_key="really")
        return f"{first.action} then {second.action}"

    @server.tool()
    async def plain() -> str:
        return "plain"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="the task tests' server, over stdio")
    parser.add_argument("--name-the-task", action="store_true")
    task_server(name_the_task=parser.parse_args().name_the_task).run_stdio()
