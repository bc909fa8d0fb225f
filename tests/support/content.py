"""What tests read out of results: typed results (the bindings, the official SDK) and plain JSON dicts alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, Mapping) else getattr(item, name)


def text_of(result: Any) -> str:
    """The text of a result whose content is one text block; fails the test on any other content."""
    blocks = list(_field(result, "content"))
    assert len(blocks) == 1, f"expected one content block, got {blocks!r}"
    (block,) = blocks
    assert _field(block, "type") == "text", f"expected a text block, got {block!r}"
    return str(_field(block, "text"))
