"""Runtime tests run on anyio's pytest plugin, on the asyncio backend (the one the official MCP SDK uses)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
