"""The formatting stage's shortcuts give exactly black's text (generator/mcpgen/pipeline/formatting.py).

Formatting is the slowest stage of `mcpgen generate`, so it takes two shortcuts that are only safe
because these tests hold for everything rendered from the vendored schemas:
- one black pass per chunk instead of black.format_str's two;
- chunks that differ only in the dates they name are formatted once, with placeholders.
Rendering keeps jinja's compiled templates in the cache directory; a cache it cannot write only costs speed.
"""

from __future__ import annotations

from pathlib import Path

import black
from pytest import MonkeyPatch

from mcpgen.pipeline import formatting
from mcpgen.pipeline.generate import build_irs
from mcpgen.pipeline.render import make_environment, render_package, render_version
from mcpgen.pipeline.spec_loader import ProjectPaths

PATHS = ProjectPaths.discover()


def rendered_chunks() -> dict[str, str]:
    """Every distinct chunk of the rendered bindings (all versions), by text -> the file it is in."""
    irs, all_versions = build_irs(PATHS.spec, ())
    environment = make_environment([PATHS.templates / "bindings"])
    files: dict[str, str] = {}
    for ir in irs:
        files.update(render_version(environment, ir))
    files.update(render_package(environment, all_versions, "0" * 64))
    chunks: dict[str, str] = {}
    for path, text in files.items():
        if path.endswith(".py"):
            for chunk in formatting.split_chunks(text):
                chunks.setdefault(chunk, path)
    return chunks


def test_one_black_pass_gives_what_black_format_str_gives() -> None:
    differing = [
        path
        for chunk, path in rendered_chunks().items()
        if formatting._format_chunk((path, chunk)) != black.format_str(chunk, mode=formatting.black_mode())
    ]
    assert not differing, f"one pass differs from black.format_str in chunks of {sorted(set(differing))}"


def test_dates_are_put_back_in_order_after_formatting() -> None:
    chunk = 'x = ["2025-06-18", "v2025_11_25"]  # see /specification/2024-11-05/\nclass A:\n    """Since 2025-03-26."""'
    generic, dates = formatting._without_dates(chunk)
    assert dates == ["2025-06-18", "2025_11_25", "2024-11-05", "2025-03-26"]
    assert "2025" not in generic and len(generic) == len(chunk)
    restored = formatting._with_dates(formatting._format_chunk(("x.py", generic)), dates)
    assert restored == black.format_str(chunk, mode=formatting.black_mode())


def test_a_formatter_that_drops_a_placeholder_is_noticed() -> None:
    assert formatting._with_dates('x = "0000-00-00"\n', ["2025-06-18", "2025-11-25"]) is None


def test_chunk_formatter_formats_each_chunk_in_process_or_in_workers() -> None:
    def file_of(count: int) -> str:
        return "\n".join(
            f"{formatting.CHUNK_MARKER}\nvalue_{n} = {{'a':1, 'since': '2025-0{n % 9 + 1}-01'}}" for n in range(count)
        )

    for count in (3, formatting.PARALLEL_THRESHOLD_LINES + 200):  # the second one goes to worker processes
        formatter = formatting.ChunkFormatter(use_cache=False)
        formatter.add({"a.py": file_of(count), "notes.md": "kept as is"})
        expected = "\n\n".join(
            black.format_str(chunk, mode=formatting.black_mode()) for chunk in formatting.split_chunks(file_of(count))
        )
        assert formatter.finish() == {"a.py": expected, "notes.md": "kept as is"}


def test_compiled_templates_are_kept_and_an_unwritable_cache_costs_only_speed(
    tmp_path: Path, monkeypatch: MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPGEN_NO_CACHE", raising=False)
    monkeypatch.setenv("MCPGEN_CACHE_DIR", str(tmp_path / "cache"))
    make_environment([PATHS.templates / "bindings"]).get_template("models.py.j2")
    assert list((tmp_path / "cache" / "mcpgen").glob("templates-*/*.cache"))
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("MCPGEN_CACHE_DIR", str(blocked))
    make_environment([PATHS.templates / "bindings"]).get_template("models.py.j2")  # no error: the cache is skipped
