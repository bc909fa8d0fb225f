"""Where the OAuth provider keeps what it must not ask for twice: tokens and client registrations, as JSON objects
under string keys (``tokens <resource> <issuer>``, ``client <issuer>``: credentials are kept per issuer, as an
authorization server's client id means nothing to another).

``InMemoryTokenStorage`` is the default (gone with the process); ``FileTokenStorage`` keeps them in one JSON file
that only its owner can read (created 0600, replaced atomically, its permissions checked on every write).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

import anyio

__all__ = ["FileTokenStorage", "InMemoryTokenStorage", "TokenStorage"]


class TokenStorage(Protocol):
    """A small key -> JSON object store (implement it over a keyring or a database as well)."""

    async def load(self, key: str) -> dict[str, Any] | None: ...

    async def save(self, key: str, value: dict[str, Any]) -> None: ...

    async def delete(self, key: str) -> None: ...


class InMemoryTokenStorage:
    """The default store: a dict, for this process only."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        value = self._values.get(key)
        return dict(value) if value is not None else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        self._values[key] = dict(value)

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)


class FileTokenStorage:
    """One JSON file (e.g. ``~/.config/my-tool/mcp-tokens.json``) holding every key, readable by its owner only: the
    file is written to a 0600 temporary file in the same directory and renamed over the old one, so a crash never
    leaves half a file and no other user ever sees a token."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = anyio.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # an unreadable store is an empty one: the flow starts again
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # mkstemp creates the file 0600 (owner only) before any secret is written to it.
        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump(data, file)
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    async def load(self, key: str) -> dict[str, Any] | None:
        async with self._lock:
            value = self._read().get(key)
        return value if isinstance(value, dict) else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        async with self._lock:
            data = self._read()
            data[key] = value
            self._write(data)

    async def delete(self, key: str) -> None:
        async with self._lock:
            data = self._read()
            if data.pop(key, None) is not None:
                self._write(data)
