"""Several worker processes on one port: ``run_workers`` forks them, restarts the ones that die, and stops them all.

Where it sits: in ``scaleout``, under ``server.hosting.options`` (which hands it the function a worker runs). Each
worker listens on its own socket with SO_REUSEPORT, so the kernel spreads new connections over the workers (a
shared accept queue tends to hand a quiet server's connections to one worker); the parent keeps the port bound,
without listening, so a restarted worker gets the same port back. Fork, not spawn: a worker is the parent's copy
(its ``Server``, its options, ``auth`` included), with nothing to pickle or import again.

Signals: SIGINT or SIGTERM to the parent stops the workers (SIGTERM, then SIGKILL after ``shutdown_timeout``); a
worker whose parent is gone (SIGKILL) stops itself. A worker that dies otherwise is replaced, at most
``MAX_RESTARTS`` times a minute (a worker that cannot start would otherwise be forked in a loop).
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
from collections.abc import Callable
from typing import Final

__all__ = ["MAX_RESTARTS", "reserve_port", "run_workers"]

logger = logging.getLogger(__name__)

MAX_RESTARTS: Final = 10  # per minute
_PARENT_POLL: Final = 0.5


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


def _fork(serve: Callable[[int], None], index: int) -> int:
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
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


def run_workers(serve: Callable[[int], None], workers: int, *, shutdown_timeout: float = 10.0) -> int:
    """Run ``serve(index)`` in ``workers`` forked processes until SIGINT/SIGTERM; returns the exit code (0, or 1
    when workers kept dying). ``serve`` binds its own SO_REUSEPORT socket (see the module docstring)."""
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
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    restarts: deque[float] = deque()
    code = 0
    try:
        for index in range(workers):
            children[_fork(serve, index)] = index
        while children:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            index = children.pop(pid, -1)
            if index < 0 or stopping:
                continue
            now = time.monotonic()
            while restarts and now - restarts[0] > 60:
                restarts.popleft()
            if len(restarts) >= MAX_RESTARTS:
                logger.error("workers keep dying (%d restarts in a minute): stopping", MAX_RESTARTS)
                code = 1
                stop(signal.SIGTERM, None)
                continue
            restarts.append(now)
            logger.warning("worker %d (pid %d) ended (status %d): starting another", index, pid, status)
            children[_fork(serve, index)] = index
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
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code
