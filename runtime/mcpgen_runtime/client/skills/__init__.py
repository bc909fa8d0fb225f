"""The skills extension on the client side (SEP-2640, ``io.modelcontextprotocol/skills``): listing a server's skills,
loading one, reading its files, each fetched file verified against the entry the server listed.

- ``catalog``: ``SkillsClient`` (``client.skills``: ``list()``, ``get()``, ``load()``) and ``LoadedSkill`` (a
  loaded skill: its instructions, ``read()`` of its files on demand); what the SEP asks of a host, and the bounds.
- ``entries``: ``SkillEntry`` / ``SkillFile``, a ``skills/list`` / ``skills/get`` entry checked against the SEP's
  rules (URI, frontmatter, resources, digests, sizes, the 512-file and 16 MiB limits).
- ``content``: a ``resources/read`` result's bytes, and their size and digest checked against the entry.
- ``frontmatter``: the SKILL.md YAML frontmatter (PyYAML, the ``skills`` extra, imported on first use) and its
  field-by-field comparison with the entry's.
- ``errors``: ``SkillError`` and its kinds (``SkillVerificationError``, ``InvalidSkillEntryError``, ...).

May import: the ``client`` modules below ``client.client`` (``connection``, ``requests``, ``settings``, ``errors``),
``jsonrpc``, the standard library, anyio and PyYAML (the ``skills`` extra, only inside ``frontmatter``, when a
skill is loaded).
"""

from .catalog import DEFAULT_MAX_SKILLS, SKILLS_EXTENSION, LoadedSkill, SkillsClient
from .content import sha256_digest
from .entries import MAX_SKILL_RESOURCES, MAX_SKILL_TOTAL_BYTES, SkillEntry, SkillFile
from .errors import (
    InvalidSkillEntryError,
    SkillError,
    SkillVerificationError,
    UnknownSkillError,
    UnverifiableSkillError,
    VerificationFailure,
)

__all__ = [
    "DEFAULT_MAX_SKILLS",
    "MAX_SKILL_RESOURCES",
    "MAX_SKILL_TOTAL_BYTES",
    "SKILLS_EXTENSION",
    "InvalidSkillEntryError",
    "LoadedSkill",
    "SkillEntry",
    "SkillError",
    "SkillFile",
    "SkillVerificationError",
    "SkillsClient",
    "UnknownSkillError",
    "UnverifiableSkillError",
    "VerificationFailure",
    "sha256_digest",
]
