"""A legacy-era session shared by every worker: its record in Redis (``RedisSessionStore``, the Redis
``transports.http.server.storage.SessionStore``) and what this worker's copy of it shares (``SharedSession``, the
``storage.SessionMirror`` of an ``HTTPSessionStream``: composed into the stream, no subclass of it).

Where it sits: in ``scaleout``, under ``directory`` (which creates, restores and ends the copies). A session's
state is what its requests built: the client's ``initialize`` (version, client info and capabilities), its
``logging/setLevel`` and its ``resources/subscribe`` / ``unsubscribe``. Those requests are written through to Redis
when they succeed (before their answer leaves), and a worker that gets a request for a session it does not hold
restores it by replaying them into a fresh connection (``SharedSession.restore``; the connection handler never
learns the difference, and the replayed requests' answers go nowhere). Before a request a stale copy brings its log
level and subscriptions up to date (``sync``), with the same requests.

Server->client requests (sampling, elicitation, roots) carry ids ``"{worker}:{n}"`` on the wire, so that ids sent
by different workers for one session never collide and a worker that receives the client's answer knows whose it
is: its own go to its connection, others' are published on that worker's channel (``worker`` delivers them).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import redis
import redis.asyncio

from ..jsonrpc.envelopes import ErrorCode, Request, RequestId, encode_frame, is_request_id
from ..transports.http.server.session import HTTPSessionStream
from ..transports.http.server.stores import MAX_SESSION_INIT_BYTES, STATE_METHODS, SessionRecord
from .keys import KeyLayout
from .settings import ScaleOutSettings

__all__ = ["ALL_WORKERS", "SESSION_ENDED", "STATE_CHANGED", "Forward", "RedisSessionStore", "SharedSession"]

logger = logging.getLogger(__name__)

# Compare-and-renew / compare-and-delete of a GET stream's claim: only the holder renews or drops it.
_RENEW_IF_HELD: Final = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) else return 0 end"
)
_DELETE_IF_HELD: Final = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
)
# The requests whose success changes a session's state: written through to Redis, replayed on restore.
WRITE_METHODS: Final = STATE_METHODS
_INTERNAL_PREFIX: Final = "mcpgen-restore-"
MAX_PENDING_WRITES: Final = 256  # state-changing requests of one session awaiting their answer
# Frames on every worker's channel (``ALL_WORKERS``) about a session's copies rather than for its connection: its
# state changed (copies read it again before their next request), or it ended (copies end).
STATE_CHANGED: Final = b"!changed"
SESSION_ENDED: Final = b"!ended"


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class _Damaged(Exception):
    """A session's record in Redis that no worker could have written (junk): the session is dropped."""


def _short_text(fields: Any, name: bytes, limit: int) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    try:
        text = value.decode() if isinstance(value, bytes) else str(value)
    except UnicodeDecodeError:
        raise _Damaged(f"its {name.decode()} is not text") from None
    if len(text) > limit:
        raise _Damaged(f"its {name.decode()} is {len(text)} characters long")
    return text


def _record(fields: Any, subscriptions: Any) -> SessionRecord | None:
    """The record Redis holds (None: no session); raises ``_Damaged`` for one that is not a session's."""
    if not fields:
        return None
    version, init = _short_text(fields, b"version", 64), fields.get(b"init")
    if version is None or init is None:
        raise _Damaged("it lacks its version or its initialize")
    if len(init) > MAX_SESSION_INIT_BYTES:
        raise _Damaged(f"its initialize is {len(init)} bytes, more than {MAX_SESSION_INIT_BYTES}")
    try:
        message = json.loads(init)
    except ValueError:
        message = None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        raise _Damaged("its initialize is not a JSON-RPC initialize request")
    owner, level = _short_text(fields, b"owner", 1024), _short_text(fields, b"level", 32)
    uris = frozenset(str(_text(uri)) for uri in subscriptions)
    return SessionRecord(version, init, owner, level, uris)


class RedisSessionStore:
    """``SessionStore`` on Redis (``KeyLayout``: a hash and a subscription set per session, an index of the live
    ones by expiry for the ``max_sessions`` bound), and the claims on GET streams: every command a worker runs on
    them, each one round trip."""

    def __init__(self, client: redis.asyncio.Redis, keys: KeyLayout, settings: ScaleOutSettings) -> None:
        self._redis, self._keys = client, keys
        self._ttl = max(1, round(settings.session_ttl))
        self._max_sessions = settings.max_sessions
        # A GET stream whose worker died keeps its claim this long (a resumed GET takes it over at once).
        self._get_ttl = max(2, round(3 * settings.tail_block + 1))

    async def save(self, session_id: str, record: SessionRecord) -> bool:
        """A new session; False (nothing kept) when ``max_sessions`` are alive already."""
        try:
            return await self._save(session_id, record)
        except redis.ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            await self._drop_wrong_types(session_id)
            return await self._save(session_id, record)

    async def _save(self, session_id: str, record: SessionRecord) -> bool:
        now = time.time()
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(self._keys.sessions, "-inf", now)
            pipe.zcard(self._keys.sessions)
            _, alive = await pipe.execute()
        if alive >= self._max_sessions:
            return False
        key = self._keys.session(session_id)
        fields: dict[str, str | bytes] = {"version": record.version, "init": record.init}
        if record.owner is not None:
            fields["owner"] = record.owner
        if record.level is not None:
            fields["level"] = record.level
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hset(key, mapping=fields)  # type: ignore[arg-type]
            pipe.expire(key, self._ttl)
            pipe.zadd(self._keys.sessions, {session_id: now + self._ttl})
            if record.subscriptions:
                pipe.sadd(self._keys.subscriptions(session_id), *record.subscriptions)
                pipe.expire(self._keys.subscriptions(session_id), self._ttl)
            await pipe.execute()
        return True

    async def load(self, session_id: str) -> SessionRecord | None:
        return await self._checked(session_id, self._load)

    async def _checked(
        self, session_id: str, read: Callable[[str], Awaitable[SessionRecord | None]]
    ) -> SessionRecord | None:
        """``read(session_id)``, with junk in Redis repaired: a key of the wrong type dropped (then read again), a
        damaged record dropped (the session is unknown: 404). One log line each."""
        try:
            try:
                return await read(session_id)
            except redis.ResponseError as error:
                if "WRONGTYPE" not in str(error):
                    raise
                await self._drop_wrong_types(session_id)
                return await read(session_id)
        except _Damaged as damage:
            logger.warning("session %s: its record in Redis is damaged (%s): dropped", session_id, damage)
            await self.delete(session_id)
            return None

    async def _drop_wrong_types(self, session_id: str | None) -> None:
        expected = {self._keys.sessions: b"zset"}
        if session_id is not None:
            expected |= {
                self._keys.session(session_id): b"hash",
                self._keys.subscriptions(session_id): b"set",
                self._keys.get_stream(session_id): b"string",
            }
        async with self._redis.pipeline(transaction=False) as pipe:
            for key in expected:
                pipe.type(key)
            kinds = await pipe.execute()
        wrong = [
            key for (key, kind), found in zip(expected.items(), kinds, strict=True) if found not in (kind, b"none")
        ]
        if wrong:
            logger.warning("Redis keys of the wrong type (junk) dropped: %s", ", ".join(wrong))
            await self._redis.delete(*wrong)

    async def _load(self, session_id: str) -> SessionRecord | None:
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._keys.session(session_id))
            pipe.smembers(self._keys.subscriptions(session_id))
            fields, subscriptions = await pipe.execute()
        return _record(fields, subscriptions)

    async def touch(self, session_id: str) -> SessionRecord | None:
        """The record, its TTL refreshed (it was used); None when it has ended or expired."""
        return await self._checked(session_id, self._touch)

    async def _touch(self, session_id: str) -> SessionRecord | None:
        key, subscriptions = self._keys.session(session_id), self._keys.subscriptions(session_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.expire(key, self._ttl)
            pipe.expire(subscriptions, self._ttl)
            pipe.zadd(self._keys.sessions, {session_id: time.time() + self._ttl}, xx=True)
            pipe.hgetall(key)
            pipe.smembers(subscriptions)
            alive, _, _, fields, uris = await pipe.execute()
        if not alive:
            # The ZADD XX gave the gone session a deadline again: it must not count against max_sessions.
            await self._redis.zrem(self._keys.sessions, session_id)
            return None
        return _record(fields, uris)

    async def live(self) -> list[str]:
        try:
            return await self._live()
        except redis.ResponseError as error:
            if "WRONGTYPE" not in str(error):
                raise
            await self._drop_wrong_types(None)
            return await self._live()

    async def _live(self) -> list[str]:
        await self._redis.zremrangebyscore(self._keys.sessions, "-inf", time.time())
        members = await self._redis.zrange(self._keys.sessions, 0, -1)
        return [member.decode() if isinstance(member, bytes) else str(member) for member in members]

    async def write(self, session_id: str, method: str, params: Any) -> None:
        """The state change of a successful ``WRITE_METHODS`` request."""
        params = params if isinstance(params, dict) else {}
        if method == "logging/setLevel" and isinstance(params.get("level"), str):
            await self._redis.hset(self._keys.session(session_id), "level", params["level"])
        elif method in ("resources/subscribe", "resources/unsubscribe") and isinstance(params.get("uri"), str):
            key = self._keys.subscriptions(session_id)
            async with self._redis.pipeline(transaction=False) as pipe:
                if method == "resources/subscribe":
                    pipe.sadd(key, params["uri"])
                else:
                    pipe.srem(key, params["uri"])
                pipe.expire(key, self._ttl)
                await pipe.execute()

    async def delete(self, session_id: str) -> None:
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.delete(
                self._keys.session(session_id), self._keys.subscriptions(session_id), self._keys.get_stream(session_id)
            )
            pipe.zrem(self._keys.sessions, session_id)
            await pipe.execute()

    async def cursor(self, session_id: str) -> str | None:
        """The last event of the session's GET stream handed to a GET response (a new GET starts after it)."""
        return _text(await self._redis.hget(self._keys.session(session_id), "cursor"))

    async def claim_get_stream(self, session_id: str, holder: str, *, take_over: bool) -> bool:
        """Make ``holder`` (a GET response) the one serving the session's GET stream, for ``get_stream_ttl``
        seconds (renewed by ``follow_get_stream``); unless ``take_over`` (a resumed stream), only if none is."""
        key = self._keys.get_stream(session_id)
        return bool(await self._redis.set(key, holder, ex=self._get_ttl, nx=not take_over))

    async def follow_get_stream(self, session_id: str, holder: str, entry: str | None) -> bool:
        """One round of a GET stream's tail: note ``entry`` as delivered (the cursor), keep the session alive, renew
        ``holder``'s claim. False once the session has ended or expired, or another GET took the stream over."""
        key = self._keys.session(session_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            if entry is not None:
                pipe.hset(key, "cursor", entry)
            pipe.expire(key, self._ttl)
            pipe.expire(self._keys.subscriptions(session_id), self._ttl)
            pipe.eval(_RENEW_IF_HELD, 1, self._keys.get_stream(session_id), holder, self._get_ttl)
            results = await pipe.execute()
        alive, _, held = results[-3:]
        return bool(alive) and bool(held)

    async def release_get_stream(self, session_id: str, holder: str) -> None:
        await self._redis.eval(_DELETE_IF_HELD, 1, self._keys.get_stream(session_id), holder)

    async def worker_alive(self, worker: str) -> bool:
        return bool(await self._redis.exists(self._keys.worker_alive(worker)))


# (worker, session id, frame): to another worker's copy of the session (ALL_WORKERS: to every worker's).
Forward = Callable[[str, str, bytes], Awaitable[None]]
ALL_WORKERS: Final = "*"


class SharedSession:
    """What this worker's copy of a shared session shares (see the module docstring): the ``SessionMirror`` of
    ``session`` (whose stream ids are the same on every worker and whose GET stream lives only in the event store:
    ``directory`` lays it out so). It translates server->client request ids and writes state through."""

    def __init__(
        self, session: HTTPSessionStream, *, worker: str, records: RedisSessionStore, forward: Forward
    ) -> None:
        self.session = session
        self.session_id = session.session_id
        self.worker, self._records, self._forward = worker, records, forward
        self.applied_level: str | None = None
        self.applied_subscriptions: frozenset[str] = frozenset()
        # When this copy last matched Redis (time.monotonic()): within ScaleOutSettings.refresh_interval of it, a
        # request is served without asking Redis; -inf: ask before the next one.
        self.synced_at = -math.inf
        self._init_frame: bytes | None = None
        self._writes: dict[RequestId, tuple[str, Any]] = {}  # client requests that change the state, by id
        self._internal: dict[str, list[Any]] = {}  # replayed request id -> [anyio.Event, answer]
        self._internal_count = 0

    # -- restoring and syncing ---------------------------------------------------------------------------------

    async def restore(self, state: SessionRecord) -> None:
        """Bring the fresh connection behind the session to ``state``: its initialize, then its level and
        subscriptions. Bound the wait with a cancel scope (``directory`` does)."""
        init = json.loads(state.init)
        answer = await self._internal_request(init.get("method", "initialize"), init.get("params"))
        if "result" not in answer:
            raise RuntimeError(f"session {self.session_id}: its initialize failed when replayed: {answer.get('error')}")
        self.session.protocol_version = state.version
        self._init_frame = state.init
        await self.session.inject(encode_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await self.sync(state.level, state.subscriptions)

    async def sync(self, level: str | None, subscriptions: frozenset[str]) -> None:
        """Make this copy's log level and subscriptions those Redis holds (another worker may have changed them)."""
        if level is not None and level != self.applied_level:
            await self._internal_request("logging/setLevel", {"level": level})
            self.applied_level = level
        if subscriptions != self.applied_subscriptions:
            for uri in sorted(subscriptions - self.applied_subscriptions):
                await self._internal_request("resources/subscribe", {"uri": uri})
            for uri in sorted(self.applied_subscriptions - subscriptions):
                await self._internal_request("resources/unsubscribe", {"uri": uri})
            self.applied_subscriptions = subscriptions

    async def _internal_request(self, method: str, params: Any) -> dict[str, Any]:
        self._internal_count += 1
        request_id = f"{_INTERNAL_PREFIX}{self._internal_count}"
        waiter: list[Any] = [anyio.Event(), None]
        self._internal[request_id] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.session.inject(encode_frame(message))
            await waiter[0].wait()
        finally:
            self._internal.pop(request_id, None)
        answer: dict[str, Any] = waiter[1]
        if "error" in answer:
            logger.warning("session %s: replaying %s failed: %s", self.session_id, method, answer["error"])
        return answer

    # -- incoming ------------------------------------------------------------------------------------------------

    async def incoming(self, body: bytes, request: Request | None) -> bytes | None:
        if request is not None:
            if request.method in WRITE_METHODS:
                self._note_write(request.id, request.method, request.params)
            return body
        if self.session.initialize_id is not None and self._init_frame is None:
            self._init_frame = body  # the initialize POST (saved with its answer, see _answered)
        return await self._translate(body)

    def _note_write(self, request_id: RequestId, method: str, params: Any) -> None:
        # Bounded: a request cancelled before its answer never comes back through send_message.
        if len(self._writes) >= MAX_PENDING_WRITES:
            del self._writes[next(iter(self._writes))]
        self._writes[request_id] = (method, params)

    async def _cancel_elsewhere(self, notification: dict[str, Any]) -> None:
        """A cancellation of a request this copy is not handling: to every worker (``ALL_WORKERS``), for the copy
        that is."""
        params = notification.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if is_request_id(request_id) and request_id not in self.session.by_id:
            await self._forward(ALL_WORKERS, self.session_id, encode_frame(notification))

    async def _translate(self, body: bytes) -> bytes | None:
        """``body`` with the client's answers to this worker's requests given back their local ids, and those to
        another worker's forwarded there (None: nothing left to deliver)."""
        try:
            decoded = json.loads(body)
        except ValueError:
            return body  # the session answers it
        items = decoded if isinstance(decoded, list) else [decoded]
        kept: list[Any] = []
        changed = False
        for item in items:
            if not isinstance(item, dict):
                kept.append(item)
                continue
            if "method" in item:
                if "id" in item and item["method"] in WRITE_METHODS:
                    self._note_write(item["id"], item["method"], item.get("params"))
                elif item["method"] == "notifications/cancelled" and "id" not in item:
                    await self._cancel_elsewhere(item)
                kept.append(item)
                continue
            worker, _, number = str(item.get("id")).rpartition(":")
            if not isinstance(item.get("id"), str) or not worker or not number.isdigit():
                kept.append(item)
            elif worker == self.worker:
                kept.append({**item, "id": int(number)})
                changed = True
            else:
                await self._forward(worker, self.session_id, encode_frame(item))
                changed = True
        if not changed:
            return body
        if not kept:
            return None
        return encode_frame(kept if isinstance(decoded, list) else kept[0])

    # -- outgoing ------------------------------------------------------------------------------------------------

    async def outgoing(self, frame: bytes, message: Any) -> tuple[bytes, Any] | None:
        if isinstance(message, dict):
            if "method" in message:
                if "id" in message:  # a request to the client: its wire id names this worker
                    message = {**message, "id": f"{self.worker}:{message['id']}"}
                    frame = encode_frame(message)
                elif message["method"] == "notifications/cancelled":
                    message = self._cancelled_on_the_wire(message)
                    frame = encode_frame(message)
            else:
                outcome = await self._answered(message)
                if outcome is None:
                    return None
                if outcome is not message:
                    message, frame = outcome, encode_frame(outcome)
        elif isinstance(message, list):
            for item in message:
                if isinstance(item, dict) and "method" not in item:
                    await self._answered(item)
        return frame, message

    def _cancelled_on_the_wire(self, message: dict[str, Any]) -> dict[str, Any]:
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("requestId"), int):
            return {**message, "params": {**params, "requestId": f"{self.worker}:{params['requestId']}"}}
        return message

    async def _answered(self, answer: dict[str, Any]) -> dict[str, Any] | None:
        """Bookkeeping for an answer the connection sends: what to send instead (``answer`` itself, mostly), or
        None when it goes no further (a replayed request's)."""
        request_id = answer.get("id")
        if isinstance(request_id, str) and request_id.startswith(_INTERNAL_PREFIX):
            waiter = self._internal.get(request_id)
            if waiter is not None:
                waiter[1] = answer
                waiter[0].set()
            return None
        if request_id == self.session.initialize_id and "result" in answer and self._init_frame is not None:
            result = answer["result"]
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            refused = None
            try:
                if not isinstance(version, str) or not await self._records.save(
                    self.session_id, SessionRecord(version, self._init_frame, self.session.owner)
                ):
                    refused = "Service Unavailable: too many sessions; retry later"
                    logger.warning("session %s refused: the shared store holds its limit of sessions", self.session_id)
            except redis.RedisError as error:
                refused = "Service Unavailable: the session store does not answer; retry later"
                logger.warning(
                    "session %s refused: the session store failed (%s): answered 503", self.session_id, error
                )
            if refused is not None:
                self.session.refused = refused  # the legacy era answers 503 (Retry-After) and keeps nothing
                return {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": int(ErrorCode.INTERNAL_ERROR), "message": refused},
                }
            self.synced_at = time.monotonic()
            return answer
        if self._writes and request_id in self._writes:
            method, params = self._writes.pop(request_id)
            if "result" in answer:
                await self._records.write(self.session_id, method, params)
                await self._forward(ALL_WORKERS, self.session_id, STATE_CHANGED)  # the other copies read it again
                if method == "logging/setLevel" and isinstance(params, dict):
                    self.applied_level = params.get("level")
                elif isinstance(params, dict) and isinstance(params.get("uri"), str):
                    change = {params["uri"]}
                    subscribed = method == "resources/subscribe"
                    current = self.applied_subscriptions
                    self.applied_subscriptions = current | change if subscribed else current - change
        return answer
