"""mypy --strict passes on generator/, runtime/ and generated/, and sees request -> result typing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tests/ on mypy's path, as it is on pytest's: the checked tests import tests/support.
ENV = {**os.environ, "MYPYPATH": str(ROOT / "tests")}


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--strict", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=ENV)


def test_mypy_strict_on_generator_runtime_and_generated() -> None:
    completed = _mypy("generator/mcpgen", "runtime/mcpgen_runtime", "generated/mcp_bindings")
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_mypy_sees_the_result_type_of_a_request(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from mcp_bindings.base import result_type_for\n"
        "from mcp_bindings.v2025_06_18 import CallToolRequest, CallToolRequestParams, parse_result\n"
        "request = CallToolRequest(params=CallToolRequestParams(name='x'))\n"
        "reveal_type(result_type_for(request))\n"
        "reveal_type(parse_result('tools/call', b'{}'))\n"
        "reveal_type(parse_result('ping', b'{}'))\n"
        "bad: int = result_type_for(request)\n"
    )
    completed = _mypy("--no-incremental", str(sample))
    output = completed.stdout
    assert 'Revealed type is "type[mcp_bindings.v2025_06_18.models.CallToolResult]"' in output, output
    assert 'Revealed type is "mcp_bindings.v2025_06_18.models.CallToolResult"' in output, output
    assert 'Revealed type is "mcp_bindings.v2025_06_18.models.EmptyResult"' in output, output
    assert "sample.py:7: error: Incompatible types in assignment" in output, output


# The runtime tests whose typed uses of the server conveniences (lifespan state, middleware, typed elicit and
# sample, the in-memory client) are part of the check.
CONVENIENCE_TESTS = [
    "tests/runtime/test_context_conveniences.py",
    "tests/runtime/test_in_memory_client.py",
    "tests/runtime/test_lifespan.py",
    "tests/runtime/test_middleware.py",
]


def test_mypy_strict_on_the_server_convenience_tests() -> None:
    completed = _mypy(*CONVENIENCE_TESTS)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_mypy_sees_the_lifespan_state_and_the_typed_client_answers(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from collections.abc import AsyncIterator\n"
        "from contextlib import asynccontextmanager\n"
        "from dataclasses import dataclass\n"
        "from typing import Any\n"
        "from pydantic import BaseModel\n"
        "from mcpgen_runtime import Accepted, CallNext, Context, IncomingRequest, Server, connect_in_memory\n"
        "@dataclass\n"
        "class AppState:\n"
        "    dsn: str\n"
        "class Booking(BaseModel):\n"
        "    guests: int\n"
        "@asynccontextmanager\n"
        "async def lifespan(server: Server) -> AsyncIterator[AppState]:\n"
        "    yield AppState('db')\n"
        "server = Server('x', lifespan=lifespan)\n"
        "reveal_type(server)\n"
        "reveal_type(Server('plain'))\n"
        "@server.middleware\n"
        "async def mw(request: IncomingRequest[AppState], call_next: CallNext) -> Any:\n"
        "    return await call_next(request)\n"
        "@server.tool()\n"
        "async def tool(context: Context[AppState]) -> str:\n"
        "    reveal_type(context.lifespan_state)\n"
        "    outcome = await context.elicit('How many?', schema=Booking)\n"
        "    reveal_type(outcome)\n"
        "    match outcome:\n"
        "        case Accepted(data=booking):\n"
        "            reveal_type(booking)\n"
        "    reveal_type(await context.elicit('Name?', {'type': 'object', 'properties': {}}))\n"
        "    reveal_type(await context.sample('hi', max_tokens=5))\n"
        "    bad: int = context.lifespan_state\n"
        "    return context.lifespan_state.dsn\n"
        "async def main() -> None:\n"
        "    async with connect_in_memory(server) as client:\n"
        "        reveal_type(client)\n"
    )
    completed = _mypy("--no-incremental", str(sample))
    output = completed.stdout
    for line in [
        'sample.py:16: note: Revealed type is "mcpgen_runtime.server.server.Server[sample.AppState]"',
        'sample.py:17: note: Revealed type is "mcpgen_runtime.server.server.Server[Any]"',
        'sample.py:23: note: Revealed type is "sample.AppState"',
        'sample.py:25: note: Revealed type is "mcpgen_runtime.server.authoring.elicitation.Accepted[sample.Booking] |'
        ' mcpgen_runtime.server.authoring.elicitation.Declined | mcpgen_runtime.server.authoring.elicitation.Cancelled"',
        'sample.py:28: note: Revealed type is "sample.Booking"',
        'sample.py:29: note: Revealed type is "mcp_bindings.v2025_06_18.models.ElicitResult |'
        ' mcp_bindings.v2025_11_25.models.ElicitResult | mcp_bindings.v2026_07_28.models.ElicitResult"',
        'sample.py:30: note: Revealed type is "mcp_bindings.v2024_11_05.models.CreateMessageResult |',
        "sample.py:31: error: Incompatible types in assignment",
        'sample.py:35: note: Revealed type is "mcpgen_runtime.client.client.Client"',
    ]:
        assert line in output, output
    assert output.count("error:") == 1, output


def test_mypy_accepts_modern_request_params_without_meta(tmp_path: Path) -> None:
    """The connection fills in a 2026-07-28 request's `_meta`: the constructor may leave it out, for mypy too,
    while a received (validated) request's `meta` still reads as the RequestMetaObject it always has."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from mcp_bindings.v2026_07_28 import models as m\n"
        "params = m.CallToolRequestParams(name='x', arguments={'a': 1})\n"
        "page = m.PaginatedRequestParams(cursor='c')\n"
        "request = m.CallToolRequest(id=1, params=m.CallToolRequestParams(name='x'))\n"
        "reveal_type(m.CallToolRequestParams.model_validate({}).meta)\n"
        "m.CallToolRequestParams(name=1)\n"
        "m.CallToolRequestParams(meta=None, name='x')\n"
        "m.ReadResourceRequestParams()\n"
    )
    completed = _mypy("--no-incremental", str(sample))
    output = completed.stdout
    assert 'sample.py:5: note: Revealed type is "mcp_bindings.v2026_07_28.models.RequestMetaObject"' in output, output
    assert (
        'sample.py:6: error: Argument "name" to "CallToolRequestParams" has incompatible type "int"' in output
    ), output
    assert (
        'sample.py:7: error: Argument "meta" to "CallToolRequestParams" has incompatible type "None"' in output
    ), output
    assert 'sample.py:8: error: Missing named argument "uri" for "ReadResourceRequestParams"' in output, output
    assert output.count("error:") == 3, output
