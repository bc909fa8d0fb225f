"""The fast paths that rely on other libraries' private parts, and the one switch that turns them all off:
``MCPGEN_SAFE_MODE=1``.

Where it sits: the bottom of ``mcpgen_runtime``, below ``jsonrpc`` (every layer may register a fast path here).
May import: the standard library only.

A fast path is registered once, where it is used, with a self-check (``fast_path(name, relies_on=..., check=...)``).
The first time its ``active`` is read it decides, once per process: off in safe mode (logged at DEBUG only: the user
asked for it, and a server's stderr is an interface), off when the check raises, i.e. when the private parts are
missing or do not behave as the fast path needs (logged at WARNING, with the reason), else on. The caller then takes the public path instead, which is always correct, only slower.
``active_fast_paths()`` and ``describe_fast_paths()`` report the decisions (``serve_app`` logs the latter at start,
at DEBUG).

Why: a dependency may rename a private attribute in any release, and the tested range is bounded in the
distributions' metadata (``runtime/pyproject.toml``), but a user may still run a newer version than CI did. Then the
check turns the fast path off instead of letting it fail quietly (a cancellation landing inside an anyio shield).
The toolchain (``mcpgen.pipeline.formatting``) cannot import the runtime, and reads the same variable itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Final

__all__ = [
    "SAFE_MODE_VARIABLE",
    "FastPath",
    "SelfCheckFailed",
    "active_fast_paths",
    "describe_fast_paths",
    "fast_path",
    "registered_fast_paths",
    "require",
    "safe_mode",
]

logger = logging.getLogger(__name__)

SAFE_MODE_VARIABLE: Final = "MCPGEN_SAFE_MODE"


def safe_mode() -> bool:
    """Whether ``MCPGEN_SAFE_MODE`` is set (to anything but empty or ``0``): every fast path is off."""
    return os.environ.get(SAFE_MODE_VARIABLE, "").strip() not in ("", "0")


class SelfCheckFailed(Exception):
    """A fast path's private parts are missing or misbehave (what ``require`` raises)."""


def require(condition: bool, why: str) -> None:
    """For self-checks: raise ``SelfCheckFailed(why)`` unless ``condition`` (not ``assert``, which ``-O`` drops)."""
    if not condition:
        raise SelfCheckFailed(why)


class FastPath:
    """One fast path: ``active`` says whether to take it (decided on first use, see the module docstring)."""

    __slots__ = ("_active", "_check", "name", "reason", "relies_on")

    def __init__(self, name: str, relies_on: str, check: Callable[[], None]) -> None:
        self.name = name
        self.relies_on = relies_on  # the private parts, for the log line and the contributor
        self._check = check
        self._active: bool | None = None
        self.reason = ""  # why it is off ("" while on or undecided)

    @property
    def active(self) -> bool:
        active = self._active
        return self._decide() if active is None else active

    def _decide(self) -> bool:
        if safe_mode():
            self.reason = f"{SAFE_MODE_VARIABLE}=1"
            logger.debug("fast path %s off: %s", self.name, self.reason)
            self._active = False
            return False
        try:
            self._check()
        except Exception as exc:  # anything: a check that cannot even run has failed
            self.reason = f"self-check failed: {exc!r}"
            logger.warning(
                "fast path %s off, using the public path instead (it relies on %s): %s",
                self.name,
                self.relies_on,
                self.reason,
            )
            self._active = False
            return False
        self.reason = ""
        self._active = True
        return True

    def reset(self) -> None:
        """Forget the decision: the next ``active`` decides again (for tests, and after changing the environment)."""
        self._active = None
        self.reason = ""

    def __repr__(self) -> str:
        state = "undecided" if self._active is None else "on" if self._active else f"off ({self.reason})"
        return f"<FastPath {self.name}: {state}>"


_REGISTRY: dict[str, FastPath] = {}


def fast_path(name: str, *, relies_on: str, check: Callable[[], None]) -> FastPath:
    """Register a fast path (once per name, at import of the module that uses it)."""
    if name in _REGISTRY:
        raise ValueError(f"fast path {name!r} is registered already")
    path = _REGISTRY[name] = FastPath(name, relies_on, check)
    return path


def registered_fast_paths() -> dict[str, FastPath]:
    """Every fast path registered so far (those of the modules imported), by name."""
    return dict(_REGISTRY)


def active_fast_paths() -> tuple[str, ...]:
    """The names of the fast paths in use (deciding those still undecided), sorted."""
    return tuple(sorted(name for name, path in _REGISTRY.items() if path.active))


def describe_fast_paths() -> str:
    """One line for a log: every registered fast path, on or off and why."""
    parts = [
        f"{name} {'on' if path.active else 'off (' + path.reason + ')'}" for name, path in sorted(_REGISTRY.items())
    ]
    return "fast paths: " + (", ".join(parts) if parts else "none registered")
