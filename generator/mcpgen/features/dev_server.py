"""`mcpgen dev`: run a server over HTTP and restart it whenever a Python file beside it changes.

Pipeline position: none; a feature beside the pipeline that runs no generator stage. It supervises one child
process, `python -m mcpgen_runtime.server.runner TARGET --transport http ...` (the runtime loads and serves the
target, prints its URL and logs on stderr), and restarts it when the snapshot of the watched *.py files changes.
The runtime is started as a process, never imported: the toolchain imports mcpgen_runtime only in
client_from_server (tests/test_layers.py).

Bounded and clean:
- Watching is polling (no dependency): every `poll_interval` the (mtime, size) of every *.py under the watched
  directories, skipping hidden, cache and virtual-environment directories, at most MAX_WATCHED_FILES files.
- A change restarts once it has settled: snapshots are taken every `debounce` seconds until two agree (at most
  MAX_SETTLE seconds), so an editor's save-in-several-writes or a `git checkout` restarts the server once.
- The child gets its own process group and SIGINT (as Ctrl-C); after `shutdown_timeout` the group is killed.
  The old server has exited before the new one starts, so the port is free again.
- Ctrl-C (SIGINT) or SIGTERM stops the child the same way and returns 0; the child also stops by itself when this
  process disappears (the runner's `--parent-pid`), so a killed `mcpgen dev` leaves no server holding the port.
- A server that fails (an exception while importing the edited file, a port in use) is reported, and restarted
  on the next change rather than in a loop.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final, TextIO

RUNNER_MODULE: Final = "mcpgen_runtime.server.runner"
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")  # the runner's --log-level choices
POLL_INTERVAL: Final = 0.5
DEBOUNCE: Final = 0.25
MAX_SETTLE: Final = 3.0  # a tree that keeps changing for this long is restarted anyway
SHUTDOWN_TIMEOUT: Final = 5.0
MAX_WATCHED_FILES: Final = 10_000
# Directories that hold no source of the server, or far too much of someone else's.
SKIPPED_DIRS: Final = frozenset({"__pycache__", "node_modules", "venv", "env", "build", "dist", "site-packages"})

Snapshot = dict[Path, tuple[int, int]]


class DevError(Exception):
    """Bad input for `mcpgen dev`; the message says what. Nothing was started."""


@dataclass(frozen=True)
class DevRequest:
    target: str  # path/to/server.py[:NAME] or package.module[:NAME]
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    log_level: str = "info"
    allowed_hosts: tuple[str, ...] = ()
    watch: tuple[Path, ...] = ()  # more directories to watch, beside the target's own
    python: str = sys.executable  # the interpreter that runs the server (it needs mcpgen-runtime)
    poll_interval: float = POLL_INTERVAL
    debounce: float = DEBOUNCE
    shutdown_timeout: float = SHUTDOWN_TIMEOUT


def split_target(target: str) -> tuple[str, str | None]:
    """As `mcpgen_runtime.server.runner.split_target` (not imported: see the module docstring)."""
    where, colon, name = target.rpartition(":")
    if colon and where and name.isidentifier():
        return where, name
    return target, None


def _find_module_file(name: str, search: Sequence[Path]) -> Path | None:
    """The file of module `name` under one of `search`, found without importing anything."""
    parts = name.split(".")
    for base in search:
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def target_file(target: str, cwd: Path) -> Path:
    """The file TARGET names (checked to exist), whose directory is watched. Raises DevError."""
    if not target.strip():
        raise DevError("the target is empty: give path/to/server.py or package.module")
    where, _name = split_target(target)
    if where.endswith(".py") or "/" in where or os.sep in where:
        path = cwd / where
        if not path.is_file():
            raise DevError(f"{where}: no such file")
        return path.resolve()
    if not all(part.isidentifier() for part in where.split(".")):
        raise DevError(f"{where!r} is neither a .py file nor a module name (package.module[:NAME])")
    found = _find_module_file(where, [cwd, *(Path(entry) for entry in sys.path if entry)])
    if found is None:
        raise DevError(f"no module named {where!r} under {cwd} or sys.path")
    return found.resolve()


def check_request(request: DevRequest, cwd: Path) -> list[Path]:
    """Validate `request`; the directories to watch. Raises DevError."""
    if not 0 <= request.port <= 65535:
        raise DevError(f"--port {request.port}: not a port number (0 to 65535)")
    if request.log_level not in LOG_LEVELS:
        raise DevError(f"unknown log level {request.log_level!r}; choose one of: {', '.join(LOG_LEVELS)}")
    for name, value in (("poll interval", request.poll_interval), ("debounce", request.debounce)):
        if not 0 < value <= 60:
            raise DevError(f"the {name} must be more than 0 and at most 60 seconds, not {value}")
    if shutil.which(request.python) is None:
        raise DevError(f"--python {request.python}: not an executable (it runs the server and needs mcpgen-runtime)")
    roots = [target_file(request.target, cwd).parent]
    for directory in request.watch:
        if not (cwd / directory).is_dir():
            raise DevError(f"--watch {directory}: not a directory")
        roots.append((cwd / directory).resolve())
    return sorted(set(roots))


def _python_files(root: Path) -> Iterator[Path]:
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(directory, name)


def snapshot(roots: Sequence[Path], limit: int = MAX_WATCHED_FILES) -> Snapshot:
    """(mtime in ns, size) of every watched *.py, at most `limit` files in all."""
    found: Snapshot = {}
    for root in roots:
        for path in _python_files(root):
            if len(found) >= limit:
                return found
            try:
                stat = path.stat()
            except OSError:  # deleted while we looked
                continue
            found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def changed_files(before: Snapshot, after: Snapshot) -> list[Path]:
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def child_command(request: DevRequest, parent_pid: int) -> list[str]:
    command = [request.python, "-m", RUNNER_MODULE, request.target, "--transport", "http"]
    command += ["--host", request.host, "--port", str(request.port), "--log-level", request.log_level]
    for name in request.allowed_hosts:
        command += ["--allowed-host", name]
    return [*command, "--parent-pid", str(parent_pid)]


class Supervisor:
    """Starts and stops the server process, one at a time."""

    def __init__(self, command: list[str], cwd: Path, say: Callable[[str], None], shutdown_timeout: float) -> None:
        self.command, self.cwd, self.say, self.shutdown_timeout = command, cwd, say, shutdown_timeout
        self.child: subprocess.Popen[bytes] | None = None
        self.reported_exit = False

    def start(self) -> None:
        posix = os.name == "posix"
        self.child = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            # Its own process group: Ctrl-C reaches only us, and we stop the server (and whatever it started).
            start_new_session=posix,
            creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
        self.reported_exit = False
        self.say(f"server started (pid {self.child.pid})")

    def exited(self) -> int | None:
        """The exit code of a server that stopped by itself, reported once; None while it runs."""
        if self.child is None or self.reported_exit:
            return None
        code = self.child.poll()
        if code is not None:
            self.reported_exit = True
            self._kill_leftovers(self.child)
        return code

    def _signal_group(self, child: subprocess.Popen[bytes], signum: int) -> None:
        try:
            if os.name == "posix":
                os.killpg(child.pid, signum)
            elif signum == signal.SIGINT:
                child.send_signal(getattr(signal, "CTRL_BREAK_EVENT", signal.SIGTERM))
            else:
                child.kill()
        except (ProcessLookupError, PermissionError):
            pass

    def _kill_leftovers(self, child: subprocess.Popen[bytes]) -> None:
        """Kill what the server started in its group and left behind. Right after the server was reaped: while the
        group has members its id is not reused, and once it has none the kill finds nothing."""
        if os.name == "posix":
            self._signal_group(child, signal.SIGKILL)

    def stop(self) -> None:
        """Stop the server (SIGINT, then SIGKILL after the timeout). `self.child` is cleared only once it is gone,
        so that a stop interrupted by Ctrl-C is finished by the next one."""
        child = self.child
        if child is None:
            return
        if child.poll() is None:
            self._signal_group(child, signal.SIGINT)
            try:
                child.wait(timeout=self.shutdown_timeout)
            except subprocess.TimeoutExpired:
                self.say(f"the server did not stop within {self.shutdown_timeout:g} s: killing it")
                self._signal_group(child, signal.SIGKILL)
                child.wait()
            self._kill_leftovers(child)
        elif not self.reported_exit:
            self._kill_leftovers(child)
        self.child = None


def _settle(roots: Sequence[Path], current: Snapshot, debounce: float) -> Snapshot:
    """Wait until two snapshots `debounce` apart agree (at most MAX_SETTLE seconds); the last one."""
    deadline = time.monotonic() + max(MAX_SETTLE, debounce)
    while time.monotonic() < deadline:
        time.sleep(debounce)
        again = snapshot(roots)
        if again == current:
            break
        current = again
    return current


def _describe(changed: Sequence[Path], cwd: Path) -> str:
    first = changed[0]
    shown = first.relative_to(cwd) if first.is_relative_to(cwd) else first
    return f"{shown} changed" + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else "")


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_dev(request: DevRequest, cwd: Path | None = None, err: TextIO | None = None) -> int:
    """Supervise the server until Ctrl-C or SIGTERM; returns the exit code (0). Raises DevError on bad input,
    before anything starts."""
    cwd = (cwd or Path.cwd()).resolve()
    roots = check_request(request, cwd)
    stream = err if err is not None else sys.stderr

    def say(message: str) -> None:
        print(f"mcpgen dev: {message}", file=stream, flush=True)

    supervisor = Supervisor(child_command(request, os.getpid()), cwd, say, request.shutdown_timeout)
    previous_int = signal.getsignal(signal.SIGINT)
    previous_term = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        state = snapshot(roots)
        shown = ", ".join(str(root) for root in roots)
        note = f" (the first {MAX_WATCHED_FILES})" if len(state) >= MAX_WATCHED_FILES else ""
        say(f"watching {len(state)} *.py files{note} under {shown}; Ctrl-C stops")
        supervisor.start()
        while True:
            time.sleep(request.poll_interval)
            code = supervisor.exited()
            if code is not None:
                say(f"the server exited with code {code}; it restarts when a file changes")
            current = snapshot(roots)
            if current == state:
                continue
            current = _settle(roots, current, request.debounce)
            changed = changed_files(state, current)
            state = current
            if not changed:
                continue
            say(f"{_describe(changed, cwd)}: restarting")
            supervisor.stop()
            supervisor.start()
    except KeyboardInterrupt:
        pass
    finally:
        # Ctrl-C again while stopping must not leave the server behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            supervisor.stop()
        finally:
            signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, previous_term)
    say("stopped")
    return 0
