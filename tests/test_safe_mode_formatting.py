"""black's private ``_format_str_once`` (mcpgen.pipeline.formatting) is a fast path like the runtime's: in safe mode,
or when its self-check fails, the formatter uses ``black.format_str``, and the generated code is byte-identical."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import black
import pytest

from mcpgen.pipeline import formatting

ROOT = Path(__file__).resolve().parents[1]
# Chunks of the kinds the templates render, several of which format_str would pass over twice.
CHUNKS = [
    "class A( BaseModel ):\n    x : int=1\n    y: list[ str ] = Field( default_factory = list, )",
    "def f(a,b):\n  return {'k':[a,b]}",
    "X = Literal['a','b','c','d','e','f','g','h','i','j','k','l','m','n','o','p','q','r','s','t','u','v','w']",
]


@pytest.fixture(autouse=True)
def decide_afresh() -> Iterator[None]:
    formatting.one_pass_formatter.cache_clear()
    yield
    formatting.one_pass_formatter.cache_clear()


def _formatted() -> list[str]:
    return [formatting._format_chunk(("x.py", chunk)) for chunk in CHUNKS]


def test_safe_mode_and_a_failed_check_format_the_same(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(formatting.SAFE_MODE_VARIABLE, raising=False)
    expected = _formatted()
    assert formatting.one_pass_formatter() is not None
    assert expected == [black.format_str(chunk + "\n", mode=formatting.black_mode()) for chunk in CHUNKS]

    monkeypatch.setenv(formatting.SAFE_MODE_VARIABLE, "1")
    formatting.one_pass_formatter.cache_clear()
    assert formatting.one_pass_formatter() is None and _formatted() == expected
    key_safe = formatting._cache_key("x = 1\n")
    monkeypatch.delenv(formatting.SAFE_MODE_VARIABLE)
    assert formatting._cache_key("x = 1\n") != key_safe  # the two paths do not share cache entries

    monkeypatch.delattr(black, "_format_str_once")  # a black that dropped it
    formatting.one_pass_formatter.cache_clear()
    with caplog.at_level(logging.WARNING, logger="mcpgen.pipeline.formatting"):
        assert formatting.one_pass_formatter() is None and _formatted() == expected
    assert "black-format-once off" in caplog.text


@pytest.mark.slow
def test_generated_code_is_byte_identical_in_safe_mode() -> None:
    """The whole of generated/, formatted with format_str (safe mode, no cache): `generate --check` finds it equal."""
    env = {**os.environ, formatting.SAFE_MODE_VARIABLE: "1", "MCPGEN_NO_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "generate", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
