"""Every upstream example of MCP 2026-07-28 validates against the binding of its name and round-trips exactly.

The examples live in spec/2026-07-28/examples/<TypeName>/*.json; the directory name is the schema
definition the file is an instance of.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from mcp_bindings import v2026_07_28

EXAMPLES = Path(__file__).resolve().parents[1] / "spec" / "2026-07-28" / "examples"
EXPECTED_COUNT = 129

FILES = sorted(EXAMPLES.glob("*/*.json"))


def _typed(value: Any) -> Any:
    """JSON value with its JSON types made explicit, so 1 != 1.0 and true != 1."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(getattr(v2026_07_28, name))


def test_every_example_is_collected() -> None:
    assert len(FILES) == EXPECTED_COUNT


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_example_validates_and_round_trips(path: Path) -> None:
    name = path.parent.name
    assert hasattr(v2026_07_28, name), f"mcp_bindings.v2026_07_28 has no {name}"
    original = path.read_text(encoding="utf-8")
    adapter = _adapter(name)
    value = adapter.validate_json(original)
    dumped = adapter.dump_json(value, exclude_unset=True, by_alias=True)
    assert json.loads(dumped) == json.loads(original)
    assert _typed(json.loads(dumped)) == _typed(json.loads(original))
    # Validating the Python form of the JSON gives the same answer as validating the text.
    again = adapter.validate_python(json.loads(original))
    assert _typed(json.loads(adapter.dump_json(again, exclude_unset=True, by_alias=True))) == _typed(
        json.loads(original)
    )
