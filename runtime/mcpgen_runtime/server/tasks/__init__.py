"""Long-running tool calls: a tool registered ``@server.tool(task="optional" | "required")`` runs in the
background as a task kept in a ``task_store.TaskStore``, followed by the client through the tasks/* methods.

- ``engine``: ``TaskEngine``, which creates a task (durably, before its handle is sent), runs the tool in the
  server run's task group with bounded concurrency, renews its lease, watches for cancel requests and input
  responses (from any worker), and stores its outcome; ``TaskRun``, a running task as the tool's connection sees it.
- ``modern``: the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` on the wire: when a call becomes a task,
  ``CreateTaskResult``, ``DetailedTask``, and ``tasks/get`` / ``tasks/update`` / ``tasks/cancel``.
- ``legacy``: the 2025-11-25 core's tasks (task-augmented ``tools/call``, ``tasks/get`` / ``result`` / ``list`` /
  ``cancel``, status notifications) on the same engine (helper D's).

May import: ``task_store``, ``jsonrpc``, ``versions``, ``server.authoring``, the standard library and anyio; never
``server.dispatch`` (which calls this) or above.
"""

from .engine import TaskEngine, TaskRun
from .modern import TASKS_EXTENSION

__all__ = ["TASKS_EXTENSION", "TaskEngine", "TaskRun"]
