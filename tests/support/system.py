"""Programs from outside the repository that some tests need (redis-server, nginx, node): a test skips with one
standard reason when its program is missing, and the run's summary (tests/conftest.py) lists every such skip in a
section of its own, failing the run under CI (``CI=true``), where ``.ci/run`` installs them all."""

from __future__ import annotations

from typing import Final

# The prefix of every skip reason for a missing program: tests/conftest.py finds these skips by it.
MISSING_PROGRAM: Final = "not tested: system program missing:"
# What .ci/run installs (Debian package names), and the README's list of what the full suite needs.
DEBIAN_PACKAGES: Final = {"redis-server": "redis-server", "nginx": "nginx", "wrk": "wrk", "chromium": "chromium"}


def missing_reason(program: str) -> str:
    package = DEBIAN_PACKAGES.get(program)
    how = f"apt-get install {package}; .ci/run installs it" if package else "install it"
    return f"{MISSING_PROGRAM} {program} ({how})"
