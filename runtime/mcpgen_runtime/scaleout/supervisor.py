"""Several worker processes on one port: ``run_workers`` forks them, restarts the ones that die, and stops them all.

Where it sits: in ``scaleout``, under ``server.hosting.options`` (which hands it the function a worker runs). Each
worker listens on its own socket with SO_REUSEPORT, so the kernel spreads new connections over the workers (a
shared accept queue tends to hand a quiet server's connections to one worker); the parent keeps the port bound,
without listening, so a restarted worker gets the same port back. Fork, not spawn: a worker is the parent's copy
(its ``Server``, its options, ``auth`` included), with nothing to pickle or import again.

Signals: SIGINT or SIGTERM to the parent stops the workers (SIGTERM, then SIGKILL after ``shutdown_timeout``); a
worker whose parent is gone (SIGKILL) stops itself.

A worker that dies otherwise (a crash, the OOM killer) is replaced, for as long as the supervisor runs: the first
death in a minute at once, each further one after an exponential back-off (``RestartPolicy``): ``backoff`` (0.5 s,
``MCPGEN_RESTART_BACKOFF``) doubled for each other death in the last minute, at most ``backoff_max`` (30 s,
``MCPGEN_RESTART_BACKOFF_MAX``); the other workers keep serving the port meanwhile. A worker tells the supervisor it
became ready (``notify_ready``, called by ``worker.ScaleOutWorker`` once its app runs: Redis reached, the shared
key taken) through a pipe; only when ``max_failed_starts`` (10, ``MCPGEN_MAX_FAILED_STARTS``) workers in a row died
before becoming ready (workers cannot start at all: a broken lifespan, Redis refusing them) does the supervisor stop
them all and exit 1.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["RestartPolicy", "notify_ready", "reserve_port", "run_workers"]

logger = logging.getLogger(__name__)

_PARENT_POLL: Final = 0.5
_CHILD_POLL: Final = 0.02  # how often the supervisor looks for dead workers while a restart is due
_WINDOW: Final = 60.0  # seconds of deaths that count for the back-off
_ready_fd: int | None = None  # in a worker: the write end of its readiness pipe


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """How dead workers are replaced (see the module docstring): ``backoff`` seconds (0.5) doubled per other death
    in the last minute, at most ``backoff_max`` (30); exit after ``max_failed_starts`` (10) workers in a row died
    before becoming ready."""

    backoff: float = 0.5
    backoff_max: float = 30.0
    max_failed_starts: int = 10

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RestartPolicy:
        """The policy of ``MCPGEN_RESTART_BACKOFF``, ``MCPGEN_RESTART_BACKOFF_MAX``, ``MCPGEN_MAX_FAILED_STARTS``
        (unset: the defaults). Raises ``ValueError`` for a value that is not a positive number."""
        env = os.environ if environ is None else environ
        default = cls()

        def number(name: str, value: float) -> float:
            text = env.get(name, "").strip()
            if not text:
                return value
            try:
                given = float(text)
            except ValueError:
                raise ValueError(f"{name}: {text!r} is not a number") from None
            if not given > 0:
                raise ValueError(f"{name}: must be positive, not {text!r}")
            return given

        return cls(
            backoff=number("MCPGEN_RESTART_BACKOFF", default.backoff),
            backoff_max=number("MCPGEN_RESTART_BACKOFF_MAX", default.backoff_max),
            max_failed_starts=max(1, int(number("MCPGEN_MAX_FAILED_STARTS", default.max_failed_starts))),
        )

    def delay(self, recent_deaths: int) -> float:
        """Seconds before replacing a worker when ``recent_deaths`` (this one included) died in the last minute."""
        if recent_deaths <= 1:
            return 0.0
        return min(self.backoff_max, self.backoff * 2.0 ** min(recent_deaths - 2, 64))


def notify_ready() -> None:
    """In a worker forked by ``run_workers``: tell the supervisor it serves (elsewhere: nothing)."""
    global _ready_fd
    fd, _ready_fd = _ready_fd, None
    if fd is None:
        return
    try:
        os.write(fd, b"1")
    except OSError:
        pass
    finally:
        os.close(fd)


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (0: a free port) with SO_REUSEPORT and not listening: it keeps the port for
    the workers, which bind it too, and takes no connections itself."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _watch_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mcpgen-worker-parent-watch", daemon=True).start()


def _fork(serve: Callable[[int], None], index: int) -> tuple[int, int]:
    """The new worker's pid and the read end of its readiness pipe."""
    global _ready_fd
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    readable, writable = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writable)
        return pid, readable
    os.close(readable)
    _ready_fd = writable
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _watch_parent(parent)
        serve(index)
    except KeyboardInterrupt:
        pass
    except BaseException:
        logging.getLogger(__name__).exception("worker %d (pid %d) failed", index, os.getpid())
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # never back into the parent's code (its finally blocks, atexit)


def _was_ready(readable: int) -> bool:
    try:
        os.set_blocking(readable, False)
        return os.read(readable, 1) == b"1"
    except OSError:  # BlockingIOError: it never wrote
        return False
    finally:
        os.close(readable)


def _reap(timeout: float | None) -> tuple[int, int]:
    """A dead worker's (pid, status), waiting at most ``timeout`` seconds (None: until one dies); (0, 0) if none."""
    if timeout is None:
        return os.waitpid(-1, 0)
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid, status = 0, 0
        if pid or time.monotonic() >= deadline:
            return pid, status
        time.sleep(min(_CHILD_POLL, max(0.0, deadline - time.monotonic())))


def run_workers(
    serve: Callable[[int], None],
    workers: int,
    *,
    shutdown_timeout: float = 10.0,
    policy: RestartPolicy | None = None,
) -> int:
    """Run ``serve(index)`` in ``workers`` forked processes until SIGINT/SIGTERM; returns the exit code (0, or 1
    when workers could not start at all). ``serve`` binds its own SO_REUSEPORT socket; ``policy``: how dead workers
    are replaced (default ``RestartPolicy.from_env()``; see the module docstring)."""
    policy = policy or RestartPolicy.from_env()
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    children: dict[int, int] = {}  # pid -> worker index
    ready_pipes: dict[int, int] = {}  # pid -> the read end of its readiness pipe
    pending: list[tuple[float, int]] = []  # (when, worker index): restarts waiting for their back-off

    def start(index: int) -> None:
        pid, readable = _fork(serve, index)
        children[pid], ready_pipes[pid] = index, readable

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    deaths: deque[float] = deque()
    failed_starts = code = 0
    try:
        for index in range(workers):
            start(index)
        while children or pending:
            if stopping:
                pending.clear()
                if not children:
                    break
            now = time.monotonic()
            for due in sorted(item for item in pending if item[0] <= now):
                pending.remove(due)
                start(due[1])
            pid, status = _reap(min(when for when, _ in pending) - now if pending else None)
            if not pid:
                continue
            index = children.pop(pid, -1)
            ready = _was_ready(ready_pipes.pop(pid)) if pid in ready_pipes else False
            if index < 0 or stopping:
                continue
            failed_starts = 0 if ready else failed_starts + 1
            if failed_starts >= policy.max_failed_starts:
                logger.error("%d workers in a row died before they could serve: stopping", failed_starts)
                code = 1
                stop(signal.SIGTERM, None)
                continue
            now = time.monotonic()
            deaths.append(now)
            while deaths and now - deaths[0] > _WINDOW:
                deaths.popleft()
            delay = policy.delay(len(deaths))
            logger.warning(
                "worker %d (pid %d) ended (status %d): starting another in %.1f s", index, pid, status, delay
            )
            pending.append((now + delay, index))
    finally:
        if children:
            deadline = time.monotonic() + shutdown_timeout
            while children and time.monotonic() < deadline:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid:
                    children.pop(pid, None)
                else:
                    time.sleep(0.05)
            for pid in children:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        for readable in ready_pipes.values():
            os.close(readable)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code
