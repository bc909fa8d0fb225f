"""What a malicious MCP server lists, case by case: shared by ``hostile_server.py`` (which sends it over stdio) and
``test_client_from_server_hostile.py`` (which also feeds it to ``render_client_module`` directly).

Every case is built against a ``Bait``: a secret file whose text must never reach a generated module, an http URL
on a local listener that must never be contacted, and ``canary_mod``, a module that marks a file when it is
imported. ``refused`` is a fragment of the one-line error a refused case must give; ``None`` means the module is
generated and must import (and be used) without the canary firing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcpgen.features.client_from_server.schema_guard import SAFE_FORMATS

CANARY_MODULE = "canary_mod"
SECRET_FILE_NAME = "secret.json"

Tool = dict[str, Any]


@dataclass(frozen=True)
class Bait:
    secret_path: Path  # absolute; the secret text is its "description"
    url: str  # http://127.0.0.1:<port>/schema.json, a listener that records every connection

    @property
    def secret_dir_uri(self) -> str:
        return self.secret_path.parent.as_uri() + "/"


@dataclass(frozen=True)
class Case:
    tools: Callable[[Bait], list[Tool]]
    refused: str | None = None  # a fragment of the error; None: generation succeeds
    server_name: str = "hostile"
    server_version: str = "6.6.6"
    paging: Literal["one page", "one tool per page forever", "empty pages forever"] = "one page"
    wire_safe: bool = True  # False: only fed in-process (the MCP models would reject it on the wire first)


def _tool(name: str, properties: dict[str, Any], **extra: Any) -> Tool:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, **extra}}


def _ref_case(make_ref: Callable[[Bait], str], keyword: str = "$ref", **extra: Any) -> Case:
    return Case(lambda bait: [_tool("fetch", {"leak": {keyword: make_ref(bait)}}, **extra)], refused=keyword)


# -- refused: references to anything outside the tool's own schema --------------------------------------------------

REF_CASES: dict[str, Case] = {
    "ref_absolute_path": _ref_case(lambda bait: str(bait.secret_path)),
    "ref_absolute_path_with_fragment": _ref_case(lambda bait: f"{bait.secret_path}#/description"),
    "ref_file_uri": _ref_case(lambda bait: bait.secret_path.as_uri()),
    "ref_relative_path": _ref_case(lambda bait: SECRET_FILE_NAME),
    "ref_relative_dot_path": _ref_case(lambda bait: f"./{SECRET_FILE_NAME}#"),
    "ref_parent_path": _ref_case(lambda bait: f"../{bait.secret_path.parent.name}/{SECRET_FILE_NAME}"),
    "ref_http_local": _ref_case(lambda bait: bait.url),
    "ref_https_remote": _ref_case(lambda bait: "https://example.com/schema.json#/$defs/X"),
    "ref_protocol_relative": _ref_case(lambda bait: "//example.com/schema.json"),
    "ref_urn": _ref_case(lambda bait: "urn:example:secret"),
    "dynamic_ref_file": _ref_case(lambda bait: bait.secret_path.as_uri(), keyword="$dynamicRef"),
    "recursive_ref_http": _ref_case(lambda bait: bait.url, keyword="$recursiveRef"),
    "ref_anchor": _ref_case(lambda bait: "#secret", **{"$defs": {"S": {"$anchor": "secret", "type": "string"}}}),
    "ref_percent_encoded": _ref_case(lambda bait: "#/$defs/%53", **{"$defs": {"S": {"type": "string"}}}),
    "ref_dangling": _ref_case(lambda bait: "#/$defs/Missing"),
    "ref_not_a_string": Case(lambda bait: [_tool("fetch", {"leak": {"$ref": 5}})], refused="is not a string"),
    "ref_in_definitions": Case(
        lambda bait: [
            _tool(
                "fetch",
                {"leak": {"$ref": "#/$defs/Inner"}},
                **{"$defs": {"Inner": {"type": "object", "properties": {"x": {"$ref": bait.secret_path.as_uri()}}}}},
            )
        ],
        refused="$ref",
    ),
    "ref_in_output_schema": Case(
        lambda bait: [
            {
                "name": "fetch",
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object", "properties": {"leak": {"$ref": bait.secret_path.as_uri()}}},
            }
        ],
        refused="$ref",
    ),
}


def _under_id(bait: Bait) -> list[Tool]:
    # A base URI that would turn a relative ref into a file read: $id is stripped and the ref is still refused.
    return [_tool("fetch", {"leak": {"$ref": SECRET_FILE_NAME}}, **{"$id": bait.secret_dir_uri})]


REF_CASES["ref_relative_under_id"] = Case(_under_id, refused="$ref")


# -- refused: bounds ------------------------------------------------------------------------------------------------


def _deep(depth: int) -> Tool:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"x": node}}
    return {"name": "deep", "inputSchema": node}


BOUND_CASES: dict[str, Case] = {
    "too_many_tools": Case(lambda bait: [_tool(f"t{n}", {}) for n in range(1001)], refused="more than 1000 tools"),
    "endless_pages": Case(
        lambda bait: [_tool("again", {})], refused="still paging tools/list", paging="one tool per page forever"
    ),
    "empty_pages_forever": Case(lambda bait: [], refused="still paging", paging="empty pages forever"),
    "too_deep": Case(lambda bait: [_deep(100)], refused="nests deeper than 64"),
    "too_big": Case(lambda bait: [_tool("big", {}, description="x" * (9 * 1024 * 1024))], refused="characters of JSON"),
}

# -- generated: everything else is dropped or rendered inert --------------------------------------------------------


def _extensions(bait: Bait) -> list[Tool]:
    canary = CANARY_MODULE
    thing = f"{canary}.Thing"
    return [
        _tool(
            "imports",
            {
                "a": {"type": "string", "customTypePath": thing},
                "b": {"type": "object", "customBasePath": f"{canary}.Base", "properties": {"x": {"type": "string"}}},
                "c": {"type": "string", "x-python-type": thing},
                "d": {"type": "object", "x-python-import": {"module": canary, "name": "Thing"}},
                "e": {"type": "array", "items": {"type": "string", "x-python-type": thing}},
                "g": {"anyOf": [{"type": "string", "customTypePath": thing}, {"type": "null"}]},
                "h": {"$ref": "#/$defs/Imported"},
                "i": {"type": "string", "format": "import-string"},
                # A type that imports whatever dotted path it is given, when a value is validated.
                "j": {"type": "string", "x-python-type": "pydantic.ImportString"},
            },
            customBasePath=[f"{canary}.Base"],
            **{
                "x-python-type": thing,
                "$defs": {"Imported": {"type": "object", "x-python-import": {"module": canary, "name": "Thing"}}},
            },
        )
        | {"outputSchema": {"type": "object", "customBasePath": f"{canary}.Base", "x-python-type": thing}}
    ]


def _names(bait: Bait) -> list[Tool]:
    nasty = 'nul\x00 cr\r lf\n quotes""" esc\x1b[31m bidi\u202e backslash\\'
    enum_values = ["plain", "nul\x00", 'q"""', "back\\", "cr\r\n"]
    properties = {
        "nul\x00name": {"type": "string", "title": nasty, "description": nasty},
        "class": {"type": "string"},
        "self": {"type": "string"},
        "int": {"type": "string"},
        "count": {"type": "integer"},
        "choice": {"enum": enum_values, "default": "nul\x00", "description": nasty + '"'},
    }
    return [
        {**_tool("evil\x00name", properties, description=nasty), "description": nasty},
        {**_tool('quote"""s', {"x": {"type": "string"}}), "description": 'ends in a quote"', "title": nasty},
        {**_tool("line\r\nbreak", {}), "description": "trailing backslash \\"},
        _tool("\u202eevil", {}),
        _tool("class", {}),
        _tool("client", {}),
        _tool("", {}),
    ]


def _patterns(bait: Bait) -> list[Tool]:
    patterns = {
        "not_python": "[",
        "ecma_property": r"\p{L}+",
        "ecma_named_group": "(?<name>x)",
        "ecma_control": r"\cA",
        "ecma_empty_class": "[^]",
        "lookbehind": "(?<=a)b",
        "backreference": r"(a)\1",
        "nul": "a\x00b",
        "too_long": "a" * 5000,
        "trailing_backslash": "a\\",
        "quotes": "^['\"]+$",
    }
    properties: dict[str, Any] = {name: {"type": "string", "pattern": value} for name, value in patterns.items()}
    properties["kept"] = {"type": "string", "pattern": "^[a-z]+$"}
    return [_tool("patterns", properties)]


def _references(bait: Bait) -> list[Tool]:
    # Local refs of the kinds zod-to-json-schema writes, into properties named like the names a module imports.
    shadowing = ["Literal", "BaseModel", "AwareDatetime", "RootModel", "Field", "HostileClient", "PatternsInput"]
    properties: dict[str, Any] = {
        name: {"type": "object", "properties": {"v": {"type": "string"}}} for name in shadowing
    }
    properties |= {f"ref_{name}": {"$ref": f"#/properties/{name}"} for name in shadowing}
    properties["choice"] = {"enum": ["a", "b"]}  # a Literal after the refs: breaks if Literal were shadowed
    properties["tree"] = {"type": "array", "items": {"$ref": "#"}}
    properties["node"] = {"$ref": "#/$defs/a~1b"}
    return [
        _tool("references", properties, **{"$defs": {"a/b": {"type": "integer"}}}),
        _tool("a", {"b_input": {"type": "object", "properties": {"x": {"type": "string"}}}}),
        _tool("a_input_b", {"y": {"type": "integer"}}, required=["y"]),
    ]


def _identity_tricks(bait: Bait) -> list[Tool]:
    return [
        _tool(
            "identity",
            {
                "item": {"$ref": "#/$defs/Item"},
                "id": {"type": "string", "$id": bait.url, "id": bait.url},
                "anchored": {"$dynamicAnchor": "meta", "$anchor": "a", "type": "string"},
            },
            **{
                "$id": bait.secret_dir_uri,
                "$schema": bait.url,
                "id": bait.url,
                "$defs": {"Item": {"$id": bait.secret_path.as_uri(), "type": "integer"}},
                "$recursiveAnchor": True,
                "$vocabulary": {bait.url: True},
                "$comment": bait.url,
            },
        )
    ]


def _formats(bait: Bait) -> list[Tool]:
    strings = ["email", "idn-email", "ulid", "password", "binary", "byte", "decimal", "path", "unixtime", "date-time"]
    properties: dict[str, Any] = {f"s_{name.replace('-', '_')}": {"type": "string", "format": name} for name in strings}
    properties["i_date_time"] = {"type": "integer", "format": "date-time"}
    properties["n_time_delta"] = {"type": "number", "format": "time-delta"}
    # And every format that is kept, which must import and dump back to its JSON type.
    for json_type, formats in SAFE_FORMATS.items():
        properties |= {f"ok_{name.replace('-', '_')}": {"type": json_type, "format": name} for name in formats}
    return [_tool("formats", properties)]


def _values(bait: Bait) -> list[Tool]:
    # Not wire-safe: NaN and infinities are not JSON; they reach render_client_module only in-process.
    return [
        _tool(
            "values",
            {
                "nan_default": {"type": "number", "default": float("nan")},
                "inf_bound": {"type": "number", "maximum": float("inf"), "minimum": float("-inf")},
                "huge_int": {"type": "integer", "default": 10**400, "maximum": 10**400},
                "enum_objects": {"enum": [{"a": 1}, [1]]},
                "const_object": {"const": {"a": 1}},
                "examples_not_list": {"type": "string", "examples": "x"},
                "ref_in_default": {
                    "type": "object",
                    "default": {"$ref": bait.secret_path.as_uri()},
                    "examples": [{"$ref": str(bait.secret_path)}, {"$id": bait.url, "$ref": SECRET_FILE_NAME}],
                },
                "zero_multiple": {"type": "number", "multipleOf": 0},
                "negative_length": {"type": "string", "minLength": -1, "maxLength": True},
                "unknown_type": {"type": "strng"},
                "not_a_schema": "string",
                "required_junk": {"type": "object", "required": [1, None, "x"]},
                # datamodel-code-generator 0.89 itself only takes dict/list/set here, and fails on anything else.
                "factory": {"type": "object", "default_factory": f"{CANARY_MODULE}.make"},
            },
        ),
        {"name": "bare_true", "inputSchema": True},
        {"name": "bare_string", "inputSchema": {"type": "string"}, "outputSchema": "nonsense"},
    ]


OK_CASES: dict[str, Case] = {
    "extensions": Case(_extensions),
    "names": Case(_names, server_name='hostile\x00\r\n"""server\u202e', server_version="6\x00.6"),
    "patterns": Case(_patterns),
    "references": Case(_references),
    "identity_tricks": Case(_identity_tricks),
    "formats": Case(_formats),
    "values": Case(_values, wire_safe=False),
}

CASES: dict[str, Case] = {**REF_CASES, **BOUND_CASES, **OK_CASES}
