"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) on the wire: ``skills/list``,
``skills/get``, ``resources/directory/read``, and every skill file a resource.

Where it sits: the top of ``server.skills``, over ``directory`` (the loaded ``Skill`` values). ``SkillCatalog``
holds what a server serves and installs it into a ``Registry`` through the extension mechanism
(``Registry.declare_extension`` and ``serve_extension_method``) and the ordinary resource table, so the dispatch of
either era has no skills code.

What a client sees:
- 2026-07-28: ``capabilities.extensions["io.modelcontextprotocol/skills"]`` (``{"directoryRead": true}`` when
  ``resources/directory/read`` is served), the three methods, and the files as resources.
- 2025-11-25 and before: no ``extensions`` capability exists there, so the methods are -32601 (not declared, not
  served); the files are still resources, listed (``SKILL.md`` named and described by its frontmatter) and read as
  in any version. A host that knows the ``skill://`` convention can use them; nothing is lost but the entries'
  digests.

Pagination (``skills/list`` and ``resources/directory/read``): ``page_size`` entries a page (default 50), an entry
never split; the cursor is opaque and names the catalog's generation, so a cursor minted before the skills changed
(``Server.add_skills`` again, ``remove_skill``) is -32602 rather than a page of another listing.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Final

from ...jsonrpc.envelopes import InvalidParams
from ..authoring.caching import CacheHint
from ..authoring.context import Context
from ..authoring.definitions import ResourceDef
from ..authoring.registry import Registry
from ..authoring.signatures import inspect_function
from .directory import SKILL_FILE, Skill, SkillFile, SkillLimits

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SKILLS_CACHE",
    "DIRECTORY_READ_METHOD",
    "SKILLS_EXTENSION",
    "SkillCatalog",
    "SkillFileResource",
]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
DIRECTORY_READ_METHOD: Final = "resources/directory/read"
DEFAULT_PAGE_SIZE: Final = 50
DEFAULT_SKILLS_CACHE: Final = CacheHint(0, "public")
"""The cache hint of the skills results and of the files' reads: zero TTL (always fresh), public (a skill is the
same for every caller)."""


def _unread() -> None:
    """The function a ``SkillFileResource`` stands on: never called (its ``read`` serves the bytes loaded)."""


_UNREAD_SIGNATURE: Final = inspect_function(_unread)


@dataclass(kw_only=True)
class SkillFileResource(ResourceDef):
    """A skill's file as a resource of the registry: listed with its size, read from the bytes that were hashed.
    ``SKILL.md`` is named and described by its skill's frontmatter (SEP-2640 SHOULDs)."""

    file: SkillFile = field(repr=False)

    @classmethod
    def of(cls, skill: Skill, file: SkillFile, cache: CacheHint) -> SkillFileResource:
        manifest = file.path == SKILL_FILE
        return cls(
            fn=_unread,
            uri=file.uri,
            name=skill.name if manifest else f"{skill.name}/{file.path}",
            title=None,
            description=skill.frontmatter["description"] if manifest else None,
            mime_type=file.mime_type,
            sig=_UNREAD_SIGNATURE,
            cache=cache,
            file=file,
        )

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"uri": self.uri, "name": self.name, "mimeType": self.mime_type}
        if self.description is not None:
            described["description"] = self.description
        described["size"] = self.file.size
        return described

    async def read(self, uri: str, context: Context[Any] | None) -> list[dict[str, Any]]:
        file = self.file
        if file.text is not None:
            return [{"uri": file.uri, "mimeType": file.mime_type, "text": file.text}]
        return [{"uri": file.uri, "mimeType": file.mime_type, "blob": base64.b64encode(file.data).decode("ascii")}]


class SkillCatalog:
    """The skills one server serves, by name, and the extension's methods over them. Changed only by ``add`` and
    ``remove`` (each a new generation); the lookups the methods make are dicts built then."""

    def __init__(self, server: Registry) -> None:
        self.server = server
        self.skills: dict[str, Skill] = {}
        self.page_size = DEFAULT_PAGE_SIZE
        self.cache = DEFAULT_SKILLS_CACHE
        self.directory_read = True
        self.generation = 0
        self._by_uri: dict[str, Skill] = {}  # SKILL.md URI -> skill
        self._directories: dict[str, tuple[dict[str, Any], ...]] = {}  # directory URI -> its children
        self._order: list[Skill] = []  # the listing, by name

    # -- what is served -------------------------------------------------------------------------------------------

    def add(
        self,
        skills: list[Skill],
        *,
        limits: SkillLimits,
        replace: bool,
        directory_read: bool,
        page_size: int,
        cache: CacheHint,
    ) -> None:
        """Serve ``skills`` (all or none: a clash raises ``ValueError`` before anything changes); the settings are
        the catalog's from now on. ``replace``: a skill of the same name, or a resource of the same URI, is replaced
        instead of raising ``ValueError``. ``limits``: ``max_skills`` and ``max_total_bytes`` count the skills
        served already too."""
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be an integer >= 1, not {page_size!r}")
        if not isinstance(cache, CacheHint):
            raise TypeError(f"cache must be a CacheHint, not {type(cache).__name__}")
        names = [skill.name for skill in skills]
        if len(set(names)) != len(names):
            raise ValueError(f"two skills named alike in one load: {sorted(names)}")
        kept = {name: skill for name, skill in self.skills.items() if name not in names}
        if not replace and len(kept) != len(self.skills):
            clash = sorted(set(self.skills) & set(names))
            raise ValueError(f"skill(s) {', '.join(clash)} already served; pass replace=True to load them again")
        mine = {file.uri for skill in self.skills.values() for file in skill.files}
        for skill in skills:
            for file in skill.files:
                if file.uri in self.server.resources and file.uri not in mine and not replace:
                    raise ValueError(f"resource {file.uri!r} is already registered; pass replace=True to replace it")
        served = [*kept.values(), *skills]
        if len(served) > limits.max_skills:
            raise ValueError(f"{len(served)} skills would be served, over max_skills={limits.max_skills}")
        total = sum(skill.size for skill in served)
        if total > limits.max_total_bytes:
            raise ValueError(
                f"the skills served would hold {total} bytes, over max_total_bytes={limits.max_total_bytes}"
            )
        self.page_size, self.cache, self.directory_read = page_size, cache, directory_read
        self._install({**kept, **{skill.name: skill for skill in skills}})

    def remove(self, name: str) -> None:
        """Stop serving the skill ``name`` (``KeyError`` when it is not served) and its files; with the last one,
        the extension is no longer declared."""
        if name not in self.skills:
            raise KeyError(f"no skill named {name!r} is served")
        self._install({key: skill for key, skill in self.skills.items() if key != name})

    def _install(self, skills: dict[str, Skill]) -> None:
        server = self.server
        for skill in self.skills.values():
            for file in skill.files:
                server.resources.pop(file.uri, None)
        self.skills = dict(sorted(skills.items()))
        self._order = list(self.skills.values())
        self._by_uri = {skill.uri: skill for skill in self._order}
        self._directories = {uri: kids for skill in self._order for uri, kids in skill.directories.items()}
        for skill in self._order:
            for file in skill.files:
                server.resources[file.uri] = SkillFileResource.of(skill, file, self.cache)
        self.generation += 1
        if not self.skills:
            # SEP-2640: a server declaring the extension MUST declare resources too, which it no longer serves.
            server.extensions.pop(SKILLS_EXTENSION, None)
            for method in ("skills/list", "skills/get", DIRECTORY_READ_METHOD):
                server.extension_methods.pop(method, None)
            return
        server.declare_extension(SKILLS_EXTENSION, {"directoryRead": True} if self.directory_read else {})
        server.serve_extension_method(SKILLS_EXTENSION, "skills/list", self.list_skills, replace=True)
        server.serve_extension_method(SKILLS_EXTENSION, "skills/get", self.get_skill, replace=True)
        if self.directory_read:
            server.serve_extension_method(SKILLS_EXTENSION, DIRECTORY_READ_METHOD, self.read_directory, replace=True)
        else:
            server.extension_methods.pop(DIRECTORY_READ_METHOD, None)

    # -- the methods (Registry.serve_extension_method handlers: params as sent, checked here) ---------------------

    async def list_skills(self, params: dict[str, Any], context: Context[Any]) -> dict[str, Any]:
        """``skills/list``: a page of skill entries."""
        start = self._start(params)
        page = self._order[start : start + self.page_size]
        result: dict[str, Any] = {"skills": [skill.entry() for skill in page], **self.cache.wire()}
        if start + self.page_size < len(self._order):
            result["nextCursor"] = self._cursor(start + self.page_size)
        return result

    async def get_skill(self, params: dict[str, Any], context: Context[Any]) -> dict[str, Any]:
        """``skills/get``: the entry of the skill whose ``SKILL.md`` URI is ``uri``; -32602 for any other URI."""
        uri = _string_param(params, "uri")
        skill = self._by_uri.get(uri)
        if skill is None:
            raise InvalidParams(f"Invalid params: no skill is served at {uri!r}", {"uri": uri})
        return {"skill": skill.entry(), **self.cache.wire()}

    async def read_directory(self, params: dict[str, Any], context: Context[Any]) -> dict[str, Any]:
        """``resources/directory/read``: a page of a skill directory's direct children; -32602 for a URI that is
        not one (a file included, as SEP-2640 requires)."""
        uri = _string_param(params, "uri")
        children = self._directories.get(uri)
        if children is None and uri.endswith("/"):
            children = self._directories.get(uri.rstrip("/"))
        if children is None:
            what = "a file, not a directory" if uri in self.server.resources else "not a served skill directory"
            raise InvalidParams(f"Invalid params: {uri!r} is {what}", {"uri": uri})
        start = self._start(params)
        result: dict[str, Any] = {"resources": list(children[start : start + self.page_size]), **self.cache.wire()}
        if start + self.page_size < len(children):
            result["nextCursor"] = self._cursor(start + self.page_size)
        return result

    def _cursor(self, offset: int) -> str:
        return base64.urlsafe_b64encode(f"{self.generation}:{offset}".encode("ascii")).decode("ascii")

    def _start(self, params: dict[str, Any]) -> int:
        """Where the page a request asks for starts: 0 without a cursor; -32602 for a cursor not of this
        generation of the catalog (made up, damaged, or minted before the skills changed)."""
        cursor = params.get("cursor")
        if cursor is None:
            return 0
        if not isinstance(cursor, str) or len(cursor) > 64:
            raise InvalidParams("Invalid params: cursor must be a cursor this server returned")
        try:
            generation, _, offset = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii").partition(":")
            if int(generation) == self.generation and offset.isdigit():
                return int(offset)
        except (ValueError, binascii.Error, UnicodeError):
            pass
        raise InvalidParams("Invalid params: unknown or expired cursor; list again from the start", {"cursor": cursor})


def _string_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"Invalid params: {name} must be a non-empty string")
    return value
