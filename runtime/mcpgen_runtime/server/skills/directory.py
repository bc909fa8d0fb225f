"""A skills root on disk, loaded once into ``Skill`` values: every file read, measured, hashed and checked.

Where it sits: in ``server.skills``, over ``frontmatter`` and under ``methods`` (which serves what is loaded here).

What a skill is (SEP-2640, the Agent Skills specification): a directory holding a ``SKILL.md`` whose frontmatter
``name`` equals the directory's name; every file under it is one of its resources,
``skill://<name>/<path>``. A root is either such a directory or a directory of them (its subdirectories without a
``SKILL.md`` are skipped, and logged). Refused, with a ``SkillError`` naming the path, so that nothing is half
served: a ``SKILL.md`` below a skill's root (skills do not nest), a symlink whose target is outside its skill, a
symlinked directory (a loop, or a second name for files already served), anything that is not a regular file or a
directory, and a skill over the limits (``SkillLimits``: 512 files, 16 MiB, the SEP's; and this runtime's bounds on
skills, depth and total bytes held). Names starting with "." (``.git``, ``.DS_Store``) are not served.

Why everything is read now, not at each ``resources/read``: an entry publishes each file's digest and size, and a
host refuses content that does not match them. Served from what was hashed, a file edited on disk cannot make the
server contradict its own entries, and a read cannot reach outside the skill: a URI is looked up, never joined to
a path. The price is memory (bounded by ``SkillLimits.max_total_bytes``) and that changes on disk are seen only
when the skills are loaded again (``Server.add_skills(..., replace=True)``).
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from .frontmatter import FrontmatterError, parse_frontmatter

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "SKILL_FILE",
    "SKILL_SCHEME",
    "Skill",
    "SkillError",
    "SkillFile",
    "SkillLimits",
    "load_skills",
]

logger = logging.getLogger(__name__)

SKILL_SCHEME: Final = "skill://"
SKILL_FILE: Final = "SKILL.md"
DIRECTORY_MIME_TYPE: Final = "inode/directory"  # SEP-2640: a directory resource's mimeType
_URI_SAFE: Final = "!$&'()*+,;=:@-._~"  # RFC 3986 pchar besides the unreserved letters and digits
# Types the standard library's built-in table lacks (it has no .md before Python 3.13), or that skills use often.
_MIME_TYPES: Final = {".md": "text/markdown", ".markdown": "text/markdown", ".yaml": "application/yaml"}
_BUILT_IN_TYPES: Final = mimetypes.MimeTypes()  # the standard library's own table, not the host's /etc/mime.types


class SkillError(ValueError):
    """A skill that cannot be served as it is on disk; the message names the file and the rule."""


@dataclass(frozen=True, slots=True)
class SkillLimits:
    """Bounds on what ``load_skills`` holds. ``max_files_per_skill`` (512, SKILL.md included) and
    ``max_skill_bytes`` (16 MiB) are SEP-2640's "SHOULD NOT serve" limits; ``max_skills`` (256), ``max_depth``
    (16 directory levels in a skill) and ``max_total_bytes`` (64 MiB over every skill loaded at once) bound the
    memory and work of one load."""

    max_files_per_skill: int = 512
    max_skill_bytes: int = 16 * 1024 * 1024
    max_skills: int = 256
    max_depth: int = 16
    max_total_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_files_per_skill", "max_skill_bytes", "max_skills", "max_depth", "max_total_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"SkillLimits.{name} must be an integer >= 1, not {value!r}")


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill: its URI and path in the skill (POSIX, relative), bytes, ``sha256:<hex>`` digest and
    MIME type; ``text`` when the bytes are UTF-8 (served as text, else as a base64 blob)."""

    uri: str
    path: str
    data: bytes = field(repr=False)
    digest: str
    mime_type: str
    text: str | None = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class Skill:
    """A loaded skill: its name, the URIs of its ``SKILL.md`` (``uri``, the skill's identity) and of its root
    directory, the frontmatter (a JSON object), its files (``SKILL.md`` first) and its directories (URI -> the
    direct children, as resources/directory/read lists them)."""

    name: str
    uri: str
    directory_uri: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]
    directories: dict[str, tuple[dict[str, Any], ...]] = field(repr=False)

    @property
    def size(self) -> int:
        return sum(file.size for file in self.files)

    def entry(self) -> dict[str, Any]:
        """The skill entry of ``skills/list`` and ``skills/get`` (a new dict each time: the caller's to change)."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [{"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.files],
        }


def load_skills(root: str | os.PathLike[str], limits: SkillLimits = SkillLimits()) -> list[Skill]:
    """The skills under ``root`` (one skill directory, or a directory of them), sorted by name; ``SkillError`` for
    one that breaks a rule or a limit, ``FileNotFoundError`` / ``NotADirectoryError`` for a bad ``root``."""
    base = Path(root)
    if not base.exists():
        raise FileNotFoundError(f"skills root {str(base)!r} does not exist")
    if not base.is_dir():
        raise NotADirectoryError(f"skills root {str(base)!r} is not a directory")
    if (base / SKILL_FILE).is_file():
        candidates = [base]
    else:
        candidates = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    budget = [limits.max_total_bytes]
    skills: list[Skill] = []
    for directory in candidates:
        if not (directory / SKILL_FILE).is_file():
            logger.info("skills root %s: %s has no %s, not a skill: skipped", base, directory.name, SKILL_FILE)
            continue
        if directory.is_symlink():
            raise SkillError(f"{directory}: a symlinked skill directory is not served (use the directory itself)")
        if len(skills) >= limits.max_skills:
            raise SkillError(f"skills root {str(base)!r} holds more than {limits.max_skills} skills (max_skills)")
        skills.append(_load_skill(directory, limits, budget))
    return skills


class _SkillReader:
    """The walk of one skill directory: the files read so far and the budgets they count against."""

    def __init__(self, directory: Path, limits: SkillLimits, budget: list[int]) -> None:
        self.directory, self.real = directory, os.path.realpath(directory)
        self.name = directory.name
        self.limits, self.budget = limits, budget
        self.files: list[SkillFile] = []
        self.directories: dict[str, list[dict[str, Any]]] = {}
        self.bytes = 0

    def uri(self, parts: tuple[str, ...]) -> str:
        return SKILL_SCHEME + "/".join((self.name, *(quote(part, safe=_URI_SAFE) for part in parts)))

    def walk(self, path: Path, parts: tuple[str, ...]) -> None:
        if len(parts) > self.limits.max_depth:
            raise SkillError(f"{path}: deeper than {self.limits.max_depth} directories (max_depth)")
        children: list[dict[str, Any]] = []
        self.directories[self.uri(parts)] = children
        with os.scandir(path) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child_parts, child = (*parts, entry.name), Path(entry.path)
            if entry.is_symlink():
                target = os.path.realpath(child)
                if os.path.commonpath([self.real, target]) != self.real:
                    raise SkillError(f"{child}: a symlink to {target}, outside the skill directory {self.directory}")
                if os.path.isdir(target):
                    raise SkillError(f"{child}: a symlinked directory is not served (a loop or a second name)")
            mode = os.stat(child).st_mode  # the target's, for a symlink
            if stat.S_ISDIR(mode):
                if (child / SKILL_FILE).exists():
                    raise SkillError(f"{child / SKILL_FILE}: skills do not nest (SEP-2640): a SKILL.md below a skill")
                children.append({"uri": self.uri(child_parts), "name": entry.name, "mimeType": DIRECTORY_MIME_TYPE})
                self.walk(child, child_parts)
            elif stat.S_ISREG(mode):
                file = self.read(child, child_parts)
                children.append({"uri": file.uri, "name": entry.name, "mimeType": file.mime_type, "size": file.size})
            else:
                raise SkillError(f"{child}: not a regular file or a directory")

    def read(self, path: Path, parts: tuple[str, ...]) -> SkillFile:
        limits = self.limits
        if len(self.files) >= limits.max_files_per_skill:
            raise SkillError(f"{self.directory}: more than {limits.max_files_per_skill} files (max_files_per_skill)")
        skill_left, total_left = limits.max_skill_bytes - self.bytes, self.budget[0]
        with open(path, "rb") as handle:
            data = handle.read(min(skill_left, total_left) + 1)  # a byte more than allowed: it is too long
        if len(data) > skill_left:
            raise SkillError(f"{self.directory}: its files exceed {limits.max_skill_bytes} bytes (max_skill_bytes)")
        if len(data) > total_left:
            raise SkillError(f"{path}: the skills loaded together exceed {limits.max_total_bytes} bytes")
        self.bytes += len(data)
        self.budget[0] -= len(data)
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        file = SkillFile(
            uri=self.uri(parts),
            path="/".join(parts),
            data=data,
            digest="sha256:" + hashlib.sha256(data).hexdigest(),
            mime_type=_mime_type(parts[-1], text is not None),
            text=text,
        )
        self.files.append(file)
        return file


def _load_skill(directory: Path, limits: SkillLimits, budget: list[int]) -> Skill:
    reader = _SkillReader(directory, limits, budget)
    reader.walk(directory, ())
    manifest = next(f for f in reader.files if f.path == SKILL_FILE)
    if manifest.text is None:
        raise SkillError(f"{directory / SKILL_FILE}: not UTF-8 text")
    try:
        frontmatter = parse_frontmatter(manifest.text, str(directory / SKILL_FILE))
    except FrontmatterError as exc:
        raise SkillError(str(exc)) from None
    if frontmatter["name"] != directory.name:
        raise SkillError(
            f"{directory / SKILL_FILE}: frontmatter name {frontmatter['name']!r} must equal the directory's name "
            f"{directory.name!r} (SEP-2640: the final skill-path segment is the name)"
        )
    files = (manifest, *(f for f in reader.files if f is not manifest))
    directories = {uri: tuple(children) for uri, children in reader.directories.items()}
    return Skill(directory.name, manifest.uri, reader.uri(()), frontmatter, files, directories)


def _mime_type(filename: str, is_text: bool) -> str:
    if filename == SKILL_FILE:
        return "text/markdown"  # SEP-2640: SKILL.md's mimeType SHOULD be text/markdown
    suffix = os.path.splitext(filename)[1].lower()
    guessed = _MIME_TYPES.get(suffix) or _BUILT_IN_TYPES.guess_type(filename, strict=False)[0]
    return guessed or ("text/plain" if is_text else "application/octet-stream")
