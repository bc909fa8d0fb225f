"""A ``SKILL.md``'s YAML frontmatter: found, parsed and checked as the skills extension (SEP-2640) and the Agent
Skills specification require, so that what a skill entry publishes is exactly what a host parses back.

Where it sits: at the bottom of ``server.skills``, under ``directory`` (which reads the files). PyYAML is the
runtime's ``skills`` extra, imported only when a skill is loaded (``require_yaml``).

Why more than ``yaml.safe_load``: an entry's ``frontmatter`` MUST be identical in content to the file's frontmatter
as a host parses it, and hosts do not agree on YAML: some read YAML 1.2 (the JavaScript ``yaml`` package, the
conformance suite's), others YAML 1.1 (PyYAML: FastMCP's skills client), and the two read some plain scalars
differently (``on: yes`` is ``{"on": "yes"}`` in 1.2's core schema, ``{True: True}`` in 1.1; ``0755``, ``1:30``,
dates, ``.inf``, ``<<``). So the frontmatter is read both ways, and one that the two readings disagree on is refused
with the key to quote: what is served then means the same to every host. What JSON cannot carry (anchors and
aliases, which also make a "billion laughs" out of a few bytes; non-string keys; infinities), and duplicate keys
(which YAML forbids and parsers resolve differently), are refused too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_FRONTMATTER_BYTES",
    "RESERVED_METADATA_PREFIX",
    "SKILL_NAME",
    "FrontmatterError",
    "parse_frontmatter",
    "require_yaml",
]

SKILL_NAME: Final = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
"""The Agent Skills naming rules: 1-64 characters, lowercase letters, digits and hyphens, no leading, trailing or
consecutive hyphens (``fullmatch``)."""
MAX_DESCRIPTION_CHARS: Final = 1024  # the Agent Skills specification's limit on ``description``
MAX_FRONTMATTER_BYTES: Final = 64 * 1024
"""The longest frontmatter block parsed: it is metadata, and YAML parsing is not linear in the worst case."""
RESERVED_METADATA_PREFIX: Final = "io.modelcontextprotocol/"
"""``metadata`` keys under this prefix are reserved for MCP extensions; SEP-2640 defines none, so none is served."""

# The block SEP-2640 hosts look for: "---" on the first line (after an optional BOM), the YAML, then "---".
_BLOCK: Final = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)")


class FrontmatterError(ValueError):
    """A ``SKILL.md`` whose frontmatter is missing, unparseable or breaks the rules; the message says which."""


def require_yaml() -> Any:
    """The ``yaml`` module, or an ``ImportError`` naming the extra that installs it."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise ImportError(
            "serving skills needs PyYAML, to read SKILL.md frontmatter: pip install 'mcpgen-runtime[skills]'"
        ) from exc
    return yaml


def parse_frontmatter(text: str, where: str) -> dict[str, Any]:
    """The frontmatter of a ``SKILL.md`` (its ``text``; ``where`` names it in errors) as a JSON object, checked:
    ``name`` and ``description`` present and valid, ``metadata`` (if any) a mapping with no reserved key."""
    body = text[1:] if text.startswith("\ufeff") else text
    block = _BLOCK.match(body)
    if block is None:
        raise FrontmatterError(f"{where}: SKILL.md must begin with a '---' delimited YAML frontmatter block")
    source = block.group(1)
    if len(source.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError(f"{where}: the frontmatter is longer than {MAX_FRONTMATTER_BYTES} bytes")
    yaml = require_yaml()
    try:
        value = yaml.load(source, Loader=_loader_class(yaml))  # a SafeLoader subclass
        if not isinstance(value, dict):
            raise FrontmatterError(f"{where}: the frontmatter must be a YAML mapping")
        _check_json(value, where, "frontmatter")
        differs = _difference(value, yaml.load(source, Loader=yaml.SafeLoader), "frontmatter")  # YAML 1.1's reading
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"{where}: the frontmatter is not valid YAML: {exc}") from None
    except RecursionError:  # PyYAML and the checks recurse per level of nesting
        raise FrontmatterError(f"{where}: the frontmatter is nested too deeply") from None
    if differs is not None:
        raise FrontmatterError(
            f"{where}: {differs} reads differently in YAML 1.1 and 1.2 (hosts use either): quote the value (or key)"
        )
    _check_fields(value, where)
    return value


def _check_fields(frontmatter: Mapping[str, Any], where: str) -> None:
    name = frontmatter.get("name")
    if not isinstance(name, str) or not SKILL_NAME.fullmatch(name):
        raise FrontmatterError(
            f"{where}: frontmatter name {name!r} breaks the Agent Skills naming rules (1-64 of a-z, 0-9 and '-', "
            "no leading, trailing or consecutive '-')"
        )
    description = frontmatter.get("description")
    if not isinstance(description, str) or not description.strip():
        raise FrontmatterError(f"{where}: the frontmatter needs a non-empty string description")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise FrontmatterError(f"{where}: the description is longer than {MAX_DESCRIPTION_CHARS} characters")
    metadata = frontmatter.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise FrontmatterError(f"{where}: frontmatter metadata must be a mapping")
        reserved = sorted(key for key in metadata if key.startswith(RESERVED_METADATA_PREFIX))
        if reserved:
            raise FrontmatterError(
                f"{where}: metadata keys under {RESERVED_METADATA_PREFIX!r} are reserved for MCP extensions and "
                f"none is defined: {', '.join(reserved)}"
            )


def _check_json(value: Any, where: str, path: str) -> None:
    """Refuse what JSON cannot carry as it is: the entry's frontmatter is this value, sent as JSON."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise FrontmatterError(f"{where}: {path} has a non-string key {key!r}")
            _check_json(item, where, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, where, f"{path}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise FrontmatterError(f"{where}: {path} is {value}, which JSON cannot carry")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise FrontmatterError(f"{where}: {path} is a {type(value).__name__}, which JSON cannot carry")


def _difference(mine: Any, theirs: Any, path: str) -> str | None:
    """The first path where two readings differ, in value or in type (``1 == True`` in Python, not in JSON)."""
    if type(mine) is not type(theirs):
        return path
    if isinstance(mine, dict):
        if list(mine) != list(theirs):
            return next((f"{path}.{key}" for key in mine if key not in theirs), path)
        return next((d for key in mine if (d := _difference(mine[key], theirs[key], f"{path}.{key}"))), None)
    if isinstance(mine, list):
        if len(mine) != len(theirs):
            return path
        return next((d for i, item in enumerate(mine) if (d := _difference(item, theirs[i], f"{path}[{i}]"))), None)
    return None if mine == theirs else path


_LOADERS: dict[int, Any] = {}  # id(yaml module) -> the loader class: built once


def _loader_class(yaml: Any) -> Any:
    loader = _LOADERS.get(id(yaml))
    if loader is None:
        loader = _LOADERS[id(yaml)] = _build_loader(yaml)
    return loader


def _build_loader(yaml: Any) -> Any:
    """A ``SafeLoader`` reading scalars as YAML 1.2's core schema does, without aliases or duplicate keys."""

    class CoreSchemaLoader(yaml.SafeLoader):  # type: ignore[misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "anchors and aliases are not allowed in skill frontmatter", event.start_mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (dict, list)) or key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate or unhashable key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> int:
            value: str = self.construct_scalar(node)
            if value.lower().startswith(("0x", "-0x", "+0x")):
                return int(value, 16)
            if value.lower().startswith(("0o", "-0o", "+0o")):
                return int(value.replace("o", "").replace("O", ""), 8)
            return int(value, 10)

    # Resolvers: YAML 1.2 core schema (null, bool, int, float); everything else is a string ("<<" too: a merge key
    # is YAML 1.1's, a plain key in 1.2).
    resolvers: dict[Any, list[Any]] = {}
    for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = [
            (tag, regexp)
            for tag, regexp in entries
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
            and tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge")
        ]
        if kept:
            resolvers[first] = kept
    CoreSchemaLoader.yaml_implicit_resolvers = resolvers
    core = [
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
        (
            "tag:yaml.org,2002:float",
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$",
            "-+.0123456789",
        ),
    ]
    for tag, pattern, first_chars in core:
        CoreSchemaLoader.add_implicit_resolver(tag, re.compile(pattern), list(first_chars))
    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", CoreSchemaLoader.construct_yaml_int)
    return CoreSchemaLoader
