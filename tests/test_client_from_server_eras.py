"""`mcpgen client-from-server` across the eras: a client generated from a modern-only, a legacy-only and a dual
server, each called against each kind of server (real processes over stdio), so that neither generating nor
calling depends on the era; and the generated module type-checks with a caller under ``mypy --strict``, which
rejects a wrong argument type.

The one-era servers are ``tests/support/one_era_servers.py`` (hand-written peers); the dual one is an mcpgen
``Server`` with the same tools, which answers both ``server/discover`` and ``initialize``.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from mcpgen.cli.client_from_server import client_from_server

REPO = Path(__file__).resolve().parents[1]
ONE_ERA_SERVER = REPO / "tests" / "support" / "one_era_servers.py"
DEADLINE = 30

# The one-era servers' tools, served by mcpgen in both eras.
DUAL_SERVER = textwrap.dedent('''
    from typing import Literal

    from pydantic import BaseModel

    from mcpgen_runtime import Server

    server = Server("one-era-server", version="1.0.0")


    class Sum(BaseModel):
        sum: int


    class Point(BaseModel):
        x: float
        y: float


    class Described(BaseModel):
        label: str
        coordinates: list[float]


    @server.tool()
    async def add(a: int, b: int) -> Sum:
        """Add two integers."""
        return Sum(sum=a + b)


    @server.tool()
    async def greet(name: str, excited: bool = False) -> str:
        """Say hello to someone."""
        return f"Hello, {name}" + ("!" if excited else ".")


    @server.tool()
    async def describe_point(point: Point, unit: Literal["cm", "in"]) -> Described:
        """Describe a point in a unit system."""
        return Described(label=f"({point.x}, {point.y}) {unit}", coordinates=[point.x, point.y])


    if __name__ == "__main__":
        server.run_stdio()
''')

ERAS = ("modern", "legacy", "dual")
# What a client in auto mode negotiates with each kind of server.
NEGOTIATED = {"modern": "2026-07-28", "legacy": "2025-11-25", "dual": "2026-07-28"}


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    dual = tmp_path_factory.mktemp("dual") / "dual_server.py"
    dual.write_text(DUAL_SERVER, encoding="utf-8")
    return {
        "modern": [sys.executable, str(ONE_ERA_SERVER), "--era", "modern"],
        "legacy": [sys.executable, str(ONE_ERA_SERVER), "--era", "legacy"],
        "dual": [sys.executable, str(dual)],
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, commands: dict[str, list[str]]) -> Iterator[dict[str, Path]]:
    """One module per kind of server, generated once."""
    out = tmp_path_factory.mktemp("generated")
    files = {era: out / f"{era}_client.py" for era in ERAS}
    for era, path in files.items():
        result = CliRunner().invoke(
            client_from_server, ["--command", shlex.join(commands[era]), "--out", str(path), "--timeout", "30"]
        )
        assert result.exit_code == 0, result.output
    yield files


def _import(path: Path) -> ModuleType:
    # Registered in sys.modules, so that pydantic resolves the models' postponed annotations in their own module.
    name = f"eras_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_generated_the_same_whatever_the_era(generated: dict[str, Path]) -> None:
    # The version it was generated from is a note, not a dependency: nothing else in the module differs.
    texts = {era: path.read_text(encoding="utf-8") for era, path in generated.items()}
    assert 'GENERATED_FROM_VERSION: _typing.ClassVar[str] = "2026-07-28"' in texts["modern"]
    assert 'GENERATED_FROM_VERSION: _typing.ClassVar[str] = "2025-11-25"' in texts["legacy"]
    assert (
        texts["modern"].replace("2026-07-28", "V").splitlines()[1:]
        == texts["legacy"].replace("2025-11-25", "V").replace("2026-07-28", "V").splitlines()[1:]
    )
    for text in texts.values():
        assert "from mcp_bindings import v2026_07_28 as _mcp" in text
        assert "stub(" not in text  # no call path bound to one version's ClientStub


async def _call_every_tool(module: ModuleType, connect: Any, negotiated: str) -> None:
    client_type = module.OneEraServerClient
    with anyio.fail_after(DEADLINE):
        async with connect as client:
            assert isinstance(client, client_type)
            added = await client.add(a=2, b=3)
            assert isinstance(added, module.AddOutput) and added.sum == 5
            assert client.client.protocol_version == negotiated
            model_form = await client.add(module.AddInput(a=40, b=2))
            assert model_form.sum == 42
            blocks = await client.greet(name="Ada", excited=True)
            assert [block.text for block in blocks] == ["Hello, Ada!"]
            # Content is read into the newest models whatever the era, so isinstance checks hold in both.
            assert all(isinstance(block, module._mcp.TextContent) for block in blocks)
            described = await client.describe_point(point={"x": 1.5, "y": 2.5}, unit="cm")
            assert isinstance(described, module.DescribePointOutput)
            assert (described.label, described.coordinates) == ("(1.5, 2.5) cm", [1.5, 2.5])
            # Past our own validation (model_construct), so that the server's says no: a tool error, typed.
            unchecked = module.AddInput.model_construct(a=1, b=None)
            with pytest.raises(module.ToolCallError) as failure, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pydantic's "unexpected value" note on dumping the None
                await client.add(unchecked)
            assert failure.value.tool == "add" and failure.value.content


@pytest.mark.parametrize("server", ERAS)
@pytest.mark.parametrize("generated_from", ERAS)
def test_generated_client_calls_every_kind_of_server(
    generated: dict[str, Path], commands: dict[str, list[str]], generated_from: str, server: str
) -> None:
    # mcpgen's schemas for the dual server's tools are not byte-equal to the hand-written ones; the calls fit both.
    module = _import(generated[generated_from])
    # connect: the one entry point, in auto mode unless told otherwise.
    connect = module.OneEraServerClient.connect(commands[server])
    anyio.run(_call_every_tool, module, connect, NEGOTIATED[server])


def test_generated_client_pinned_to_the_handshake(generated: dict[str, Path], commands: dict[str, list[str]]) -> None:
    # mode= passes through: a dual server spoken to in the legacy era, by a module generated in the modern one.
    module = _import(generated["modern"])
    # (connect_stdio, kept for its shell-string command.)
    connect = module.OneEraServerClient.connect_stdio(shlex.join(commands["dual"]), mode="legacy")
    anyio.run(_call_every_tool, module, connect, "2025-11-25")


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_tools_listed_across_pages_in_either_era(tmp_path: Path, era: str) -> None:
    # A next page's params in 2026-07-28 carry the `_meta` a legacy page has no use for.
    command = [sys.executable, str(ONE_ERA_SERVER), "--era", era, "--tools-per-page", "1"]
    out = tmp_path / "paged.py"
    result = CliRunner().invoke(client_from_server, ["--command", shlex.join(command), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 tool(s)" in result.output
    assert _import(out).OneEraServerClient.TOOL_NAMES == {
        "add": "add",
        "greet": "greet",
        "describe_point": "describe_point",
    }


CALLER = """
from {module} import AddInput, AddOutput, OneEraServerClient, ToolCallError


async def total(command: list[str]) -> int:
    async with OneEraServerClient.connect(command) as client:
        added: AddOutput = await client.add(a=1, b=2)
        again = await client.add(AddInput(a=added.sum, b=3))
        blocks = await client.greet(name="x")
        try:
            await client.add(a=0, b=0)
        except ToolCallError as exc:
            print(exc.tool)
        return again.sum + len(blocks)
"""


def _mypy(directory: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    # --strict without the project's pydantic plugin: what a user's plain mypy run sees.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--config-file", os.devnull]
        + [str(path) for path in files],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=directory,
    )


def test_generated_module_and_a_caller_pass_mypy_strict(generated: dict[str, Path], tmp_path: Path) -> None:
    module = tmp_path / "one_era_client.py"
    module.write_text(generated["legacy"].read_text(encoding="utf-8"), encoding="utf-8")
    good = tmp_path / "good_caller.py"
    good.write_text(CALLER.format(module="one_era_client"), encoding="utf-8")
    bad = tmp_path / "bad_caller.py"
    bad.write_text(CALLER.format(module="one_era_client").replace("add(a=1, b=2)", 'add(a="one", b=2)'), "utf-8")
    checked = _mypy(tmp_path, module, good)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    rejected = _mypy(tmp_path, module, bad)
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    errors = [line for line in rejected.stdout.splitlines() if " error: " in line]
    assert len(errors) == 1, rejected.stdout
    assert errors[0].startswith('bad_caller.py:7: error: No overload variant of "add" of "OneEraServerClient"')
    assert '"str"' in errors[0] and "[call-overload]" in errors[0]
