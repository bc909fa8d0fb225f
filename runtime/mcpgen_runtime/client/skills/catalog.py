"""The server's skills as the client reaches them (SEP-2640, ``io.modelcontextprotocol/skills``): ``SkillsClient``
(``client.skills``) lists them and loads one; ``LoadedSkill`` is a loaded skill, whose files are read on demand.

Where it sits: in ``client.skills``, on top of ``entries``, ``frontmatter`` and ``content`` (the checks) and of the
client's ``requests`` (``RequestPath``: the modern ``_meta``, timeouts) and ``connection`` (what the server
declared). ``Client`` makes one and hands it out as ``client.skills``.

What the SEP asks of a host, and how it is kept:

- Nothing is fetched ahead of need: connecting and ``list()`` read no file; ``load()`` reads the SKILL.md only;
  ``LoadedSkill.read()`` reads one file when asked.
- Every fetched file is verified against the entry the client holds (size, then sha256 digest: ``content``); the
  SKILL.md's frontmatter is parsed and compared field by field with the entry's (``frontmatter``); a read of a file
  the entry does not list is refused without a request. Any failure raises ``SkillVerificationError`` and the
  content is dropped. An entry that breaks the SEP's rules is not held at all (``entries``): ``list()`` leaves it
  out and keeps the refusal in ``rejected``; ``get()`` raises it.
- A ``"dynamic"`` entry (files not enumerable) has nothing to verify against: ``load()`` refuses it
  (``UnverifiableSkillError``) unless called with ``allow_unverified=True``; the frontmatter is still compared.

Bounds: ``list()`` walks at most the client's ``max_pages`` pages (a repeated cursor stops it: ``PaginationError``)
and holds at most ``max_skills`` entries (``DEFAULT_MAX_SKILLS``, 1000); each call (the whole walk of ``list()``)
has one total deadline, ``timeout`` or the client's ``request_timeout``; a file is at most its listed size, and a
skill's files at most 16 MiB (``entries.MAX_SKILL_TOTAL_BYTES``). The 2026-07-28 requests declare the extension in
their ``_meta`` client capabilities (capabilities are per request in that era).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio

from ...jsonrpc.envelopes import JSONRPCError
from ..connection import Connection
from ..errors import CapabilityError, InvalidResultError, PaginationError
from ..requests import RequestPath
from ..settings import ClientSettings
from .content import file_bytes, verify_file
from .entries import SkillEntry, SkillFile, has_dot_segments, parse_skill_entry
from .errors import (
    InvalidSkillEntryError,
    SkillVerificationError,
    UnknownSkillError,
    UnverifiableSkillError,
)
from .frontmatter import FrontmatterError, frontmatter_differences, parse_frontmatter

__all__ = ["DEFAULT_MAX_SKILLS", "SKILLS_EXTENSION", "LoadedSkill", "SkillsClient"]

SKILLS_EXTENSION: Final = "io.modelcontextprotocol/skills"
SKILLS_EXTENSION_CAPABILITIES: Final[Mapping[str, Any]] = {"extensions": {SKILLS_EXTENSION: {}}}
DEFAULT_MAX_SKILLS: Final = 1000
INVALID_PARAMS: Final = -32602
SkillEntries = list[SkillEntry]  # spelt out here: inside SkillsClient, `list` is the method


class _Deadline:
    """One total deadline over the requests of one call: each is given what is left."""

    def __init__(self, timeout: float | None) -> None:
        self._end = math.inf if timeout is None else anyio.current_time() + timeout

    def left(self, what: str) -> float:
        left = self._end - anyio.current_time()
        if left <= 0:
            raise TimeoutError(f"{what}: the call's deadline passed")
        return left


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """A skill whose SKILL.md was fetched and verified. ``frontmatter`` is the file's (equal to the entry's),
    ``instructions`` the Markdown after it, ``manifest`` the whole file. ``read(uri or path)`` fetches one listed
    file on demand, verified; ``verified`` is False only for a dynamic entry loaded with ``allow_unverified``."""

    entry: SkillEntry
    manifest: str
    frontmatter: Mapping[str, Any]
    instructions: str
    verified: bool
    _skills: SkillsClient

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def files(self) -> tuple[SkillFile, ...] | None:
        return self.entry.files

    async def read(self, file: str, *, timeout: float | None = None) -> bytes:
        """The bytes of one of the skill's files, by URI or by path inside the skill (``references/FORMS.md``),
        verified against the entry. A file the entry does not list raises ``SkillVerificationError`` (``unlisted``)
        without a request."""
        uri = file if file.startswith(self.entry.directory) else self.entry.directory + file.lstrip("/")
        return await self._skills.fetch(self.entry, uri, timeout, allow_unverified=not self.verified)

    async def read_text(self, file: str, *, timeout: float | None = None) -> str:
        data = await self.read(file, timeout=timeout)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidResultError(f"{file} of skill {self.name} is not UTF-8 text: {exc}") from None


class SkillsClient:
    """The skills extension on the client side (``client.skills``); see the module docstring for what it checks."""

    def __init__(self, connection: Connection, settings: ClientSettings, requests: RequestPath) -> None:
        self._connection = connection
        self._settings = settings
        self._requests = requests
        self.max_skills = DEFAULT_MAX_SKILLS
        self._held: dict[str, SkillEntry] = {}  # by SKILL.md URI: what loads are verified against
        self.rejected: tuple[InvalidSkillEntryError, ...] = ()  # the entries the last list() left out, and why

    def available(self) -> bool:
        """Whether the server declared the extension (True when its capabilities are unknown: a pinned modern
        mode)."""
        connection = self._connection
        connection.negotiated()
        if not connection.capabilities_known:
            return True
        extensions = connection.server_capabilities.get("extensions")
        return isinstance(extensions, Mapping) and isinstance(extensions.get(SKILLS_EXTENSION), Mapping)

    def held(self, uri: str) -> SkillEntry | None:
        """The entry held for the skill at ``uri`` (from the last ``list()`` or a ``get()``), if any."""
        return self._held.get(uri)

    async def list(self, *, timeout: float | None = None) -> SkillEntries:
        """Every skill the server lists (``skills/list``, all pages), valid entries only; the held entries are
        replaced by these. Reads no file."""
        self._require("skills/list")
        deadline = _Deadline(self._timeout(timeout))
        entries: dict[str, SkillEntry] = {}
        rejected: list[InvalidSkillEntryError] = []
        cursor: str | None = None
        seen: set[str] = set()
        for page in range(1, self._settings.max_pages + 1):
            params = {"cursor": cursor} if cursor is not None else {}
            result = await self._call("skills/list", params, deadline)
            listed = result.get("skills")
            if not isinstance(listed, list):
                raise InvalidResultError("skills/list answered without a skills list")
            for raw in listed:
                try:
                    entry = parse_skill_entry(raw)
                except InvalidSkillEntryError as refusal:
                    rejected.append(refusal)
                    continue
                if entry.uri in entries:
                    rejected.append(InvalidSkillEntryError(entry.uri, "listed twice"))
                    continue
                entries[entry.uri] = entry
                if len(entries) + len(rejected) > self.max_skills:
                    raise PaginationError(
                        f"skills/list listed over {self.max_skills} skills (SkillsClient.max_skills)",
                        page,
                        cursor or "",
                    )
            next_cursor = result.get("nextCursor")
            if next_cursor is None:
                break
            if not isinstance(next_cursor, str) or next_cursor in seen:
                raise PaginationError(
                    f"skills/list repeated or garbled its cursor {next_cursor!r}", page, str(next_cursor)
                )
            seen.add(next_cursor)
            cursor = next_cursor
        else:
            raise PaginationError(
                f"skills/list had more than {self._settings.max_pages} pages", self._settings.max_pages, cursor or ""
            )
        self._held = entries
        self.rejected = tuple(rejected)
        return list(entries.values())

    async def get(self, uri: str, *, timeout: float | None = None) -> SkillEntry:
        """The entry of one skill (``skills/get``), held from now on. ``UnknownSkillError`` when the server serves
        none at ``uri``; ``InvalidSkillEntryError`` for an entry that breaks the rules or names another URI."""
        self._require("skills/get")
        try:
            result = await self._call("skills/get", {"uri": uri}, _Deadline(self._timeout(timeout)))
        except JSONRPCError as exc:
            if exc.code == INVALID_PARAMS:
                raise UnknownSkillError(uri, exc.message) from exc
            raise
        entry = parse_skill_entry(result.get("skill"))
        if entry.uri != uri:
            raise InvalidSkillEntryError(entry.uri, f"skills/get for {uri} answered with another skill")
        if uri not in self._held and len(self._held) >= self.max_skills:
            self._held.pop(next(iter(self._held)))  # the oldest: the held entries stay bounded
        self._held[uri] = entry
        return entry

    async def load(
        self, skill: SkillEntry | str, *, timeout: float | None = None, allow_unverified: bool = False
    ) -> LoadedSkill:
        """Load a skill: fetch its SKILL.md (nothing else), verify it against the entry (a ``SkillEntry``, the
        entry held for a URI, or else the one ``skills/get`` answers), parse its frontmatter and compare it with the
        entry's. ``SkillVerificationError`` on any mismatch; ``UnverifiableSkillError`` for a dynamic entry unless
        ``allow_unverified``. ``timeout`` bounds the whole load."""
        deadline = _Deadline(self._timeout(timeout))
        if isinstance(skill, SkillEntry):
            entry = skill
        else:
            held = self._held.get(skill)
            entry = held if held is not None else await self.get(skill, timeout=deadline.left("skills/get"))
        if entry.files is None and not allow_unverified:
            raise UnverifiableSkillError(entry.uri)
        data = await self.fetch(entry, entry.uri, deadline.left("load"), allow_unverified=allow_unverified)
        try:
            manifest = data.decode("utf-8")
            frontmatter, instructions = parse_frontmatter(manifest)
        except (UnicodeDecodeError, FrontmatterError) as exc:
            raise SkillVerificationError(entry.uri, "frontmatter", str(exc)) from None
        differences = frontmatter_differences(frontmatter, entry.frontmatter)
        if differences:
            raise SkillVerificationError(entry.uri, "frontmatter", "; ".join(differences))
        return LoadedSkill(entry, manifest, frontmatter, instructions, entry.files is not None, self)

    async def fetch(
        self, entry: SkillEntry, uri: str, timeout: float | None, *, allow_unverified: bool = False
    ) -> bytes:
        """One file of ``entry`` (``resources/read``), verified against the entry; a URI the entry does not list is
        refused before anything is sent (for a dynamic entry: one outside the skill's directory)."""
        listed = entry.file(uri)
        if listed is None:
            relative = uri[len(entry.directory) :] if uri.startswith(entry.directory) else ""
            if entry.files is not None or not allow_unverified or not relative or has_dot_segments(relative):
                raise SkillVerificationError(uri, "unlisted", f"the entry of {entry.uri} does not list it")
        self._require("resources/read")
        result = await self._call("resources/read", {"uri": uri}, _Deadline(self._timeout(timeout)), gated=True)
        data = file_bytes(uri, result, listed.size if listed is not None else None)
        if listed is not None:
            verify_file(listed, data)
        return data

    # -- sending ------------------------------------------------------------------------------------------------------

    def _timeout(self, timeout: float | None) -> float | None:
        return timeout if timeout is not None else self._settings.request_timeout

    def _require(self, method: str) -> None:
        if not self.available():
            raise CapabilityError(method, f"extensions.{SKILLS_EXTENSION}")

    async def _call(
        self, method: str, params: dict[str, Any], deadline: _Deadline, *, gated: bool = False
    ) -> dict[str, Any]:
        timeout = deadline.left(method)
        if gated:  # a core method: gated by the server's capabilities (resources), as every other call
            return await self._requests.gated_call(method, params, timeout, None, SKILLS_EXTENSION_CAPABILITIES)
        return await self._requests.call(method, params, timeout, None, SKILLS_EXTENSION_CAPABILITIES)
