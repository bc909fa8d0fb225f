"""Fixtures of the scale-out tests: one redis-server for the run, one 3-worker server on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from scale_support import ScaledServer, redis_server, scaled_server

if shutil.which("redis-server") is None:  # .ci/run installs it (Debian package redis-server)
    pytest.skip("redis-server is not installed", allow_module_level=True)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="session")
def scaled(redis_url: str) -> Iterator[ScaledServer]:
    with scaled_server(redis_url) as server:
        yield server


@pytest.fixture(scope="session")
def here() -> Path:
    return Path(__file__).resolve().parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
