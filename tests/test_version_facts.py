"""Version facts: generated once into mcp_bindings.protocol_facts (IR + the reviewed overlay spec/overlay/versions.json)
and read by the runtime in exactly one module, mcpgen_runtime.versions.

- no other runtime module holds a protocol version string literal (an `ast` scan, so docstrings and comments that
  cite a version are fine, a "2025-11-25" in code is not);
- the runtime's facts are the generated ones, and the generated ones agree with each version's own bindings;
- the overlay is checked: every vendored version classified, every entry citing evidence, every named error code
  defined by the modern schemas; each problem is reported with the overlay's JSON pointer.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

import mcp_bindings
from mcp_bindings import protocol_facts
from mcpgen.errors import SpecError, SpecErrors
from mcpgen.ir import VersionIR
from mcpgen.pipeline.generate import build_irs
from mcpgen.pipeline.version_facts import OVERLAY_PATH, build_protocol_facts
from mcpgen_runtime import versions

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime" / "mcpgen_runtime"
SPEC = ROOT / "spec"
THE_ONE_MODULE = RUNTIME / "versions.py"
VERSION_LITERAL = re.compile(r"\d{4}-\d{2}-\d{2}")


def version_literals(path: Path) -> list[str]:
    """`file:line: 'literal'` for every string constant in the module that is a dated protocol version."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and VERSION_LITERAL.fullmatch(node.value)
    ]


def test_no_runtime_module_but_one_holds_a_protocol_version_literal() -> None:
    found = [hit for path in sorted(RUNTIME.rglob("*.py")) if path != THE_ONE_MODULE for hit in version_literals(path)]
    assert not found, "protocol versions come from mcpgen_runtime.versions:\n" + "\n".join(found)


def test_the_scan_finds_a_literal(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Docstrings may cite 2025-11-25."""\nX = ("2025-11-25",)  # so may comments: 2024-11-05\n')
    assert [hit.split(": ", 1)[1] for hit in version_literals(module)] == ["'2025-11-25'"]


def test_the_runtime_reads_the_generated_facts() -> None:
    assert versions.SUPPORTED_VERSIONS == protocol_facts.SUPPORTED_VERSIONS
    assert versions.LEGACY_VERSIONS == protocol_facts.LEGACY_VERSIONS
    assert versions.MODERN_VERSIONS == protocol_facts.MODERN_VERSIONS
    assert versions.SUPPORTED_VERSIONS == (*versions.LEGACY_VERSIONS, *versions.MODERN_VERSIONS)
    assert versions.SUPPORTED_VERSIONS_NEWEST_FIRST == tuple(reversed(versions.SUPPORTED_VERSIONS))
    assert versions.LATEST_LEGACY_VERSION == protocol_facts.LATEST_VERSIONS["legacy"] == versions.LEGACY_VERSIONS[-1]
    assert versions.LATEST_MODERN_VERSION == protocol_facts.LATEST_VERSIONS["modern"] == versions.MODERN_VERSIONS[-1]
    assert versions.BATCH_VERSIONS == protocol_facts.BATCH_VERSIONS
    assert versions.SSE_PRIMING_VERSIONS == protocol_facts.SSE_PRIMING_VERSIONS
    assert versions.PROGRESS_MESSAGE_VERSIONS == protocol_facts.PROGRESS_MESSAGE_VERSIONS
    assert versions.MODERN_ONLY_METHODS == protocol_facts.MODERN_ONLY_METHODS
    for name in ("HEADER_MISMATCH", "MISSING_REQUIRED_CLIENT_CAPABILITY", "UNSUPPORTED_PROTOCOL_VERSION"):
        assert getattr(versions, name) == getattr(protocol_facts, name)
    for name in ("PROTOCOL_VERSION_META", "CLIENT_CAPABILITIES_META", "CLIENT_INFO_META", "LOG_LEVEL_META"):
        assert getattr(versions, name) == getattr(protocol_facts, name)
    for version in versions.SUPPORTED_VERSIONS:
        assert versions.resource_not_found_code(version) == protocol_facts.RESOURCE_NOT_FOUND_CODES[version]
        assert versions.is_modern(version) == (protocol_facts.ERAS[version] == "modern")


def test_the_facts_say_what_the_spec_says() -> None:
    """The facts issue 21 names, spelled out once (the overlay's evidence is the spec text; this is the review)."""
    assert versions.LEGACY_VERSIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert versions.MODERN_VERSIONS == ("2026-07-28",)
    assert protocol_facts.UNSERVED_VERSIONS == ("draft",) and "draft" not in versions.SUPPORTED_VERSIONS
    assert versions.BATCH_VERSIONS == {"2025-03-26"}
    assert versions.SSE_PRIMING_VERSIONS == {"2025-11-25", "2026-07-28"}
    assert versions.MODERN_ONLY_METHODS == {"server/discover", "subscriptions/listen"}
    assert [versions.resource_not_found_code(v) for v in versions.SUPPORTED_VERSIONS] == [-32002] * 4 + [-32602]
    assert (versions.HEADER_MISMATCH, versions.MISSING_REQUIRED_CLIENT_CAPABILITY) == (-32020, -32021)
    assert versions.UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert versions.SUBSCRIPTION_ID_META == "io.modelcontextprotocol/subscriptionId"
    assert versions.SERVER_INFO_META == "io.modelcontextprotocol/serverInfo"
    assert protocol_facts.CAPABILITIES["2025-11-25"]["tools/call"] == "tools"
    assert protocol_facts.CAPABILITIES["2024-11-05"]["resources/subscribe"] == "resources.subscribe"


@pytest.mark.parametrize("version", protocol_facts.SUPPORTED_VERSIONS)
def test_the_method_sets_are_each_versions_own(version: str) -> None:
    methods = importlib.import_module(f"{mcp_bindings.MODULES[version]}.methods")
    for name in ("CLIENT_REQUESTS", "SERVER_REQUESTS", "CLIENT_NOTIFICATIONS", "SERVER_NOTIFICATIONS"):
        assert getattr(protocol_facts, name)[version] == {str(m) for m in getattr(methods, name)}, name
    assert protocol_facts.INPUT_REQUESTS[version] == {str(m) for m in getattr(methods, "INPUT_REQUESTS", ())}


def test_importing_the_runtime_facts_loads_no_model() -> None:
    import subprocess
    import sys

    code = (
        "import json, sys, mcpgen_runtime.versions; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'mcp_bindings'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["mcp_bindings", "mcp_bindings.protocol_facts"]


# -- the overlay is checked --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def irs() -> list[VersionIR]:
    built, _ = build_irs(SPEC, ())
    return built


def facts_with(tmp_path: Path, irs: list[VersionIR], edit: object) -> list[SpecError]:
    overlay = json.loads((SPEC / OVERLAY_PATH).read_text(encoding="utf-8"))
    edit(overlay)  # type: ignore[operator]
    spec = tmp_path / "spec"
    (spec / OVERLAY_PATH).parent.mkdir(parents=True)
    (spec / OVERLAY_PATH).write_text(json.dumps(overlay), encoding="utf-8")
    with pytest.raises(SpecErrors) as raised:
        build_protocol_facts(spec, irs)
    return raised.value.errors


def test_the_real_overlay_builds(irs: list[VersionIR]) -> None:
    facts = build_protocol_facts(SPEC, irs)
    assert facts is not None and [v.version for v in facts.served] == list(protocol_facts.SUPPORTED_VERSIONS)


def test_no_overlay_no_facts(tmp_path: Path, irs: list[VersionIR]) -> None:
    assert build_protocol_facts(tmp_path, irs) is None


def test_a_vendored_version_without_an_entry_is_refused(tmp_path: Path, irs: list[VersionIR]) -> None:
    errors = facts_with(tmp_path, irs, lambda o: o["versions"].pop("2025-06-18"))
    assert [(e.pointer, "no entry" in e.message) for e in errors] == [("/versions/2025-06-18", True)]


def test_an_entry_without_evidence_is_refused(tmp_path: Path, irs: list[VersionIR]) -> None:
    errors = facts_with(tmp_path, irs, lambda o: o["versions"]["2026-07-28"].pop("evidence"))
    assert any(e.pointer == "/versions/2026-07-28/evidence" for e in errors)


def test_a_version_not_vendored_is_refused(tmp_path: Path, irs: list[VersionIR]) -> None:
    errors = facts_with(
        tmp_path, irs, lambda o: o["versions"].update({"2099-01-01": {"served": False, "evidence": "x"}})
    )
    assert [e.pointer for e in errors] == ["/versions/2099-01-01"]


def test_an_error_code_the_modern_schema_does_not_define_is_refused(tmp_path: Path, irs: list[VersionIR]) -> None:
    errors = facts_with(tmp_path, irs, lambda o: o["modern_error_codes"]["HEADER_MISMATCH"].update(code=-32099))
    assert [e.pointer for e in errors] == ["/modern_error_codes/HEADER_MISMATCH"]


def test_a_bad_era_is_refused(tmp_path: Path, irs: list[VersionIR]) -> None:
    errors = facts_with(tmp_path, irs, lambda o: o["versions"]["2025-11-25"].update(era="handshake"))
    assert [e.pointer for e in errors] == ["/versions/2025-11-25/era"]
