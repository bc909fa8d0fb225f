"""Skill directories written on disk for the skills tests (tests/runtime/test_skills_*.py)."""

from __future__ import annotations

import base64
from pathlib import Path

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def write_skill(root: Path, name: str, files: dict[str, bytes | str] | None = None, extra: str = "") -> Path:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n\nBody.\n")
    for path, content in (files or {}).items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    return directory
