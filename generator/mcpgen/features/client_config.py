"""`mcpgen client-config`: the entry of a server in a desktop MCP client's config file (`mcpServers`).

Pipeline position: none; a feature beside the pipeline. It builds one entry, `{"command": ..., "args": [...],
"env": {...}}` (a server the client starts, over stdio) or `{"url": ...}` (a running HTTP server), and either
returns the JSON document `{"mcpServers": {NAME: entry}}` or merges the entry into an existing config file.

Merging changes only `mcpServers.NAME` (other servers, other keys and their order are kept; the file is rewritten
with two-space indentation). It is atomic: the new text goes to a temporary file beside the config (through a
symbolic link, beside its target), is flushed to disk and replaces the old one in one rename, with the old file's
permissions (a new file is private: 0600, since `env` may hold secrets). A file that is not a JSON object, or whose
`mcpServers` is not one, is refused with `ClientConfigError` before anything is written; so is a directory. An empty
(or all-whitespace) file is treated as `{}`: a file just created by hand holds nothing to keep. The JSON is read
with `json_input.parse_json`, the toolchain's one bounded loader.

Concurrent writers (two `mcpgen client-config --write` at once, or a script adding twenty servers in parallel) lose
nothing: the read-modify-write runs under an exclusive `fcntl.flock` on a sidecar lock file beside the config,
`.NAME.lock` (the config itself is replaced by a rename, so it cannot carry the lock), which the holder removes
before letting go (a waiter left with the removed file's lock starts over on the new one). A writer waits at most `LOCK_TIMEOUT`
(default 10 s) for the lock, then gives up with `ClientConfigError` and writes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from ..json_input import JsonInputError, parse_json
from ..pipeline.output import MACHINE_ERRNOS

SERVERS_KEY: Final = "mcpServers"
RUNNER_MODULE: Final = "mcpgen_runtime.server.runner"
MAX_NAME_LENGTH: Final = 200
MAX_CONFIG_BYTES: Final = 16 * 1024 * 1024  # a client config is a few KiB; anything this big is not one
LOCK_TIMEOUT: Final = 10.0  # seconds a writer waits for another writer's lock on the same config file
LOCK_POLL: Final = 0.02  # seconds between attempts to take the lock


class ClientConfigError(Exception):
    """Bad input for `mcpgen client-config`; the message says what. Nothing was written."""


def check_name(name: str) -> None:
    if not name.strip():
        raise ClientConfigError("the server name is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ClientConfigError(f"the server name is {len(name)} characters long (at most {MAX_NAME_LENGTH})")
    if any(unicodedata.category(char).startswith("C") for char in name):
        raise ClientConfigError(f"the server name {name!r} contains control characters")


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs (the value may be empty or contain `=`) as a dict; a later KEY wins."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key or any(char.isspace() for char in key):
            raise ClientConfigError(f"--env {pair!r}: expected KEY=VALUE, with a KEY without spaces")
        env[key] = value
    return env


def command_entry(
    command: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """The entry of a server the client starts: `command` is the program and its arguments. A program given as a
    relative path (`.venv/bin/weather`) is made absolute: the client starts servers from a directory of its own."""
    if not command or not command[0]:
        raise ClientConfigError("no command: give it after `--`, e.g. `-- .venv/bin/weather`")
    program = command[0]
    if ("/" in program or os.sep in program) and not os.path.isabs(program):
        program = os.path.normpath((cwd or Path.cwd()) / program)
    entry: dict[str, Any] = {"command": program, "args": list(command[1:])}
    if env:
        entry["env"] = dict(env)
    return entry


def runner_entry(
    target: str, python: str | None = None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """The entry that starts `python -m mcpgen_runtime.server.runner TARGET` (stdio) with `python` (default: this
    interpreter); a file TARGET is made absolute."""
    where, colon, name = target.rpartition(":")
    path, suffix = (where, f":{name}") if colon and where and name.isidentifier() else (target, "")
    if path.endswith(".py") or "/" in path or os.sep in path:
        file = (cwd or Path.cwd()) / path
        if not file.is_file():
            raise ClientConfigError(f"--server {path}: no such file")
        target = f"{file.resolve()}{suffix}"
    return command_entry([python or sys.executable, "-m", RUNNER_MODULE, target], env, cwd)


def url_entry(url: str) -> dict[str, Any]:
    """The entry of a running streamable HTTP server."""
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise ClientConfigError(f"--url {url!r}: expected an http:// or https:// URL such as http://127.0.0.1:8000/mcp")
    return {"url": url}


def config_document(name: str, entry: Mapping[str, Any]) -> str:
    """`{"mcpServers": {name: entry}}` as the text of a config file."""
    check_name(name)
    return _dumps({SERVERS_KEY: {name: dict(entry)}})


def _dumps(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _read_config(path: Path) -> dict[str, Any]:
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ClientConfigError(f"{path} is not a file")
        if size > MAX_CONFIG_BYTES:
            raise ClientConfigError(f"{path} is {size} bytes, too large for a client config (refused)")
        data = path.read_bytes()
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise ClientConfigError(f"cannot write {path}: the directory {path.parent} does not exist") from None
        return {}
    except OSError as error:
        raise ClientConfigError(f"cannot read {path}: {error.strerror or error}") from None
    if not data.strip():
        return {}  # an empty file (just created by hand) holds nothing to keep
    try:
        document = parse_json(data)
    except JsonInputError as error:
        raise ClientConfigError(f"{path}{error}; nothing was written") from None
    if not isinstance(document, dict):
        kind = "an array" if isinstance(document, list) else f"a {type(document).__name__}"
        raise ClientConfigError(f"{path} holds {kind}, not a JSON object; nothing was written")
    servers = document.get(SERVERS_KEY)
    if servers is not None and not isinstance(servers, dict):
        raise ClientConfigError(f"{path}#/{SERVERS_KEY} is not a JSON object; nothing was written")
    return document


def _write_atomically(path: Path, text: str) -> None:
    target = path.resolve() if path.is_symlink() else path  # keep the link: replace the file it points to
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold the exclusive lock of the config file `path` (its sidecar `.NAME.lock`), waiting at most `timeout`.
    The holder removes the lock file before it lets go; a waiter that then wins the lock of a removed file (its
    inode is no longer the one at the path) starts over on the new one, so two writers never hold different locks."""
    lock_path = path.with_name(f".{path.name}.lock")
    deadline = time.monotonic() + timeout
    while True:
        try:
            descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            if error.errno in MACHINE_ERRNOS:
                raise
            raise ClientConfigError(f"cannot lock {path} ({lock_path}): {error.strerror or error}") from None
        try:
            if _lock_before(descriptor, deadline) and _same_file(descriptor, lock_path):
                try:
                    yield
                finally:
                    lock_path.unlink(missing_ok=True)  # while still holding it: see the docstring
                return
        finally:
            os.close(descriptor)  # releases the lock
        if time.monotonic() >= deadline:
            raise ClientConfigError(
                f"{path} is locked by another writer ({lock_path} held for more than {timeout:g} s); nothing was written"
            )


def _lock_before(descriptor: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(LOCK_POLL)


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def merge_into_file(path: Path, name: str, entry: Mapping[str, Any], lock_timeout: float = LOCK_TIMEOUT) -> str:
    """Set `mcpServers.NAME` of the config file `path` to `entry` (created if missing); "added" or "replaced".
    The read and the write happen under the file's lock, so a concurrent writer's entry is never lost."""
    check_name(name)
    target = path.resolve() if path.is_symlink() else path
    if target.is_dir():
        raise ClientConfigError(f"{path} is a directory, not a config file; nothing was written")
    if not target.parent.is_dir():
        raise ClientConfigError(f"cannot write {path}: the directory {target.parent} does not exist")
    with _locked(target, lock_timeout):
        document = _read_config(path)
        servers = document.setdefault(SERVERS_KEY, {})
        outcome = "replaced" if name in servers else "added"
        servers[name] = dict(entry)
        try:
            _write_atomically(path, _dumps(document))
        except OSError as error:
            if error.errno in MACHINE_ERRNOS:
                raise
            raise ClientConfigError(f"cannot write {path}: {error.strerror or error}; nothing was written") from None
    return outcome
