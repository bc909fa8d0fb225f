"""The conformance client's skills scenarios (SEP-2640, ``io.modelcontextprotocol/skills``; see
client_kit.ClientScenario; run by client.py), through the public ``client.skills`` API.

- ``sep-2640-client-no-prefetch``: list the skills and stop there: no file is read before a skill is loaded.
- ``sep-2640-client-verify-digest`` / ``-size`` / ``-frontmatter``: list, load each skill and read its listed files.
  The mock serves a SKILL.md that fails one check; ``load`` refuses it with ``SkillVerificationError`` and the
  supporting file is never read, which is what the suite looks for. The refusal is the expected outcome here, so
  it is logged and the scenario ends normally; any other error fails it.
"""

from __future__ import annotations

from client_kit import ClientScenario, logger

from mcpgen_runtime import Client
from mcpgen_runtime.client import SkillVerificationError


async def list_only(client: Client) -> None:
    entries = await client.skills.list()
    logger.info("skills/list -> %s (rejected: %s)", [entry.uri for entry in entries], client.skills.rejected)


async def load_and_read(client: Client) -> None:
    for entry in await client.skills.list():
        try:
            skill = await client.skills.load(entry)
        except SkillVerificationError as refusal:
            logger.info("refused skill %s: %s", entry.uri, refusal)
            continue
        for listed in skill.files or ():
            if listed.uri != entry.uri:
                data = await skill.read(listed.uri)
                logger.info("read %s: %d verified bytes", listed.uri, len(data))


SCENARIOS: dict[str, ClientScenario] = {
    "sep-2640-client-no-prefetch": ClientScenario(body=list_only),
    "sep-2640-client-verify-digest": ClientScenario(body=load_and_read),
    "sep-2640-client-verify-size": ClientScenario(body=load_and_read),
    "sep-2640-client-verify-frontmatter": ClientScenario(body=load_and_read),
}
