"""The generated bindings of the tasks extension (mcp_bindings.extensions.tasks) against its specification text.

Every JSON example of the vendored spec/extensions/tasks/draft/tasks.md validates into the model its message names
and dumps back to the same JSON; wrong statuses, missing fields and a method of another message are refused; the
types the extension copies from 2026-07-28 are that version's classes; and the extension's pipeline refuses what it
cannot account for (a schema that is not in the manifest, a method the overlay names that the schema lacks).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from mcp_bindings import v2026_07_28 as core
from mcp_bindings.extensions import EXTENSIONS, tasks
from mcpgen.errors import SpecError, SpecErrors
from mcpgen.pipeline.extensions import build_extension_ir, list_extensions
from mcpgen.pipeline.spec_loader import list_versions

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
TEXT = SPEC / "extensions" / "tasks" / "draft" / "tasks.md"
GET_TASK_RESULT: TypeAdapter[Any] = TypeAdapter(tasks.GetTaskResult)
DETAILED_TASK: TypeAdapter[Any] = TypeAdapter(tasks.DetailedTask)


def text_examples() -> list[dict[str, Any]]:
    """The ```json blocks of tasks.md (the jsonc ones carry comments and elisions: not JSON)."""
    blocks = re.findall(r"```json\n(.*?)```", TEXT.read_text(encoding="utf-8"), re.S)
    return [json.loads(block) for block in blocks]


def model_for(message: dict[str, Any]) -> tuple[str, Any]:
    """(what it is, a parser) for one example, chosen by its method or its result's resultType, as a peer would."""
    method = message.get("method")
    if method is not None:
        by_method = {
            "tasks/get": tasks.GetTaskRequest,
            "tasks/update": tasks.UpdateTaskRequest,
            "tasks/cancel": tasks.CancelTaskRequest,
            "notifications/tasks": tasks.TaskStatusNotification,
            "tools/call": core.CallToolRequest,
        }
        return method, by_method[method].model_validate
    if "error" in message:
        return "error", core.Error.model_validate
    result = message["result"]
    if result.get("resultType") == "task":
        return "CreateTaskResult", tasks.CreateTaskResult.model_validate
    if "status" in result:
        return "GetTaskResult", GET_TASK_RESULT.validate_python
    return "empty result", tasks.UpdateTaskResult.model_validate


EXAMPLES = text_examples()


def test_the_text_has_examples_of_every_message() -> None:
    kinds = {model_for(example)[0] for example in EXAMPLES}
    assert {"tasks/get", "tasks/update", "notifications/tasks", "CreateTaskResult", "GetTaskResult"} <= kinds
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_every_text_example_validates_and_round_trips(index: int) -> None:
    example = EXAMPLES[index]
    _kind, parse = model_for(example)
    body = example.get("result", example.get("error"))
    message = example if "method" in example else body
    if message.get("method") == "tools/call" and "_meta" not in message["params"]:
        # The text elides the per-request _meta that 2026-07-28 requires (the client connection fills it in):
        # the one the text's Capability Negotiation shows, declaring the extension.
        message["params"]["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": tasks.BASE_PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {tasks.EXTENSION_ID: {}}},
        }
    model = parse(message)
    assert model.model_dump(by_alias=True, mode="json", exclude_unset=True) == message


def test_detailed_task_is_parsed_by_status() -> None:
    common = {"taskId": "t1", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z"}
    assert isinstance(DETAILED_TASK.validate_python({**common, "status": "working", "ttlMs": None}), tasks.WorkingTask)
    completed = DETAILED_TASK.validate_python({**common, "status": "completed", "ttlMs": 60000, "result": {"a": 1}})
    assert isinstance(completed, tasks.CompletedTask) and completed.result == {"a": 1}
    failed = DETAILED_TASK.validate_python(
        {**common, "status": "failed", "ttlMs": None, "error": {"code": -32603, "message": "boom"}}
    )
    assert isinstance(failed, tasks.FailedTask) and isinstance(failed.error, core.Error)
    elicit = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "ok?", "requestedSchema": {"type": "object", "properties": {}}},
    }
    waiting = DETAILED_TASK.validate_python(
        {**common, "status": "input_required", "ttlMs": None, "inputRequests": {"confirm": elicit}}
    )
    assert isinstance(waiting, tasks.InputRequiredTask)
    # The extension's inputRequests hold 2026-07-28's own classes: one ElicitRequest class for the runtime.
    assert isinstance(waiting.input_requests["confirm"], core.ElicitRequest)


@pytest.mark.parametrize(
    "change",
    [
        {"status": "done"},  # not a status
        {"status": "completed"},  # completed without its result
        {"status": "failed"},  # failed without its error
        {"status": "input_required"},  # input_required without inputRequests
        {"ttlMs": "soon"},
        {"taskId": None},
    ],
)
def test_wrong_tasks_are_refused(change: dict[str, Any]) -> None:
    task = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttlMs": None, **change}
    with pytest.raises(ValidationError):
        DETAILED_TASK.validate_python(task)
    with pytest.raises(ValidationError):
        GET_TASK_RESULT.validate_python({**task, "resultType": "complete"})


def test_ttl_is_required_but_may_be_null() -> None:
    task = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x"}
    with pytest.raises(ValidationError):
        tasks.Task.model_validate(task)
    assert tasks.Task.model_validate({**task, "ttlMs": None}).ttl_ms is None


def test_create_task_result_is_told_apart_by_result_type() -> None:
    created = {"taskId": "t1", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttlMs": 1000}
    assert tasks.CreateTaskResult.model_validate({**created, "resultType": "task"}).result_type == "task"
    with pytest.raises(ValidationError):
        tasks.CreateTaskResult.model_validate({**created, "resultType": "complete"})
    with pytest.raises(ValidationError):  # a tasks/get answer is a complete result, never a task handle
        GET_TASK_RESULT.validate_python({**created, "resultType": "task"})


def test_requests_refuse_another_method_and_need_a_task_id() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t1"}}
    assert tasks.GetTaskRequest.model_validate(request).params.task_id == "t1"
    with pytest.raises(ValidationError):
        tasks.GetTaskRequest.model_validate({**request, "method": "tasks/result"})
    with pytest.raises(ValidationError):
        tasks.CancelTaskRequest.model_validate({**request, "method": "tasks/cancel", "params": {}})
    with pytest.raises(ValidationError):  # inputResponses is required
        tasks.UpdateTaskRequest.model_validate({**request, "method": "tasks/update"})
    # GetTaskResult is a union (one class per status), not a class: parsed with a TypeAdapter, so no RESULT.
    assert not hasattr(tasks.GetTaskRequest, "RESULT")
    assert tasks.UpdateTaskRequest.RESULT is tasks.UpdateTaskResult
    assert tasks.CancelTaskRequest.RESULT is tasks.CancelTaskResult


def test_methods_constants_and_identity() -> None:
    assert tasks.EXTENSION_ID == "io.modelcontextprotocol/tasks"
    assert EXTENSIONS == {tasks.EXTENSION_ID: "mcp_bindings.extensions.tasks"}
    assert tasks.BASE_PROTOCOL_VERSION == "2026-07-28"
    assert {str(m) for m in tasks.Method} == {"tasks/get", "tasks/update", "tasks/cancel", "notifications/tasks"}
    assert tasks.CLIENT_REQUESTS == {tasks.Method.TASKS_GET, tasks.Method.TASKS_UPDATE, tasks.Method.TASKS_CANCEL}
    assert tasks.SERVER_NOTIFICATIONS == {tasks.Method.NOTIFICATIONS_TASKS}
    assert tasks.ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY == -32021
    assert "tasks/result" not in {str(m) for m in tasks.Method}  # 2025-11-25's, not the extension's


def test_shared_types_are_the_base_versions_classes() -> None:
    from mcp_bindings.extensions.tasks import models

    assert models.Error is core.Error
    assert models.InputRequests is core.models.InputRequests
    assert "Tool" not in models.__all__ and "ElicitRequest" not in models.__all__


def test_extensions_are_not_protocol_versions() -> None:
    assert "extensions" not in list_versions(SPEC)
    assert list_extensions(SPEC) == ["tasks"]


def _copy_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    return spec


def test_an_overlay_method_the_schema_lacks_is_refused(tmp_path: Path) -> None:
    spec = _copy_spec(tmp_path)
    overlay = spec / "overlay" / "extensions.json"
    data = json.loads(overlay.read_text())
    data["extensions"]["tasks"]["client_requests"].append("tasks/result")
    overlay.write_text(json.dumps(data))
    with pytest.raises(SpecErrors, match="tasks/result"):
        build_extension_ir(spec, "tasks")


def test_an_edited_extension_schema_is_refused(tmp_path: Path) -> None:
    spec = _copy_spec(tmp_path)
    schema = spec / "extensions" / "tasks" / "draft" / "schema.json"
    schema.write_text(schema.read_text().replace('"working"', '"running"', 1))
    with pytest.raises(SpecError, match="sha256 mismatch"):
        build_extension_ir(spec, "tasks")


def test_a_copy_that_differs_from_the_base_is_generated_as_the_extensions_own(tmp_path: Path) -> None:
    spec = _copy_spec(tmp_path)
    base = spec / "2026-07-28" / "schema.json"
    document = json.loads(base.read_text())
    document["$defs"]["Error"]["description"] = "changed in the base"
    base.write_text(json.dumps(document))
    manifest = json.loads((spec / "manifest.json").read_text())
    manifest["files"]["2026-07-28/schema.json"]["sha256"] = hashlib.sha256(base.read_bytes()).hexdigest()
    (spec / "manifest.json").write_text(json.dumps(manifest))
    extension = build_extension_ir(spec, "tasks")
    assert "Error" in {d.name for d in extension.version.definitions}
    assert "Error" not in extension.shared


# -- the schema constructs zod writes, refused where the parser would otherwise loosen a type ------------------------

RESULT = {"type": "object", "properties": {"resultType": {"type": "string"}}, "required": ["resultType"]}
RUNNING = {"type": "object", "properties": {"status": {"const": "running"}}, "required": ["status"]}


def _parse(definitions: dict[str, Any], named_copies: bool = False) -> dict[str, Any]:
    from mcpgen.pipeline.parser import SchemaParser

    return SchemaParser({"$defs": definitions}, "test", named_copies=named_copies).parse()


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({"type": "object", "propertyNames": {"pattern": "^a"}}, "unsupported schema keyword(s): propertyNames"),
        ({"allOf": [{"$ref": "#/$defs/Union"}, RESULT]}, "an 'allOf' part that is a union is supported only"),
        ({"allOf": [{"anyOf": [RESULT]}, {"anyOf": [RUNNING]}]}, "more than one union part"),
    ],
)
def test_constructs_that_would_loosen_a_type_are_refused(definition: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecErrors, match=re.escape(message)):
        _parse({"Thing": definition, "Union": {"anyOf": [RESULT, RUNNING]}})


def test_inline_copies_are_the_named_definition_only_when_asked() -> None:
    definitions = {
        "Running": {"$schema": "https://json-schema.org/draft/2020-12/schema", **RUNNING},
        "Holder": {"type": "object", "properties": {"job": RUNNING}, "required": ["job"]},
    }
    holder = _parse(definitions, named_copies=True)["Holder"]
    assert holder.fields[0].type.target == "Running"
    holder = _parse(definitions)["Holder"]
    assert holder.fields[0].type.target == "HolderJob"  # the versions' look-alike inline objects stay their own
