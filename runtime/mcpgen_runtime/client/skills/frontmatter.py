"""The YAML frontmatter of a fetched SKILL.md: ``parse_frontmatter`` reads it, ``frontmatter_differences`` compares
it field by field with the entry's copy (SEP-2640: hosts MUST parse it and MUST NOT load the skill on any
discrepancy).

Where it sits: in ``client.skills``, on top of ``errors``; pure functions. YAML comes from PyYAML, the ``skills``
extra (``pip install 'mcpgen-runtime[skills]'``), imported on first use so a client that never loads a skill does
not need it.

The loader is PyYAML's safe one, changed in three ways, each because the SKILL.md is the server's text:

- no aliases (``*ref``): a few lines of anchors can stand for an exponentially large value once compared or
  converted to JSON (a "billion laughs");
- YAML 1.2's core schema for plain scalars: booleans are ``true`` / ``false`` only, numbers have no ``_``,
  sexagesimal ``1:30`` or leading-zero octal, and there are no implicit timestamps. The entry's frontmatter is JSON
  made by a server that most likely read the file with a YAML 1.2 parser, where ``on``, ``1_000`` and
  ``2026-01-01`` are strings; YAML 1.1's readings would make an honest skill look tampered with;
- only JSON values: ``!!binary``, ``!!set`` and non-string keys have no JSON form to compare with, and are refused.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Mapping
from typing import Any

from ...protocol.meta import json_copy
from .errors import SkillError

__all__ = ["FrontmatterError", "frontmatter_differences", "parse_frontmatter", "split_frontmatter"]

_BLOCK = re.compile(r"---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_YAML12_INT = re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+)$")
_YAML12_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)


class FrontmatterError(SkillError):
    """A SKILL.md with no frontmatter block, or one that is not YAML, not an object, or not JSON-representable."""


def split_frontmatter(text: str) -> tuple[str, str]:
    """The YAML between the leading ``---`` fences and the Markdown body after them (a leading BOM tolerated)."""
    text = text.removeprefix("\ufeff")
    match = _BLOCK.match(text)
    if match is None:
        raise FrontmatterError("SKILL.md does not begin with a '---' fenced YAML frontmatter block")
    return match.group(1), text[match.end() :]


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """A SKILL.md's frontmatter as a JSON object, and its body."""
    block, body = split_frontmatter(text)
    yaml = _yaml()
    try:
        value = yaml.load(block, Loader=_loader())  # a restricted SafeLoader (see _loader)
        if not isinstance(value, dict):
            raise FrontmatterError(f"the frontmatter is a {type(value).__name__}, not a mapping")
        return as_json(value, "frontmatter"), body
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"the frontmatter is not valid YAML: {exc}") from None
    except RecursionError:
        # PyYAML's composer and the JSON copy recurse per level: a hostile server's deeply nested value must be a
        # refusal like any other, not an error from deep inside the parser.
        raise FrontmatterError("the frontmatter is nested too deeply") from None


def frontmatter_differences(fetched: Mapping[str, Any], listed: Mapping[str, Any]) -> list[str]:
    """The fields on which the fetched file's frontmatter and the entry's differ (empty: identical). A field that is
    absent and one that is null are the same, as in the conformance suite's comparison."""
    differences = []
    for key in sorted(set(fetched) | set(listed)):
        if not same_json(fetched.get(key), listed.get(key)):
            differences.append(f"{key}: file has {fetched.get(key)!r}, entry has {listed.get(key)!r}")
    return differences


def same_json(a: object, b: object) -> bool:
    """JSON equality: unlike ``==``, ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def as_json(value: object, where: str) -> Any:
    try:
        return json_copy(value, where)
    except TypeError as exc:
        raise FrontmatterError(str(exc)) from None


def _yaml() -> Any:
    try:
        # Through importlib, as an untyped module: the code needs only a few names of it, and mypy then needs no
        # PyYAML stubs.
        return importlib.import_module("yaml")
    except ImportError:
        raise SkillError(
            "loading skills needs PyYAML to read SKILL.md frontmatter: pip install 'mcpgen-runtime[skills]'"
        ) from None


@functools.cache
def _loader() -> type:
    """PyYAML's SafeLoader without aliases, with YAML 1.2's plain scalars (see the module docstring)."""
    yaml = _yaml()
    core = {
        "tag:yaml.org,2002:bool": (_YAML12_BOOL, "tTfF"),
        "tag:yaml.org,2002:int": (_YAML12_INT, "-+0123456789"),
        "tag:yaml.org,2002:float": (_YAML12_FLOAT, "-+0123456789."),
    }
    replaced = {*core, "tag:yaml.org,2002:timestamp"}

    class SkillFrontmatterLoader(yaml.SafeLoader):  # type: ignore[misc, name-defined]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, "aliases are not allowed in skill frontmatter", mark)
            return super().compose_node(parent, index)

    SkillFrontmatterLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in replaced]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag, (regexp, first) in core.items():
        SkillFrontmatterLoader.add_implicit_resolver(tag, regexp, list(first))
    return SkillFrontmatterLoader
