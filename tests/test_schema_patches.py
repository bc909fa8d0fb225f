"""The known-defect patches in spec/patches/: each one still applies, cites its evidence, and fixes what it says.

Every patch replaces a value the TypeScript source (schema/<version>/schema.ts upstream) declares wider than the
JSON Schema generated from it; docs/explanation/parity.md ("Value types against the TypeScript source") lists what was
compared and why the other `number` -> `integer` narrowings are left alone. For each patch this checks, against
the vendored schema before and after patching, that the pointer held the old value and now holds the new one; and
for each defect, that `jsonschema` rejected the peers' real value before the patch and that the generated model
accepts it now and dumps it back exactly.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from mcp_bindings import MODULES
from mcpgen.pipeline.patches import resolve_pointer
from mcpgen.pipeline.spec_loader import load_version

SPEC = Path(__file__).resolve().parents[1] / "spec"
PATCH_FILES = sorted((SPEC / "patches").glob("*/*.json"))
ELICITATION_VERSIONS = ("2025-06-18", "2025-11-25", "2026-07-28", "draft")


def vendored(version: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((SPEC / version / "schema.json").read_text(encoding="utf-8"))
    return document


def model(version: str, name: str) -> type[BaseModel]:
    cls: type[BaseModel] = getattr(importlib.import_module(MODULES[version]), name)
    return cls


def validator(document: dict[str, Any], definition: str) -> jsonschema.protocols.Validator:
    """A validator of one definition of `document` (the definitions stay resolvable by reference)."""
    defs_key = "$defs" if "$defs" in document else "definitions"
    schema = {"$schema": document["$schema"], defs_key: document[defs_key], "$ref": f"#/{defs_key}/{definition}"}
    return jsonschema.validators.validator_for(schema)(schema)


def typed(value: Any) -> Any:
    """JSON with its types made explicit: 95.5 vs 95 vs "95.5" vs True all differ."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return (type(value).__name__, value)


def round_trip(cls: type[BaseModel], instance: Any) -> Any:
    text = json.dumps(instance)
    return json.loads(cls.model_validate_json(text).model_dump_json(exclude_unset=True, by_alias=True))


# -- every patch file --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("patch_path", PATCH_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_patch_still_applies_and_cites_the_typescript_source(patch_path: Path) -> None:
    version = patch_path.parent.name
    patch = json.loads(patch_path.read_text(encoding="utf-8"))
    # (draft's 001 cites 2026-07-28's schema.ts, whose JSONValue declaration draft shares word for word.)
    assert re.search(r"schema/[0-9a-z-]+/schema\.ts", patch["evidence"]), "cite the TypeScript declaration"
    before, after = vendored(version), load_version(SPEC, version).document
    for operation in patch["operations"]:
        assert operation["op"] == "replace"
        assert resolve_pointer(before, operation["path"]) == operation["old"]
        assert resolve_pointer(after, operation["path"]) == operation["new"]


def test_the_patched_versions_are_the_expected_ones() -> None:
    # A new patch gets its own regression case below; this list makes forgetting that fail.
    assert [f"{p.parent.name}/{p.name}" for p in PATCH_FILES] == [
        "2025-06-18/001-elicitresult-content-number.json",
        "2025-11-25/001-elicitresult-content-number.json",
        "2026-07-28/001-jsonvalue-number-and-null.json",
        "2026-07-28/002-elicitresult-content-number.json",
        "draft/001-jsonvalue-number-and-null.json",
        "draft/002-elicitresult-content-number.json",
    ]


# -- ElicitResult.content numbers (*-elicitresult-content-number) ------------------------------------------------

# What a client answers a form with a NumberSchema field (the conformance suite's SEP-1034 default is 95.5), an
# integer one, a string, a boolean: each must come back with the same JSON type.
ANSWER = {"action": "accept", "content": {"score": 95.5, "age": 30, "name": "Ada", "verified": True, "low": -0.25}}


@pytest.mark.parametrize("version", ELICITATION_VERSIONS)
def test_elicit_result_accepts_non_integer_numbers_and_round_trips_exactly(version: str) -> None:
    assert not validator(vendored(version), "ElicitResult").is_valid(ANSWER), "the unpatched schema rejected 95.5"
    assert validator(load_version(SPEC, version).document, "ElicitResult").is_valid(ANSWER)
    assert typed(round_trip(model(version, "ElicitResult"), ANSWER)) == typed(ANSWER)


@pytest.mark.parametrize("version", ELICITATION_VERSIONS)
def test_elicit_result_content_is_otherwise_as_narrow_as_the_typescript(version: str) -> None:
    # schema.ts: string | number | boolean (| string[] from 2025-11-25). Not null, not objects, not "95.5" as 95.5.
    cls = model(version, "ElicitResult")
    for value in (None, {"nested": 1}, [1.5]):
        with pytest.raises(ValidationError):
            cls.model_validate_json(json.dumps({"action": "accept", "content": {"x": value}}))
    assert round_trip(cls, {"action": "accept", "content": {"x": "95.5"}}) == {
        "action": "accept",
        "content": {"x": "95.5"},
    }
    string_arrays = {"action": "accept", "content": {"tags": ["a", "b"]}}
    if version == "2025-06-18":
        with pytest.raises(ValidationError):
            cls.model_validate(string_arrays)
    else:
        assert round_trip(cls, string_arrays) == string_arrays


# -- JSONValue (*-jsonvalue-number-and-null) -----------------------------------------------------------------------


@pytest.mark.parametrize("version", ("2026-07-28", "draft"))
def test_json_value_admits_every_number_and_null(version: str) -> None:
    # JSONValue is what sampling metadata and capability objects hold in these versions (structuredContent is
    # untyped there): a float or a null inside them is ordinary JSON a TypeScript peer sends.
    metadata = {"ratio": 1.5, "count": 2, "missing": None, "nested": [0.1, None, {"x": -2.5}]}
    instance = {"messages": [], "maxTokens": 10, "metadata": metadata}
    assert not validator(vendored(version), "CreateMessageRequestParams").is_valid(instance)
    assert validator(load_version(SPEC, version).document, "CreateMessageRequestParams").is_valid(instance)
    assert typed(round_trip(model(version, "CreateMessageRequestParams"), instance)) == typed(instance)
