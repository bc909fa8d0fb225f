"""``Registry.tools`` counts its changes (``ToolTable.generation``), so ``serves_tasks`` (part of ``serving_key``, read
by every modern request) is derived once per change, not walked per request: every way of changing the table is
seen, and a table replaced by a plain dict still works (walked each time, as before)."""

from __future__ import annotations

import copy

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.authoring.registry import ToolTable


def build() -> Server:
    server = Server("tables")

    @server.tool()
    async def plain() -> str:
        """Never a task."""
        return "plain"

    return server


def test_every_change_of_the_tool_table_is_seen() -> None:
    server = build()
    assert isinstance(server.tools, ToolTable)
    assert not server.serves_tasks()
    plain = server.tools["plain"]
    optional = copy.copy(plain)
    optional.task_support = "optional"

    @server.tool(task="optional")
    async def later() -> str:
        """May run as a task."""
        return "later"

    assert server.serves_tasks()
    server.remove_tool("later")
    assert not server.serves_tasks()
    server.tools["set"] = optional
    assert server.serves_tasks()
    server.tools.pop("set")
    assert not server.serves_tasks()
    server.tools.update(updated=optional)
    assert server.serves_tasks()
    del server.tools["updated"]
    assert not server.serves_tasks()
    server.tools |= {"merged": optional}
    assert server.serves_tasks()
    server.tools.popitem()
    assert not server.serves_tasks()
    server.tools.setdefault("defaulted", optional)
    assert server.serves_tasks()
    server.tools.clear()
    assert not server.serves_tasks()


def test_the_key_is_derived_once_per_change() -> None:
    server = build()
    walked: list[int] = []
    tool = server.tools["plain"]

    class Counting(type(tool)):  # type: ignore[misc]
        @property
        def task_support(self) -> str:
            walked.append(1)
            return "forbidden"

        @task_support.setter
        def task_support(self, value: str) -> None:
            pass

    counted = copy.copy(tool)
    counted.__class__ = Counting
    server.tools["counted"] = counted
    for _ in range(5):
        server.serving_key()
    assert len(walked) == 1  # walked for the change, not for each of the five keys


def test_a_plain_dict_in_place_of_the_table_still_works() -> None:
    server = build()
    server.tools = dict(server.tools)
    assert not server.serves_tasks()
    optional = copy.copy(server.tools["plain"])
    optional.task_support = "optional"
    server.tools["optional"] = optional
    assert server.serves_tasks()
