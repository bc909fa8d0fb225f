"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) served by ``Server.add_skills``, on the wire:
a real ``Server`` over streamable HTTP (uvicorn on 127.0.0.1) asked with raw JSON-RPC POSTs (httpx2) in 2026-07-28,
and over a raw ``Session`` in 2025-11-25. What a host checks is checked here the way a host does: every entry's
resources read back and hashed, sizes counted, the SKILL.md frontmatter parsed and compared with the entry's.
Loading from disk (path safety, limits, frontmatter rules) is tests/runtime/test_skills_loading.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from skill_dirs import PNG, write_skill
from support.servers import raw_session, serving_server

from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.server import CacheHint, IncomingRequest, InvalidParamsError, Server

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
EXTENSION = "io.modelcontextprotocol/skills"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
FIXTURE = Path(__file__).resolve().parents[1] / "conformance" / "skills"  # the conformance server's skills


class Wire:
    """Raw modern JSON-RPC over one server's HTTP endpoint: what is sent is what the server gets."""

    def __init__(self, client: httpx2.AsyncClient, url: str) -> None:
        self.client, self.url, self.next_id = client, url, 0

    async def send(
        self, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] = META
    ) -> dict[str, Any]:
        """The JSON-RPC response (result or error) to ``method``."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": {**(params or {}), "_meta": meta}}
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
            "mcp-method": method,
        }
        name = (params or {}).get("uri", (params or {}).get("name"))
        if isinstance(name, str):
            headers["mcp-name"] = name
        response = await self.client.post(self.url, json=message, headers=headers)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            frames = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
            answers = [json.loads(frame) for frame in frames if frame]
            return next(answer for answer in answers if answer.get("id") == self.next_id)
        answer: dict[str, Any] = response.json()
        return answer

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await self.send(method, params)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    async def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = await self.send(method, params)
        assert "error" in answer, answer
        error: dict[str, Any] = answer["error"]
        return error


@asynccontextmanager
async def wire(server: Server) -> AsyncIterator[Wire]:
    async with serving_server(server) as url, httpx2.AsyncClient(timeout=10) as client:
        yield Wire(client, url)


async def every_skill(peer: Wire) -> list[dict[str, Any]]:
    """``skills/list`` walked page by page, as a host does (bounded: a server that never ends fails the test)."""
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(20):
        page = await peer.result("skills/list", {"cursor": cursor} if cursor else {})
        entries += page["skills"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return entries
    raise AssertionError("skills/list did not end")


def frontmatter_of(text: str) -> Any:
    """What a host parses back out of a SKILL.md (YAML 1.2's core schema agrees on these fixtures)."""
    assert text.startswith("---\n")
    return yaml.safe_load(text[4:].split("\n---", 1)[0])


async def read_bytes(peer: Wire, uri: str) -> tuple[bytes, dict[str, Any]]:
    result = await peer.result("resources/read", {"uri": uri})
    (content,) = result["contents"]
    data = content["text"].encode() if "text" in content else base64.b64decode(content["blob"])
    return data, content


# -- 2026-07-28: the extension ------------------------------------------------------------------------------------


async def test_a_host_verifies_every_file_of_every_skill_against_its_entry() -> None:
    server = Server("skills")
    assert server.add_skills(FIXTURE) == ["pdf-processing", "release-notes"]
    async with wire(server) as peer:
        discovered = await peer.result("server/discover")
        assert discovered["capabilities"]["extensions"][EXTENSION] == {"directoryRead": True}
        assert "resources" in discovered["capabilities"]  # the files are read with resources/read
        entries = await every_skill(peer)
        assert [entry["uri"] for entry in entries] == [
            "skill://pdf-processing/SKILL.md",
            "skill://release-notes/SKILL.md",
        ]
        for entry in entries:
            uris = [resource["uri"] for resource in entry["resources"]]
            assert uris[0] == entry["uri"] and len(set(uris)) == len(uris)
            name = entry["frontmatter"]["name"]
            on_disk = sorted(
                p.relative_to(FIXTURE / name).as_posix() for p in (FIXTURE / name).rglob("*") if p.is_file()
            )
            assert sorted(uri.removeprefix(f"skill://{name}/") for uri in uris) == on_disk  # complete
            for resource in entry["resources"]:
                data, content = await read_bytes(peer, resource["uri"])
                assert resource["size"] == len(data)
                assert resource["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
                assert data == (FIXTURE / name / resource["uri"].removeprefix(f"skill://{name}/")).read_bytes()
                if resource["uri"] == entry["uri"]:
                    assert content["mimeType"] == "text/markdown"
                    assert frontmatter_of(data.decode()) == entry["frontmatter"]
        pdf = entries[0]["frontmatter"]
        assert pdf["metadata"] == {"author": "mcpgen", "version": "1.0"} and pdf["license"] == "Apache-2.0"


async def test_results_carry_the_era_fields_and_the_cache_hints() -> None:
    server = Server("skills")
    server.add_skills(FIXTURE, cache=CacheHint(60_000, "public"))
    async with wire(server) as peer:
        for method, params in (
            ("skills/list", {}),
            ("skills/get", {"uri": "skill://release-notes/SKILL.md"}),
            ("resources/directory/read", {"uri": "skill://pdf-processing"}),
        ):
            result = await peer.result(method, params)
            assert result["resultType"] == "complete"
            assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "skills"
            assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")
        read = await peer.result("resources/read", {"uri": "skill://release-notes/SKILL.md"})
        assert (read["ttlMs"], read["cacheScope"]) == (60_000, "public")


async def test_skills_get_answers_the_list_entry_and_refuses_other_uris() -> None:
    server = Server("skills")
    server.add_skills(FIXTURE)
    async with wire(server) as peer:
        listed = {entry["uri"]: entry for entry in await every_skill(peer)}
        got = await peer.result("skills/get", {"uri": "skill://pdf-processing/SKILL.md"})
        assert got["skill"] == listed["skill://pdf-processing/SKILL.md"] and "nextCursor" not in got
        for params in (
            {"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"},
            {"uri": "skill://pdf-processing/references/FORMS.md"},  # a file of a skill, not a skill
            {"uri": "skill://pdf-processing"},
            {"uri": 7},
            {},
        ):
            assert (await peer.error("skills/get", params))["code"] == -32602, params
        assert (await peer.result("skills/list"))["skills"]  # still serving


async def test_pages_never_split_an_entry_and_cursors_are_checked() -> None:
    server = Server("skills")
    server.add_skills(FIXTURE, page_size=1)
    async with wire(server) as peer:
        first = await peer.result("skills/list")
        assert len(first["skills"]) == 1 and isinstance(first["nextCursor"], str)
        second = await peer.result("skills/list", {"cursor": first["nextCursor"]})
        assert len(second["skills"]) == 1 and "nextCursor" not in second
        assert first["skills"][0]["uri"] != second["skills"][0]["uri"]
        for cursor in ("not-a-cursor", "", "A" * 100, 3, base64.urlsafe_b64encode(b"99:1").decode()):
            assert (await peer.error("skills/list", {"cursor": cursor}))["code"] == -32602, cursor
        # A cursor minted before the skills changed names another listing: refused, not a wrong page.
        server.add_skills(FIXTURE, replace=True, page_size=1)
        error = await peer.error("skills/list", {"cursor": first["nextCursor"]})
        assert error["code"] == -32602 and "list again" in error["message"]


async def test_directory_read_lists_direct_children_and_refuses_files(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "deep", {"a/b/c.txt": "c", "a/x.md": "x", "z.png": PNG})
    manifest_size = (skill / "SKILL.md").stat().st_size
    server = Server("skills")
    server.add_skills(tmp_path, page_size=2)
    async with wire(server) as peer:
        top = await peer.result("resources/directory/read", {"uri": "skill://deep"})
        assert top["resources"] == [
            {"uri": "skill://deep/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown", "size": manifest_size},
            {"uri": "skill://deep/a", "name": "a", "mimeType": "inode/directory"},
        ]
        rest = await peer.result("resources/directory/read", {"uri": "skill://deep", "cursor": top["nextCursor"]})
        assert rest["resources"] == [
            {"uri": "skill://deep/z.png", "name": "z.png", "mimeType": "image/png", "size": len(PNG)}
        ]
        assert "nextCursor" not in rest
        below = await peer.result("resources/directory/read", {"uri": "skill://deep/a/"})
        assert [(child["name"], child["mimeType"]) for child in below["resources"]] == [
            ("b", "inode/directory"),
            ("x.md", "text/markdown"),
        ]
        for uri in ("skill://deep/SKILL.md", "skill://deep/a/x.md", "skill://deep/nope", "skill://other", "file:///"):
            error = await peer.error("resources/directory/read", {"uri": uri})
            assert error["code"] == -32602 and error["data"] == {"uri": uri}
        data, content = await read_bytes(peer, "skill://deep/z.png")  # binary: a blob, hashed as raw bytes
        assert data == PNG and "blob" in content


async def test_reads_outside_the_served_files_are_refused_and_the_server_keeps_serving(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha", {"notes.md": "alpha notes"})
    write_skill(tmp_path, "beta")
    (tmp_path / "secret.txt").write_text("not a skill file")
    server = Server("skills")
    server.add_skills(tmp_path)
    async with wire(server) as peer:
        for uri in (
            "skill://alpha/../beta/SKILL.md",
            "skill://alpha/%2e%2e/beta/SKILL.md",
            "skill://alpha/../secret.txt",
            "skill://alpha//etc/passwd",
            "skill:///etc/passwd",
            f"skill://alpha/{tmp_path}/secret.txt",
            "skill://alpha/./notes.md",
            "skill://alpha/NOTES.md",
        ):
            error = await peer.error("resources/read", {"uri": uri})
            assert error["code"] == -32602, uri  # 2026-07-28: resource not found
        data, _ = await read_bytes(peer, "skill://alpha/notes.md")
        assert data == b"alpha notes"


async def test_without_directory_read_the_flag_and_the_method_are_absent() -> None:
    server = Server("skills")
    server.add_skills(FIXTURE, directory_read=False)
    async with wire(server) as peer:
        discovered = await peer.result("server/discover")
        assert discovered["capabilities"]["extensions"][EXTENSION] == {}
        error = await peer.error("resources/directory/read", {"uri": "skill://pdf-processing"})
        assert error["code"] == -32601
        assert (await peer.result("skills/list"))["skills"]


async def test_a_reload_serves_what_is_on_disk_now(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "notes", {"a.txt": "one"})
    write_skill(tmp_path, "other")
    server = Server("skills")
    server.add_skills(tmp_path)
    (skill / "a.txt").write_text("two, longer")  # not served until loaded again: the digests stay true
    async with wire(server) as peer:
        data, _ = await read_bytes(peer, "skill://notes/a.txt")
        assert data == b"one"
        server.add_skills(tmp_path, replace=True)
        entry = (await peer.result("skills/get", {"uri": "skill://notes/SKILL.md"}))["skill"]
        data, _ = await read_bytes(peer, "skill://notes/a.txt")
        assert data == b"two, longer"
        assert {"uri": "skill://notes/a.txt", "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": 11} in (
            entry["resources"]
        )
        server.remove_skill("notes")
        assert [entry["uri"] for entry in await every_skill(peer)] == ["skill://other/SKILL.md"]
        assert (await peer.error("resources/read", {"uri": "skill://notes/a.txt"}))["code"] == -32602
        with pytest.raises(KeyError):
            server.remove_skill("notes")
        server.remove_skill("other")  # the last: no resources left, so the extension is no longer declared
        assert "extensions" not in (await peer.result("server/discover"))["capabilities"]
        assert (await peer.error("skills/list"))["code"] == -32601


# -- 2025-11-25: no extensions there, the files are resources ------------------------------------------------------


async def test_a_2025_11_25_client_reads_the_skill_files_as_resources() -> None:
    server = Server("skills")
    server.add_skills(FIXTURE)
    async with raw_session(server) as session:
        init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        initialized = await session.request("initialize", init)
        assert "extensions" not in initialized["capabilities"] and "resources" in initialized["capabilities"]
        listed = {r["uri"]: r for r in (await session.request("resources/list", {}))["resources"]}
        manifest = listed["skill://pdf-processing/SKILL.md"]
        text = (FIXTURE / "pdf-processing" / "SKILL.md").read_text()
        assert manifest == {
            "uri": "skill://pdf-processing/SKILL.md",
            "name": "pdf-processing",
            "description": frontmatter_of(text)["description"],
            "mimeType": "text/markdown",
            "size": len(text.encode()),
        }
        assert listed["skill://pdf-processing/references/FORMS.md"]["name"] == "pdf-processing/references/FORMS.md"
        read = await session.request("resources/read", {"uri": "skill://pdf-processing/SKILL.md"})
        assert read["contents"] == [{"uri": manifest["uri"], "mimeType": "text/markdown", "text": text}]
        for method in ("skills/list", "skills/get", "resources/directory/read"):
            with pytest.raises(JSONRPCError) as refused:
                await session.request(method, {"uri": "skill://pdf-processing/SKILL.md"})
            assert refused.value.code == -32601
        with pytest.raises(JSONRPCError) as missing:
            await session.request("resources/read", {"uri": "skill://pdf-processing/../release-notes/SKILL.md"})
        assert missing.value.code == -32002  # 2025-11-25's resource not found


# -- the mechanism the extension is served through -----------------------------------------------------------------


async def test_an_extension_method_is_served_only_where_its_extension_is_declared() -> None:
    server = Server("ext")
    seen: list[str] = []

    async def echo(params: dict[str, Any], context: Any) -> dict[str, Any]:
        if "boom" in params:
            raise InvalidParamsError("Invalid params: boom", {"at": "boom"})
        return {"echo": params.get("value"), "_meta": {"com.example/own": 1}}

    @server.middleware
    async def record(request: IncomingRequest[Any], call_next: Any) -> Any:
        seen.append(request.method)
        return await call_next(request)

    server.serve_extension_method("com.example/echo", "echo/it", echo)
    with pytest.raises(ValueError, match="already registered"):
        server.serve_extension_method("com.example/echo", "echo/it", echo)
    with pytest.raises(ValueError, match="cannot be an extension"):
        server.serve_extension_method("com.example/echo", "notifications/x", echo)
    async with wire(server) as peer:
        assert (await peer.error("echo/it", {"value": 1}))["code"] == -32601  # not declared yet
        server.declare_extension("com.example/echo")
        result = await peer.result("echo/it", {"value": 1})
        assert result["echo"] == 1 and result["resultType"] == "complete"
        assert result["_meta"]["com.example/own"] == 1 and "io.modelcontextprotocol/serverInfo" in result["_meta"]
        error = await peer.error("echo/it", {"boom": True})
        assert (error["code"], error["data"]) == (-32602, {"at": "boom"})
        bad_meta = {**META, "io.modelcontextprotocol/clientCapabilities": "not an object"}
        answer = await peer.send("echo/it", {"value": 1}, meta=bad_meta)
        assert answer["error"]["code"] == -32602  # its _meta is checked as any request's of the version
        assert seen == ["echo/it", "echo/it", "echo/it", "echo/it"], seen
