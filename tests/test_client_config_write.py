"""`mcpgen client-config --write FILE` under concurrency and odd targets (issue 27), through real processes.

Twenty writers at once used to keep about 9 of 20 entries (each read the file, then replaced it with its own
version); the read-modify-write now runs under a lock on the sidecar `.FILE.lock`, waited for at most
`LOCK_TIMEOUT` (10 s). A directory given as FILE used to be click's three-line usage error; it is one `error:` line
and exit 2. An empty FILE counts as `{}`.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen.cli import main
from mcpgen.features.client_config import ClientConfigError, merge_into_file

MCPGEN = Path(sys.executable).with_name("mcpgen")
WRITERS = 20
TIMEOUT = 120


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"theme": "dark", "mcpServers": {"kept": {"url": "http://127.0.0.1:1/mcp"}}}))
    writers = [
        subprocess.Popen(
            [str(MCPGEN), "client-config", f"server{index}", "--write", str(config), "--", f"/bin/server{index}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(WRITERS)
    ]
    outcomes = [writer.communicate(timeout=TIMEOUT) for writer in writers]
    assert [writer.returncode for writer in writers] == [0] * WRITERS, outcomes
    document = json.loads(config.read_text())
    assert document["theme"] == "dark"
    assert sorted(document["mcpServers"]) == sorted(["kept", *(f"server{index}" for index in range(WRITERS))])
    assert all(document["mcpServers"][f"server{i}"]["command"] == f"/bin/server{i}" for i in range(WRITERS))
    leftovers = sorted(path.name for path in tmp_path.iterdir())
    assert leftovers == ["claude_desktop_config.json"], leftovers  # the lock file goes with its last holder


def test_a_held_lock_is_waited_for_then_refused_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"mcpServers": {}}')
    descriptor = os.open(tmp_path / ".config.json.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        with pytest.raises(ClientConfigError, match=r"locked by another writer .* more than 0.2 s\); nothing"):
            merge_into_file(config, "late", {"url": "http://127.0.0.1:1/mcp"}, lock_timeout=0.2)
    finally:
        os.close(descriptor)
    assert json.loads(config.read_text()) == {"mcpServers": {}}
    assert merge_into_file(config, "late", {"url": "http://127.0.0.1:1/mcp"}, lock_timeout=0.2) == "added"


def test_a_directory_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    completed = subprocess.run(
        [str(MCPGEN), "client-config", "x", "--write", str(folder), "--", "/bin/x"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [f"error: {folder} is a directory, not a config file; nothing was written"]
    assert completed.stdout == "" and sorted(tmp_path.iterdir()) == [folder] and list(folder.iterdir()) == []


@pytest.mark.parametrize("text", ["", "  \n\t\n"])
def test_an_empty_file_counts_as_an_empty_object(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(text)
    result = CliRunner().invoke(main, ["client-config", "e", "--write", str(config), "--", "/bin/e"])
    assert result.exit_code == 0, result.output
    assert json.loads(config.read_text()) == {"mcpServers": {"e": {"command": "/bin/e", "args": []}}}


def test_the_help_says_what_an_empty_file_and_a_lock_mean() -> None:
    help_text = " ".join(CliRunner().invoke(main, ["client-config", "--help"]).output.split())
    assert "An empty FILE counts as {}." in help_text
    assert ".FILE.lock" in help_text and "no entry is lost" in help_text
