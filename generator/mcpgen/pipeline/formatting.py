"""Stage 4: let black own the layout of every generated Python file.

Pipeline position: render -> **format** -> write or check. Templates do not fight whitespace.

black is the slowest stage by far (about 3,500 lines a second), so:

- templates mark top-level statements with CHUNK_MARKER lines; a marked file is formatted chunk by
  chunk and each distinct chunk only once per run. Most classes are identical across protocol
  versions (draft repeats 2026-07-28 entirely), so this removes over half of black's work. Chunks are
  joined by two blank lines, which black accepts at the top level: the result is black-stable, and
  tests/test_lint.py checks that it is;
- chunks that differ only in the protocol version they name (`/specification/2025-06-18/...` in a
  docstring, `mcp_bindings.v2025_06_18`) are formatted once: every date is swapped for a placeholder
  of the same length before black and put back after. black lays code out by token and by length,
  never by the digits inside a string or a name, and keeps them in order, so the result is what
  black gives for the original chunk (a count of the placeholders checks that it kept them all);
- whole files are cached by the sha256 of (black version, mode, unformatted text), the way black
  caches its own runs; a key is its input, so an entry can never be stale;
- what is left is formatted in parallel (ChunkFormatter), starting while later versions still render.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import black

logger = logging.getLogger(__name__)

BLACK_VERSION = version("black")  # black does not re-export __version__ for type checkers
LINE_LENGTH = 120
# What the cache key says about the formatting, without importing black for it (safe mode: format_str's two
# passes, kept apart though the text is the same).
_MODE_KEY = f"line_length={LINE_LENGTH} target_versions=py311"
CHUNK_MARKER = "#@mcpgen:chunk"
# Below this many lines to format, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD_LINES = 3000
# Lines of chunks handed to a worker at once: large enough that sending them costs little, small
# enough that both workers finish together.
BATCH_LINES = 400


# YYYY-MM-DD and YYYY_MM_DD; the placeholder is digits too, so a module name stays a valid identifier.
_DATE = re.compile(r"\d{4}([-_])\d{2}\1\d{2}")
_PLACEHOLDER = re.compile(r"0000([-_])00\1\d{2}")


class FormatError(Exception):
    """A template produced Python that does not parse: a bug in a template, not in the input."""


def default_cache_dir() -> Path | None:
    if os.environ.get("MCPGEN_NO_CACHE"):
        return None
    base = os.environ.get("MCPGEN_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcpgen" / "format"


def _cache_key(text: str) -> str:
    passes = "format_str" if safe_mode() else "one-pass"
    digest = hashlib.sha256(f"{BLACK_VERSION}\0{_MODE_KEY} {passes}\0".encode())
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


@cache
def black_mode() -> black.Mode:
    """black's settings here. black is imported on first use: a run served by the cache never needs
    it, and worker processes import it while the main process renders."""
    import black
    from black.mode import TargetVersion

    return black.Mode(line_length=LINE_LENGTH, target_versions={TargetVersion.PY311})


# black.format_str formats twice whenever its input changes: once, then again on its own output, for
# rare layouts where a trailing comma added by the first pass changes the second. Chunks reached black
# without their final newline, so every one of them "changed" and paid two passes. One pass, on the
# chunk with its newline, gives black's text for every chunk rendered from the vendored schemas
# (tests/test_formatting.py checks each against format_str) at about half the cost.
#
# black keeps _format_str_once private, so it is a fast path, as the runtime's are (mcpgen_runtime.safe_mode, which
# the toolchain may not import): used only after a self-check (it exists and formats a sample as format_str does),
# and never with MCPGEN_SAFE_MODE=1. Otherwise format_str, which gives the same text (two passes when the input
# changes). The decision is made once per process; a failed self-check is logged once (WARNING).
SAFE_MODE_VARIABLE = "MCPGEN_SAFE_MODE"
_SAMPLE = "def f( a, b = 1, ) :\n  return {'x':[a,b,],}\nclass C( object ): x=1\n"


def safe_mode() -> bool:
    """The runtime's switch (``mcpgen_runtime.safe_mode.safe_mode``), read the same way."""
    return os.environ.get(SAFE_MODE_VARIABLE, "").strip() not in ("", "0")


@cache
def one_pass_formatter() -> Callable[..., str] | None:
    """black's ``_format_str_once`` when the fast path is on, else None (use ``black.format_str``)."""
    import black

    mode = black_mode()
    if safe_mode():
        logger.debug("fast path black-format-once off: %s=1", SAFE_MODE_VARIABLE)
        return None
    try:
        format_once: Callable[..., str] = getattr(black, "_format_str_once")  # noqa: B009 (private, not typed)
        if format_once(_SAMPLE, mode=mode) != black.format_str(_SAMPLE, mode=mode):
            raise ValueError("it formats a sample differently from black.format_str")
    except Exception as exc:  # anything: the private function is missing, takes other arguments or misbehaves
        logger.warning("fast path black-format-once off, using black.format_str (self-check failed: %r)", exc)
        return None
    return format_once


def _format_chunk(item: tuple[str, str]) -> str:
    import black
    from black.parsing import InvalidInput

    format_once = one_pass_formatter() or black.format_str
    path, text = item
    try:
        return format_once(text if text.endswith("\n") else text + "\n", mode=black_mode())
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


def _without_dates(chunk: str) -> tuple[str, list[str]]:
    """The chunk with every date replaced by 0000-00-NN (NN numbers them, so the placeholders keep
    their order visible) and the dates in order. More than 100 dates: the chunk is left as is."""
    dates = [match.group() for match in _DATE.finditer(chunk)]
    if not dates or len(dates) > 100:
        return chunk, []
    counter = iter(range(len(dates)))
    return _DATE.sub(lambda m: f"0000{m.group(1)}00{m.group(1)}{next(counter):02d}", chunk), dates


def _with_dates(formatted: str, dates: list[str]) -> str | None:
    """Puts the dates back; None if black did not keep every placeholder in order."""
    found = [int(match.group()[-2:]) for match in _PLACEHOLDER.finditer(formatted)]
    if found != list(range(len(dates))):
        return None
    counter = iter(dates)
    return _PLACEHOLDER.sub(lambda _: next(counter), formatted)


def _format_batch(items: list[tuple[str, str]]) -> list[str]:
    return [_format_chunk(item) for item in items]


class ChunkFormatter:
    """Formats files as they are handed over: `add` a version's files as soon as they are rendered
    and black works on them in worker processes while the next version renders; `finish` returns
    every file formatted. Without enough work to pay for starting workers (PARALLEL_THRESHOLD_LINES
    lines to format) or with one CPU, `finish` formats in this process."""

    def __init__(self, cache_dir: Path | None = None, use_cache: bool = True) -> None:
        self._cache = (cache_dir or default_cache_dir()) if use_cache else None
        self._formatted: dict[str, str] = {}  # path -> final text (not Python, or from the cache)
        self._pending: dict[str, tuple[str, list[str]]] = {}  # path -> (cache key, its chunks)
        self._generic: dict[str, tuple[str, list[str]]] = {}  # chunk -> (the chunk without dates, the dates)
        self._first_path: dict[str, str] = {}  # chunk without dates -> first path it came from (for errors)
        self._backlog: list[tuple[str, str]] = []  # (path, chunk without dates) not handed to a worker yet
        self._queued_lines = 0
        self._jobs: list[tuple[list[str], Future[list[str]]]] = []
        self._pool: ProcessPoolExecutor | None = None

    def add(self, files: dict[str, str]) -> None:
        for path, text in files.items():
            if path in self._formatted or path in self._pending:
                continue
            if not path.endswith(".py"):
                self._formatted[path] = text
                continue
            key = _cache_key(text)
            cached = self._cache / key if self._cache else None
            if cached is not None and cached.is_file():
                self._formatted[path] = cached.read_text(encoding="utf-8")
                continue
            chunks = split_chunks(text)
            self._pending[path] = (key, chunks)
            for chunk in chunks:
                if chunk not in self._generic:
                    self._generic[chunk] = generic = _without_dates(chunk)
                    if generic[0] not in self._first_path:
                        self._first_path[generic[0]] = path
                        self._queue(path, generic[0])

    def _queue(self, path: str, text: str) -> None:
        self._backlog.append((path, text))
        self._queued_lines += text.count("\n") + 1
        if self._pool is None and self._queued_lines > PARALLEL_THRESHOLD_LINES and (os.cpu_count() or 1) > 1:
            # Imports black here, once, and decides the fast path: the workers fork with both (two CPUs: no import
            # per worker, one log line).
            one_pass_formatter()
            self._pool = ProcessPoolExecutor()
        if self._pool is not None:
            self._submit(everything=False)

    def _submit(self, everything: bool) -> None:
        """Hands the backlog to the workers in batches of BATCH_LINES lines (the rest too if `everything`)."""
        assert self._pool is not None
        batch: list[tuple[str, str]] = []
        lines = 0
        for item in self._backlog:
            batch.append(item)
            lines += item[1].count("\n") + 1
            if lines >= BATCH_LINES:
                self._jobs.append(([text for _, text in batch], self._pool.submit(_format_batch, batch)))
                batch, lines = [], 0
        if everything and batch:
            self._jobs.append(([text for _, text in batch], self._pool.submit(_format_batch, batch)))
            batch = []
        self._backlog = batch

    def finish(self) -> dict[str, str]:
        """Every file added, formatted (and cached), sorted by path. Raises FormatError."""
        try:
            if self._pool is not None:
                self._submit(everything=True)
            done: dict[str, str] = {}
            for texts, job in self._jobs:
                done.update(zip(texts, job.result(), strict=True))
            done.update(zip((text for _, text in self._backlog), _format_batch(self._backlog), strict=True))
        finally:
            self.close()
        results: dict[str, str] = {}
        for chunk, (text, dates) in self._generic.items():
            restored = _with_dates(done[text], dates) if dates else done[text]
            results[chunk] = restored if restored is not None else _format_chunk((self._first_path[text], chunk))
        for path, (key, chunks) in self._pending.items():
            text = "\n\n".join(results[chunk] for chunk in chunks)
            self._formatted[path] = text
            if self._cache is not None:
                _store(self._cache, key, text)
        return dict(sorted(self._formatted.items()))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


def format_files(files: dict[str, str], cache_dir: Path | None = None, use_cache: bool = True) -> dict[str, str]:
    formatter = ChunkFormatter(cache_dir, use_cache)
    formatter.add(files)
    return formatter.finish()
