"""``Client.connect(target)``, the one way to connect: each kind of target against a real mcpgen server (a stdio child,
an HTTP server on a loopback port, the server in process, a stream the caller opened), the option objects with the
transport's own settings (``Stdio``, ``HTTP``, ``InProcess``), what a bad target raises (before anything starts),
the compatibility wrappers, and the typed results of ``call_tool`` / ``get_prompt`` / ``read_resource``
(including what a server that answers ``tools/call`` with a task nobody asked for gets).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from client_fakes import FakeServer, connected
from server_fixture import server as weather_server
from support.content import text_of
from support.servers import serving_server

import mcp_bindings.v2025_11_25 as v4
import mcp_bindings.v2026_07_28 as v5
import mcpgen_runtime
from mcpgen_runtime import Context, RequestContext, Server, memory_stream_pair
from mcpgen_runtime.client import HTTP, Client, InProcess, InvalidResultError, Stdio

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
WEATHER = [sys.executable, str(HERE / "server_fixture.py")]
WAIT = 30.0


async def forecast_of(client: Client) -> Any:
    result = await client.call_tool("forecast", {"city": "Oslo"})
    # The union over versions narrows like any other: structuredContent exists from 2025-06-18 on.
    assert isinstance(result, v4.CallToolResult | v5.CallToolResult)
    assert result.structured_content == {"city": "Oslo", "celsius": 21.5}
    return result


def header_server() -> Server:
    """A server whose tool reports the X-Tenant header of the HTTP request that called it."""
    server = Server("headers", version="1.0.0")

    @server.tool()
    async def tenant(context: Context) -> str:
        return str(context.headers and context.headers["X-Tenant"])

    return server


# -- each kind of target ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [WEATHER, tuple(WEATHER), [sys.executable, HERE / "server_fixture.py"]])
async def test_a_command_is_a_stdio_server(command: Any) -> None:
    with anyio.fail_after(WAIT):
        async with Client.connect(command) as client:
            assert client.protocol_version == "2026-07-28"
            await forecast_of(client)


async def test_a_url_is_a_streamable_http_server() -> None:
    with anyio.fail_after(WAIT):
        async with serving_server(weather_server) as url, Client.connect(url) as client:
            assert client.protocol_version == "2026-07-28"
            await forecast_of(client)
        async with serving_server(weather_server) as url, Client.connect(url, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            await forecast_of(client)


async def test_an_in_process_server_is_served_for_the_connection() -> None:
    with anyio.fail_after(WAIT):
        async with Client.connect(weather_server) as client:
            await forecast_of(client)
            assert len(weather_server.connections) == 1
        assert not weather_server.connections
        async with Client.connect(InProcess(weather_server, max_requests_in_flight=1), version="2025-11-25") as client:
            assert client.protocol_version == "2025-11-25"
            await forecast_of(client)


async def test_a_stream_the_caller_opened_is_used_as_it_is() -> None:
    client_end, server_end = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with weather_server.running(), anyio.create_task_group() as tg:
            tg.start_soon(weather_server.serve_stream, server_end)
            async with Client.connect(client_end) as client:
                await forecast_of(client)
            tg.cancel_scope.cancel()


async def test_stdio_takes_the_environment_the_directory_and_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "env_server.py"
    script.write_text(
        "import os, sys\n"
        "from mcpgen_runtime.server import Server\n"
        "server = Server('env', version='1')\n"
        "@server.tool()\n"
        "def where() -> str:\n"
        "    return os.environ['WHO'] + ' ' + os.getcwd()\n"
        "print('hello on stderr', file=sys.stderr, flush=True)\n"
        "server.run_stdio()\n"
    )
    environment = {**os.environ, "WHO": "ada"}
    with anyio.fail_after(WAIT):
        for capture in (False, True):
            target = Stdio([sys.executable, script.name], env=environment, cwd=tmp_path, capture_stderr=capture)
            async with Client.connect(target) as client:
                assert text_of(await client.call_tool("where")) == f"ada {tmp_path}"
            # Not captured, the child's stderr is ours; captured, the stream keeps it.
            assert ("hello on stderr" in capfd.readouterr().err) is not capture


async def test_http_takes_headers() -> None:
    with anyio.fail_after(WAIT):
        async with serving_server(header_server()) as url:
            async with Client.connect(HTTP(url, headers={"X-Tenant": "acme"})) as client:
                assert text_of(await client.call_tool("tenant")) == "acme"


async def test_the_option_objects_are_exported_from_the_package() -> None:
    assert mcpgen_runtime.Stdio is Stdio and mcpgen_runtime.HTTP is HTTP and mcpgen_runtime.InProcess is InProcess


# -- bad targets -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        ("python server.py", ValueError, "a command is a sequence of arguments"),
        ("ftp://example.com/mcp", ValueError, "a command is a sequence of arguments"),
        ([], ValueError, "the command is empty"),
        ([sys.executable, 3], TypeError, "every argument of a command is a str, not int"),
        (42, TypeError, "Client.connect takes an http"),
        (b"python", TypeError, "Client.connect takes an http"),
        (None, TypeError, "not NoneType"),
    ],
)
async def test_a_bad_target_is_a_clear_error(target: Any, error: type[Exception], message: str) -> None:
    with anyio.fail_after(WAIT), pytest.raises(error, match=message):
        async with Client.connect(target):
            pass


def test_the_option_objects_check_their_target_when_made() -> None:
    with pytest.raises(ValueError, match="a command is a sequence of arguments"):
        Stdio("python server.py")
    with pytest.raises(ValueError, match="a URL target starts with http:// or https://"):
        HTTP("localhost:8000/mcp")
    assert Stdio(["python", Path("server.py")]).command == ("python", "server.py")


async def test_bad_options_fail_before_the_server_is_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    with pytest.raises(ValueError, match="max_pages"):
        async with Client.connect(command, max_pages=0):
            pass
    assert not marker.exists()


# -- the compatibility wrappers ---------------------------------------------------------------------------------------


async def test_connect_stdio_and_connect_http_still_connect() -> None:
    with anyio.fail_after(WAIT):
        async with Client.connect_stdio(WEATHER, version="2025-11-25") as client:
            assert client.protocol_version == "2025-11-25"
            await forecast_of(client)
        async with serving_server(header_server()) as url:
            async with Client.connect_http(url, headers={"X-Tenant": "acme"}) as client:
                assert client.protocol_version == "2026-07-28"
                assert text_of(await client.call_tool("tenant")) == "acme"


# -- typed results -----------------------------------------------------------------------------------------------------


async def test_the_conveniences_return_the_negotiated_versions_models() -> None:
    with anyio.fail_after(WAIT):
        for version, models in (("2025-11-25", v4), ("2026-07-28", v5)):
            async with Client.connect(weather_server, version=version) as client:
                assert isinstance(await client.call_tool("forecast", {"city": "x"}), models.CallToolResult)
                assert isinstance(await client.get_prompt("plan_trip", {"city": "x"}), models.GetPromptResult)
                assert isinstance(await client.read_resource("weather://cities"), models.ReadResourceResult)


class TaskServer(FakeServer):
    """Answers every tools/call with a task (2025-11-25's CreateTaskResult), which only a task-augmented call asks
    for."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        task = {"taskId": "t1", "status": "working", "createdAt": "now", "lastUpdatedAt": "now", "ttl": None}
        return {"task": task}


async def test_a_task_nobody_asked_for_is_an_invalid_result() -> None:
    with anyio.fail_after(WAIT):
        async with connected(TaskServer(version="2025-11-25")) as client:
            with pytest.raises(InvalidResultError, match="answered with a CreateTaskResult, not the CallToolResult"):
                await client.call_tool("echo", {"value": 1})


def test_mypy_sees_the_typed_conveniences_and_targets(tmp_path: Path) -> None:
    """The conveniences are typed by the versions' result models (a union, narrowed by ``isinstance``), and
    ``connect`` takes the target kinds and rejects others, for mypy as at run time."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import sys\n"
        "import mcp_bindings.v2026_07_28 as v5\n"
        "from mcpgen_runtime.client import HTTP, Client, Stdio\n"
        "async def main() -> None:\n"
        "    async with Client.connect([sys.executable, 'server.py']) as client:\n"
        "        result = await client.call_tool('add', {'a': 1})\n"
        "        reveal_type(result)\n"
        "        reveal_type(await client.get_prompt('p'))\n"
        "        reveal_type(await client.read_resource('memo://x'))\n"
        "        if isinstance(result, v5.CallToolResult):\n"
        "            reveal_type(result)\n"
        "        wrong: int = result\n"
        "    async with Client.connect(Stdio(['x'], cwd='/')), Client.connect(HTTP('http://h/mcp')):\n"
        "        pass\n"
        "    async with Client.connect(42):\n"
        "        pass\n"
    )
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(sample)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = completed.stdout
    union = "mcp_bindings.v2024_11_05.models.CallToolResult | mcp_bindings.v2025_03_26.models.CallToolResult"
    assert f'Revealed type is "{union}' in output, output
    assert "v2026_07_28.models.GetPromptResult" in output and "v2026_07_28.models.ReadResourceResult" in output
    assert 'sample.py:11: note: Revealed type is "mcp_bindings.v2026_07_28.models.CallToolResult"' in output, output
    assert "sample.py:12: error: Incompatible types in assignment" in output, output
    assert 'sample.py:15: error: Argument 1 to "connect" of "Client" has incompatible type "int"' in output, output
    assert output.count("error:") == 2, output
