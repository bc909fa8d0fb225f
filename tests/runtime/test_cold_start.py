"""Starting a server or a client loads no version's models: the version a connection negotiates loads its own, on
first use (the bindings' version packages and the runtime's unions over versions are lazy). Real processes: a
stdio server spoken to with raw frames, and the typed client against it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcpgen_runtime.protocol.version_unions import EVERY_VERSION
from mcpgen_runtime.server.dispatch.generated import LEGACY_METHODS, stub_for
from mcpgen_runtime.versions import LEGACY_VERSIONS

SERVER = Path(__file__).resolve().parents[2] / "bench" / "servers" / "mcpgen_add_server.py"
# The modules of a version that cost something to import (its `methods`, plain constants, do not count).
LOADED = (
    "sorted(m for m in sys.modules if m.startswith('mcp_bindings.v') and m.count('.') == 2"
    " and not m.endswith('.methods'))"
)


def _run(code: str, stdin: bytes = b"") -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode(), done.stderr.decode()


def test_importing_the_server_and_the_client_loads_no_version() -> None:
    out, _ = _run(f"import sys\nfrom mcpgen_runtime import Client, Server\nprint({LOADED})")
    assert out.strip() == "[]"


def test_a_stdio_session_loads_only_the_version_it_negotiates() -> None:
    code = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: sys.stderr.write('LOADED ' + repr({LOADED}) + '\\n'))\n"
        f"runpy.run_path({str(SERVER)!r}, run_name='__main__')\n"
    )
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    frames = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
    ]
    out, err = _run(code, b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
    answers = [json.loads(line) for line in out.splitlines()]
    assert answers[-1]["result"]["content"] == [{"type": "text", "text": "5"}], answers
    loaded = [line for line in err.splitlines() if line.startswith("LOADED ")]
    assert loaded == ["LOADED ['mcp_bindings.v2025_06_18.models', 'mcp_bindings.v2025_06_18.server']"], err


def test_the_typed_client_loads_only_the_version_it_negotiates() -> None:
    code = (
        "import sys, anyio\n"
        "from mcpgen_runtime import Client\n"
        "async def main():\n"
        f"    async with Client.connect_stdio([sys.executable, {str(SERVER)!r}], version='2025-03-26') as client:\n"
        "        result = await client.call_tool('add', {'a': 1, 'b': 2})\n"
        "        assert result.content[0].text == '3', result\n"
        "anyio.run(main)\n"
        f"print({LOADED})\n"
    )
    out, _ = _run(code)
    assert out.strip() == str(
        [f"mcp_bindings.v2025_03_26.{module}" for module in ("client", "interfaces", "models", "server")]
    )


def test_the_unions_over_versions_are_there_on_first_use() -> None:
    out, _ = _run(
        "import sys\n"
        "from mcpgen_runtime.server import AnyRoot\n"
        "from mcpgen_runtime.client import AnyClientStub\n"
        "import mcpgen_runtime.server.authoring.context as context\n"
        "print(len(AnyRoot.__args__), len(AnyClientStub.__args__), context.AnyRoot is AnyRoot)"
    )
    assert out.split() == [str(len(EVERY_VERSION)), str(len(EVERY_VERSION)), "True"]


def test_the_methods_known_before_initialize_are_every_version_s_server_routes() -> None:
    # Read from the method constants (cheap) instead of the server stubs (every version's models): the same set.
    routes = {method for version in LEGACY_VERSIONS for method in stub_for(version).SERVER_ROUTES}
    assert LEGACY_METHODS == routes
