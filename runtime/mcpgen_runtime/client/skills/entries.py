"""A skill entry as the client holds it: ``SkillEntry`` and its files (``SkillFile``), read from the JSON a server
sends in ``skills/list`` / ``skills/get`` and checked against SEP-2640's rules before anything of it is used.

Where it sits: in ``client.skills``, on top of ``errors``; pure functions over JSON, so every malformed entry is a
plain unit test. The entry is what every later fetch is verified against (digest, size, frontmatter, which URIs
may be read at all), so a server's entry is hostile until these checks pass:

- ``uri`` is ``skill://<skill-path>/SKILL.md`` and its final ``<skill-path>`` segment equals ``frontmatter.name``;
- ``frontmatter`` is an object with non-empty string ``name`` and ``description``; the name follows the Agent
  Skills naming rules (1-64 of ``a-z0-9-``, no leading, trailing or doubled hyphen);
- ``resources`` is ``"dynamic"`` (the server cannot enumerate the files: nothing to verify against) or a list of
  ``{uri, digest, size}``: each URI inside the skill's directory (no ``.`` / ``..`` segments), listed once, the
  SKILL.md among them; ``digest`` is ``sha256:`` and 64 lower-case hex digits; ``size`` a byte count; at most
  ``MAX_SKILL_RESOURCES`` (512) files of at most ``MAX_SKILL_TOTAL_BYTES`` (16 MiB) in all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import InvalidSkillEntryError

__all__ = [
    "MAX_SKILL_RESOURCES",
    "MAX_SKILL_TOTAL_BYTES",
    "SKILL_MANIFEST",
    "SKILL_URI_SCHEME",
    "SkillEntry",
    "SkillFile",
    "parse_skill_entry",
]

SKILL_URI_SCHEME: Final = "skill://"
SKILL_MANIFEST: Final = "SKILL.md"
# The SEP's per-skill limits: what a host may have to fetch and hold for one skill.
MAX_SKILL_RESOURCES: Final = 512
MAX_SKILL_TOTAL_BYTES: Final = 16 * 1024 * 1024
DYNAMIC_RESOURCES: Final = "dynamic"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_NAME = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?")


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill as its entry lists it: what a read of ``uri`` must match."""

    uri: str
    digest: str  # "sha256:<64 hex>"
    size: int  # bytes


@dataclass(frozen=True, slots=True)
class SkillEntry:
    """A skill as the server listed it. ``files`` is None when the entry says ``"dynamic"`` (not enumerable);
    ``frontmatter`` is the entry's copy of the SKILL.md frontmatter, which the fetched file must equal."""

    uri: str
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...] | None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def directory(self) -> str:
        """The skill's root, ``skill://<skill-path>/``: every file URI starts with it."""
        return self.uri[: -len(SKILL_MANIFEST)]

    def file(self, uri: str) -> SkillFile | None:
        """The listed file at ``uri`` (None: not listed, or a dynamic entry)."""
        for listed in self.files or ():
            if listed.uri == uri:
                return listed
        return None


def skill_name_rule_violation(name: str) -> str | None:
    """Why ``name`` is no valid skill name (None: it is one)."""
    if _NAME.fullmatch(name) is None:
        return (
            f"name {name!r} breaks the naming rules (1-64 characters of a-z, 0-9 and '-', "
            "no leading, trailing or doubled '-')"
        )
    return None


def has_dot_segments(path: str) -> bool:
    return any(segment in (".", "..") for segment in path.split("/"))


def parse_skill_entry(raw: object) -> SkillEntry:
    """A wire entry as a ``SkillEntry``, or ``InvalidSkillEntryError`` saying which rule it breaks."""
    if not isinstance(raw, Mapping):
        raise InvalidSkillEntryError(None, f"an entry is an object, not {type(raw).__name__}")
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri.startswith(SKILL_URI_SCHEME) or not uri.endswith("/" + SKILL_MANIFEST):
        raise InvalidSkillEntryError(uri, f"uri must be {SKILL_URI_SCHEME}<skill-path>/{SKILL_MANIFEST}")
    path = uri[len(SKILL_URI_SCHEME) : -len(SKILL_MANIFEST) - 1]
    if not path or "" in path.split("/") or has_dot_segments(path) or any(c in uri for c in "?#\\"):
        raise InvalidSkillEntryError(
            uri, "the skill path is empty or has empty, '.' or '..' segments, '?', '#' or '\\'"
        )
    frontmatter = check_entry_frontmatter(uri, raw.get("frontmatter"))
    if path.rsplit("/", 1)[-1] != frontmatter["name"]:
        raise InvalidSkillEntryError(
            uri, f"the final skill-path segment is not frontmatter.name {frontmatter['name']!r}"
        )
    meta = raw.get("_meta")
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidSkillEntryError(uri, "_meta must be an object")
    entry = SkillEntry(uri, frontmatter, None, dict(meta or {}))
    resources = raw.get("resources")
    if resources == DYNAMIC_RESOURCES:
        return entry
    files = check_resources(entry, resources)
    return SkillEntry(uri, frontmatter, files, entry.meta)


def check_entry_frontmatter(uri: str, frontmatter: object) -> dict[str, Any]:
    if not isinstance(frontmatter, Mapping):
        raise InvalidSkillEntryError(uri, "frontmatter must be an object")
    for required in ("name", "description"):
        value = frontmatter.get(required)
        if not isinstance(value, str) or not value:
            raise InvalidSkillEntryError(uri, f"frontmatter.{required} must be a non-empty string")
    problem = skill_name_rule_violation(frontmatter["name"])
    if problem is not None:
        raise InvalidSkillEntryError(uri, problem)
    return dict(frontmatter)


def check_resources(entry: SkillEntry, resources: object) -> tuple[SkillFile, ...]:
    uri = entry.uri
    if not isinstance(resources, list):
        raise InvalidSkillEntryError(uri, f'resources must be a list or "{DYNAMIC_RESOURCES}"')
    if len(resources) > MAX_SKILL_RESOURCES:
        raise InvalidSkillEntryError(uri, f"{len(resources)} resources, over the limit of {MAX_SKILL_RESOURCES}")
    files: list[SkillFile] = []
    seen: set[str] = set()
    total = 0
    for item in resources:
        listed = check_file(entry, item)
        if listed.uri in seen:
            raise InvalidSkillEntryError(uri, f"{listed.uri} is listed twice")
        seen.add(listed.uri)
        total += listed.size
        if total > MAX_SKILL_TOTAL_BYTES:
            raise InvalidSkillEntryError(uri, f"the files add up to over {MAX_SKILL_TOTAL_BYTES} bytes")
        files.append(listed)
    if uri not in seen:
        raise InvalidSkillEntryError(uri, f"resources does not list the skill's own {SKILL_MANIFEST}")
    return tuple(files)


def check_file(entry: SkillEntry, item: object) -> SkillFile:
    uri = entry.uri
    if not isinstance(item, Mapping):
        raise InvalidSkillEntryError(uri, "a resources item is an object of uri, digest and size")
    file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    if not isinstance(file_uri, str) or not file_uri.startswith(entry.directory):
        raise InvalidSkillEntryError(uri, f"resource {file_uri!r} is not inside {entry.directory}")
    relative = file_uri[len(entry.directory) :]
    if not relative or has_dot_segments(relative) or "" in relative.split("/") or any(c in relative for c in "?#\\"):
        raise InvalidSkillEntryError(uri, f"resource {file_uri!r} is not a file path inside the skill")
    if not isinstance(digest, str) or _DIGEST.fullmatch(digest) is None:
        raise InvalidSkillEntryError(uri, f"resource {file_uri} has digest {digest!r}, not sha256:<64 lower-case hex>")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise InvalidSkillEntryError(uri, f"resource {file_uri} has size {size!r}, not a byte count")
    return SkillFile(file_uri, digest, size)
