"""Fixtures of the scale-out tests: one redis-server for the run, one 3-worker server on it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from scale_support import ScaledServer, redis_server, scaled_server
from support.system import missing_reason

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here needs redis-server (.ci/run installs it): without it each one is skipped by name, and the
    summary's "NOT TESTED" section counts them (tests/conftest.py)."""
    if shutil.which("redis-server") is not None:
        return
    skip = pytest.mark.skip(reason=missing_reason("redis-server"))
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(skip)


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
