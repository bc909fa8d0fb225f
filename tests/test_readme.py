"""Every Python block of the README runs as printed and passes `mypy --strict`.

The blocks are taken from README.md itself, so an edit of the README is tested as it stands. A block that serves
(`server.run_stdio()`) is saved as `server.py` beside the others, which is how the README's client block finds it;
every other block runs on its own, in a fresh interpreter, from that directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.code_blocks import printed_comments, run_block, strict_mypy
from support.code_blocks import python_blocks as readme_blocks

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SERVER_MARK = "server.run_stdio()"
GENERATED_CLIENT_MARK = "from weather_client import"
MCPGEN = Path(sys.executable).with_name("mcpgen")


def python_blocks() -> list[str]:
    return readme_blocks(README.read_text(encoding="utf-8"))


def _write_blocks(directory: Path) -> list[Path]:
    """Every block as a file: the serving block as server.py, the others as block_N.py (N in README order). A block
    that imports the client generated from that server gets it first, made as the README says:
    `mcpgen client-from-server --command "python server.py" --out weather_client.py`."""
    files = []
    for number, block in enumerate(python_blocks(), start=1):
        path = directory / ("server.py" if SERVER_MARK in block else f"block_{number}.py")
        assert not path.exists(), f"two README blocks would both be {path.name}"
        path.write_text(block, encoding="utf-8")
        files.append(path)
    if any(GENERATED_CLIENT_MARK in block for block in python_blocks()):
        subprocess.run(
            [MCPGEN, "client-from-server", "--command", f"{sys.executable} server.py", "--out", "weather_client.py"],
            cwd=directory,
            check=True,
            capture_output=True,
            timeout=120,
        )
    return files


def test_the_readme_has_the_blocks_this_test_relies_on() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 3, "expected the bindings, server and client examples"
    assert sum(SERVER_MARK in block for block in blocks) == 1
    assert any("connect_stdio" in block and '"server.py"' in block for block in blocks)


@pytest.mark.slow
def test_every_block_type_checks_strictly(tmp_path: Path) -> None:
    done = strict_mypy(_write_blocks(tmp_path), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# Every block but the serving one, which runs as the client block's server.
RUNNABLE = [number for number, block in enumerate(python_blocks(), start=1) if SERVER_MARK not in block]


@pytest.mark.parametrize("number", RUNNABLE)
def test_every_block_runs(number: int, tmp_path: Path) -> None:
    block = _write_blocks(tmp_path)[number - 1]
    done = run_block(block)
    assert done.returncode == 0, f"README block {number} failed:\n{done.stdout}\n{done.stderr}"
    # The comments that show output must be what the block prints.
    assert done.stdout.splitlines() == printed_comments(block.read_text(encoding="utf-8"))
