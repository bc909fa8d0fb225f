"""The bad-input cases of test_bad_input.py: each builds a spec directory (tests/spec_fixtures.py) from a valid
minimal schema with exactly one thing broken, and says how the CLI must refuse it (the command, the file and JSON
pointer its error names, the message).

The last group of cases were generator bugs when these tests were written (a traceback, or broken or looser code
generated instead of a refusal); they stay as regression tests.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_fixtures import (
    VERSION,
    minimal_schema,
    sha256_hex,
    write_spec_dir,
)

SCHEMA = f"spec/{VERSION}/schema.json"
MANIFEST = "spec/manifest.json"
PATCH = f"spec/patches/{VERSION}/001-fix.json"
REF = "#/$defs/"
Builder = Callable[[Path], object]  # builds a spec dir at the given path
MCPGEN = Path(sys.executable).with_name("mcpgen")

# A previous generation in the output directory that a successful run would change: if a case is
# wrongly accepted, the write shows up as a difference.
PREVIOUS_TREE = {
    "SENTINEL.txt": "not generated; must survive\n",
    "mcp_bindings/__init__.py": "# previous package init\n",
    "mcp_bindings/py.typed": "",
    f"mcp_bindings/v{VERSION.replace('-', '_')}/models.py": "# previous models\n",
    f"mcp_bindings/v{VERSION.replace('-', '_')}/stale.py": "# a stale file generate would delete\n",
}


# -- case building ----------------------------------------------------------------------------------


def defs(schema: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = schema["$defs"]
    return defs


def _request(method: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"method": method}, "required": ["method"]}


def schema_edit(edit: Callable[[dict[str, Any]], Any]) -> Builder:
    """A builder: the minimal schema with `edit` applied to it."""

    def build(spec: Path) -> None:
        schema = minimal_schema()
        edit(schema)
        write_spec_dir(spec, schema)

    return build


def whole_schema(document: Any) -> Builder:
    return lambda spec: write_spec_dir(spec, document)


def raw_schema(text: str) -> Builder:
    return lambda spec: write_spec_dir(spec, raw=text)


def with_patch(patch: dict[str, Any]) -> Builder:
    return lambda spec: write_spec_dir(spec, patches={"001-fix.json": patch})


def then(build: Builder, after: Builder) -> Builder:
    def both(spec: Path) -> None:
        build(spec)
        after(spec)

    return both


def edit_manifest(edit: Callable[[dict[str, Any]], Any]) -> Builder:
    def after(spec: Path) -> None:
        manifest = json.loads((spec / "manifest.json").read_text())
        edit(manifest)
        (spec / "manifest.json").write_text(json.dumps(manifest))

    return then(write_spec_dir, after)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Case:
    id: str
    build: Builder
    where: str  # "<file label>#<pointer>" that the error line must name, exactly
    message: str  # a piece of the message that says what is wrong
    args: tuple[str, ...] = ("generate",)
    exact: bool = True  # False: `where` may be followed by a deeper pointer (for xfail cases)
    marks: tuple[Any, ...] = field(default=())


def bug(reason: str) -> Any:
    return pytest.mark.xfail(strict=True, reason=f"generator bug: {reason}")


CASES = [
    # -- the document itself ----------------------------------------------------------------------
    Case("invalid-json", raw_schema('{"$defs": {'), f"{SCHEMA}#", "invalid JSON at line 1"),
    Case("root-array", whole_schema([1, 2]), f"{SCHEMA}#", "root must be an object, not list"),
    Case("root-string", whole_schema("schema"), f"{SCHEMA}#", "root must be an object, not str"),
    Case("no-definitions", whole_schema({"type": "object"}), f"{SCHEMA}#", "neither '$defs'"),
    Case(
        "both-defs-and-definitions",
        schema_edit(lambda s: s.update(definitions={})),
        f"{SCHEMA}#",
        "both '$defs' and 'definitions'",
    ),
    Case(
        "definitions-not-object",
        whole_schema({"definitions": ["A", "B"]}),
        f"{SCHEMA}#/definitions",
        "'definitions' must be an object",
    ),
    # -- $ref ---------------------------------------------------------------------------------------
    Case(
        "dangling-ref",
        schema_edit(lambda s: defs(s)["CallToolRequest"]["properties"]["params"].update({"$ref": REF + "Nope"})),
        f"{SCHEMA}#/$defs/CallToolRequest/properties/params/$ref",
        "dangling $ref: no definition 'Nope'",
    ),
    Case(
        "external-ref",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(x={"$ref": "http://example.com/s.json"})),
        f"{SCHEMA}#/$defs/CallToolResult/properties/x/$ref",
        "unsupported $ref 'http://example.com/s.json'",
    ),
    Case(
        "ref-with-sibling-keyword",
        schema_edit(lambda s: defs(s)["CallToolRequest"]["properties"]["params"].update(type="object")),
        f"{SCHEMA}#/$defs/CallToolRequest/properties/params",
        "$ref with sibling keyword(s) type is not supported",
    ),
    Case(
        "cyclic-alias",
        schema_edit(lambda s: defs(s).update(A={"$ref": REF + "B"}, B={"$ref": REF + "A"})),
        f"{SCHEMA}#/$defs/A",
        "cyclic alias: A refers to itself",
    ),
    Case(
        "self-referencing-alias",
        schema_edit(lambda s: defs(s).update(Loop={"$ref": REF + "Loop", "description": "me"})),
        f"{SCHEMA}#/$defs/Loop",
        "cyclic alias: Loop refers to itself",
    ),
    Case(
        "cyclic-union-alias",
        schema_edit(
            lambda s: defs(s).update(U={"anyOf": [{"$ref": REF + "V"}, {"type": "string"}]}, V={"$ref": REF + "U"})
        ),
        f"{SCHEMA}#/$defs/U",
        "cyclic alias: U refers to itself",
    ),
    # -- types and keywords ---------------------------------------------------------------------
    Case(
        "unknown-type",
        schema_edit(lambda s: defs(s)["CallToolRequestParams"]["properties"]["name"].update(type="strng")),
        f"{SCHEMA}#/$defs/CallToolRequestParams/properties/name/type",
        "unknown type 'strng'",
    ),
    Case(
        "type-array-with-object",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(x={"type": ["string", "object"]})),
        f"{SCHEMA}#/$defs/CallToolResult/properties/x/type",
        "type arrays may only list primitive types",
    ),
    Case(
        "unsupported-keyword-pattern",
        schema_edit(lambda s: defs(s)["CallToolRequestParams"]["properties"]["name"].update(pattern="^a")),
        f"{SCHEMA}#/$defs/CallToolRequestParams/properties/name",
        "unsupported schema keyword(s): pattern",
    ),
    Case(
        "unsupported-keyword-not",
        schema_edit(lambda s: defs(s).update(NotString={"not": {"type": "string"}})),
        f"{SCHEMA}#/$defs/NotString",
        "unsupported schema keyword(s): not",
    ),
    Case(
        "schema-not-an-object",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(x="string")),
        f"{SCHEMA}#/$defs/CallToolResult/properties/x",
        "a schema must be an object, not str",
    ),
    Case(
        "tuple-items",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"]["content"].update(items=[{"type": "string"}])),
        f"{SCHEMA}#/$defs/CallToolResult/properties/content/items",
        "tuple-form 'items' is not supported",
    ),
    Case(
        "anyof-not-a-list",
        schema_edit(lambda s: defs(s).update(ClientRequest={"anyOf": {"$ref": REF + "PingRequest"}})),
        f"{SCHEMA}#/$defs/ClientRequest/anyOf",
        "'anyOf' must be a non-empty array",
    ),
    Case(
        "anyof-empty",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(x={"anyOf": []})),
        f"{SCHEMA}#/$defs/CallToolResult/properties/x/anyOf",
        "'anyOf' must be a non-empty array",
    ),
    Case(
        "oneof-empty",
        schema_edit(lambda s: defs(s).update(Either={"oneOf": []})),
        f"{SCHEMA}#/$defs/Either/oneOf",
        "'oneOf' must be a non-empty array",
    ),
    Case(
        "allof-part-not-object",
        schema_edit(lambda s: defs(s).update(Mixed={"allOf": [{"$ref": REF + "Result"}, {"type": "string"}]})),
        f"{SCHEMA}#/$defs/Mixed/allOf/1",
        "every 'allOf' part must be an object schema",
    ),
    Case(
        "enum-empty",
        schema_edit(lambda s: defs(s).update(Level={"type": "string", "enum": []})),
        f"{SCHEMA}#/$defs/Level/enum",
        "'enum' must be a non-empty array",
    ),
    Case(
        "enum-with-float",
        schema_edit(lambda s: defs(s).update(Level={"enum": ["a", 1.5]})),
        f"{SCHEMA}#/$defs/Level/enum",
        "only string and integer constants are supported, not 1.5",
    ),
    Case(
        "enum-with-object",
        schema_edit(lambda s: defs(s).update(Level={"enum": ["a", {"b": 1}]})),
        f"{SCHEMA}#/$defs/Level/enum",
        "only string and integer constants are supported",
    ),
    Case(
        "const-boolean",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(flag={"const": True})),
        f"{SCHEMA}#/$defs/CallToolResult/properties/flag/const",
        "only string and integer constants are supported, not True",
    ),
    # -- objects ----------------------------------------------------------------------------------
    Case(
        "required-not-in-properties",
        schema_edit(lambda s: defs(s)["CallToolResult"]["required"].append("missing")),
        f"{SCHEMA}#/$defs/CallToolResult/required",
        "required property 'missing' is not declared",
    ),
    Case(
        "required-not-a-list",
        schema_edit(lambda s: defs(s)["CallToolResult"].update(required="content")),
        f"{SCHEMA}#/$defs/CallToolResult/required",
        "'required' must be an array",
    ),
    Case(
        "properties-not-object",
        schema_edit(lambda s: defs(s)["CallToolResult"].update(properties=["content"], required=[])),
        f"{SCHEMA}#/$defs/CallToolResult/properties",
        "'properties' must be an object",
    ),
    Case(
        "additional-properties-false",
        schema_edit(lambda s: defs(s)["CallToolResult"].update(additionalProperties=False)),
        f"{SCHEMA}#/$defs/CallToolResult/additionalProperties",
        "'additionalProperties: false' is not supported",
    ),
    Case(
        "additional-properties-false-inline-map",
        schema_edit(
            lambda s: defs(s)["CallToolRequestParams"]["properties"]["arguments"].update(additionalProperties=False)
        ),
        f"{SCHEMA}#/$defs/CallToolRequestParams/properties/arguments/additionalProperties",
        "'additionalProperties: false' is not supported",
    ),
    # -- definition names -------------------------------------------------------------------------
    Case(
        "name-starts-with-digit",
        schema_edit(lambda s: defs(s).update({"1Bad": {"type": "string"}})),
        f"{SCHEMA}#/$defs/1Bad",
        "definition name '1Bad' is not usable as a Python class name",
    ),
    Case(
        "name-has-dash",
        schema_edit(lambda s: defs(s).update({"has-dash": {"type": "string"}})),
        f"{SCHEMA}#/$defs/has-dash",
        "definition name 'has-dash' is not usable",
    ),
    Case(
        "name-has-slash-escaped-in-pointer",
        schema_edit(lambda s: defs(s).update({"a/b": {"type": "string"}})),
        f"{SCHEMA}#/$defs/a~1b",
        "definition name 'a/b' is not usable",
    ),
    # -- manifest and hashes ----------------------------------------------------------------------
    Case(
        "hash-mismatch",
        then(write_spec_dir, lambda spec: _write(spec / VERSION / "schema.json", json.dumps(minimal_schema()))),
        f"{SCHEMA}#",
        "sha256 mismatch",
    ),
    Case(
        "schema-listed-but-missing",
        then(write_spec_dir, lambda spec: (spec / VERSION / "schema.json").unlink()),
        f"{SCHEMA}#",
        "listed in spec/manifest.json but missing",
    ),
    Case(
        "other-listed-file-missing",
        edit_manifest(
            lambda m: m["files"].update(LICENSE={"sha256": sha256_hex(b"x"), "repository": "r", "commit": "c"})
        ),
        "spec/LICENSE#",
        "listed in spec/manifest.json but missing",
    ),
    Case(
        "manifest-invalid-json",
        then(write_spec_dir, lambda spec: _write(spec / "manifest.json", '{"files": {,}}')),
        f"{MANIFEST}#",
        "invalid JSON at line 1 column 12",
    ),
    Case(
        "manifest-missing-files",
        edit_manifest(lambda m: m.pop("files")),
        f"{MANIFEST}#/files",
        "the manifest needs a 'files' object",
    ),
    Case(
        "manifest-entry-missing-sha256",
        edit_manifest(lambda m: m["files"][f"{VERSION}/schema.json"].pop("sha256")),
        f"{MANIFEST}#/files/{VERSION}~1schema.json",
        "each file needs string 'sha256'",
    ),
    Case(
        "versions-with-bad-manifest",
        edit_manifest(lambda m: m.pop("files")),
        f"{MANIFEST}#/files",
        "the manifest needs a 'files' object",
        args=("versions",),
    ),
    Case(
        "unknown-version-generate",
        write_spec_dir,
        f"{MANIFEST}#/files",
        f"unknown version(s) 1999-01-01; vendored: {VERSION}",
        args=("generate", "--version", "1999-01-01"),
    ),
    Case(
        "unknown-version-ir",
        write_spec_dir,
        "spec/1999-01-01/schema.json#",
        f"unknown version '1999-01-01'; vendored versions: {VERSION}",
        args=("ir", "--version", "1999-01-01"),
    ),
    Case(
        "ir-reports-schema-errors",
        schema_edit(lambda s: defs(s)["CallToolRequestParams"]["properties"]["name"].update(type="strng")),
        f"{SCHEMA}#/$defs/CallToolRequestParams/properties/name/type",
        "unknown type 'strng'",
        args=("ir", "--version", VERSION),
    ),
    # -- patches ----------------------------------------------------------------------------------
    Case(
        "patch-old-value-no-longer-matches",
        with_patch(
            {
                "evidence": "test",
                "operations": [
                    {"op": "replace", "path": "/$defs/CallToolResult/type", "old": "array", "new": "object"}
                ],
            }
        ),
        f"{PATCH}#/operations/0",
        'old value at /$defs/CallToolResult/type no longer matches: expected "array", found "object"',
    ),
    Case(
        "patch-path-does-not-exist",
        with_patch(
            {
                "evidence": "test",
                "operations": [{"op": "replace", "path": "/$defs/Gone/type", "old": "string", "new": "number"}],
            }
        ),
        f"{PATCH}#/operations/0",
        "path /$defs/Gone/type does not exist in the schema",
    ),
    Case(
        "patch-without-evidence",
        with_patch(
            {"operations": [{"op": "replace", "path": "/$defs/CallToolResult/type", "old": "object", "new": "object"}]}
        ),
        f"{PATCH}#/evidence",
        "every patch must cite its evidence",
    ),
    Case(
        "patch-add-existing",
        with_patch(
            {"evidence": "test", "operations": [{"op": "add", "path": "/$defs/CallToolResult/type", "new": "object"}]}
        ),
        f"{PATCH}#/operations/0",
        "'add' target /$defs/CallToolResult/type already exists",
    ),
    Case(
        "patch-path-not-a-pointer",
        with_patch({"evidence": "test", "operations": [{"op": "add", "path": "$defs/X", "new": {}}]}),
        f"{PATCH}#/operations/0/path",
        "JSON pointer must start with '/'",
    ),
    Case(
        "patch-invalid-json",
        lambda spec: write_spec_dir(spec, patches={"001-fix.json": "{oops"}),
        f"{PATCH}#",
        "invalid JSON at line 1 column 2",
    ),
    # -- protocol ---------------------------------------------------------------------------------
    Case(
        "request-without-constant-method",
        schema_edit(
            lambda s: (
                defs(s).update(FooRequest=_request({"type": "string"}), FooResult={"type": "object", "properties": {}}),
                defs(s)["ClientRequest"]["anyOf"].append({"$ref": REF + "FooRequest"}),
            )
        ),
        f"{SCHEMA}#/$defs/FooRequest",
        "FooRequest has no constant string 'method'",
    ),
    Case(
        "request-without-result-type",
        schema_edit(
            lambda s: (
                defs(s).update(FooRequest=_request({"type": "string", "const": "foo"})),
                defs(s)["ClientRequest"]["anyOf"].append({"$ref": REF + "FooRequest"}),
            )
        ),
        f"{SCHEMA}#/$defs/FooRequest",
        "no result type for 'foo': no FooResult definition",
    ),
    Case(
        "slot-is-not-a-union",
        schema_edit(lambda s: defs(s).update(ServerRequest={"type": "string", "enum": ["x"]})),
        f"{SCHEMA}#/$defs/ServerRequest",
        "ServerRequest must be a union, an alias or a message",
    ),
    # -- found as bugs while writing these tests, now refused -------------------------------------
    Case(
        "allof-self-reference",
        schema_edit(lambda s: defs(s).update(Loop={"allOf": [{"$ref": REF + "Loop"}]})),
        f"{SCHEMA}#/$defs/Loop",
        "cycle",
        exact=False,
    ),
    Case(
        "name-is-keyword-class",
        schema_edit(lambda s: defs(s).update({"class": {"type": "object", "properties": {"x": {"type": "string"}}}})),
        f"{SCHEMA}#/$defs/class",
        "not usable as a Python class name",
    ),
    Case(
        "name-is-keyword-None",
        schema_edit(lambda s: defs(s).update({"None": {"type": "string"}})),
        f"{SCHEMA}#/$defs/None",
        "not usable as a Python class name",
    ),
    Case(
        "minimum-not-a-number",
        schema_edit(lambda s: defs(s)["CallToolResult"]["properties"].update(n={"type": "integer", "minimum": "5"})),
        f"{SCHEMA}#/$defs/CallToolResult/properties/n/minimum",
        "number",
    ),
    Case(
        "two-requests-same-method",
        schema_edit(
            lambda s: (
                defs(s).update(OtherPingRequest=_request({"type": "string", "const": "ping"})),
                defs(s)["ClientRequest"]["anyOf"].append({"$ref": REF + "OtherPingRequest"}),
            )
        ),
        f"{SCHEMA}#/$defs/",
        "ping",
        exact=False,
    ),
    Case(
        "request-and-notification-same-method",
        schema_edit(lambda s: defs(s)["InitializedNotification"]["properties"]["method"].update(const="ping")),
        f"{SCHEMA}#/$defs/",
        "ping",
        exact=False,
    ),
    # -- text that reaches generated code: a method name is printed raw, so unprintable ones are refused --------
    Case(
        "method-name-with-nul",
        schema_edit(lambda s: defs(s)["PingRequest"]["properties"]["method"].update(const="pi\x00ng")),
        f"{SCHEMA}#/$defs/PingRequest/properties/method",
        "is not printable ASCII",
    ),
    Case(
        "method-name-with-quote",
        schema_edit(lambda s: defs(s)["PingRequest"]["properties"]["method"].update(const='pi"ng')),
        f"{SCHEMA}#/$defs/PingRequest/properties/method",
        "is not printable ASCII",
    ),
    Case(
        "lone-surrogate-in-description",
        raw_schema(json.dumps(minimal_schema()).replace('"Base result."', '"Base \\ud800 result."')),
        f"{SCHEMA}#/$defs/Result/description",
        "lone surrogate",
    ),
    Case(
        "version-name-not-a-module",
        lambda spec: write_spec_dir(spec, version="1.0"),
        "spec/",
        "1.0",
        exact=False,
    ),
]
