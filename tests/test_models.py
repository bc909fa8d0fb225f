"""Behaviour of the generated models: names, aliases, exact round trips, markers, parse helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

import mcp_bindings
from mcp_bindings import base, latest
from mcp_bindings import v2025_06_18 as v6
from mcp_bindings import v2025_11_25 as v11
from mcp_bindings import v2026_07_28 as v26


def test_snake_case_attributes_with_wire_aliases_and_either_name_populates() -> None:
    by_wire = v6.CallToolResult.model_validate({"content": [], "isError": True, "_meta": {"k": 1}})
    by_name = v6.CallToolResult(content=[], is_error=True, meta={"k": 1})
    assert by_wire.is_error is True and by_wire.meta == {"k": 1}
    assert by_wire.model_dump() == by_name.model_dump() == {"content": [], "isError": True, "_meta": {"k": 1}}


def test_reserved_meta_keys_and_schema_key_get_clean_python_names() -> None:
    meta = v26.RequestMetaObject.model_validate(
        {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    )
    assert meta.protocol_version == "2026-07-28"
    assert meta.client_info is not None and meta.client_info.name == "c"
    schema = v26.ToolInputSchema.model_validate(
        {"type": "object", "$schema": "https://json-schema.org/draft/2020-12/schema"}
    )
    assert schema.schema_ == "https://json-schema.org/draft/2020-12/schema"
    assert schema.model_dump()["$schema"] == schema.schema_


def test_round_trip_is_exact_no_defaults_no_nulls_no_url_normalisation() -> None:
    original = {
        "uri": "HTTP://Example.COM/a/../b",
        "name": "r",
        "annotations": {"priority": 0.5, "audience": ["user"]},
        "x-extension": {"nested": [1, 2.5, None]},
    }
    resource = v6.Resource.model_validate_json(json.dumps(original))
    assert json.loads(resource.model_dump_json()) == original
    assert resource.uri == "HTTP://Example.COM/a/../b"


def test_base64_is_kept_as_text() -> None:
    image = v6.ImageContent.model_validate({"type": "image", "data": "aGk=", "mimeType": "image/png"})
    assert image.data == "aGk="


def test_strict_types_and_explicit_null_for_optional_non_nullable_properties() -> None:
    with pytest.raises(ValidationError):
        v6.CallToolResult.model_validate({"content": [], "isError": 1})
    with pytest.raises(ValidationError):
        v6.CallToolResult.model_validate({"content": [], "isError": None})
    with pytest.raises(ValidationError):
        v6.ProgressNotificationParams.model_validate({"progressToken": "t", "progress": "1"})
    # ["integer", "null"] keeps null, and a round trip keeps it.
    task = v11.Task.model_validate(
        {"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": None}
    )
    assert task.model_dump()["ttl"] is None


def test_constructor_takes_none_as_absent_for_optional_non_nullable_properties() -> None:
    # Type checkers see `dict[str, str] | None`; the constructor agrees: None means "absent", by either name.
    params = v11.GetPromptRequestParams(name="p", arguments=None)
    assert params.arguments is None and params.model_fields_set == {"name"}
    assert params.model_dump() == {"name": "p"} and params.model_dump_json() == '{"name":"p"}'
    resource = v11.Resource(uri="file:///a", name="a", mime_type=None, mimeType=None, _meta=None, title="A")
    assert resource.model_dump() == {"uri": "file:///a", "name": "a", "title": "A"}
    # Constant-carrying models too, and values that are not None are kept.
    text = v6.TextContent(text="hi", annotations=None, meta={"k": 1})
    assert text.model_dump() == {"type": "text", "text": "hi", "_meta": {"k": 1}}
    assert base.MCPModel.OMITTABLE_FIELDS == frozenset()
    assert {"arguments", "_meta", "meta"} <= v11.GetPromptRequestParams.OMITTABLE_FIELDS


def test_validating_json_still_rejects_null_for_optional_non_nullable_properties() -> None:
    with pytest.raises(ValidationError):
        v11.GetPromptRequestParams.model_validate({"name": "p", "arguments": None})
    with pytest.raises(ValidationError):
        v11.GetPromptRequestParams.model_validate_json('{"name": "p", "arguments": null}')
    with pytest.raises(ValidationError):
        v11.GetPromptRequest.model_validate(
            {"method": "prompts/get", "params": {"name": "p", "arguments": None}, "jsonrpc": "2.0", "id": 1}
        )
    # A None inside a nested dict given to the constructor is JSON input, validated as such.
    with pytest.raises(ValidationError):
        v11.GetPromptRequest(params={"name": "p", "arguments": None}, id=1)  # type: ignore[arg-type]
    # A nullable property keeps an explicit None in both directions.
    task = v11.Task(task_id="t", status="working", created_at="x", last_updated_at="x", ttl=None)
    assert task.model_dump()["ttl"] is None


def test_constant_properties_default_and_are_dumped() -> None:
    text = v6.TextContent(text="hi")
    assert text.model_dump() == {"type": "text", "text": "hi"}
    request = v6.CallToolRequest(params=v6.CallToolRequestParams(name="weather"))
    assert request.model_dump() == {"method": "tools/call", "params": {"name": "weather"}}


def test_marker_bases_and_result_typing() -> None:
    request = v6.CallToolRequest(params=v6.CallToolRequestParams(name="x"))
    assert isinstance(request, base.Request)
    assert base.result_type_for(request) is v6.CallToolResult
    assert issubclass(v6.CallToolResult, base.Result)
    assert issubclass(v6.EmptyResult, base.Result)
    assert issubclass(v6.ProgressNotification, base.Notification)
    assert v6.PingRequest.RESULT is v6.EmptyResult


def test_parse_helpers_discriminate_on_method_in_one_pass() -> None:
    frame = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x", "arguments": {"a": 1}}}
    request = v6.parse_client_request(json.dumps(frame))
    assert type(request) is v6.CallToolRequest
    assert request.model_dump() == frame  # jsonrpc and id survive as unknown fields
    with pytest.raises(ValidationError) as raised:
        v6.parse_client_request({"method": "sampling/createMessage", "params": {}})
    assert "does not match any of the expected tags" in str(raised.value)
    notification = v6.parse_server_notification({"method": "notifications/tools/list_changed"})
    assert type(notification) is v6.ToolListChangedNotification


def test_parse_result_uses_the_method_never_union_order() -> None:
    # An empty object is a valid Result, ListRootsResult needs `roots`: the method decides.
    assert type(v6.parse_result("ping", "{}")) is v6.EmptyResult
    with pytest.raises(ValidationError):
        v6.parse_result("roots/list", "{}")
    with pytest.raises(base.UnknownMethodError):
        v6.parse_result("server/discover", "{}")
    call = {"content": [{"type": "text", "text": "ok"}], "resultType": "complete"}
    assert type(v26.parse_result("tools/call", call)) is v26.CallToolResult
    needs_input = {"resultType": "input_required", "requestState": "abc"}
    assert type(v26.parse_result("tools/call", json.dumps(needs_input))) is v26.InputRequiredResult
    task = {"task": {"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": None}}
    assert type(v11.parse_result("tools/call", task)) is v11.CreateTaskResult


def test_parse_message_by_shape() -> None:
    assert type(v6.parse_message('{"jsonrpc":"2.0","id":1,"method":"ping"}')) is v6.JSONRPCRequest
    assert type(v6.parse_message({"jsonrpc": "2.0", "method": "notifications/initialized"})) is v6.JSONRPCNotification
    assert type(v6.parse_message({"jsonrpc": "2.0", "id": 1, "result": {}})) is v6.JSONRPCResponse
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}}
    assert type(v6.parse_message(error)) is v6.JSONRPCError
    assert (
        type(v26.parse_message({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}))
        is v26.JSONRPCResultResponse
    )


def test_method_constants_subsets_and_error_codes() -> None:
    assert v6.Method.TOOLS_CALL == "tools/call"
    assert v6.Method.TOOLS_CALL in v6.CLIENT_REQUESTS and v6.Method.TOOLS_CALL not in v6.SERVER_REQUESTS
    assert v6.Method.PING in v6.CLIENT_REQUESTS and v6.Method.PING in v6.SERVER_REQUESTS
    assert v6.Method.ELICITATION_CREATE in v6.SERVER_REQUESTS
    assert v6.ErrorCode.METHOD_NOT_FOUND == -32601
    assert v26.ErrorCode.UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert v11.ErrorCode.URL_ELICITATION_REQUIRED == -32042
    assert v26.Method.SAMPLING_CREATE_MESSAGE in v26.INPUT_REQUESTS and not v26.SERVER_REQUESTS


def test_recursive_json_value_accepts_floats_and_null_after_the_patch() -> None:
    result = v26.CallToolResult.model_validate(
        {"content": [], "resultType": "complete", "structuredContent": {"t": 21.5, "x": None, "l": [1, "a", True]}}
    )
    assert result.model_dump()["structuredContent"] == {"t": 21.5, "x": None, "l": [1, "a", True]}


def test_docstrings_come_from_the_schema_with_tsdoc_links_cleaned() -> None:
    assert v6.CallToolRequest.__doc__ == "Used by the client to invoke a tool provided by the server."
    doc = v26.CallToolResultResponse.__doc__ or ""
    assert "{@link" not in doc and "`tools/call`" in doc


def test_package_index_and_latest() -> None:
    assert mcp_bindings.VERSIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "draft")
    assert mcp_bindings.LATEST_VERSION == "2026-07-28"
    assert latest.PROTOCOL_VERSION == "2026-07-28"
    assert latest.CallToolRequest is v26.CallToolRequest
    assert mcp_bindings.load("2025-06-18") is v6


def test_importing_models_needs_only_pydantic() -> None:
    code = (
        "import sys\n"
        "import mcp_bindings.v2025_11_25, mcp_bindings.latest\n"
        "bad = sorted(m for m in ('jinja2', 'black', 'click', 'mcpgen') if m in sys.modules)\n"
        "print(bad)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


# -- properties the sender fills in: the `_meta` of a 2026-07-28 request's params --------------------------------


def test_modern_request_params_construct_without_meta_and_dump_without_it() -> None:
    params = v26.CallToolRequestParams(name="x", arguments={"a": 1})
    assert params.model_dump() == {"name": "x", "arguments": {"a": 1}}
    assert "meta" not in params.model_fields_set
    # Unset until the client's connection stamps it, so reading it says so rather than giving a made-up value.
    with pytest.raises(AttributeError, match="the connection that sends the request fills it in"):
        _ = params.meta
    request = v26.CallToolRequest(id=1, params=params)
    assert request.model_dump()["params"] == {"name": "x", "arguments": {"a": 1}}
    assert v26.PaginatedRequestParams().model_copy(update={"cursor": "c"}).model_dump() == {"cursor": "c"}
    # Given, by Python name or wire name, it is kept and validated as before.
    meta = v26.RequestMetaObject(protocol_version="2026-07-28", client_capabilities=v26.ClientCapabilities())
    for given in ({"meta": meta}, {"_meta": meta}):
        dumped = v26.CallToolRequestParams(name="x", **given).model_dump()
        assert dumped["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    with pytest.raises(ValidationError) as wrong:
        v26.CallToolRequestParams(name="x", meta={"io.modelcontextprotocol/protocolVersion": 1})
    assert {error["loc"][0] for error in wrong.value.errors()} == {"meta"}
    # Leaving `_meta` out excuses nothing else.
    with pytest.raises(ValidationError) as missing_name:
        v26.CallToolRequestParams(arguments={})
    assert [(error["type"], error["loc"]) for error in missing_name.value.errors()] == [("missing", ("name",))]


def test_validating_a_modern_request_still_requires_its_meta() -> None:
    """What a server does with a request it received is unchanged: no `_meta` is the same error as before, and the
    exported JSON schema still says required."""
    for validate in (
        lambda: v26.CallToolRequestParams.model_validate({"name": "x"}),
        lambda: v26.CallToolRequestParams.model_validate_json('{"name": "x"}'),
        lambda: v26.PaginatedRequestParams.model_validate({}),
        lambda: v26.CallToolRequest.model_validate(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
        ),
    ):
        with pytest.raises(ValidationError) as missing:
            validate()
        assert [(error["type"], error["loc"][-1]) for error in missing.value.errors()] == [("missing", "_meta")]
    assert "_meta" in v26.CallToolRequestParams.model_json_schema()["required"]


def test_validating_a_modern_request_runs_none_of_the_constructor_rule() -> None:
    """The server's hot path validates received params: the rule is construction-only (pydantic's marker for a
    base __init__), so validating runs no Python of the bindings' base at all, as before it existed."""
    received = {
        "name": "x",
        "arguments": {"a": 1},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }
    v26.CallToolRequestParams.model_validate(received)  # builds the deferred schema first
    entered: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == base.__file__:
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        validated = v26.CallToolRequestParams.__pydantic_validator__.validate_python(received)
    finally:
        sys.setprofile(None)
    assert entered == []
    assert validated.meta.protocol_version == "2026-07-28"


def test_only_the_request_meta_of_modern_params_is_filled_by_the_sender() -> None:
    def sender_filled(package: object) -> set[str]:
        models = package.models  # type: ignore[attr-defined]
        return {
            name
            for name in models.__all__
            if isinstance(cls := getattr(models, name), type) and issubclass(cls, base.MCPModelWithSenderFields)
        }

    modern = sender_filled(v26)
    assert {"CallToolRequestParams", "GetPromptRequestParams", "ReadResourceRequestParams"} <= modern
    assert {"PaginatedRequestParams", "RequestParams", "CompleteRequestParams"} <= modern
    for name in modern:
        cls = getattr(v26, name)
        assert cls.SENDER_FIELDS == {"meta": "_meta"}
        assert cls.model_fields["meta"].annotation is v26.RequestMetaObject
    # A result's required `_meta` is the answerer's, not a request's: it stays required in the constructor too.
    assert not issubclass(v26.SubscriptionsListenResult, base.MCPModelWithSenderFields)
    for legacy in (v6, v11):
        assert sender_filled(legacy) == set()


class ForwardParams(base.MCPModelWithSenderFields):
    """Names its `_meta` class before it is defined, as a generated class in a cycle does (a string annotation)."""

    SENDER_FIELDS: ClassVar[dict[str, str]] = {"meta": "_meta"}
    meta: LaterMeta = base.filled_by_sender(alias="_meta")
    name: str


class LaterMeta(base.MCPModel):
    version: str


def test_a_sender_field_whose_class_is_defined_later_is_left_out_too() -> None:
    params = ForwardParams(name="x")
    assert params.model_dump() == {"name": "x"}
    with pytest.raises(ValidationError):
        ForwardParams.model_validate({"name": "x"})
    assert ForwardParams(name="x", meta=LaterMeta(version="1")).model_dump() == {"name": "x", "_meta": {"version": "1"}}
