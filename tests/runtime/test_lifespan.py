"""``Server(lifespan=...)``: entered once per run (in memory, stdio in a real subprocess, streamable HTTP on a real
port), shared by every connection of the run, its state typed through ``Context[T]``; exited when the run ends,
after an error or a cancellation too; a startup that fails stops the server with ``LifespanError``.

Typed: tests/test_typing.py runs mypy --strict on this file."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio
import pytest

from mcp_bindings import v2025_11_25 as v4
from mcpgen_runtime import Client, Context, LifespanError, Server, connect_in_memory, memory_stream_pair

pytestmark = pytest.mark.anyio

WAIT = 20.0


@dataclass
class Pool:
    """A stand-in for a database pool: it records what happened to it."""

    events: list[str]
    queries: int = 0
    exit_error: list[BaseException | None] = field(default_factory=list)


def pooled(events: list[str], *, fail: bool = False) -> Server[Pool]:
    @asynccontextmanager
    async def lifespan(server: Server[Pool]) -> AsyncIterator[Pool]:
        events.append(f"start {server.name}")
        await anyio.sleep(0)
        if fail:
            raise ConnectionRefusedError("db down")
        pool = Pool(events)
        try:
            yield pool
        except BaseException as exc:
            pool.exit_error.append(exc)
            raise
        finally:
            await anyio.sleep(0)  # an awaiting cleanup: it must run even when the run was cancelled
            events.append("stop")

    server = Server("pooled", lifespan=lifespan)

    @server.tool()
    async def query(context: Context[Pool]) -> int:
        pool = context.lifespan_state
        pool.queries += 1
        return pool.queries

    return server


async def query(client: Client) -> str:
    result = await client.stub(v4.client.ClientStub).call_tool(v4.CallToolRequestParams(name="query"))
    block = result.content[0]
    assert block.type == "text"
    return block.text


async def test_the_state_reaches_handlers_and_the_lifespan_exits_with_the_run() -> None:
    events: list[str] = []
    server = pooled(events)
    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:
            assert events == ["start pooled"]
            assert [await query(client), await query(client)] == ["1", "2"]
            assert server.lifespan_state.queries == 2
    assert events == ["start pooled", "stop"]
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.lifespan_state


async def test_one_lifespan_for_the_clients_of_one_run() -> None:
    events: list[str] = []
    server = pooled(events)
    with anyio.fail_after(WAIT):
        async with server.running() as pool:
            async with (
                connect_in_memory(server, version="2025-11-25") as first,
                connect_in_memory(server, version="2025-11-25") as second,
            ):
                assert [await query(first), await query(second), await query(first)] == ["1", "2", "3"]
            async with connect_in_memory(server, version="2025-11-25") as third:
                assert await query(third) == "4"
            assert pool.queries == 4 and events == ["start pooled"]
    assert events == ["start pooled", "stop"]


async def test_overlapping_serve_stream_calls_share_one_lifespan_exited_after_the_last() -> None:
    events: list[str] = []
    server = pooled(events)
    ends = [memory_stream_pair(), memory_stream_pair()]
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for server_end, _ in ends:
                tg.start_soon(server.serve_stream, server_end)
            async with Client.connect(ends[1][1], version="2025-11-25") as second:
                async with Client.connect(ends[0][1], version="2025-11-25") as first:
                    assert [await query(first), await query(second)] == ["1", "2"]
                await anyio.sleep(0.1)  # the first connection has ended on the server's side too
                assert events == ["start pooled"]  # the second one still uses the pool
                assert await query(second) == "3"
    assert events == ["start pooled", "stop"]


async def test_the_lifespan_exits_after_an_error_and_sees_it() -> None:
    events: list[str] = []
    server = pooled(events)
    with anyio.fail_after(WAIT), pytest.raises(ZeroDivisionError):
        async with server.running() as pool, connect_in_memory(server, version="2025-11-25"):
            raise ZeroDivisionError("in the body")
    assert events == ["start pooled", "stop"]
    assert isinstance(pool.exit_error[0], ZeroDivisionError)


async def test_the_lifespan_exits_when_the_run_is_cancelled() -> None:
    events: list[str] = []
    server = pooled(events)
    with anyio.fail_after(WAIT):
        with anyio.move_on_after(0.2):
            async with connect_in_memory(server, version="2025-11-25") as client:
                await query(client)
                await anyio.sleep_forever()
    assert events == ["start pooled", "stop"]  # the awaiting cleanup ran despite the cancellation


async def test_a_failing_startup_raises_lifespan_error_and_serves_nobody() -> None:
    events: list[str] = []
    server = pooled(events, fail=True)
    with anyio.fail_after(WAIT):
        with pytest.raises(LifespanError, match="failed to start: ConnectionRefusedError") as info:
            async with connect_in_memory(server, version="2025-11-25"):
                pytest.fail("no client may connect")
        assert isinstance(info.value.__cause__, ConnectionRefusedError)
        # serve_stream alone: the same error, before anything is read.
        server_end, _ = memory_stream_pair()
        with pytest.raises(LifespanError):
            await server.serve_stream(server_end)
        assert not server.connections
    assert events == ["start pooled", "start pooled"]
    # Nothing is left half-started: the next run starts afresh.
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.lifespan_state


# -- a real stdio subprocess -------------------------------------------------------------------------------------

STDIO_SERVER = """
    import sys
    from contextlib import asynccontextmanager

    from mcpgen_runtime import Context, Server

    LOG, FAIL = sys.argv[1], sys.argv[2] == "fail"


    def note(line):
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(line + "\\n")


    @asynccontextmanager
    async def lifespan(server):
        note("start")
        if FAIL:
            raise ConnectionRefusedError("db down")
        try:
            yield {"greeting": "hello from the pool"}
        finally:
            note("stop")


    server = Server("stdio-pooled", lifespan=lifespan)


    @server.tool()
    async def greet(context: Context) -> str:
        return context.lifespan_state["greeting"]


    server.run_stdio()
"""


def stdio_server(tmp_path: Path) -> tuple[Path, Path]:
    script, log = tmp_path / "server.py", tmp_path / "lifespan.log"
    script.write_text(textwrap.dedent(STDIO_SERVER), encoding="utf-8")
    return script, log


async def test_stdio_server_enters_its_lifespan_once_and_exits_it_on_shutdown(tmp_path: Path) -> None:
    script, log = stdio_server(tmp_path)
    with anyio.fail_after(WAIT):
        async with Client.connect_stdio([sys.executable, str(script), str(log), "ok"], version="2025-11-25") as client:
            result = await client.stub(v4.client.ClientStub).call_tool(v4.CallToolRequestParams(name="greet"))
            block = result.content[0]
            assert block.type == "text" and block.text == "hello from the pool"
            assert log.read_text(encoding="utf-8") == "start\n"
    # connect_stdio's exit closed the child's stdin and waited for it: the lifespan has exited.
    assert log.read_text(encoding="utf-8") == "start\nstop\n"


async def test_stdio_server_with_a_failing_startup_exits_with_a_clear_error(tmp_path: Path) -> None:
    script, log = stdio_server(tmp_path)
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([sys.executable, str(script), str(log), "fail"], input=b"", check=False)
    assert done.returncode != 0 and done.stdout == b""  # not a byte of protocol
    stderr = done.stderr.decode()
    assert (
        "LifespanError: the lifespan of server 'stdio-pooled' failed to start: ConnectionRefusedError('db down')"
        in (stderr)
    ), (stderr)
    assert log.read_text(encoding="utf-8") == "start\n"


# -- streamable HTTP on a real port ------------------------------------------------------------------------------


async def test_http_server_enters_its_lifespan_once_for_every_session() -> None:
    events: list[str] = []
    server = pooled(events)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(server.serve_http, "127.0.0.1", 0))
            assert events == ["start pooled"]  # before the port was announced
            async with (
                Client.connect_http(f"{base}/mcp", version="2025-11-25") as first,
                Client.connect_http(f"{base}/mcp", version="2025-11-25") as second,
            ):
                assert [await query(first), await query(second)] == ["1", "2"]
            assert events == ["start pooled"]  # sessions come and go; the run goes on
            tg.cancel_scope.cancel()
    assert events == ["start pooled", "stop"]


async def test_http_server_with_a_failing_startup_does_not_serve() -> None:
    server = pooled([], fail=True)
    with anyio.fail_after(WAIT), pytest.raises(LifespanError):
        await server.serve_http("127.0.0.1", 0)
