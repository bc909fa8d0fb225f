"""The storage contracts of ``tests/runtime/test_storage_contracts.py`` run on the Redis implementations (``scaleout``):
the same test classes, with the ``stores`` fixture giving Redis stores on the session's redis-server (``conftest``).
"""

from __future__ import annotations

import importlib.util
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio

from mcpgen_runtime.scaleout.keys import KeyLayout
from mcpgen_runtime.scaleout.redis_client import open_redis
from mcpgen_runtime.scaleout.redis_events import RedisEventStore
from mcpgen_runtime.scaleout.session_fanout import RedisSessionFanout
from mcpgen_runtime.scaleout.settings import ScaleOutSettings
from mcpgen_runtime.scaleout.shared_session import RedisSessionStore
from mcpgen_runtime.transports.http.server.stores import SessionStore

_spec = importlib.util.spec_from_file_location(
    "storage_contracts", Path(__file__).resolve().parents[1] / "runtime" / "test_storage_contracts.py"
)
assert _spec is not None and _spec.loader is not None
contracts = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = contracts  # (dataclasses look their module up there)
_spec.loader.exec_module(contracts)

# The same classes, collected here with this module's ``stores``.
TestSessionStore = contracts.TestSessionStore
TestEventStoreAndTails = contracts.TestEventStoreAndTails
TestSessionFanout = contracts.TestSessionFanout

pytestmark = pytest.mark.anyio


@pytest.fixture
async def stores(redis_url: str) -> AsyncIterator[Any]:
    clients: list[redis.asyncio.Redis] = []

    def settings(**values: Any) -> ScaleOutSettings:
        return ScaleOutSettings(redis_url=redis_url, tail_block=0.2, **values)

    def client(base: ScaleOutSettings, *, tails: bool = False) -> redis.asyncio.Redis:
        clients.append(open_redis(base, tails=tails))
        return clients[-1]

    def keys() -> KeyLayout:
        return KeyLayout(f"contract-{secrets.token_hex(4)}")  # every store its own keys

    prefix = keys()

    def sessions(max_sessions: int = 100, ttl: float = 60.0) -> SessionStore:
        base = settings(max_sessions=max_sessions, session_ttl=ttl)
        return RedisSessionStore(client(base), prefix, base)

    def tails() -> RedisEventStore:
        base = settings()
        return RedisEventStore(client(base), client(base, tails=True), prefix, base)

    def fanout(sessions: Any, events: Any, local: Callable[[], Mapping[str, frozenset[str]]]) -> RedisSessionFanout:
        base = settings()
        return RedisSessionFanout(client(base), prefix, base, local, lambda _: True)

    yield contracts.Stores(sessions=sessions, tails=tails, fanout=fanout)
    for each in clients:
        await each.aclose()
