"""Two generations under different PYTHONHASHSEED values produce identical bytes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DIGEST_SCRIPT = """
import hashlib
from mcpgen.pipeline.generate import GenerationRequest, generate_files
from mcpgen.pipeline.spec_loader import ProjectPaths
files = generate_files(GenerationRequest(ProjectPaths.discover()))
digest = hashlib.sha256()
for path, text in sorted(files.items()):
    digest.update(path.encode() + b"\\0" + text.encode() + b"\\0")
print(len(files), digest.hexdigest())
"""


def _generation_digest(seed: str, cache_dir: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "MCPGEN_CACHE_DIR": str(cache_dir)}
    completed = subprocess.run(
        [sys.executable, "-c", DIGEST_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def test_generation_is_identical_under_different_hash_seeds(tmp_path: Path) -> None:
    # Separate format caches, so each run really renders and formats from scratch.
    first = _generation_digest("1", tmp_path / "cache-1")
    second = _generation_digest("4242", tmp_path / "cache-2")
    assert first == second
    count = int(first.split()[0])
    assert count > 30, first


def test_generation_matches_committed_tree_byte_for_byte() -> None:
    committed = hashlib.sha256()
    for path in sorted((ROOT / "generated").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            relative = path.relative_to(ROOT / "generated").as_posix()
            committed.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    fresh = _generation_digest("7", ROOT / ".pytest_cache" / "determinism-cache")
    assert fresh.split()[1] == committed.hexdigest()
