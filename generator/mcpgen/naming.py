"""Names and prose: wire names to Python names, inline-schema names, TSDoc to clean docstrings, and the escaping of
unprintable characters (`escape_unprintable`) in any schema text that reaches generated code.

Pipeline position: used by the parser, so that names are resolved before they reach the IR.
"""

from __future__ import annotations

import keyword
import re
import unicodedata

# Public attributes of pydantic.BaseModel (v2, including the deprecated v1 API). A field with one of
# these names would shadow the method, so it gets a trailing underscore. Hard-coded rather than read
# from pydantic at generation time, so the output does not depend on the installed pydantic.
BASEMODEL_ATTRIBUTES = frozenset(
    {
        "construct",
        "copy",
        "dict",
        "fields",
        "from_orm",
        "json",
        "parse_file",
        "parse_obj",
        "parse_raw",
        "schema",
        "schema_json",
        "update_forward_refs",
        "validate",
    }
)

# Prefix of the reserved `_meta` keys (io.modelcontextprotocol/clientInfo, ...): dropped from the
# Python name when that does not collide with another field of the same object.
RESERVED_META_PREFIX = "io.modelcontextprotocol/"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_IDENTIFIER = re.compile(r"[^0-9a-zA-Z]+")


def snake_case(wire_name: str) -> str:
    """isError -> is_error, URLElicitation -> url_elicitation, _meta -> meta, $schema -> schema."""
    spaced = _CAMEL_BOUNDARY.sub("_", wire_name)
    words = [word for word in _NON_IDENTIFIER.split(spaced) if word]
    name = "_".join(word.lower() for word in words) or "field"
    if name[0].isdigit():
        name = "n_" + name
    return name


def python_field_name(wire_name: str, taken: set[str]) -> str:
    """A Python attribute name for `wire_name` that is an identifier, no keyword, shadows nothing
    on BaseModel and is not in `taken` (names already used in the same class)."""
    stem = wire_name
    if stem.startswith(RESERVED_META_PREFIX):
        short = snake_case(stem[len(RESERVED_META_PREFIX) :])
        if short not in taken and not _needs_suffix(short):
            return short
    name = snake_case(stem)
    if _needs_suffix(name):
        name += "_"
    while name in taken:
        name += "_"
    return name


def _needs_suffix(name: str) -> bool:
    return keyword.iskeyword(name) or name in BASEMODEL_ATTRIBUTES or name.startswith("model_")


def pascal_case(text: str) -> str:
    """params -> Params, requestedSchema -> RequestedSchema, _meta -> Meta."""
    words = [word for word in _NON_IDENTIFIER.split(text) if word]
    return "".join(word[:1].upper() + word[1:] for word in words)


def unique_name(base: str, taken: set[str]) -> str:
    """`base` (an inline schema's name from where it sits: CallToolRequest.params ->
    CallToolRequestParams), or on a clash with an existing name, 'Object' then a counter added."""
    if base not in taken:
        return base
    candidate = base + "Object"
    counter = 2
    while candidate in taken:
        candidate = f"{base}Object{counter}"
        counter += 1
    return candidate


_LINK = re.compile(r"\{@link\s+([^}]*)\}")


def clean_description(text: str | None, definition_names: frozenset[str]) -> str | None:
    """Turn TSDoc into plain docstring text.

    `{@link Tool}` -> `Tool`; `{@link Tool | the tool}` and `{@link Tool the tool}` -> the tool.
    The published schemas lost the `|` separator (`{@link CallToolRequesttools/call}`): when the
    target starts with a known definition name followed by more text, that text is the label.
    """
    if text is None:
        return None

    def replace(match: re.Match[str]) -> str:
        body = match.group(1).strip()
        if "|" in body:
            return "`" + body.split("|", 1)[1].strip() + "`"
        if " " in body:
            return body.split(" ", 1)[1].strip()
        if body in definition_names:
            return f"`{body}`"
        for cut in range(len(body) - 1, 0, -1):
            if body[:cut] in definition_names:
                return f"`{body[cut:]}`"
        return f"`{body}`"

    cleaned = _LINK.sub(replace, text).strip()
    return cleaned or None


# Code points never written raw into generated text: control characters but tab and newline (Cc), format characters
# (Cf: bidi overrides and zero-width characters make source read differently than it runs), surrogates (Cs: a lone
# one cannot be written as UTF-8) and line/paragraph separators (Zl, Zp: line breaks to some readers, not to Python).
# NUL does not even parse. Each is written as an escape instead, which means the same character in a Python or
# JavaScript string and reads as itself in a comment or in Markdown.
UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    if char in "\n\t" or unicodedata.category(char) not in UNPRINTABLE_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_unprintable(text: str) -> str:
    r"""`text` with every code point of `UNPRINTABLE_CATEGORIES` written as an escape (`\x00`, `\x1b`, `\r` as
    `\x0d`, `\u2028`, `\ud800`); printable text (tabs and newlines included) is returned as it is."""
    if text.isprintable() or all(_escape(char) == char for char in text):
        return text
    return "".join(_escape(char) for char in text)


def has_unprintable(text: str) -> bool:
    """Whether `escape_unprintable` would change `text`."""
    return escape_unprintable(text) != text
