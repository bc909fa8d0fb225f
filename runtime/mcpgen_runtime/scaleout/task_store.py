"""The task store on Redis: ``RedisTaskStore``, the ``task_store.TaskStore`` every worker of a scaled-out server
shares, so that a task started through one worker is read, updated and cancelled through any other, and a task whose
worker died is failed by a surviving one (its lease ran out).

Where it sits: in ``scaleout``, beside the other Redis stores (``worker.ScaleOutWorker.task_store_like`` builds it
over the worker's bounded client, ``redis_client.open_redis``); it implements the interface of the ``task_store``
package and passes the same contract tests as ``task_store.InMemoryTaskStore`` (tests/runtime/test_task_store_memory.py,
run on Redis by tests/scaleout/test_task_store_redis.py).

Layout (``TaskKeys``, under the deployment's ``key_prefix``):

- ``{prefix}:task:{id}``: the record as JSON (``TaskRecord.to_json``), expiring at created_at + ttl_ms (Redis
  expiry, ms precision): an expired task is gone on every worker at once.
- ``{prefix}:tasks:{principal}``: sorted set of the principal's task ids by creation time (``list``, oldest first).
- ``{prefix}:tasks-live:{principal}``: sorted set of the principal's non-terminal task ids by expiry time (the
  per-principal limit counts it; expired members are dropped before counting).
- ``{prefix}:task-leases``: sorted set of the leased non-terminal task ids by lease expiry (``fail_expired_leases``
  reads the ones past due, at most ``MAX_SWEEP`` per call).
- ``{prefix}:task-changed``: pub/sub channel; every stored change publishes its task id, so waiters on other workers
  wake at once (``listen_for_changes``, run by the worker); waiters also poll every ``CHANGE_POLL_INTERVAL`` seconds,
  so a lost message (Redis restarted, the subscriber reconnecting) only delays them.

``principal`` in a key is a hash of it (``-`` for the unauthenticated principal): any subject string gives a short
key. Atomicity: ``create`` is one Lua script (the limit check and the writes together); every change of an existing
task is an optimistic transaction (WATCH the record, compute the change in Python exactly as the memory store does,
MULTI/EXEC the record and its index entries; at most ``MAX_ATTEMPTS`` tries under contention). Records are never
rewritten by Lua, so results keep their exact JSON.

Bounds: every call has a total deadline (``settings.redis_timeout``; ``wait_for_change``: its timeout plus that):
a stalled or dead Redis raises ``TaskStoreUnavailable`` (a ``TaskStoreError``) within it, never hangs. A task id
longer than ``MAX_TASK_ID_LENGTH`` is unknown. A record that is not a task's (junk under the key) reads as unknown and
is logged. Durability: ``create`` returns once Redis has the record, so any worker's ``get`` finds it; whether it
survives a Redis restart is Redis's persistence setting (docs/how-to/deploy.md): without persistence, a restarted Redis
has forgotten every task, and tasks/get answers "not found".
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import anyio
import redis
import redis.asyncio

from ..task_store import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_TASKS_PER_PRINCIPAL,
    DEFAULT_TTL_MS,
    MAX_LIST_LIMIT,
    MAX_TTL_MS,
    MAX_WAIT_SECONDS,
    TaskLimitError,
    TaskRecord,
    TaskStoreError,
    clamp_ttl_ms,
)
from ..task_store.transitions import (
    ENGINE_FIELDS,
    abandoned_error,
    answer_input_requests,
    check_bounds,
    check_outcome,
    finish_record,
    refuse_terminal,
)
from .keys import KeyLayout

__all__ = [
    "CHANGE_POLL_INTERVAL",
    "MAX_ATTEMPTS",
    "MAX_SWEEP",
    "MAX_TASK_ID_LENGTH",
    "RedisTaskStore",
    "TaskKeys",
    "TaskStoreUnavailable",
]

logger = logging.getLogger(__name__)

MAX_TASK_ID_LENGTH: Final = 256  # a longer id (a client's junk) is unknown, never a key
MAX_ATTEMPTS: Final = 32  # optimistic transactions of one change under contention, then TaskStoreUnavailable
MAX_SWEEP: Final = 100  # abandoned tasks one fail_expired_leases call fails (the next sweep takes the rest)
CHANGE_POLL_INTERVAL: Final = 0.5  # a waiter reads the record at least this often (pub/sub usually wakes it first)
_LIST_BATCH: Final = 64  # task ids read per round trip while paging

_T = TypeVar("_T")

# KEYS: record, live set, all set, leases. ARGV: record JSON, expiry (ms), now (s), limit, created_at, id, lease
# expiry ('' = none), live ('1' = non-terminal), index TTL (s). Returns 1 stored, 0 over the limit, -1 id taken.
_CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
if ARGV[8] == '1' then
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
  redis.call('ZADD', KEYS[2], ARGV[2] / 1000, ARGV[6])
  redis.call('EXPIRE', KEYS[2], ARGV[9])
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[3] - ARGV[9])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6])
redis.call('EXPIRE', KEYS[3], ARGV[9])
if ARGV[7] ~= '' and ARGV[8] == '1' then redis.call('ZADD', KEYS[4], ARGV[7], ARGV[6]) end
return 1
"""


class TaskStoreUnavailable(TaskStoreError):
    """Redis failed, stalled past the call's deadline, or kept changing a task under a transaction."""


@dataclass(frozen=True, slots=True)
class TaskKeys:
    """The names of the task store's keys and channel (see the module docstring), under ``KeyLayout.prefix``."""

    prefix: str

    @classmethod
    def of(cls, keys: KeyLayout) -> TaskKeys:
        return cls(keys.prefix)

    def task(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def all_tasks(self, principal: str | None) -> str:
        return f"{self.prefix}:tasks:{principal_key(principal)}"

    def live_tasks(self, principal: str | None) -> str:
        return f"{self.prefix}:tasks-live:{principal_key(principal)}"

    @property
    def leases(self) -> str:
        return f"{self.prefix}:task-leases"

    @property
    def changed(self) -> str:
        return f"{self.prefix}:task-changed"


def principal_key(principal: str | None) -> str:
    """A short, fixed-size name for a principal in a key (``-``: unauthenticated)."""
    return "-" if principal is None else hashlib.sha256(principal.encode()).hexdigest()[:32]


@dataclass
class _Change:
    """What a change computed from the record it read: the record to write (None: write nothing) and the answer."""

    record: TaskRecord | None
    answer: Any
    bump: bool = True


class RedisTaskStore:
    """``TaskStore`` on Redis (see the module docstring). ``client``: a bounded client (``redis_client.open_redis``);
    ``deadline``: the total deadline of one call in seconds; the bounds as ``InMemoryTaskStore``'s, same defaults."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        keys: KeyLayout,
        *,
        deadline: float = 5.0,
        max_tasks_per_principal: int = DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        default_ttl_ms: int = DEFAULT_TTL_MS,
        max_ttl_ms: int = MAX_TTL_MS,
    ) -> None:
        check_bounds(max_tasks_per_principal, max_result_bytes, default_ttl_ms, max_ttl_ms)
        if deadline <= 0:
            raise ValueError("the deadline must be positive")
        self._redis, self.keys, self.deadline = client, TaskKeys.of(keys), deadline
        self.max_tasks_per_principal = max_tasks_per_principal
        self.max_result_bytes = max_result_bytes
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        # The index sets outlive every task in them: they expire max_ttl after their last create.
        self._index_ttl = max(1, -(-max_ttl_ms // 1000))
        self._create_script = client.register_script(_CREATE)
        self._changed: dict[str, anyio.Event] = {}  # waiters of this process, woken by local writes and pub/sub

    # -- bounds and errors -------------------------------------------------------------------------------------

    @contextmanager
    def _bounded(self, what: str, seconds: float | None = None) -> Iterator[None]:
        limit = self.deadline if seconds is None else seconds
        try:
            with anyio.fail_after(limit):
                yield
        except TimeoutError:
            raise TaskStoreUnavailable(f"Redis did not complete {what} within {limit:g} s") from None
        except redis.RedisError as error:
            raise TaskStoreUnavailable(f"Redis failed during {what}: {error}") from error

    @staticmethod
    async def _once_more(make: Callable[[], Awaitable[_T]]) -> _T:
        """``make()``, again once if Redis closed the pooled connection it used (Redis restarted: each connection
        of the pool learns it on its next command): the second try takes a new connection."""
        try:
            return await make()
        except redis.ConnectionError:
            return await make()

    def _wake(self, task_id: str) -> None:
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()

    # -- reading -----------------------------------------------------------------------------------------------

    def _parse(self, task_id: str, raw: Any) -> TaskRecord | None:
        if raw is None:
            return None
        try:
            record = TaskRecord.from_json(raw)
        except (ValueError, TypeError):
            logger.warning("task %s: its Redis key holds no task record; treated as unknown", task_id)
            return None
        expires = record.expires_at()
        if record.task_id != task_id or (expires is not None and time.time() >= expires):
            return None  # (Redis drops it within milliseconds)
        return record

    async def _read(self, task_id: str) -> TaskRecord | None:
        if len(task_id) > MAX_TASK_ID_LENGTH:
            return None
        try:
            raw = await self._once_more(lambda: self._redis.get(self.keys.task(task_id)))
        except redis.ResponseError as error:  # junk of another type under the key
            if "WRONGTYPE" not in str(error):
                raise
            return self._parse(task_id, b"")
        return self._parse(task_id, raw)

    # -- changing ----------------------------------------------------------------------------------------------

    async def _change(self, task_id: str, compute: Callable[[TaskRecord | None], _Change]) -> Any:
        """Read the record under WATCH, ``compute`` the change, write it with its index entries in one MULTI/EXEC;
        again when another writer got there first. Tried once more on a connection Redis closed (``_once_more``):
        should Redis have applied the first EXEC and lost only its answer, the second try finds the change made (a
        finish then raises ``TaskTerminalError``, which the engine takes as "finished elsewhere")."""
        return await self._once_more(lambda: self._change_once(task_id, compute))

    async def _change_once(self, task_id: str, compute: Callable[[TaskRecord | None], _Change]) -> Any:
        if len(task_id) > MAX_TASK_ID_LENGTH:
            return compute(None).answer
        key = self.keys.task(task_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            for _attempt in range(MAX_ATTEMPTS):
                try:
                    await pipe.watch(key)
                    try:
                        raw = await pipe.get(key)
                    except redis.ResponseError:
                        raw = b""
                    change = compute(self._parse(task_id, raw))
                    if change.record is None:
                        await pipe.unwatch()  # type: ignore[no-untyped-call]
                        return change.answer
                    record = change.record
                    if change.bump:
                        record.version += 1
                        record.last_updated_at = time.time()
                    pipe.multi()  # type: ignore[no-untyped-call]
                    self._queue_write(pipe, record, announce=change.bump)
                    await pipe.execute()
                except redis.WatchError:
                    continue
                if change.bump:
                    self._wake(task_id)
                if isinstance(change.answer, TaskRecord):
                    return TaskRecord.from_json(record.to_json())
                return change.answer
        raise TaskStoreUnavailable(f"task {task_id} kept changing under {MAX_ATTEMPTS} transactions")

    def _queue_write(self, pipe: Any, record: TaskRecord, *, announce: bool) -> None:
        """The record and its index entries, in the transaction ``pipe``; ``announce``: a change waiters care about
        (not a lease renewal), published on ``TaskKeys.changed``."""
        key = self.keys.task(record.task_id)
        pipe.set(key, record.to_json())
        expires = record.expires_at()
        if expires is not None:
            pipe.pexpireat(key, int(expires * 1000))
        live = self.keys.live_tasks(record.principal)
        if record.is_terminal:
            pipe.zrem(live, record.task_id)
            pipe.zrem(self.keys.leases, record.task_id)
        else:
            if expires is not None:
                pipe.zadd(live, {record.task_id: expires}, xx=True)
            if record.lease_expires_at is not None:
                pipe.zadd(self.keys.leases, {record.task_id: record.lease_expires_at})
            else:
                pipe.zrem(self.keys.leases, record.task_id)
        if announce:
            pipe.publish(self.keys.changed, record.task_id)

    # -- the TaskStore interface -------------------------------------------------------------------------------

    async def create(self, record: TaskRecord) -> TaskRecord:
        if len(record.task_id) > MAX_TASK_ID_LENGTH:
            raise ValueError(f"a task id is at most {MAX_TASK_ID_LENGTH} characters")
        now = time.time()
        stored = TaskRecord.from_json(record.to_json())
        stored.created_at = stored.last_updated_at = now
        stored.ttl_ms = clamp_ttl_ms(record.ttl_ms, self.default_ttl_ms, self.max_ttl_ms)
        stored.version = 1
        expires_ms = int((now * 1000) + stored.ttl_ms)
        lease = "" if stored.lease_expires_at is None else repr(stored.lease_expires_at)
        keys = [
            self.keys.task(stored.task_id),
            self.keys.live_tasks(stored.principal),
            self.keys.all_tasks(stored.principal),
            self.keys.leases,
        ]
        argv: list[str | int] = [stored.to_json(), expires_ms, repr(now), self.max_tasks_per_principal, repr(now)]
        argv += [stored.task_id, lease, "0" if stored.is_terminal else "1", self._index_ttl]
        tries = 0

        async def run_script() -> Any:
            nonlocal tries
            tries += 1
            return await self._create_script(keys=keys, args=argv)

        with self._bounded("creating a task"):
            outcome = await self._once_more(run_script)
            if outcome == -1 and tries > 1 and await self._read(stored.task_id) == stored:
                outcome = 1  # the first try was stored, only its answer was lost
        if outcome == -1:
            raise ValueError(f"task {stored.task_id} already exists")
        if outcome == 0:
            raise TaskLimitError(self.max_tasks_per_principal)
        return stored

    async def get(self, task_id: str, principal: str | None) -> TaskRecord | None:
        with self._bounded("reading a task"):
            record = await self._read(task_id)
        return record if record is not None and record.principal == principal else None

    async def list(
        self, principal: str | None, cursor: str | None = None, limit: int | None = None
    ) -> tuple[builtins.list[TaskRecord], str | None]:
        page_size = min(max(1, limit or DEFAULT_LIST_LIMIT), MAX_LIST_LIMIT)
        with self._bounded("listing tasks"):
            found = await self._once_more(lambda: self._list_from(principal, cursor, page_size))
        page = found[:page_size]
        return page, page[-1].task_id if len(found) > page_size else None

    async def _list_from(self, principal: str | None, cursor: str | None, page_size: int) -> builtins.list[TaskRecord]:
        """Up to ``page_size`` + 1 of the principal's live tasks after ``cursor``: one more than a page, so that a
        cursor is handed out only when something follows."""
        index = self.keys.all_tasks(principal)
        start = 0
        if cursor is not None:
            rank: Any = await self._redis.zrank(index, cursor) if len(cursor) <= MAX_TASK_ID_LENGTH else None
            if not isinstance(rank, int) or await self.get(cursor, principal) is None:
                raise ValueError("unknown or expired cursor")
            start = rank + 1
        found: builtins.list[TaskRecord] = []
        while len(found) <= page_size:
            ids = [_text(member) for member in await self._redis.zrange(index, start, start + _LIST_BATCH - 1)]
            if not ids:
                break
            raws = await self._redis.mget([self.keys.task(task_id) for task_id in ids])
            gone = []
            for task_id, raw in zip(ids, raws, strict=True):
                record = self._parse(task_id, raw)
                if record is None or record.principal != principal:
                    gone.append(task_id)
                elif len(found) <= page_size:
                    found.append(record)
            start += len(ids)
            if gone:  # expired: dropped from the index, and the positions after them move up
                await self._redis.zrem(index, *gone)
                start -= len(gone)
        return found

    async def update(self, task_id: str, **changes: Any) -> TaskRecord | None:
        unknown = set(changes) - ENGINE_FIELDS
        if unknown:
            raise ValueError(f"update() cannot change {sorted(unknown)}")
        if changes.get("status", "working") not in ("working", "input_required"):
            raise ValueError("a terminal status is set through finish()")

        def compute(record: TaskRecord | None) -> _Change:
            if record is None:
                return _Change(None, None)
            refuse_terminal(record)
            for name, value in changes.items():
                setattr(record, name, value)
            return _Change(record, record)

        with self._bounded("updating a task"):
            result: TaskRecord | None = await self._change(task_id, compute)
        return result

    async def finish(
        self,
        task_id: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        cancelled: bool = False,
        status_message: str | None = None,
    ) -> TaskRecord | None:
        check_outcome(result, error, cancelled, self.max_result_bytes)

        def compute(record: TaskRecord | None) -> _Change:
            if record is None:
                return _Change(None, None)
            finish_record(record, result, error, status_message)
            return _Change(record, record)

        with self._bounded("finishing a task"):
            finished: TaskRecord | None = await self._change(task_id, compute)
        return finished

    async def request_cancel(self, task_id: str, principal: str | None) -> TaskRecord | None:
        def compute(record: TaskRecord | None) -> _Change:
            if record is None or record.principal != principal:
                return _Change(None, None)
            refuse_terminal(record)
            record.cancel_requested = True
            return _Change(record, record)

        with self._bounded("cancelling a task"):
            flagged: TaskRecord | None = await self._change(task_id, compute)
        return flagged

    async def add_input_responses(
        self, task_id: str, principal: str | None, responses: dict[str, Any]
    ) -> TaskRecord | None:
        def compute(record: TaskRecord | None) -> _Change:
            if record is None or record.principal != principal:
                return _Change(None, None)
            if not answer_input_requests(record, responses, self.max_result_bytes):
                return _Change(None, record)
            return _Change(record, record)

        with self._bounded("answering a task's input requests"):
            answered: TaskRecord | None = await self._change(task_id, compute)
        return answered

    async def take_input_responses(self, task_id: str) -> dict[str, Any]:
        taken: dict[str, Any] = {}

        def compute(record: TaskRecord | None) -> _Change:
            taken.clear()
            if record is None or not record.input_responses:
                return _Change(None, {})
            taken.update(record.input_responses)
            record.input_responses = {}
            return _Change(record, taken)

        with self._bounded("taking a task's input responses"):
            answer: dict[str, Any] = await self._change(task_id, compute)
        return answer

    async def renew_lease(self, task_id: str, owner: str, seconds: float) -> TaskRecord | None:
        def compute(record: TaskRecord | None) -> _Change:
            if record is None:
                return _Change(None, None)
            refuse_terminal(record)
            record.owner = owner
            record.lease_expires_at = time.time() + seconds
            # A renewal is not a change a watcher cares about: no version bump (as in memory).
            return _Change(record, record, bump=False)

        with self._bounded("renewing a task's lease"):
            renewed: TaskRecord | None = await self._change(task_id, compute)
        return renewed

    async def fail_expired_leases(self, now: float | None = None) -> builtins.list[TaskRecord]:
        now = time.time() if now is None else now
        failed: builtins.list[TaskRecord] = []
        with self._bounded("sweeping expired task leases"):
            due = await self._once_more(
                lambda: self._redis.zrangebyscore(self.keys.leases, "-inf", f"({now!r}", start=0, num=MAX_SWEEP)
            )
        for task_id in (_text(member) for member in due):

            def compute(record: TaskRecord | None) -> _Change:
                if record is None or record.is_terminal or record.lease_expires_at is None:
                    return _Change(None, None)
                if record.lease_expires_at >= now:
                    return _Change(None, None)  # renewed meanwhile
                error = abandoned_error(record)
                record.status, record.error, record.result = "failed", error, None
                record.status_message = error["message"]
                record.input_requests, record.input_responses, record.lease_expires_at = None, {}, None
                return _Change(record, record)

            with self._bounded("failing an abandoned task"):
                record: TaskRecord | None = await self._change(task_id, compute)
                if record is None:  # gone or finished: its index entry is stale
                    await self._redis.zrem(self.keys.leases, task_id)
            if record is not None:
                failed.append(record)
        return failed

    async def wait_for_change(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        wait = max(0.0, min(timeout, MAX_WAIT_SECONDS))
        with self._bounded("waiting for a task to change", wait + self.deadline):
            with anyio.move_on_after(wait):
                while True:
                    record = await self._read(task_id)
                    if record is None:
                        return None
                    if record.version > after_version:
                        return record
                    event = self._changed.get(task_id)
                    if event is None:
                        event = self._changed[task_id] = anyio.Event()
                    with anyio.move_on_after(CHANGE_POLL_INTERVAL):
                        await event.wait()
            return await self._read(task_id)

    async def listen_for_changes(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Wake this process's waiters when any worker changes a task (``TaskKeys.changed``), until cancelled.
        Survives Redis outages (subscribing again every second); meanwhile waiters still poll."""
        started = False
        while True:
            try:
                async with self._redis.pubsub() as pubsub:
                    await pubsub.subscribe(self.keys.changed)
                    if not started:
                        task_status.started()
                        started = True
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                        data = message.get("data") if message is not None else None
                        if isinstance(data, bytes) and len(data) <= MAX_TASK_ID_LENGTH:
                            self._wake(data.decode(errors="replace"))
            except redis.RedisError:
                if not started:
                    task_status.started()  # the worker starts anyway: waiters poll
                    started = True
                logger.debug("the task change channel failed; subscribing again in a second", exc_info=True)
                await anyio.sleep(1)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
