"""Stage 5: write the rendered tree atomically, or compare it with what is on disk (`--check`).

Pipeline position: render -> format -> **write or check**.

Writing builds the complete new tree in a temporary directory next to the output and swaps it in
with renames, so a run that fails part-way leaves the old tree exactly as it was.
"""

from __future__ import annotations

import difflib
import errno
import os
import shutil
import tempfile
from pathlib import Path

IGNORED_PARTS = ("__pycache__",)
# A full disk or a failing device is the machine's problem, not a bad --out: those stay OSError (a traceback,
# exit 1), like any other failure that is not the user's input.
MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


class OutputError(Exception):
    """The output directory cannot be written (bad --out); the old tree is as it was."""


def _same_text(path: Path, text: str) -> bool:
    # Bytes, not read_text: a file that is not UTF-8 is simply different, not a crash.
    return path.is_file() and path.read_bytes() == text.encode("utf-8")


def _existing_files(root: Path, prefixes: tuple[str, ...]) -> dict[str, Path]:
    if not root.is_dir():
        return {}
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not any(part in IGNORED_PARTS for part in path.parts) and relative.startswith(prefixes):
            found[relative] = path
    return found


def owned_prefixes(files: dict[str, str]) -> tuple[str, ...]:
    """The directories a generation owns: every subpackage it wrote, plus the package's own files.
    Files under them that the generation did not produce are stale."""
    prefixes = {path.rsplit("/", 1)[0] + "/" for path in files if path.count("/") >= 2}
    prefixes |= {path for path in files if path.count("/") == 1}
    return tuple(sorted(prefixes))


def diff_tree(root: Path, files: dict[str, str]) -> list[str]:
    """Unified diffs between `root` and the generated `files`; empty when up to date. Raises OutputError
    when `root` cannot be read."""
    try:
        return _diff_tree(root, files)
    except OSError as error:
        raise OutputError(f"cannot read {root}: {error.strerror or error}") from None


def _diff_tree(root: Path, files: dict[str, str]) -> list[str]:
    chunks: list[str] = []
    existing = _existing_files(root, owned_prefixes(files))
    for relative, text in files.items():
        path = root / relative
        if _same_text(path, text):
            continue
        old = path.read_bytes().decode("utf-8", "replace") if path.is_file() else None
        chunks.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"a/{relative}" if old is not None else "/dev/null",
                tofile=f"b/{relative}",
            )
        )
    for relative in sorted(set(existing) - set(files)):
        chunks.append(f"stale file, not generated any more: {relative}\n")
    return chunks


def write_tree(root: Path, files: dict[str, str]) -> list[str]:
    """Replace the generated part of `root` with `files`, atomically. Returns changed paths. Raises
    OutputError, with the old tree in place, when `root` cannot be written."""
    # Absolute, so that '.' has a real parent to stage in (not the output itself); not resolved, so that
    # a symlinked output path stays what the user named.
    root = Path(os.path.abspath(root))
    if root.parent == root:
        raise OutputError(f"cannot write {root}: the output must be a directory below a file system root")
    try:
        return _write_tree(root, files)
    except OSError as error:
        if error.errno in MACHINE_ERRNOS:
            raise
        raise OutputError(f"cannot write {root}: {error.strerror or error}") from None


def _write_tree(root: Path, files: dict[str, str]) -> list[str]:
    changed = [relative for relative, text in files.items() if not _same_text(root / relative, text)]
    stale = set(_existing_files(root, owned_prefixes(files))) - set(files)
    if not changed and not stale:
        return []
    root.parent.mkdir(parents=True, exist_ok=True)
    # Cut to 60 characters (at most 240 bytes of UTF-8) so that '.<name>.new-XXXXXXXX' stays within the
    # file system's 255-byte limit for a name.
    name = root.name[:60]
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=root.parent))
    backup = root.parent / f".{name}.old-{staging.name.rsplit('-', 1)[-1]}"
    try:
        if root.is_dir():
            shutil.copytree(root, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*IGNORED_PARTS))
        for relative in stale:
            (staging / relative).unlink()
        for relative, text in files.items():
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        if root.exists():
            root.rename(backup)
        staging.rename(root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if backup.exists() and not root.exists():
            backup.rename(root)
        raise
    shutil.rmtree(backup, ignore_errors=True)
    return sorted(changed + sorted(stale))
