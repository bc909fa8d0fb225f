"""Peers in subprocesses: a child's stderr read line by line (every wait bounded), and an HTTP server process that
is waited for until its port accepts connections."""

from __future__ import annotations

import queue
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from .ports import HOST, accepts

TIMEOUT = 30.0


class StderrLines:
    """A child's stderr (opened with ``stderr=PIPE, text=True``), read by a thread so that every wait for a line is
    bounded (by ``timeout`` seconds unless a call says otherwise); the lines read so far are ``seen``."""

    def __init__(self, process: subprocess.Popen[str], timeout: float = TIMEOUT) -> None:
        assert process.stderr is not None
        self.timeout = timeout
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        stream = process.stderr

        def pump() -> None:
            for line in stream:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, pattern: str, timeout: float | None = None) -> re.Match[str]:
        """The match of the next line matching ``pattern``; fails (with what was read) after ``timeout`` seconds or
        when stderr closes first."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if found := re.search(pattern, line):
                return found
        raise AssertionError(f"no line matching {pattern!r} within {timeout} s; stderr so far:\n{''.join(self.seen)}")

    def rest(self) -> str:
        """What is left once the process has exited (its stderr closed); ``seen`` then holds all of it."""
        lines = []
        while (line := self.lines.get(timeout=self.timeout)) is not None:
            lines.append(line)
        self.seen += lines
        return "".join(lines)


@contextmanager
def http_server(cmd: Sequence[str | Path], port: int, *, env: Mapping[str, str], timeout: float = 30) -> Iterator[str]:
    """Start a server process, wait (bounded) until ``port`` accepts connections, yield its /mcp URL, stop it."""
    stderr_file = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [str(part) for part in cmd],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr_file,
    )
    try:
        deadline = time.monotonic() + timeout
        while not accepts(port):
            if proc.poll() is not None:
                stderr_file.seek(0)
                pytest.fail(f"the HTTP server exited with {proc.returncode} before listening:\n{stderr_file.read()}")
            if time.monotonic() > deadline:
                stderr_file.seek(0)
                pytest.fail(f"the HTTP server did not listen on port {port} within {timeout}s:\n{stderr_file.read()}")
            time.sleep(0.1)
        yield f"http://{HOST}:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        stderr_file.close()
