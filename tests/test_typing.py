"""mypy --strict passes on generator/, runtime/ and generated/, and sees request -> result typing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", *args], cwd=cwd, capture_output=True, text=True)


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
