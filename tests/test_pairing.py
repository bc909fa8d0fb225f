"""Request -> result pairing is explicit and complete for every version."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mcpgen.ir import VersionIR
from mcpgen.pipeline.build import build_version_ir
from mcpgen.pipeline.protocol import RESULT_EXCEPTIONS
from mcpgen.pipeline.spec_loader import list_versions, module_name_for

SPEC = Path(__file__).resolve().parents[1] / "spec"
VERSIONS = list_versions(SPEC)


@pytest.fixture(scope="module", params=VERSIONS)
def version_ir(request: pytest.FixtureRequest) -> VersionIR:
    return build_version_ir(SPEC, request.param)


def test_six_versions_are_vendored() -> None:
    assert VERSIONS == ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "draft"]


def test_every_request_has_a_result_type(version_ir: VersionIR) -> None:
    requests = [m for m in version_ir.methods if m.kind == "request"]
    assert len(requests) >= 10
    names = {d.name for d in version_ir.definitions}
    for method in requests:
        assert method.result_type in names, method
        assert method.result_rule in ("naming", "exception", "response-definition"), method


def test_generated_tables_agree_with_the_ir(version_ir: VersionIR) -> None:
    package = importlib.import_module(f"mcp_bindings.{module_name_for(version_ir.version)}")
    requests = {m.method: m for m in version_ir.methods if m.kind == "request"}
    assert set(package.REQUEST_TYPES) == set(requests)
    for method, info in requests.items():
        request_class = package.REQUEST_TYPES[method]
        assert request_class.__name__ == info.message_type
        assert request_class.METHOD == method
        assert request_class.RESULT is package.RESULT_TYPES[method]
        assert package.RESULT_TYPES[method].__name__ == info.result_type
    notifications = {m.method for m in version_ir.methods if m.kind == "notification"}
    assert set(package.NOTIFICATION_TYPES) == notifications
    assert {str(m) for m in package.Method} == set(requests) | notifications


def test_exception_table_methods_return_empty_result() -> None:
    for version in VERSIONS:
        ir = build_version_ir(SPEC, version)
        for method in ir.methods:
            if method.method in RESULT_EXCEPTIONS:
                assert method.result_type == "EmptyResult", (version, method)
                assert method.result_rule == "exception"


def test_known_facts_of_the_real_schemas() -> None:
    by_version = {v: {m.method: m for m in build_version_ir(SPEC, v).methods} for v in VERSIONS}
    assert "elicitation/create" not in by_version["2025-03-26"]
    assert by_version["2025-06-18"]["elicitation/create"].direction == "server_to_client"
    assert by_version["2025-06-18"]["ping"].direction == "both"
    assert by_version["2024-11-05"]["tools/call"].result_type == "CallToolResult"
    # 2025-11-25: task-augmented requests may get CreateTaskResult instead.
    alternatives = {a.type for a in by_version["2025-11-25"]["tools/call"].alternatives}
    assert alternatives == {"CreateTaskResult"}
    assert {a.type for a in by_version["2025-11-25"]["elicitation/create"].alternatives} == {"CreateTaskResult"}
    assert by_version["2025-11-25"]["tasks/get"].direction == "both"
    # 2026-07-28: stateless; no initialize/ping/logging, server->client requests ride in InputRequiredResult.
    latest = by_version["2026-07-28"]
    for removed in ("initialize", "ping", "logging/setLevel"):
        assert removed not in latest
    assert {"server/discover", "subscriptions/listen"} <= set(latest)
    assert latest["tools/call"].alternatives[0].type == "InputRequiredResult"
    assert latest["tools/call"].alternatives[0].value == "input_required"
    assert latest["sampling/createMessage"].delivery == "input_request"
    assert by_version["draft"].keys() == latest.keys()


def test_degenerate_2026_unions_are_documented() -> None:
    ir = build_version_ir(SPEC, "2026-07-28")
    assert ir.slot("ServerRequest").form == "absent"
    assert ir.slot("ClientNotification").form == "single"
    assert ir.slot("ClientNotification").members == ("CancelledNotification",)
    assert ir.slot("ClientResult").form == "alias"
    interfaces = (SPEC.parent / "generated/mcp_bindings/v2026_07_28/INTERFACES.md").read_text()
    assert "identical to CancelledNotification" in interfaces
    assert "InputRequiredResult" in interfaces
    package = importlib.import_module("mcp_bindings.v2026_07_28")
    assert not hasattr(package, "parse_server_request")
    note = package.parse_client_notification(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    assert type(note) is package.CancelledNotification


def test_capabilities_are_in_the_ir() -> None:
    methods = {m.method: m for m in build_version_ir(SPEC, "2025-06-18").methods}
    assert methods["tools/call"].capability == "tools"
    assert methods["resources/subscribe"].capability == "resources.subscribe"
    assert methods["notifications/tools/list_changed"].capability == "tools.listChanged"
    assert methods["sampling/createMessage"].capability == "sampling"
    assert methods["completion/complete"].capability == "completions"
    assert methods["initialize"].capability is None and methods["ping"].capability is None
    # 2024-11-05 has no completions capability, so completion/complete is not gated there.
    old = {m.method: m for m in build_version_ir(SPEC, "2024-11-05").methods}
    assert old["completion/complete"].capability is None
