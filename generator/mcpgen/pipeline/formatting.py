"""Stage 4: let black own the layout of every generated Python file.

Pipeline position: render -> **format** -> write or check. Templates do not fight whitespace.

black is the slowest stage by far (about 3,500 lines a second), so:

- templates mark top-level statements with CHUNK_MARKER lines; a marked file is formatted chunk by
  chunk and each distinct chunk only once per run. Most classes are identical across protocol
  versions (draft repeats 2026-07-28 entirely), so this removes over half of black's work. Chunks are
  joined by two blank lines, which black accepts at the top level: the result is black-stable, and
  tests/test_lint.py checks that it is;
- whole files are cached by the sha256 of (black version, mode, unformatted text), the way black
  caches its own runs; a key is its input, so an entry can never be stale;
- what is left is formatted in parallel.
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
CHUNK_MARKER = "#@mcpgen:chunk"
# Below this many lines to format, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD_LINES = 3000


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


def _format_chunk(item: tuple[str, str]) -> str:
    path, text = item
    try:
        return black.format_str(text, mode=_MODE)
    except InvalidInput as error:
        # black's message spans lines (the code, a caret, the tokenizer's error): keep one error line.
        parts = [line.strip() for line in str(error).splitlines() if line.strip() not in ("", "^")]
        raise FormatError(f"{path}: generated code does not parse: {' | '.join(parts)}") from None
    except RecursionError:  # black recurses per nesting level of the code
        raise FormatError(f"{path}: generated code nests too deeply for black to format") from None


def _store(cache_dir: Path, key: str, text: str) -> None:
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=cache_dir, delete=False) as handle:
            handle.write(text)
        os.replace(handle.name, cache_dir / key)
    except OSError:
        pass  # a cache that cannot be written only costs speed


def split_chunks(text: str) -> list[str]:
    """The file's top-level statements as marked by the template (the whole file if unmarked)."""
    lines = text.split("\n")
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line == CHUNK_MARKER:
            chunks.append([])
        else:
            chunks[-1].append(line)
    return [joined for joined in ("\n".join(chunk).strip("\n") for chunk in chunks) if joined]


def _format_unique(items: list[tuple[str, str]]) -> list[str]:
    if sum(text.count("\n") for _, text in items) > PARALLEL_THRESHOLD_LINES and (os.cpu_count() or 1) > 1:
        with ProcessPoolExecutor() as pool:
            return list(pool.map(_format_chunk, items, chunksize=max(1, len(items) // 16)))
    return [_format_chunk(item) for item in items]


def format_files(files: dict[str, str], cache_dir: Path | None = None, use_cache: bool = True) -> dict[str, str]:
    cache = (cache_dir or default_cache_dir()) if use_cache else None
    formatted: dict[str, str] = {}
    pending: dict[str, tuple[str, list[str]]] = {}  # path -> (cache key, its chunks)
    for path, text in files.items():
        if not path.endswith(".py"):
            formatted[path] = text
            continue
        key = _cache_key(text)
        cached = cache / key if cache else None
        if cached is not None and cached.is_file():
            formatted[path] = cached.read_text(encoding="utf-8")
        else:
            pending[path] = (key, split_chunks(text))
    unique: dict[str, str] = {}  # chunk text -> the first path it came from (for error messages)
    for path, (_, chunks) in pending.items():
        for chunk in chunks:
            unique.setdefault(chunk, path)
    results = dict(zip(unique, _format_unique([(path, chunk) for chunk, path in unique.items()]), strict=True))
    for path, (key, chunks) in pending.items():
        text = "\n\n".join(results[chunk] for chunk in chunks)
        formatted[path] = text
        if cache is not None:
            _store(cache, key, text)
    return dict(sorted(formatted.items()))
