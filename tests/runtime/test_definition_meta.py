"""``meta=`` on ``Registry.tool`` and ``Registry.resource`` (resources and resource templates): the definition's
``_meta`` in its listing, in every version that has the field (2025-06-18 and later, both eras) and left out before;
checked at registration (string keys, JSON values all the way down), with an error naming where.

Real connections: an in-process ``Client`` per version against one ``Server``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from mcpgen_runtime.client import Client
from mcpgen_runtime.server import SUPPORTED_VERSIONS, Server

pytestmark = pytest.mark.anyio

TOOL_META = {"com.example/trace": {"level": 2, "ratio": 0.5, "tags": ["a", "b"], "on": True, "none": None}}
RESOURCE_META = {"com.example/origin": "cache"}
TEMPLATE_META = {"com.example/origin": "template"}
WITH_META = [v for v in SUPPORTED_VERSIONS if v >= "2025-06-18"]
WITHOUT_META = [v for v in SUPPORTED_VERSIONS if v < "2025-06-18"]


def meta_server() -> Server:
    server = Server("meta")

    @server.tool(meta=TOOL_META)
    def traced() -> str:
        return "traced"

    @server.tool
    def plain() -> str:
        return "plain"

    @server.resource("mem://config", meta=RESOURCE_META)
    def config() -> str:
        return "config"

    @server.resource("mem://items/{item}", meta=TEMPLATE_META)
    def item(item: str) -> str:
        return item

    return server


def dumped(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", by_alias=True, exclude_none=False))


async def listings(version: str) -> dict[str, dict[str, Any]]:
    async with Client.connect(meta_server(), version=version) as client:
        seen = {tool.name: dumped(tool) for tool in await client.tools()}
        seen.update({resource.uri: dumped(resource) for resource in await client.resources()})
        seen.update(
            {dumped(template)["uriTemplate"]: dumped(template) for template in await client.resource_templates()}
        )
        # The read is the function's: no _meta on the contents unless it returns one.
        (content,) = (await client.read_resource("mem://config")).contents
        assert dumped(content).get("_meta") is None
        return seen


@pytest.mark.parametrize("version", WITH_META)
async def test_the_listings_carry_meta(version: str) -> None:
    seen = await listings(version)
    assert seen["traced"]["_meta"] == TOOL_META
    assert seen["plain"].get("_meta") is None  # no meta= publishes none
    assert seen["mem://config"]["_meta"] == RESOURCE_META
    assert seen["mem://items/{item}"]["_meta"] == TEMPLATE_META


@pytest.mark.parametrize("version", WITHOUT_META)
async def test_versions_without_the_field_list_without_it(version: str) -> None:
    seen = await listings(version)
    assert all(listed.get("_meta") is None for listed in seen.values())


def test_meta_is_copied_at_registration() -> None:
    meta: dict[str, Any] = {"com.example/list": [1]}
    server = Server("copy")
    server.tool("copied", meta=meta)(lambda: "x")
    meta["com.example/list"].append(2)
    meta["later"] = True
    assert server.tools["copied"].describe()["_meta"] == {"com.example/list": [1]}


def test_tuples_become_lists_and_empty_keys_are_kept() -> None:
    # The spec's _meta key names may be empty ("Unless empty, MUST begin and end with an alphanumeric character").
    server = Server("shapes")
    server.tool("shaped", meta={"com.example/pair": (1, ("a", 2.5)), "": {"": None}})(lambda: "x")
    assert server.tools["shaped"].describe()["_meta"] == {"com.example/pair": [1, ["a", 2.5]], "": {"": None}}


def test_empty_meta_publishes_none() -> None:
    server = Server("empty")
    server.tool("empty", meta={})(lambda: "x")
    server.resource("mem://x", meta={})(lambda: "x")
    assert "_meta" not in server.tools["empty"].describe()
    assert "_meta" not in server.resources["mem://x"].describe()


BAD_META = [
    ("not a mapping", "a mapping of str keys"),
    ({1: "int key"}, "_meta has the key 1, not a string"),
    ({"a": {"b": {2: "nested int key"}}}, "_meta.a.b has the key 2, not a string"),
    ({"a": {1, 2}}, "_meta.a is a set, which has no JSON form"),
    ({"a": [1, object()]}, "_meta.a[1] is a object"),
    ({"a": math.nan}, "_meta.a is nan, which JSON cannot carry"),
    ({"a": {"b": math.inf}}, "_meta.a.b is inf"),
    ({"a": b"bytes"}, "_meta.a is a bytes"),
]


@pytest.mark.parametrize(("meta", "message"), BAD_META)
def test_bad_tool_meta_is_refused_at_registration(meta: Any, message: str) -> None:
    server = Server("bad")
    with pytest.raises(TypeError) as raised:

        @server.tool(meta=meta)
        def tool() -> str:
            return "x"

    assert message in str(raised.value) and ".tool: " in str(raised.value)  # names the function
    assert not server.tools


@pytest.mark.parametrize("uri", ["mem://bad", "mem://bad/{item}"])
@pytest.mark.parametrize(("meta", "message"), BAD_META)
def test_bad_resource_meta_is_refused_at_registration(uri: str, meta: Any, message: str) -> None:
    server = Server("bad")
    with pytest.raises(TypeError) as raised:
        server.resource(uri, meta=meta)(lambda item=None: "x")
    assert message in str(raised.value) and repr(uri) in str(raised.value)
    assert not server.resources and not server.templates


async def test_a_server_with_meta_keeps_serving_every_version() -> None:
    # The same registry answers each version in turn: meta fitted per version, never dropped from the definition.
    for version in [*WITHOUT_META, *WITH_META]:
        seen = await listings(version)
        assert seen["traced"].get("_meta") == (TOOL_META if version in WITH_META else None)
