"""The skills client (SEP-2640, ``client.skills``) against skills servers written here on the raw JSON-RPC session,
over in-memory streams: each test decides exactly what the server lists and serves (honest, tampered, malformed,
hostile) and sees exactly what the client asks for. What is checked: nothing is fetched before it is asked for;
every fetched file is verified (size, digest, frontmatter, listed at all) and refused with a typed error otherwise;
malformed entries are never held; the walks and reads are bounded. (The conformance suite's mock servers are the
peers of ``tests/conformance``'s ``sep-2640-client-*`` scenarios.)
"""

from __future__ import annotations

import base64
import hashlib
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.client import (
    SKILLS_EXTENSION,
    CapabilityError,
    Client,
    InvalidResultError,
    InvalidSkillEntryError,
    PaginationError,
    SkillError,
    SkillVerificationError,
    UnknownSkillError,
    UnverifiableSkillError,
)

pytestmark = pytest.mark.anyio

META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def skill_md(name: str, description: str = "Does things", extra: str = "", body: str = "Do the thing.\n") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}".encode()


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class SkillsServer:
    """A skills server on the raw session. ``skills``: name -> {path inside the skill: bytes}; the entries are
    made honestly from them (``frontmatter`` overrides an entry's copy), ``served`` overrides what a read returns,
    and ``entries`` can be replaced wholesale by a test that wants a malformed listing."""

    def __init__(self, skills: dict[str, dict[str, bytes]], *, declare: bool = True, legacy: bool = False) -> None:
        self.skills = skills
        self.declare = declare
        self.legacy = legacy
        self.page_size = 2
        self.frontmatter: dict[str, dict[str, Any]] = {}
        self.served: dict[str, bytes] = {}
        self.binary: set[str] = set()  # URIs served as base64 blobs
        self.hang: set[str] = set()  # URIs whose read never answers
        self.entries: list[Any] | None = None
        self.cursors: list[str | None] | None = None  # the nextCursor of each page, when a test forces them
        self.garbled = False  # answer skills/list and resources/read with shapes that are no answer
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def capabilities(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = {"resources": {}}
        if self.declare:
            capabilities["extensions"] = {SKILLS_EXTENSION: {}}
        return capabilities

    def entry(self, name: str) -> dict[str, Any]:
        files = self.skills[name]
        frontmatter = self.frontmatter.get(name, {"name": name, "description": "Does things"})
        resources = [
            {"uri": f"skill://{name}/{path}", "digest": digest(data), "size": len(data)} for path, data in files.items()
        ]
        return {"uri": f"skill://{name}/SKILL.md", "frontmatter": frontmatter, "resources": resources}

    def all_entries(self) -> list[Any]:
        return self.entries if self.entries is not None else [self.entry(name) for name in self.skills]

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]

    def reads(self) -> list[str]:
        return [params["uri"] for method, params in self.requests if method == "resources/read"]

    async def handle(self, method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        self.requests.append((method, params))
        if self.garbled and method == "skills/list":
            return {"skills": {"not": "a list"}}
        if self.garbled and method == "resources/read":
            return {"contents": [{"uri": "skill://elsewhere/SKILL.md", "text": "hi"}]}
        if method == "server/discover" and not self.legacy:
            return {"supportedVersions": ["2026-07-28"], "capabilities": self.capabilities()}
        if method == "initialize" and self.legacy:
            return {
                "protocolVersion": params["protocolVersion"],
                "capabilities": self.capabilities(),
                "serverInfo": {"name": "skills-fake", "version": "1"},
            }
        if method == "skills/list":
            entries, page = self.all_entries(), int(params.get("cursor") or 0)
            result: dict[str, Any] = {"skills": entries[page * self.page_size : (page + 1) * self.page_size]}
            if self.cursors is not None:
                if self.cursors[page] is not None:
                    result["nextCursor"] = self.cursors[page]
            elif (page + 1) * self.page_size < len(entries):
                result["nextCursor"] = str(page + 1)
            return result
        if method == "skills/get":
            for entry in self.all_entries():
                if entry["uri"] == params["uri"]:
                    return {"skill": entry}
            raise JSONRPCError(-32602, f"no skill at {params['uri']}")
        if method == "resources/read":
            uri = params["uri"]
            if uri in self.hang:
                await anyio.sleep_forever()
            name, _, path = uri.removeprefix("skill://").partition("/")
            data = self.served.get(uri, self.skills.get(name, {}).get(path))
            if data is None:
                raise JSONRPCError(-32002, f"no resource {uri}")
            if uri in self.binary:
                return {"contents": [{"uri": uri, "blob": base64.b64encode(data).decode()}]}
            return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": data.decode()}]}
        raise MethodNotFound(method)


@asynccontextmanager
async def connected(server: SkillsServer, **options: Any) -> AsyncIterator[Client]:
    client_end, server_end = memory_stream_pair()
    async with Session(server_end, request_handler=server.handle):
        mode = "legacy" if server.legacy else "auto"
        async with Client.connect(client_end, **{"mode": mode, "request_timeout": 10, **options}) as client:
            yield client


def pdf_skill() -> dict[str, bytes]:
    return {"SKILL.md": skill_md("pdf-processing"), "references/FORMS.md": b"Supporting content.\n"}


# -- listing: paginated, bounded, nothing fetched -------------------------------------------------------------------


async def test_list_walks_every_page_and_fetches_no_file() -> None:
    server = SkillsServer({name: {"SKILL.md": skill_md(name)} for name in ("alpha", "beta", "gamma")})
    async with connected(server) as client:
        assert server.methods() == ["server/discover"]  # connecting asks for no skill
        entries = await client.skills.list()
    assert [entry.name for entry in entries] == ["alpha", "beta", "gamma"]
    assert entries[0].uri == "skill://alpha/SKILL.md" and entries[0].directory == "skill://alpha/"
    assert server.methods() == ["server/discover", "skills/list", "skills/list"]  # two pages, no resources/read
    assert server.requests[2][1]["cursor"] == "1"
    for _, params in server.requests[1:]:  # every skills request declares the extension (2026-07-28: per request)
        assert params["_meta"][META_CAPABILITIES]["extensions"] == {SKILLS_EXTENSION: {}}


async def test_a_repeated_cursor_or_too_many_pages_stops_the_walk() -> None:
    server = SkillsServer({name: {"SKILL.md": skill_md(name)} for name in ("a1", "b2", "c3", "d4")})
    server.page_size, server.cursors = 1, ["1", "1", None, None]
    async with connected(server) as client:
        with pytest.raises(PaginationError, match="repeated"):
            await client.skills.list()
    server.cursors = None
    async with connected(server, max_pages=3) as client:
        with pytest.raises(PaginationError, match="more than 3 pages"):
            await client.skills.list()
        client.max_pages = 10
        client.skills.max_skills = 2
        with pytest.raises(PaginationError, match="over 2 skills"):
            await client.skills.list()


async def test_a_server_without_the_extension_is_not_asked() -> None:
    server = SkillsServer({"alpha": {"SKILL.md": skill_md("alpha")}}, declare=False)
    async with connected(server) as client:
        assert not client.skills.available()
        with pytest.raises(CapabilityError, match=SKILLS_EXTENSION):
            await client.skills.list()
    assert server.methods() == ["server/discover"]


async def test_the_legacy_era_lists_and_loads_when_initialize_declares_the_extension() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()}, legacy=True)
    async with connected(server) as client:
        assert not client.is_modern
        (entry,) = await client.skills.list()
        skill = await client.skills.load(entry)
    assert skill.frontmatter == {"name": "pdf-processing", "description": "Does things"}
    assert server.methods() == ["initialize", "skills/list", "resources/read"]


# -- loading: the SKILL.md only, verified ---------------------------------------------------------------------------


async def test_load_fetches_only_the_skill_md_and_files_are_read_on_demand_verified() -> None:
    files = pdf_skill() | {"assets/logo.png": bytes(range(256))}
    server = SkillsServer({"pdf-processing": files})
    server.binary.add("skill://pdf-processing/assets/logo.png")
    async with connected(server) as client:
        (entry,) = await client.skills.list()
        skill = await client.skills.load(entry)
        assert server.reads() == ["skill://pdf-processing/SKILL.md"]
        assert skill.name == "pdf-processing" and skill.verified
        assert skill.instructions == "\nDo the thing.\n" and skill.manifest.startswith("---\nname: pdf-processing")
        assert await skill.read_text("references/FORMS.md") == "Supporting content.\n"
        assert await skill.read("skill://pdf-processing/assets/logo.png") == bytes(range(256))
    assert server.reads()[1:] == [
        "skill://pdf-processing/references/FORMS.md",
        "skill://pdf-processing/assets/logo.png",
    ]


async def test_load_by_uri_uses_the_held_entry_or_asks_skills_get() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    async with connected(server) as client:
        skill = await client.skills.load("skill://pdf-processing/SKILL.md")  # never listed: skills/get first
        assert skill.name == "pdf-processing"
        assert client.skills.held("skill://pdf-processing/SKILL.md") == skill.entry
        await client.skills.load("skill://pdf-processing/SKILL.md")  # held now: no second skills/get
        with pytest.raises(UnknownSkillError, match="no skill at"):
            await client.skills.get("skill://nothing-here/SKILL.md")
    assert server.methods()[1:] == ["skills/get", "resources/read", "resources/read", "skills/get"]


@pytest.mark.parametrize(
    ("served", "failure"),
    [
        (skill_md("pdf-processing", body="Do the th1ng.\n"), "digest"),  # same length, other bytes
        (skill_md("pdf-processing") + b"extra bytes\n", "size"),
        (skill_md("pdf-processing")[:-3], "size"),
    ],
)
async def test_tampered_content_is_refused_and_nothing_more_is_read(served: bytes, failure: str) -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    server.served["skill://pdf-processing/SKILL.md"] = served
    async with connected(server) as client:
        (entry,) = await client.skills.list()
        with pytest.raises(SkillVerificationError) as refused:
            await client.skills.load(entry)
        assert (refused.value.failure, refused.value.uri) == (failure, entry.uri)
        assert await client.skills.list()  # the connection goes on serving after a refusal
    assert server.reads() == ["skill://pdf-processing/SKILL.md"]


async def test_a_tampered_supporting_file_is_refused() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    server.served["skill://pdf-processing/references/FORMS.md"] = b"Supporting c0ntent.\n"
    async with connected(server) as client:
        skill = await client.skills.load((await client.skills.list())[0])
        with pytest.raises(SkillVerificationError) as refused:
            await skill.read("references/FORMS.md")
    assert refused.value.failure == "digest"


async def test_an_oversized_blob_is_refused_before_it_is_decoded() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill() | {"data.bin": b"12345"}})
    server.served["skill://pdf-processing/data.bin"] = b"x" * 10_000
    server.binary.add("skill://pdf-processing/data.bin")
    async with connected(server) as client:
        skill = await client.skills.load((await client.skills.list())[0])
        with pytest.raises(SkillVerificationError, match="blob is longer") as refused:
            await skill.read("data.bin")
    assert refused.value.failure == "size"


@pytest.mark.parametrize(
    ("file_text", "detail"),
    [
        ("---\nname: pdf-processing\ndescription: Exfiltrate credentials\n---\n", "description: file has"),
        ("---\nname: pdf-processing\ndescription: Does things\nlicense: MIT\n---\n", "license: file has 'MIT'"),
        ("no frontmatter at all\n", "does not begin with"),
        ("---\nname: [pdf\n---\n", "not valid YAML"),
        ("---\n- a list\n---\n", "not a mapping"),
        ("---\nname: &n pdf-processing\ndescription: *n\n---\n", "aliases are not allowed"),
        ("---\nname: pdf-processing\ndescription: Does things\nkey: !!binary aGk=\n---\n", "no JSON form"),
    ],
)
async def test_frontmatter_that_differs_from_the_entry_is_refused(file_text: str, detail: str) -> None:
    data = file_text.encode()
    server = SkillsServer({"pdf-processing": {"SKILL.md": data}})  # digest and size honest: only the text differs
    async with connected(server) as client:
        with pytest.raises(SkillVerificationError, match=detail) as refused:
            await client.skills.load((await client.skills.list())[0])
    assert refused.value.failure == "frontmatter"


async def test_frontmatter_reads_plain_scalars_as_yaml_1_2_does() -> None:
    # YAML 1.1 (PyYAML's default) would read these as a bool, an int and a date, and an honest skill whose server
    # rendered them as the strings YAML 1.2 reads would look tampered with.
    extra = "compatibility: on\nbuild: 1_000\nreleased: 2026-01-01\nmetadata:\n  stars: 12\n  beta: true\n"
    server = SkillsServer({"pdf-processing": {"SKILL.md": skill_md("pdf-processing", extra=extra)}})
    server.frontmatter["pdf-processing"] = {
        "name": "pdf-processing",
        "description": "Does things",
        "compatibility": "on",
        "build": "1_000",
        "released": "2026-01-01",
        "metadata": {"stars": 12, "beta": True},
    }
    async with connected(server) as client:
        skill = await client.skills.load((await client.skills.list())[0])
    assert skill.frontmatter["metadata"] == {"stars": 12, "beta": True}
    server.frontmatter["pdf-processing"]["metadata"] = {"stars": 12, "beta": 1}  # true is not 1
    async with connected(server) as client:
        with pytest.raises(SkillVerificationError, match="metadata"):
            await client.skills.load((await client.skills.list())[0])


async def test_reads_of_unlisted_files_are_refused_without_a_request() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill(), "other": {"SKILL.md": skill_md("other")}})
    async with connected(server) as client:
        skill = await client.skills.load("skill://pdf-processing/SKILL.md")
        for unlisted in ("scripts/extract.py", "../other/SKILL.md", "skill://other/SKILL.md"):
            with pytest.raises(SkillVerificationError) as refused:
                await skill.read(unlisted)
            assert refused.value.failure == "unlisted"
    assert server.reads() == ["skill://pdf-processing/SKILL.md"]


async def test_a_dynamic_entry_loads_only_when_unverified_content_is_allowed() -> None:
    server = SkillsServer({"live": {"SKILL.md": skill_md("live"), "notes.md": b"today\n"}})
    server.entries = [{**server.entry("live"), "resources": "dynamic"}]
    async with connected(server) as client:
        (entry,) = await client.skills.list()
        assert entry.files is None
        with pytest.raises(UnverifiableSkillError):
            await client.skills.load(entry)
        assert server.reads() == []
        skill = await client.skills.load(entry, allow_unverified=True)
        assert not skill.verified and skill.frontmatter["name"] == "live"
        assert await skill.read("notes.md") == b"today\n"
        with pytest.raises(SkillVerificationError):
            await skill.read("../other/SKILL.md")  # still only inside the skill


# -- entries that break the rules are never held --------------------------------------------------------------------

GOOD = {"uri": "skill://good/SKILL.md", "digest": digest(b"x"), "size": 1}


def bad_entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "uri": "skill://good/SKILL.md",
        "frontmatter": {"name": "good", "description": "Fine"},
        "resources": [dict(GOOD)],
    }
    entry.update(changes)
    return entry


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("not an object", "is an object"),
        (bad_entry(uri="file:///etc/passwd"), "uri must be"),
        (bad_entry(uri="skill://good/README.md"), "uri must be"),
        (bad_entry(uri="skill://../good/SKILL.md"), "segments"),
        (bad_entry(uri="skill://other/SKILL.md"), "final skill-path segment"),
        (bad_entry(frontmatter={"name": "good"}), "description must be"),
        (bad_entry(frontmatter="name: good"), "frontmatter must be an object"),
        (bad_entry(uri="skill://Bad--Name/SKILL.md", frontmatter={"name": "Bad--Name", "description": "x"}), "naming"),
        (bad_entry(resources=None), "resources must be"),
        (bad_entry(resources=[]), "does not list the skill's own SKILL.md"),
        (bad_entry(resources=[GOOD, GOOD]), "listed twice"),
        (bad_entry(resources=[GOOD, {**GOOD, "uri": "skill://other/x.md"}]), "not inside"),
        (bad_entry(resources=[GOOD, {**GOOD, "uri": "skill://good/../other/SKILL.md"}]), "not a file path"),
        (bad_entry(resources=[{**GOOD, "digest": "md5:abc"}]), "digest"),
        (bad_entry(resources=[{**GOOD, "digest": "sha256:" + "A" * 64}]), "digest"),
        (bad_entry(resources=[{**GOOD, "size": -1}]), "size"),
        (bad_entry(resources=[{**GOOD, "size": True}]), "size"),
        (bad_entry(resources=[GOOD] + [{**GOOD, "uri": f"skill://good/f{i}"} for i in range(512)]), "over the limit"),
        (bad_entry(resources=[GOOD, {**GOOD, "uri": "skill://good/big", "size": 16 * 1024 * 1024}]), "16777216"),
        (bad_entry(_meta=[]), "_meta"),
    ],
)
async def test_entries_that_break_the_rules_are_left_out_with_the_reason(entry: Any, reason: str) -> None:
    server = SkillsServer({"fine": {"SKILL.md": skill_md("fine")}})
    server.entries = [entry, server.entry("fine")]
    async with connected(server) as client:
        entries = await client.skills.list()
        assert [listed.name for listed in entries] == ["fine"]
        (refusal,) = client.skills.rejected
        assert reason in str(refusal)
        if isinstance(entry, dict) and isinstance(entry.get("uri"), str):
            with pytest.raises(InvalidSkillEntryError, match="refused"):
                await client.skills.get(entry["uri"])  # skills/get answers it: refused the same way
            assert client.skills.held(entry["uri"]) is None


async def test_a_listing_that_is_not_a_list_and_a_read_without_content_are_errors() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    async with connected(server) as client:
        entry = await client.skills.get("skill://pdf-processing/SKILL.md")
        server.garbled = True
        with pytest.raises(InvalidResultError, match=r"of skill://pdf-processing/SKILL\.md answered 0"):
            await client.skills.load(entry)
        with pytest.raises(InvalidResultError, match="without a skills list"):
            await client.skills.list()


# -- bounds ---------------------------------------------------------------------------------------------------------


async def test_a_read_that_never_answers_is_bounded_by_the_load_timeout() -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    server.hang.add("skill://pdf-processing/SKILL.md")
    async with connected(server) as client:
        entry = (await client.skills.list())[0]
        started = anyio.current_time()
        with pytest.raises(TimeoutError):
            await client.skills.load(entry, timeout=0.2)
        assert anyio.current_time() - started < 5


async def test_loading_without_pyyaml_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    server = SkillsServer({"pdf-processing": pdf_skill()})
    monkeypatch.setitem(sys.modules, "yaml", None)  # what an install without the extra sees
    async with connected(server) as client:
        with pytest.raises(SkillError, match=r"mcpgen-runtime\[skills\]"):
            await client.skills.load((await client.skills.list())[0])


# -- end to end: our own skills server (Server.add_skills), a real process over streamable HTTP ---------------------

SKILLS_SERVER = """
import sys, anyio
from mcpgen_runtime.server import Server

server = Server("skills-e2e", version="1.0.0")
server.add_skills(sys.argv[1])

async def main():
    async with anyio.create_task_group() as tg:
        base = await tg.start(server.serve_http, "127.0.0.1", 0)
        print(f"{base}/mcp", flush=True)

anyio.run(main)
"""


@asynccontextmanager
async def skills_server_process(root: Path) -> AsyncIterator[str]:
    async with await anyio.open_process([sys.executable, "-c", SKILLS_SERVER, str(root)]) as process:
        try:
            assert process.stdout is not None
            line = b""
            with anyio.fail_after(30):
                while not line.endswith(b"\n"):
                    line += await process.stdout.receive(1)
            yield line.decode().strip()
        finally:
            process.send_signal(signal.SIGINT)
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def test_our_client_loads_and_verifies_every_file_our_server_serves(tmp_path: Path) -> None:
    skill = tmp_path / "pdf-processing"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: MIT\n"
        "metadata:\n  version: '1.2'\n---\n\n# PDF processing\n\nSee references/FORMS.md.\n",
        encoding="utf-8",
    )
    (skill / "references" / "FORMS.md").write_text("Forms.\n", encoding="utf-8")
    (skill / "logo.bin").write_bytes(bytes(range(256)) * 4)
    notes = tmp_path / "release-notes"
    notes.mkdir()
    (notes / "SKILL.md").write_text("---\nname: release-notes\ndescription: Write release notes\n---\nBody\n")
    async with skills_server_process(tmp_path) as url, Client.connect(url, request_timeout=20) as client:
        assert client.is_modern and client.skills.available()
        entries = {entry.name: entry for entry in await client.skills.list()}
        assert set(entries) == {"pdf-processing", "release-notes"} and client.skills.rejected == ()
        loaded = await client.skills.load(entries["pdf-processing"])
        assert loaded.frontmatter["metadata"] == {"version": "1.2"} and "# PDF processing" in loaded.instructions
        assert loaded.files is not None
        for listed in loaded.files:
            data = await loaded.read(listed.uri)
            assert len(data) == listed.size
        assert await loaded.read("logo.bin") == bytes(range(256)) * 4
        assert (await client.skills.get("skill://release-notes/SKILL.md")) == entries["release-notes"]
        with pytest.raises(UnknownSkillError):
            await client.skills.get("skill://nothing-here/SKILL.md")
        with pytest.raises(SkillVerificationError):
            await loaded.read("../release-notes/SKILL.md")


async def test_a_2025_11_25_connection_to_our_server_has_no_skills_extension(tmp_path: Path) -> None:
    # The extension is declared under capabilities.extensions, which 2025-11-25 does not have: the client does not
    # ask (CapabilityError, nothing sent); the files stay plain resources.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "SKILL.md").write_text("---\nname: notes\ndescription: Take notes\n---\nBody\n")
    async with skills_server_process(tmp_path) as url, Client.connect(url, mode="legacy") as client:
        assert not client.skills.available()
        with pytest.raises(CapabilityError):
            await client.skills.list()
        assert [resource.uri for resource in await client.resources()] == ["skill://notes/SKILL.md"]
