"""Loopback ports: one the kernel hands out as free, and whether a server listens on one yet."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A port that was free a moment ago (the kernel's pick for port 0): for peers that need it before they start."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def accepts(port: int, host: str = HOST, timeout: float = 0.5) -> bool:
    """Whether something listens on ``host``:``port`` (a connection is accepted within ``timeout`` seconds)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
