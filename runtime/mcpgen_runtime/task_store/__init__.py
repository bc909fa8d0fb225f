"""Tasks: what a task is and where it is kept, apart from any wire (the server's `server.tasks` runs them and
speaks both eras' tasks/* methods; scaleout's Redis store implements the same interface).

- ``records``: `TaskRecord` (plain JSON, so Redis can hold it), the statuses, and the errors a store raises.
- ``store``: the `TaskStore` interface every store implements, its documented default bounds, and how a change is
  waited for (`wait_for_change`).
- ``memory``: `InMemoryTaskStore`, the default, one process's memory.
- ``transitions``: how a record changes (finishing, answering input, the bounds, the ttl clamp), the same for
  every store.

May import: the standard library and anyio; never ``jsonrpc``, ``transports``, ``protocol``, ``scaleout``,
``server`` or ``client`` (a store knows records, not messages).
"""

from .memory import InMemoryTaskStore
from .records import (
    TASK_STATUSES,
    TERMINAL_STATUSES,
    TaskLimitError,
    TaskRecord,
    TaskStatus,
    TaskStoreError,
    TaskTerminalError,
    TaskTooLargeError,
)
from .store import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_TASKS_PER_PRINCIPAL,
    DEFAULT_TTL_MS,
    MAX_LIST_LIMIT,
    MAX_TTL_MS,
    MAX_WAIT_SECONDS,
    TaskStore,
)
from .transitions import clamp_ttl_ms

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_TASKS_PER_PRINCIPAL",
    "DEFAULT_TTL_MS",
    "MAX_LIST_LIMIT",
    "MAX_TTL_MS",
    "MAX_WAIT_SECONDS",
    "TASK_STATUSES",
    "TERMINAL_STATUSES",
    "InMemoryTaskStore",
    "TaskLimitError",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TaskStoreError",
    "TaskTerminalError",
    "TaskTooLargeError",
    "clamp_ttl_ms",
]
