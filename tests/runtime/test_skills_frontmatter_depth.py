"""A SKILL.md whose frontmatter nests deeper than the parser's recursion allows is refused with the usual
``FrontmatterError``, on both sides: the client reads a hostile server's file, the server an operator's directory.
PyYAML's composer recurses per level, so without the guard the error would come from deep inside the parser."""

from __future__ import annotations

import pytest

from mcpgen_runtime.client.skills.frontmatter import FrontmatterError as ClientFrontmatterError
from mcpgen_runtime.client.skills.frontmatter import parse_frontmatter as client_parse
from mcpgen_runtime.server.skills.frontmatter import FrontmatterError as ServerFrontmatterError
from mcpgen_runtime.server.skills.frontmatter import parse_frontmatter as server_parse


def skill_md(depth: int) -> str:
    nested = "[" * depth + "]" * depth
    return f"---\nname: deep\ndescription: d\nmetadata:\n  x: {nested}\n---\nbody\n"


def test_the_client_refuses_a_frontmatter_nested_too_deeply() -> None:
    assert client_parse(skill_md(20))[0]["metadata"]["x"] is not None  # a modest depth is fine
    with pytest.raises(ClientFrontmatterError, match="nested too deeply"):
        client_parse(skill_md(5000))


def test_the_server_refuses_a_frontmatter_nested_too_deeply() -> None:
    assert server_parse(skill_md(20), "SKILL.md")["metadata"]["x"] is not None
    with pytest.raises(ServerFrontmatterError, match="nested too deeply"):
        server_parse(skill_md(5000), "SKILL.md")
