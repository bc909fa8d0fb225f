"""An independent client of the skills extension (SEP-2640) against our server: FastMCP 4.2.3's
(``fastmcp/client/mixins/skills.py``), which declares the extension (``SkillsClientExtension``), walks
``skills/list``, and in ``read_skill`` reads every file an entry lists and refuses the skill unless each matches its
size and sha256 digest and the SKILL.md frontmatter matches the entry's. FastMCP runs on the official Python SDK; it
is installed into a venv of its own (``support.isolated_venv``) and its client runs as a subprocess against our
``Server`` over streamable HTTP (2026-07-28).

Not exercised: FastMCP's resource-mode fallback for servers without the extension (``list_skill_resources``, then
``read_skill`` through a ``skill://<name>/_manifest`` resource). That manifest is FastMCP's own convention, not the
SEP's; a 2025-11-25 client of ours sees the files as plain resources (tests/runtime/test_skills_server.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from skill_dirs import write_skill
from support.isolated_venv import isolated_venv, run_script
from support.servers import serving_server

from mcpgen_runtime.server import Server

pytestmark = [pytest.mark.anyio, pytest.mark.peers]

FASTMCP: tuple[str, ...] = ("fastmcp==4.2.3",)  # the newest FastMCP; its skills client needs no extra
WAIT = 60.0
FIXTURE = Path(__file__).resolve().parents[1] / "conformance" / "skills"

FASTMCP_CLIENT = r"""
import asyncio, json, sys

from fastmcp import Client
from fastmcp.skills import SkillsClientExtension


def say(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


async def main(url):
    async with Client(url, extensions=[SkillsClientExtension()], timeout=30) as client:
        say("connected", protocol=client.protocol_version)
        entries = await client.list_skills()
        say("listed", uris=[str(entry.uri) for entry in entries])
        for entry in entries:
            got = await client.get_skill(str(entry.uri))
            say("got", uri=str(got.uri), same=got.model_dump(mode="json") == entry.model_dump(mode="json"))
            try:
                skill = await client.read_skill(str(entry.uri))
            except ValueError as refused:
                say("refused", uri=str(entry.uri), reason=str(refused))
                continue
            say("read", name=skill.name, files={path: len(data) for path, data in sorted(skill.files.items())})


asyncio.run(main(sys.argv[1]))
"""


@pytest.fixture(scope="module")
def fastmcp_python() -> Path:
    return isolated_venv("fastmcp-4.2.3", FASTMCP)


async def run_client(python: Path, tmp_path: Path, url: str) -> list[dict[str, Any]]:
    return await run_script(python, FASTMCP_CLIENT, tmp_path, url, timeout=WAIT, name="fastmcp_skills_client.py")


async def test_fastmcp_lists_gets_and_verifies_every_skill(fastmcp_python: Path, tmp_path: Path) -> None:
    server = Server("skills")
    server.add_skills(FIXTURE)
    async with serving_server(server) as url:
        events = await run_client(fastmcp_python, tmp_path, url)
    assert events[0] == {"event": "connected", "protocol": "2026-07-28"}
    assert events[1]["uris"] == ["skill://pdf-processing/SKILL.md", "skill://release-notes/SKILL.md"]
    read = {event["name"]: event["files"] for event in events if event["event"] == "read"}
    pdf = FIXTURE / "pdf-processing"
    assert read == {
        "pdf-processing": {
            path: (pdf / path).stat().st_size for path in ("SKILL.md", "references/FORMS.md", "scripts/fill_form.py")
        },
        "release-notes": {"SKILL.md": (FIXTURE / "release-notes" / "SKILL.md").stat().st_size},
    }
    assert all(event["same"] for event in events if event["event"] == "got")


async def test_fastmcp_verifies_binary_files_and_frontmatter_beyond_strings(
    fastmcp_python: Path, tmp_path: Path
) -> None:
    # Bytes that are not UTF-8 (a base64 blob), and frontmatter beyond strings. (Unquoted, `"on": "yes"` would be
    # {True: True} to FastMCP's YAML 1.1 reader and {"on": "yes"} to a 1.2 one: add_skills refuses that.)
    extra = '"on": "yes"\nlevel: 3\nratio: 0.5\nstrict: false\nmetadata:\n  tags: [a, b]\n'
    write_skill(tmp_path / "skills", "mixed", {"img/logo.png": b"\x89PNG\r\n\x1a\n\x00\xff", "n.txt": "x"}, extra)
    server = Server("skills")
    server.add_skills(tmp_path / "skills")
    async with serving_server(server) as url:
        events = await run_client(fastmcp_python, tmp_path, url)
    manifest = (tmp_path / "skills" / "mixed" / "SKILL.md").stat().st_size
    outcome = [event for event in events if event["event"] in ("read", "refused")]
    assert outcome == [
        {"event": "read", "name": "mixed", "files": {"SKILL.md": manifest, "img/logo.png": 10, "n.txt": 1}}
    ]
