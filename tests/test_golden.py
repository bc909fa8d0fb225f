"""Golden tests, one directory per schema construct: tests/golden/<case>/{schema.json, expected/}.

1. A fresh generation from each case's schema equals its expected/ tree exactly (file set and bytes).
2. Each case's expected package imports and behaves as its construct should. Every case's package
   is a top-level `mcp_bindings`, so each one is imported in a fresh interpreter.

After an intended change to the generator or the templates: nox -s update_golden
(or python tests/golden_support.py --update), then review the diff of tests/golden/.
"""

from __future__ import annotations

import ast
import difflib
import os
import subprocess
import sys
import textwrap

import pytest
from golden_support import EXPECTED_NAME, UPDATE_COMMAND, case_dirs, generate_case, read_expected

CASES = {case.name: case for case in case_dirs()}
MAX_DIFF_LINES = 200
# Cases whose generated code is known not to import; {case: reason}. Empty: every case imports.
XFAIL: dict[str, str] = {}


def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []


def _params(names: list[str]) -> list[object]:
    return [pytest.param(name, id=name, marks=_marks(name)) for name in names]


def _tree_diff(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for path in sorted(set(expected) | set(actual)):
        old, new = expected.get(path), actual.get(path)
        if old == new:
            continue
        if old is None:
            lines.append(f"missing from {EXPECTED_NAME}/ (generated now): {path}\n")
        elif new is None:
            lines.append(f"in {EXPECTED_NAME}/ but not generated any more: {path}\n")
        lines.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"{EXPECTED_NAME}/{path}" if old is not None else "/dev/null",
                tofile=f"generated/{path}" if new is not None else "/dev/null",
            )
        )
    return lines


def test_every_case_is_present() -> None:
    assert sorted(CASES) == sorted(FUNCTIONAL_CHECKS), "every golden case needs a functional check"
    for name, case in CASES.items():
        assert (case / EXPECTED_NAME).is_dir(), f"{name} has no {EXPECTED_NAME}/: run {UPDATE_COMMAND}"


@pytest.mark.parametrize("name", _params(sorted(CASES)))
def test_generation_matches_golden(name: str) -> None:
    case = CASES[name]
    actual = generate_case(case)
    expected = read_expected(case)
    if actual == expected:
        return
    diff = _tree_diff(expected, actual)
    shown = "".join(diff[:MAX_DIFF_LINES])
    more = f"\n... {len(diff) - MAX_DIFF_LINES} more diff lines\n" if len(diff) > MAX_DIFF_LINES else ""
    pytest.fail(
        f"golden case {name!r}: fresh generation differs from tests/golden/{name}/{EXPECTED_NAME}/\n"
        f"{shown}{more}\n"
        f"If the change is intended, update the goldens with: {UPDATE_COMMAND}",
        pytrace=False,
    )


# -- behaviour of each case's generated package ------------------------------------------------

PRELUDE = """
import pathlib, sys
import pydantic
import mcp_bindings

EXPECTED = pathlib.Path(sys.argv[1]).resolve()
assert pathlib.Path(mcp_bindings.__file__).resolve().is_relative_to(EXPECTED), mcp_bindings.__file__
assert mcp_bindings.VERSIONS == (sys.argv[2],), mcp_bindings.VERSIONS
m = mcp_bindings.load(sys.argv[2])
assert m.PROTOCOL_VERSION == sys.argv[2]
import mcp_bindings.latest

def rejects(function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except pydantic.ValidationError:
        return True
    raise AssertionError(f"accepted: {args!r} {kwargs!r}")

def adapter(alias):
    # Strict like the generated models; a bare TypeAdapter of an alias would validate in lax mode.
    return pydantic.TypeAdapter(alias, config=pydantic.ConfigDict(strict=True))
"""

FUNCTIONAL_CHECKS: dict[str, str] = {
    "definitions_draft07": """
        result = m.InitializeResult.model_validate(
            {"protocolVersion": "2025-06-18", "serverInfo": {"name": "srv", "version": "1.0"}}
        )
        assert isinstance(result.server_info, m.Implementation) and result.server_info.name == "srv"
        assert adapter(m.ProgressToken).validate_python(7) == 7
        rejects(adapter(m.ProgressToken).validate_python, 1.5)
        rejects(m.InitializeResult.model_validate, {"protocolVersion": "x"})
    """,
    "defs_2020_12": """
        result = m.InitializeResult.model_validate_json(
            '{"protocolVersion": "2025-06-18", "serverInfo": {"name": "srv", "version": "1.0"}}'
        )
        assert result.server_info.title is None and result.instructions is None
        assert result.model_dump() == {
            "protocolVersion": "2025-06-18", "serverInfo": {"name": "srv", "version": "1.0"}
        }
        assert adapter(m.RequestId).validate_python("abc") == "abc"
        rejects(adapter(m.RequestId).validate_python, None)
    """,
    "ref_with_description": """
        import inspect
        source = inspect.getsource(m.models)
        # the description next to the $ref documents the field, not the referenced alias
        assert "An opaque token representing the pagination position after the last returned" in source
        page = m.ListToolsResult.model_validate({"tools": [{"name": "t"}], "nextCursor": "c2"})
        assert page.next_cursor == "c2" and isinstance(page.tools[0], m.Tool)
        rejects(m.PaginatedRequestParams.model_validate, {"cursor": None})
        # a $ref definition with its own description becomes a subclass carrying that description
        assert issubclass(m.ToolAlias, m.Tool) and m.ToolAlias.__doc__ == "A named alias of Tool, with its own description."
        assert m.ToolAlias(name="x").model_dump() == {"name": "x"}
    """,
    "anyof_union": """
        blocks = adapter(m.ContentBlock)
        assert type(blocks.validate_python({"type": "image", "data": "AA==", "mimeType": "image/png"})) is m.ImageContent
        assert type(blocks.validate_python({"type": "text", "text": "hi"})) is m.TextContent
        embedded = blocks.validate_python({"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}})
        assert type(embedded) is m.EmbeddedResource
        assert type(embedded.resource) is m.BlobResourceContents  # plain (undiscriminated) union
        try:
            blocks.validate_python({"type": "audio", "data": "AA=="})
        except pydantic.ValidationError as error:
            assert "union_tag_invalid" in str(error) or "does not match any of the expected tags" in str(error), error
        else:
            raise AssertionError("an unknown discriminator value was accepted")
        assert m.TextContent(text="hi").model_dump() == {"text": "hi", "type": "text"}
    """,
    "allof_merge": """
        assert list(m.Implementation.model_fields) == ["name", "title", "icons", "version"]
        impl = m.Implementation.model_validate({"name": "n", "version": "1", "icons": ["a.png"]})
        assert impl.icons == ["a.png"]
        rejects(m.Implementation.model_validate, {"name": "n"})  # version is required by the last part
        tool = m.Tool.model_validate({"name": "t", "inputSchema": {"type": "object", "required": ["x"]}})
        assert isinstance(tool.input_schema, m.ToolInputSchema) and tool.input_schema.required == ["x"]
        rejects(m.Tool.model_validate, {"name": "t", "inputSchema": {"type": "array"}})
        assert not issubclass(m.Implementation, m.BaseMetadata)  # flattened, not inherited
    """,
    "const_string_and_integer": """
        note = m.JSONRPCNotification(method="notifications/initialized")
        assert note.model_dump() == {"jsonrpc": "2.0", "method": "notifications/initialized"}
        rejects(m.JSONRPCNotification.model_validate, {"jsonrpc": "1.0", "method": "x"})
        assert m.MethodNotFoundError(message="no").code == -32601
        rejects(m.MethodNotFoundError.model_validate, {"code": -32602, "message": "no"})
        rejects(m.MethodNotFoundError.model_validate, {"code": "-32601", "message": "no"})
        assert m.ErrorCode.URL_ELICITATION_REQUIRED == -32042
        assert adapter(m.LATEST_PROTOCOL_VERSION).validate_python("2025-06-18") == "2025-06-18"
        rejects(adapter(m.LATEST_PROTOCOL_VERSION).validate_python, "2024-11-05")
    """,
    "enum": """
        levels = adapter(m.LoggingLevel)
        assert levels.validate_python("warning") == "warning"
        rejects(levels.validate_python, "verbose")
        assert m.SetLevelRequestParams(level="debug").level == "debug"
        rejects(m.ElicitResult.model_validate, {"action": "maybe"})
        annotations = m.Annotations.model_validate({"audience": ["user"], "priority": 0.5})
        assert annotations.audience == ["user"]
        rejects(m.Annotations.model_validate, {"audience": ["system"]})
        rejects(m.Annotations.model_validate, {"priority": 1.5})  # maximum: 1
    """,
    "additional_properties": """
        capabilities = m.ClientCapabilities.model_validate(
            {"experimental": {"x-feature": {"on": True}}, "sampling": {}, "roots": {"listChanged": True}}
        )
        assert capabilities.experimental == {"x-feature": {"on": True}}
        rejects(m.ClientCapabilities.model_validate, {"experimental": {"x-feature": 1}})
        # additionalProperties {} next to properties: unknown fields are kept and dumped again
        wire = {"_meta": {"trace": "t1"}, "vendorField": [1, {"a": None}]}
        assert m.Result.model_validate(wire).model_dump() == wire
        # a typed additionalProperties schema next to declared properties validates the extras
        assert m.ElicitResult.model_validate({"action": "accept", "age": 3, "ok": True}).model_extra == {
            "age": 3, "ok": True
        }
        rejects(m.ElicitResult.model_validate, {"action": "accept", "tags": ["a"]})
        responses = adapter(m.InputResponses).validate_python({"k": {"action": "accept"}})
        assert isinstance(responses["k"], m.InputResponse)
        assert adapter(m.Headers).validate_python({"a": "b"}) == {"a": "b"}
        rejects(adapter(m.Headers).validate_python, {"a": 1})
    """,
    "type_arrays": """
        params = m.ProgressNotificationParams.model_validate({"progress": 0.5, "progressToken": "p", "total": None})
        assert params.total is None and "total" in params.model_fields_set
        assert m.ProgressNotificationParams.model_validate({"progress": 1, "progressToken": 3}).progress_token == 3
        rejects(m.ProgressNotificationParams.model_validate, {"progress": 1, "progressToken": None})
        rejects(m.ProgressNotificationParams.model_validate, {"progress": 1, "progressToken": True})
        task = m.Task.model_validate({"taskId": "t", "ttl": None})
        assert task.ttl is None
        rejects(m.Task.model_validate, {"taskId": "t"})  # ["integer", "null"] and required: null, not absent
        rejects(m.Task.model_validate, {"taskId": "t", "ttl": None, "pollInterval": None})
    """,
    "formats": """
        for cls, field in ((m.BlobResourceContents, "blob"), (m.BlobResourceContents, "uri"),
                           (m.ResourceTemplate, "uri_template"), (m.Root, "uri")):
            assert cls.model_fields[field].annotation is str, (cls, field)
        blob = m.BlobResourceContents.model_validate({"blob": "not base64?", "uri": "not a uri"})
        assert blob.blob == "not base64?" and blob.uri == "not a uri"
        assert m.ResourceTemplate(name="n", uri_template="file:///{path}").model_dump() == {
            "name": "n", "uriTemplate": "file:///{path}"
        }
    """,
    "recursive_json_value": """
        value = {"a": [1, 2.5, "s", True, None, {"b": [[], {}]}]}
        assert adapter(m.JSONValue).validate_python(value) == value
        assert adapter(m.JSONObject).validate_python(value) == value
        result = m.CallToolResult.model_validate({"structuredContent": value})
        assert result.model_dump() == {"structuredContent": value}
        rejects(adapter(m.JSONValue).validate_python, {"a": {1, 2}})
        rejects(m.CallToolResult.model_validate, {"structuredContent": {"a": (1, 2)}})
        rejects(m.CallToolResult.model_validate, {"structuredContent": [1]})
    """,
    "inline_objects": """
        import re
        names = set(m.models.__all__)
        expected = {
            "CallToolRequestParams", "CallToolRequestParamsMeta", "ElicitRequestParams",
            "ElicitRequestParamsRequestedSchema", "ElicitRequestParamsRequestedSchemaPropertiesValue",
            "ListToolsResultToolsItem", "ListToolsResultToolsItemAnnotations",
        }
        assert expected <= names, expected - names
        assert not [n for n in names if re.search(r"\\d$", n)], names
        request = m.CallToolRequest.model_validate(
            {"method": "tools/call", "params": {"name": "t", "_meta": {"progressToken": 1}}}
        )
        assert type(request.params) is m.CallToolRequestParams
        assert type(request.params.meta) is m.CallToolRequestParamsMeta and request.params.meta.progress_token == 1
        elicit = m.ElicitRequest.model_validate({"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {
            "type": "object", "properties": {"age": {"type": "integer"}}}}})
        assert type(elicit.params.requested_schema.properties["age"]) is m.ElicitRequestParamsRequestedSchemaPropertiesValue
    """,
    "odd_keys": """
        wire = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}, "progressToken": 2},
            "from": "a", "json": "j", "name": "p", "schema": {"type": "object"}, "x-unknown": 1,
        }
        ref = m.PromptReference.model_validate(wire)
        assert ref.meta.client_info == m.Implementation(name="c", version="1")
        assert (ref.from_, ref.json_, ref.schema_) == ("a", "j", {"type": "object"})
        assert ref.schema__ == "https://json-schema.org/draft/2020-12/schema"
        assert ref.model_dump() == wire  # wire names back, unknown key kept
        # populate by Python name and by wire name alike
        by_name = m.PromptReference(name="p", meta=m.RequestMetaObject(client_info={"name": "c", "version": "1"}))
        by_wire = m.PromptReference.model_validate(
            {"name": "p", "_meta": {"io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"}}}
        )
        assert by_name == by_wire and by_name.model_dump() == by_wire.model_dump()
        # BaseModel's own methods are not shadowed
        assert callable(m.PromptReference.model_json_schema) and callable(ref.model_dump_json)
        assert '"from":"a"' in ref.model_dump_json()
        rejects(m.PromptReference.model_validate, {"name": "p", "from": None})
    """,
    "tsdoc_links": """
        import inspect
        assert m.CallToolResult.__doc__ == "The server's response to a `tools/call` request."
        assert m.Tool.__doc__ == "Definition for a tool the client can call; listed by `the tools/list result`."
        assert m.ListToolsResult.__doc__ == "The server's response to a tools/list request."
        source = inspect.getsource(m.models)
        assert "See `Tool` for how errors are reported." in source
        assert "@link" not in source and "CallToolRequesttools" not in source
    """,
    "request_result_pairing": """
        assert m.PingRequest.RESULT is m.EmptyResult and m.ListToolsRequest.RESULT is m.ListToolsResult
        assert issubclass(m.EmptyResult, m.Result) and issubclass(m.EmptyResult, mcp_bindings.base.Result)
        assert type(m.parse_result("ping", {})) is m.EmptyResult
        tools = m.parse_result("tools/list", '{"tools": [{"name": "t"}], "nextCursor": "c"}')
        assert type(tools) is m.ListToolsResult and tools.tools[0].name == "t"
        try:
            m.parse_result("tools/call", {})
        except mcp_bindings.base.UnknownMethodError as error:
            assert error.method == "tools/call"
        else:
            raise AssertionError("an unknown method was parsed")
        assert type(m.parse_client_request({"method": "tools/list"})) is m.ListToolsRequest
        assert type(m.parse_server_request({"method": "ping"})) is m.PingRequest
        rejects(m.parse_server_request, {"method": "tools/list"})
        cancelled = {"method": "notifications/cancelled", "params": {"requestId": 1}}
        assert type(m.parse_client_notification(cancelled)) is m.CancelledNotification
        assert type(m.parse_server_notification(cancelled)) is m.CancelledNotification
        assert type(m.parse_server_notification({"method": "notifications/tools/list_changed"})) is m.ToolListChangedNotification
        assert m.CLIENT_REQUESTS == {m.Method.PING, m.Method.TOOLS_LIST} and m.SERVER_REQUESTS == {m.Method.PING}
        assert m.Method.NOTIFICATIONS_CANCELLED in m.CLIENT_NOTIFICATIONS & m.SERVER_NOTIFICATIONS
        assert type(m.parse_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})) is m.JSONRPCRequest
        assert type(m.parse_message({"jsonrpc": "2.0", "method": "notifications/initialized"})) is m.JSONRPCNotification
        assert type(m.parse_message({"jsonrpc": "2.0", "id": 1, "result": {}})) is m.JSONRPCResponse
        error = m.parse_message({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}})
        assert type(error) is m.JSONRPCError and error.error.code == m.ErrorCode.METHOD_NOT_FOUND
        request = m.ListToolsRequest()
        assert mcp_bindings.base.result_type_for(request) is m.ListToolsResult
        assert request.model_dump() == {"method": "tools/list"}
    """,
    "version_facts": """
        # The case's overlay.json made it spec/overlay/versions.json: protocol_facts.py, plain data, joins it with the IR.
        import mcp_bindings.protocol_facts as facts
        assert facts.SUPPORTED_VERSIONS == facts.MODERN_VERSIONS == ("version_facts",) and facts.LEGACY_VERSIONS == ()
        assert facts.LATEST_VERSIONS == {"modern": "version_facts"} and facts.ERAS == {"version_facts": "modern"}
        assert facts.RESOURCE_NOT_FOUND_CODES == {"version_facts": -32602} and facts.BATCH_VERSIONS == frozenset()
        assert facts.CLIENT_REQUESTS["version_facts"] == {str(method) for method in m.CLIENT_REQUESTS}
        assert facts.MODERN_ONLY_METHODS == facts.CLIENT_REQUESTS["version_facts"]  # no legacy version to share with
        assert facts.PROTOCOL_VERSION_META == "io.modelcontextprotocol/protocolVersion"
    """,
    "stateless_2026": """
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
        assert type(m.parse_client_request(call)) is m.CallToolRequest
        rejects(m.parse_client_request, {"method": "tools/call", "params": {"name": "t"}})  # id and jsonrpc required
        complete = m.parse_result("tools/call", {"resultType": "complete", "content": []})
        assert type(complete) is m.CallToolResult
        pending = m.parse_result("tools/call", {"resultType": "input_required", "inputRequests": {
            "r": {"method": "roots/list"}, "e": {"method": "elicitation/create", "params": {"message": "?"}}}})
        assert type(pending) is m.InputRequiredResult
        assert type(pending.input_requests["r"]) is m.ListRootsRequest
        assert type(pending.input_requests["e"]) is m.ElicitRequest
        assert m.RESULT_ALTERNATIVES["tools/call"] == ((m.InputRequiredResult, "resultType", "input_required"),)
        assert type(m.parse_result("tools/list", {"resultType": "complete", "tools": []})) is m.ListToolsResult
        # the FooResultResponse union picks the arm by shape
        response = m.CallToolResultResponse.model_validate(
            {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}
        )
        assert type(response.result) is m.CallToolResult
        # ClientNotification is written out inline, identical to CancelledNotification: an alias of it
        note = m.parse_client_notification(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}}
        )
        assert type(note) is m.CancelledNotification
        assert not isinstance(m.ClientNotification, type) and not isinstance(m.ClientResult, type)
        assert type(adapter(m.ClientResult).validate_python({"resultType": "complete"})) is m.Result
        # no ServerRequest: server requests travel inside InputRequiredResult
        assert not hasattr(m, "ServerRequest") and not hasattr(m, "parse_server_request")
        assert m.SERVER_REQUESTS == frozenset()
        assert m.INPUT_REQUESTS == {m.Method.ROOTS_LIST, m.Method.ELICITATION_CREATE}
        assert m.ListRootsRequest.RESULT is m.ListRootsResult and m.ElicitRequest.RESULT is m.ElicitResult
        retried = m.CallToolRequest.model_validate({**call, "params": {"name": "t", "inputResponses": {
            "r": {"roots": [{"uri": "file:///"}]}, "e": {"action": "accept"}}}})
        assert type(retried.params.input_responses["r"]) is m.ListRootsResult
        assert type(retried.params.input_responses["e"]) is m.ElicitResult
    """,
    "allof_union_part": """
        jobs = adapter(m.JobResult)  # allOf [Result, anyOf [running, done]]: each arm has Result's fields too
        running = jobs.validate_python({"resultType": "complete", "status": "running"})
        assert type(running) is m.JobResultVariant1 and running.result_type == "complete"
        done = jobs.validate_python({"resultType": "complete", "status": "done", "output": {"a": 1}})
        assert type(done) is m.JobResultVariant2 and done.output == {"a": 1}
        rejects(jobs.validate_python, {"status": "running"})  # Result's resultType is required in every arm
        rejects(jobs.validate_python, {"resultType": "complete", "status": "done"})  # done needs its output
        rejects(jobs.validate_python, {"resultType": "complete", "status": "lost"})
        # propertyNames {type: string} restricts nothing: any object is an output
        assert jobs.validate_python({"resultType": "c", "status": "done", "output": {}}).output == {}
    """,
    "sender_filled_meta": """
        # The `_meta` a request's params require is the sender's: the constructor may leave it out; validation
        # (what a receiver does) still requires it. A result's required `_meta` and shapes that do not share the
        # request's `_meta` class stay required in the constructor too.
        params = m.CallToolRequestParams(name="t")
        assert params.model_dump() == {"name": "t"} and "meta" not in params.model_fields_set
        assert m.RequestParams().model_dump() == {}
        rejects(m.CallToolRequestParams.model_validate, {"name": "t"})
        rejects(m.RequestParams.model_validate_json, "{}")
        rejects(m.CallToolResult, content=[], result_type="complete")
        meta = m.RequestMetaObject(protocol_version="x")
        assert m.CallToolRequestParams(name="t", meta=meta).model_dump()["_meta"] == {"io.modelcontextprotocol/protocolVersion": "x"}
        assert "_meta" in m.CallToolRequestParams.model_json_schema()["required"]
    """,
}


def test_docstring_keeps_a_trailing_quote() -> None:
    models = CASES["tsdoc_links"] / EXPECTED_NAME / "mcp_bindings" / "tsdoc_links" / "models.py"
    tree = ast.parse(models.read_text(encoding="utf-8"))
    tool = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Tool")
    strings = [
        node.value.value
        for node in tool.body
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    ]
    assert any(text.startswith("Whether this tool supports") for text in strings), strings
    assert any(text.endswith('Default: "forbidden"') for text in strings), strings


@pytest.mark.parametrize("name", _params(sorted(FUNCTIONAL_CHECKS)))
def test_generated_package_behaves(name: str) -> None:
    expected = CASES[name] / EXPECTED_NAME
    script = PRELUDE + textwrap.dedent(FUNCTIONAL_CHECKS[name])
    env = {**os.environ, "PYTHONPATH": str(expected), "PYTHONDONTWRITEBYTECODE": "1"}
    completed = subprocess.run(
        [sys.executable, "-c", script, str(expected), name],
        cwd=expected,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, f"golden case {name!r}:\n{completed.stdout}{completed.stderr}"
