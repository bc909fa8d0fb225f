"""Serving agent skills: the skills extension (SEP-2640, ``io.modelcontextprotocol/skills``), ``Server.add_skills``.

Modules, bottom up:
- ``frontmatter``: a ``SKILL.md``'s YAML frontmatter, parsed as hosts parse it (YAML 1.2 scalars, no aliases, no
  duplicate keys) and checked (``name``, ``description``, reserved ``metadata`` keys).
- ``directory``: a skills root on disk loaded once into ``Skill`` values (files read, hashed, bounded, path-safe).
- ``methods``: ``SkillCatalog``, what a server serves: ``skills/list``, ``skills/get``, ``resources/directory/read``
  as extension methods, and every file as a resource.

May import: ``authoring`` (the registry, definitions, cache hints, ``Context``), ``jsonrpc`` (errors), the standard
library, and PyYAML (the runtime's ``skills`` extra) inside ``frontmatter`` only, when a skill is loaded; never
``dispatch``, which answers the extension's methods without knowing them (``Registry.serve_extension_method``).
"""

from .directory import Skill, SkillError, SkillFile, SkillLimits, load_skills
from .frontmatter import FrontmatterError
from .methods import DEFAULT_PAGE_SIZE, DEFAULT_SKILLS_CACHE, SKILLS_EXTENSION, SkillCatalog

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SKILLS_CACHE",
    "SKILLS_EXTENSION",
    "FrontmatterError",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillFile",
    "SkillLimits",
    "load_skills",
]
