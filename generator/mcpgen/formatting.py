"""Stage 4: let black own the layout of every generated Python file.

Pipeline position: render -> **format** -> write or check. Templates do not fight whitespace.

black is the slowest stage by far (about 3,000 lines a second), so results are cached by the
sha256 of (black version, mode, unformatted text), the way black caches its own runs, and cache
misses are formatted in parallel. Rendering is deterministic, so an unchanged schema and
template set formats nothing at all; a cache entry can never be stale because its key is the input.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import version
from pathlib import Path

import black
from black.mode import TargetVersion
from black.parsing import InvalidInput

BLACK_VERSION = version("black")  # black does not re-export __version__ for type checkers
LINE_LENGTH = 120
_MODE = black.Mode(line_length=LINE_LENGTH, target_versions={TargetVersion.PY311})
# Below this many lines to format, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD_LINES = 4000


class FormatError(Exception):
    """A template produced Python that does not parse: a bug in a template, not in the input."""


def default_cache_dir() -> Path | None:
    if os.environ.get("MCPGEN_NO_CACHE"):
        return None
    base = os.environ.get("MCPGEN_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpgen" / "format"


def _cache_key(text: str) -> str:
    digest = hashlib.sha256(f"{BLACK_VERSION}\0{_MODE!r}\0".encode())
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def _format_one(item: tuple[str, str]) -> str:
    path, text = item
    try:
        return black.format_str(text, mode=_MODE)
    except InvalidInput as error:
        raise FormatError(f"{path}: generated code does not parse: {error}") from None


def _store(cache_dir: Path, key: str, text: str) -> None:
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=cache_dir, delete=False) as handle:
            handle.write(text)
        os.replace(handle.name, cache_dir / key)
    except OSError:
        pass  # a cache that cannot be written only costs speed


def format_files(files: dict[str, str], cache_dir: Path | None = None, use_cache: bool = True) -> dict[str, str]:
    cache = (cache_dir or default_cache_dir()) if use_cache else None
    formatted: dict[str, str] = {}
    misses: list[tuple[str, str, str]] = []
    for path, text in files.items():
        if not path.endswith(".py"):
            formatted[path] = text
            continue
        key = _cache_key(text)
        cached = cache / key if cache else None
        if cached is not None and cached.is_file():
            formatted[path] = cached.read_text(encoding="utf-8")
        else:
            misses.append((path, text, key))
    items = [(path, text) for path, text, _ in misses]
    if sum(text.count("\n") for _, text in items) > PARALLEL_THRESHOLD_LINES and (os.cpu_count() or 1) > 1:
        with ProcessPoolExecutor() as pool:
            results = list(pool.map(_format_one, items))
    else:
        results = [_format_one(item) for item in items]
    for (path, _, key), result in zip(misses, results, strict=True):
        formatted[path] = result
        if cache is not None:
            _store(cache, key, result)
    return dict(sorted(formatted.items()))
