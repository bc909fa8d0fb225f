"""What `mcpgen client-from-server` lets through from a server: every tool schema is vetted before any of it
reaches datamodel-code-generator or the generated module.

Why: the server is not trusted. Its schemas are handed to a code generator and its strings are written into a Python
module that the user imports, so anything the generator acts on (``$ref`` resolution, import-producing extensions,
format mappings, regex patterns) and anything written into source (names, docstrings, values) is an attack surface.

Where it sits: ``generate.render_client_module`` calls ``vet_tools`` first and only ever uses what it
returns; ``module_render`` uses ``display_text``/``one_line`` for every server string it writes outside a
``repr``. Everything here is a pure function of its arguments.

Policy, keyword by keyword (inside ``properties`` and ``$defs``/``definitions`` the keys are names, not keywords,
and are kept as they are: the generator writes them only as ``repr`` aliases):

- Kept (allow-list): ``type`` (the seven JSON types), ``properties``, ``required``, ``additionalProperties``,
  ``items``, ``prefixItems``, ``anyOf``/``oneOf``/``allOf``, ``enum``/``const`` (scalars), ``default``/``examples``
  (JSON values), ``title``/``description`` (``display_text``), ``format`` (only ``SAFE_FORMATS``: those the generator
  maps to a stdlib or pydantic type that imports without extras and dumps to the same JSON type), the numeric and
  length bounds, ``multipleOf`` (> 0), ``uniqueItems``, ``nullable``, ``pattern`` (see below), ``$ref`` (see below)
  and ``$defs``/``definitions`` at the schema's root (nested ones are dropped; so are refs into them).
- Refused (``UnsafeSchemaError``, exit 2, one line naming the tool and the ref): a ``$ref``, ``$dynamicRef`` or
  ``$recursiveRef`` that is not a JSON pointer into the tool's own schema (``#`` or ``#/...``): absolute and
  relative paths, ``file:``/``http(s):``/any URI, plain-name (anchor) fragments, percent-encoded pointers (read
  one way here and possibly another by the generator), a non-string ref, and a pointer that resolves to nothing.
  Also refused: more than ``MAX_TOOLS`` tools, containers nested deeper than ``MAX_SCHEMA_DEPTH``, more than
  ``MAX_TOOLS_JSON_CHARS`` characters of tools JSON, a tool whose name is not a string, a tool, property or
  definition name holding a lone surrogate (pydantic-core cannot take it as an alias), and a protocol version that
  is not ``YYYY-MM-DD``.
- Rewritten: a local ``$dynamicRef``/``$recursiveRef`` becomes a ``$ref`` (static resolution is all a generated
  model can do). A local ref that resolves, but to something that is not a kept schema (a dropped keyword, a nested
  ``$defs``), is dropped with a note: the field becomes ``Any`` rather than the generator reading a non-schema.
- Dropped with a note in the module header: keywords that make the generator write imports or code
  (``customTypePath``, ``customBasePath``, ``x-python-*``, ``default_factory``), a ``pattern`` that Python's ``re``
  or pydantic's Rust regex engine (pydantic's default, which rejects look-around and back-references) cannot
  compile, or that is longer than ``MAX_PATTERN_LENGTH`` or holds control characters, and ``default``/``examples``/
  ``enum``/``const`` values that are not finite JSON (NaN, infinities, integers of more than ``MAX_INT_DIGITS``
  digits, which ``repr`` cannot write or Python cannot read back).
- Dropped silently: everything else, notably ``$id``/``id`` (a base URI would redirect local refs), ``$schema``,
  ``$anchor``/``$dynamicAnchor``/``$recursiveAnchor``, ``$comment``, ``not``, ``if``/``then``/``else``,
  ``patternProperties``, ``propertyNames``, ``dependent*``, ``unevaluated*``, ``contains``, ``discriminator``,
  ``readOnly``/``writeOnly``/``deprecated``, ``content*`` and every other extension (``x-*``). Dropping only loosens
  the client-side model; the server still validates what it receives.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# Bounds on what a server may send; beyond them the command refuses (exit 2) instead of generating for minutes.
MAX_TOOLS = 1000
MAX_SCHEMA_DEPTH = 64  # nested JSON objects/arrays in one tool (the tool object itself is level 1)
MAX_TOOLS_JSON_CHARS = 8 * 1024 * 1024  # the tools list as compact JSON
MAX_PATTERN_LENGTH = 1000
MAX_INT_DIGITS = 300  # far below Python's 4300-digit int/str conversion limit

JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
# Formats kept per JSON type: each maps (in datamodel-code-generator 0.89) to a stdlib/pydantic type that imports
# without optional packages and dumps back to the same JSON type. Left out on purpose: email (email-validator),
# ulid (python-ulid), password (SecretStr dumps as "**********"), binary/byte, decimal, path, and the numeric
# date/time formats (they would turn a number into a datetime or timedelta on the wire).
SAFE_FORMATS: Mapping[str, frozenset[str]] = {
    "string": frozenset(
        {
            "date",
            "date-time",
            "time",
            "duration",
            "uuid",
            "uri",
            "uri-reference",
            "uri-template",
            "iri",
            "iri-reference",
            "hostname",
            "idn-hostname",
            "ipv4",
            "ipv6",
            "json-pointer",
            "relative-json-pointer",
            "regex",
        }
    ),
    "integer": frozenset({"int32", "int64"}),
    "number": frozenset({"float", "double"}),
}

# Keywords whose value is one schema (or, for draft-4 tuples, a list of schemas).
SINGLE_SCHEMA_KEYWORDS = frozenset({"additionalProperties", "items"})
SCHEMA_LIST_KEYWORDS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
DEFINITIONS_KEYWORDS = frozenset({"$defs", "definitions"})  # kept at a schema's root only
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
TEXT_KEYWORDS = frozenset({"title", "description"})
BOUND_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
COUNT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
FLAG_KEYWORDS = frozenset({"uniqueItems", "nullable"})
# Keywords datamodel-code-generator turns into imports or code; dropped like any unknown keyword, but noted.
CODE_KEYWORDS = frozenset({"customTypePath", "customBasePath", "default_factory"})
CODE_KEYWORD_PREFIX = "x-python"

_INT_LIMIT: int = 10**MAX_INT_DIGITS
_PROTOCOL_VERSION = re.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}")  # not \d, which matches any Unicode digit
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Control (Cc), format (Cf: bidi overrides, zero-width characters) and surrogate (Cs) code points: none belongs in
# a docstring or comment (NUL does not even parse, a lone surrogate cannot be written as UTF-8, bidi controls make
# source read differently than it runs).
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})

Pointer = tuple[str, ...]


class UnsafeSchemaError(ValueError):
    """A tool (or the tools list) that is refused outright; the message is one line naming the tool."""


@dataclass(frozen=True, slots=True)
class VettedTools:
    """The tools as the generator may see them, and what was dropped on the way (one line each)."""

    tools: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()


# -- text ------------------------------------------------------------------------------------------------------------


def display_text(text: str) -> str:
    """``text`` safe to write into a docstring or description: line breaks normalised to ``\\n``, every other
    control, format and surrogate code point removed (tabs stay)."""
    text = _LINE_BREAKS.sub("\n", text)
    return "".join(char for char in text if char in "\n\t" or unicodedata.category(char) not in _UNPRINTABLE_CATEGORIES)


def one_line(text: str, limit: int = 200) -> str:
    """``display_text`` folded to one line (all whitespace runs become one space), at most ``limit`` characters."""
    folded = " ".join(display_text(text).split())
    return folded if len(folded) <= limit else folded[: limit - 3] + "..."


def describe(value: object, limit: int = 120) -> str:
    """A short, one-line ``repr`` of a server value for an error message or note."""
    return one_line(repr(value), limit)


def check_protocol_version(version: str) -> str:
    """The negotiated version goes into an import (``mcp_bindings.vYYYY_MM_DD``) and a docstring: only a date."""
    if not isinstance(version, str) or not _PROTOCOL_VERSION.fullmatch(version):
        raise UnsafeSchemaError(f"unsupported protocol version {describe(version)} (expected YYYY-MM-DD)")
    return version


# -- patterns --------------------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot go into a pydantic model, or None. It must compile with Python's ``re`` and with
    pydantic-core's default engine (Rust ``regex``), which is what the model compiles it with at import."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"longer than {MAX_PATTERN_LENGTH} characters"
    if any(unicodedata.category(char) in _UNPRINTABLE_CATEGORIES for char in pattern):
        return "holds control characters"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"not a Python regex ({one_line(str(exc), 80)})"
    # Imported here: every `mcpgen` command imports this module, and only this check needs pydantic-core.
    from pydantic_core import SchemaError, SchemaValidator, core_schema

    try:
        SchemaValidator(core_schema.str_schema(pattern=pattern))
    except SchemaError:
        return "not a regex pydantic's Rust engine compiles"
    return None


# -- values ----------------------------------------------------------------------------------------------------------


def _is_finite_json(value: object, depth: int = 0) -> bool:
    if depth > MAX_SCHEMA_DEPTH:
        return False
    if isinstance(value, str):
        return not _has_surrogate(value)
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) < _INT_LIMIT  # compared, never converted: str() of a huge int raises
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_finite_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(_is_finite_json(key) and _is_finite_json(item, depth + 1) for key, item in value.items())
    return False


def _has_surrogate(text: str) -> bool:
    # A lone surrogate is valid in JSON text (an escape) but not in UTF-8: pydantic-core cannot take it as an alias
    # or literal, and the module could not be written.
    return any("\ud800" <= char <= "\udfff" for char in text)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, bool | str | int | float)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and _is_finite_json(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def nesting_depth(value: object) -> int:
    """How deeply JSON objects/arrays nest in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Sequence[object] = list(node.values())
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_SCHEMA_DEPTH + 1:  # enough to refuse; do not walk a huge document to the end
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


# -- schemas ---------------------------------------------------------------------------------------------------------


def pointer_text(pointer: Pointer) -> str:
    """``("properties", "a/b")`` -> ``/properties/a~1b``; the root is ``/``."""
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in pointer) or "/"


def _resolve(document: object, tokens: Pointer) -> bool:
    node = document
    for token in tokens:
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


@dataclass
class _PendingRef:
    keyword: str
    value: str
    tokens: Pointer
    at: Pointer
    target: dict[str, Any]


@dataclass
class _SchemaVetter:
    """One tool schema (inputSchema or outputSchema): its own JSON pointers are all a ref may name."""

    label: str  # "tool 'x' inputSchema", for messages
    raw: Mapping[str, Any]
    notes: list[str] = field(default_factory=list)
    positions: set[Pointer] = field(default_factory=set)
    refs: list[_PendingRef] = field(default_factory=list)

    def run(self) -> dict[str, Any]:
        vetted = self._schema(self.raw, ())
        assert isinstance(vetted, dict)
        for ref in self.refs:  # after the walk: only now is every kept schema position known
            if ref.tokens not in self.positions:
                self._note(ref.at, f"dropped {ref.keyword} {describe(ref.value)}: it names no schema mcpgen keeps")
            elif "$ref" not in ref.target:  # a $ref wins over a $dynamicRef/$recursiveRef beside it
                ref.target["$ref"] = ref.value
        return vetted

    def _note(self, at: Pointer, text: str) -> None:
        self.notes.append(f"{self.label} {pointer_text(at)}: {text}")

    def _schema(self, node: object, at: Pointer) -> dict[str, Any] | bool:
        self.positions.add(at)
        if isinstance(node, bool):
            return node
        if not isinstance(node, Mapping):
            return {}  # not a schema: accept anything rather than guess
        vetted: dict[str, Any] = {}
        for key, value in node.items():
            self._keyword(vetted, str(key), value, at)
        self._keep_safe_format(vetted, node.get("format"))
        return vetted

    def _keyword(self, vetted: dict[str, Any], key: str, value: Any, at: Pointer) -> None:
        here = (*at, key)
        if key == "properties" or (key in DEFINITIONS_KEYWORDS and not at):
            if isinstance(value, Mapping):
                for name in value:
                    if not isinstance(name, str) or _has_surrogate(name):
                        raise UnsafeSchemaError(
                            f"{self.label} {pointer_text(here)}: the name {describe(name)} is not valid UTF-8 text"
                        )
                vetted[key] = {name: self._schema(sub, (*here, name)) for name, sub in value.items()}
        elif key in SCHEMA_LIST_KEYWORDS:
            if isinstance(value, list) and value:
                vetted[key] = [self._schema(sub, (*here, str(index))) for index, sub in enumerate(value)]
        elif key in SINGLE_SCHEMA_KEYWORDS:
            if key == "items" and isinstance(value, list):
                vetted[key] = [self._schema(sub, (*here, str(index))) for index, sub in enumerate(value)]
            else:
                vetted[key] = self._schema(value, here)
        elif key in REF_KEYWORDS:
            self._ref(vetted, key, value, at)
        elif key in TEXT_KEYWORDS:
            if isinstance(value, str):
                vetted[key] = display_text(value)
        elif key == "type":
            kept = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            types = list(dict.fromkeys(item for item in kept if isinstance(item, str) and item in JSON_TYPES))
            if types:
                vetted[key] = types[0] if isinstance(value, str) else types
        elif key == "required":
            if isinstance(value, list):
                vetted[key] = list(dict.fromkeys(item for item in value if isinstance(item, str)))
        elif key in {"enum", "const", "default", "examples"}:
            self._value(vetted, key, value, at)
        elif key == "pattern":
            problem = pattern_problem(value) if isinstance(value, str) else "not a string"
            if problem is None:
                vetted[key] = value
            else:
                self._note(at, f"dropped pattern {describe(value, 60)}: {problem}")
        elif key in BOUND_KEYWORDS:
            if _is_number(value) or (key.startswith("exclusive") and isinstance(value, bool)):
                vetted[key] = value
        elif key == "multipleOf":
            if _is_number(value) and value > 0:
                vetted[key] = value
        elif key in COUNT_KEYWORDS:
            if _is_count(value):
                vetted[key] = value
        elif key in FLAG_KEYWORDS:
            if isinstance(value, bool):
                vetted[key] = value
        elif key in CODE_KEYWORDS or key.startswith(CODE_KEYWORD_PREFIX):
            self._note(at, f"dropped {key}: a schema extension that makes the generator write imports or code")
        # Anything else (format is decided once the type is known) is dropped: see the module docstring.

    def _value(self, vetted: dict[str, Any], key: str, value: Any, at: Pointer) -> None:
        if key == "enum":
            fits = isinstance(value, list) and bool(value) and all(_is_scalar(item) for item in value)
        elif key == "const":
            fits = _is_scalar(value)
        elif key == "examples":
            fits = isinstance(value, list)
        else:
            fits = True
        if fits and _is_finite_json(value):
            vetted[key] = value
        else:
            self._note(
                at,
                f"dropped {key}: not JSON the generated module can hold (NaN, infinity, huge number, lone "
                "surrogate, or not the keyword's shape)",
            )

    def _ref(self, vetted: dict[str, Any], key: str, value: object, at: Pointer) -> None:
        if not isinstance(value, str):
            raise UnsafeSchemaError(f"{self.label} {pointer_text(at)}: {key} {describe(value)} is not a string")
        fragment = value[1:]
        if not value.startswith("#") or "%" in value or (fragment and not fragment.startswith("/")):
            raise UnsafeSchemaError(
                f"{self.label} {pointer_text(at)}: {key} {describe(value)} refused: only JSON pointers into the "
                "tool's own schema (#/...) may be referenced; no file, URL or anchor is ever resolved"
            )
        tokens = tuple(token.replace("~1", "/").replace("~0", "~") for token in fragment.split("/")[1:])
        if re.search("~[^01]|~$", fragment) or not _resolve(self.raw, tokens):
            raise UnsafeSchemaError(
                f"{self.label} {pointer_text(at)}: {key} {describe(value)} points at nothing in the tool's schema"
            )
        self.refs.append(_PendingRef(key, value, tokens, at, vetted))

    def _keep_safe_format(self, vetted: dict[str, Any], value: object) -> None:
        declared = vetted.get("type")
        types = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
        typed = [item for item in types if item != "null"]
        if isinstance(value, str) and typed and all(value in SAFE_FORMATS.get(item, ()) for item in typed):
            vetted["format"] = value


def vet_schema(schema: Mapping[str, Any], label: str) -> tuple[dict[str, Any], list[str]]:
    """One tool schema through the allow-list (see the module docstring); ``label`` names it in messages."""
    vetter = _SchemaVetter(label, schema)
    return vetter.run(), vetter.notes


def tool_json_chars(tool: object) -> int:
    """How many characters of compact JSON ``tool`` is; refuses a tool nested deeper than ``MAX_SCHEMA_DEPTH``
    first (the JSON encoder, like the generator, recurses)."""
    if nesting_depth(tool) > MAX_SCHEMA_DEPTH:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        raise UnsafeSchemaError(f"tool {describe(name)} nests deeper than {MAX_SCHEMA_DEPTH} levels; refused")
    try:
        return len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False, default=repr))
    except ValueError:  # an integer of more than 4300 digits, which Python will not even write
        name = tool.get("name") if isinstance(tool, Mapping) else None
        raise UnsafeSchemaError(f"tool {describe(name)} holds a number too large to write; refused") from None


def check_tools_bounds(tool_count: int, json_chars: int) -> None:
    """Refuse a tools list longer than ``MAX_TOOLS`` or larger than ``MAX_TOOLS_JSON_CHARS``; ``fetch_snapshot``
    checks page by page, so that a server cannot make us buffer an endless list."""
    if tool_count > MAX_TOOLS:
        raise UnsafeSchemaError(f"the server lists more than {MAX_TOOLS} tools ({tool_count} so far); refused")
    if json_chars > MAX_TOOLS_JSON_CHARS:
        raise UnsafeSchemaError(
            f"the tools list is more than {MAX_TOOLS_JSON_CHARS} characters of JSON ({json_chars} so far); refused"
        )


def vet_tools(tools: Sequence[Mapping[str, Any]]) -> VettedTools:
    """Every tool as the generator may see it: the name exactly as sent (the generated module writes it only with
    ``repr``), ``title``/``description`` through ``display_text``, both schemas through ``vet_schema``; everything
    else about a tool is left out. Raises ``UnsafeSchemaError`` for what is refused."""
    check_tools_bounds(len(tools), 0)
    check_tools_bounds(len(tools), sum(tool_json_chars(tool) for tool in tools))
    vetted: list[dict[str, Any]] = []
    notes: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            raise UnsafeSchemaError(f"a tool without a string name: {describe(tool)}")
        if _has_surrogate(tool["name"]):
            raise UnsafeSchemaError(f"tool {describe(tool['name'])}: the name is not valid UTF-8 text")
        name: str = tool["name"]
        clean: dict[str, Any] = {"name": name}
        for key in ("title", "description"):
            if isinstance(tool.get(key), str):
                clean[key] = display_text(tool[key])
        for key in ("inputSchema", "outputSchema"):
            schema = tool.get(key)
            if not isinstance(schema, Mapping):
                if key == "inputSchema":  # a tool must send an object schema; one bad tool does not stop the rest
                    clean[key] = {"type": "object"}
                continue
            clean[key], schema_notes = vet_schema(schema, f"tool {describe(name, 60)} {key}")
            notes.extend(schema_notes)
        vetted.append(clean)
    return VettedTools(tools=tuple(vetted), notes=tuple(notes))
