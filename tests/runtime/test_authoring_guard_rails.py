"""The authoring API's guard rails: what a server author gets wrong fails loudly at registration, and what the
official SDK and fastmcp accept works here too.

Real ``Server`` instances answer our ``Client`` over in-memory streams. Each test names the mistake it guards:
bare decorators, duplicate and invalid names, optional / ``Annotated`` / string ``Context`` parameters, signatures
without a JSON schema, the structured-output rule (``structured_output``), hand-written ``input_schema`` /
``output_schema``, and ``None`` for an optional parameter of a generated params model. This module has
``from __future__ import annotations``: every annotation below is a string the runtime resolves, including
classes defined inside the test functions.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any, Optional

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field
from support.content import text_of
from typing_extensions import TypedDict

from mcp_bindings import MODULES
from mcp_bindings import v2025_11_25 as mcp
from mcp_bindings.v2025_11_25.client import ClientStub
from mcpgen_runtime import Client, Context, memory_stream_pair
from mcpgen_runtime.server import LEGACY_VERSIONS, Server

if TYPE_CHECKING:  # only for the type checker: at run time the annotation naming it cannot be resolved
    from mcpgen_runtime import server as typing_only

pytestmark = pytest.mark.anyio

WAIT = 10.0


@asynccontextmanager
async def connected(server: Server, version: str = "2025-11-25") -> AsyncIterator[Client]:
    """Our ``Client`` connected to ``server`` over in-memory streams, initialized at ``version``."""
    server_end, client_end = memory_stream_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Client.connect(client_end, version=version, request_timeout=WAIT) as client:
            yield client
        with anyio.fail_after(WAIT):
            while server.connections:
                await anyio.sleep(0.01)


async def list_tools(client: Client, version: str) -> dict[str, dict[str, Any]]:
    """``tools/list`` of any version, as wire JSON by name."""
    package = importlib.import_module(MODULES[version])
    result = await client.request(package.ListToolsRequest, None)
    return {tool["name"]: tool for tool in result.model_dump(mode="json")["tools"]}


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """``tools/call`` on a 2025-11-25 connection, as wire JSON."""
    result = await client.stub(ClientStub).call_tool(mcp.CallToolRequestParams(name=name, arguments=arguments))
    dumped: dict[str, Any] = result.model_dump(mode="json")
    return dumped


# -- 1. decorators with and without parentheses ------------------------------------------------------------------


async def test_bare_tool_and_prompt_decorators_register_the_function() -> None:
    server = Server("bare")

    @server.tool
    async def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    @server.prompt
    def greet(name: str) -> str:
        return f"Hello {name}"

    # The decorators hand back the function itself (not an inner `register`), so it can still be called directly.
    assert await shout("x") == "X" and greet("Ann") == "Hello Ann"
    assert set(server.tools) == {"shout"} and set(server.prompts) == {"greet"}
    async with connected(server) as client:
        tools = await list_tools(client, "2025-11-25")
        assert tools["shout"]["description"] == "Upper-case the text."
        assert text_of(await call(client, "shout", {"text": "hi"})) == "HI"
        prompt = await client.stub(ClientStub).get_prompt(
            mcp.GetPromptRequestParams(name="greet", arguments={"name": "Bo"})
        )
        assert prompt.model_dump(mode="json")["messages"][0]["content"]["text"] == "Hello Bo"


def test_bare_resource_decorator_says_what_to_write() -> None:
    server = Server("bare")
    with pytest.raises(TypeError, match=r'write @server\.resource\("scheme://path"\).* above cities'):

        @server.resource  # type: ignore[arg-type]
        def cities() -> str:
            return "Paris"

    assert not server.resources and not server.templates


# -- 2. duplicate and invalid names ------------------------------------------------------------------------------


async def test_a_second_registration_under_the_same_name_raises_unless_replace() -> None:
    server = Server("twice")

    @server.tool()
    def weather(city: str) -> str:
        return "first"

    @server.prompt()
    def plan(city: str) -> str:
        return "first"

    @server.resource("memo://notes")
    def notes() -> str:
        return "first"

    @server.resource("memo://notes/{id}")
    def note(id: str) -> str:
        return "first"

    @server.completion(prompt="plan", argument="city")
    def cities(value: str) -> list[str]:
        return ["first"]

    def second(city: str) -> str:
        raise AssertionError("never registered")

    attempts: list[tuple[str, Any]] = [
        ("tool 'weather'", lambda: server.tool(name="weather")(second)),
        ("tool 'weather'", lambda: server.tool(second_weather)),  # named after the function: the same name
        ("prompt 'plan'", lambda: server.prompt(name="plan")(plan)),
        ("resource 'memo://notes'", lambda: server.resource("memo://notes", name="other")(notes)),
        ("resource template 'memo://notes/{id}'", lambda: server.resource("memo://notes/{id}")(note)),
        (
            "completion ('ref/prompt', 'plan', 'city')",
            lambda: server.completion(prompt="plan", argument="city")(cities),
        ),
    ]
    for message, attempt in attempts:
        with pytest.raises(ValueError, match="already registered") as raised:
            attempt()
        assert message in str(raised.value) and "replace=True" in str(raised.value)
    assert "test_authoring_guard_rails" in str(raised.value)  # says where the first one came from

    @server.tool(name="weather", replace=True)
    def weather_again(city: str) -> str:
        return "second"

    @server.prompt(name="plan", replace=True)
    def plan_again(city: str) -> str:
        return "second"

    @server.resource("memo://notes", replace=True)
    def notes_again() -> str:
        return "second"

    @server.resource("memo://notes/{id}", replace=True)
    def note_again(id: str) -> str:
        return "second"

    @server.completion(prompt="plan", argument="city", replace=True)
    def cities_again(value: str) -> list[str]:
        return ["second"]

    async with connected(server) as client:
        api = client.stub(ClientStub)
        assert text_of(await call(client, "weather", {"city": "x"})) == "second"
        assert list(await list_tools(client, "2025-11-25")) == ["weather"]
        prompt = await api.get_prompt(mcp.GetPromptRequestParams(name="plan", arguments={"city": "x"}))
        assert prompt.model_dump(mode="json")["messages"][0]["content"]["text"] == "second"
        for uri in ("memo://notes", "memo://notes/1"):
            read = await api.read_resource(mcp.ReadResourceRequestParams(uri=uri))
            assert read.model_dump(mode="json")["contents"][0]["text"] == "second"
        ref = mcp.PromptReference(name="plan")
        completed = await api.complete(
            mcp.CompleteRequestParams(ref=ref, argument=mcp.CompleteRequestParamsArgument(name="city", value=""))
        )
        assert completed.completion.values == ["second"]


def second_weather(city: str) -> str:
    return "never"


second_weather.__name__ = "weather"


@pytest.mark.parametrize("name", ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "x", "x" * 128])
def test_valid_tool_names_register(name: str) -> None:
    server = Server("names")
    server.tool(name=name)(second_weather)
    assert list(server.tools) == [name]


@pytest.mark.parametrize("name", ["", "get user", "a,b", "x" * 129, "météo", "tool/name", "<lambda>"])
def test_tool_names_outside_the_spec_rules_raise(name: str) -> None:
    server = Server("names")
    with pytest.raises(ValueError, match="MCP tool names are 1 to 128 characters"):
        if name == "<lambda>":
            server.tool(lambda city: city)  # named after the function: "<lambda>"
        else:
            server.tool(name=name)(second_weather)
    assert not server.tools


# -- 3. the Context parameter, however it is spelt ---------------------------------------------------------------


async def test_optional_annotated_and_unresolvable_context_parameters_are_the_context() -> None:
    server = Server("ctx")

    class Place(TypedDict):  # a local class, named in a string annotation: resolved in this scope
        city: str

    @server.tool()
    async def optional(city: str, context: Context | None = None) -> str:
        assert context is not None
        return f"{city} {context.protocol_version}"

    @server.tool()
    async def old_style(city: str, ctx: Optional[Context] = None) -> str:  # noqa: UP045 - the spelling under test
        assert isinstance(ctx, Context)
        return city

    @server.tool()
    async def annotated(place: Place, ctx: Annotated[Context, "the request"]) -> str:
        assert isinstance(ctx, Context)
        return place["city"]

    @server.tool()
    async def typing_only_import(city: str, ctx: typing_only.Context[dict[str, int]] | None = None) -> str:
        assert isinstance(ctx, Context)
        return city

    @server.tool()
    async def generic(city: str, ctx: Annotated[Context[dict[str, int]], "typed lifespan state"]) -> str:
        assert isinstance(ctx, Context)
        return city

    @server.resource("places://{city}")
    async def place(city: str, ctx: Context | None = None) -> str:
        assert isinstance(ctx, Context)
        return city

    @server.prompt()
    def visit(city: str, ctx: Optional[Context] = None) -> str:  # noqa: UP045
        assert isinstance(ctx, Context)
        return city

    assert {tool.sig.context_param for tool in server.tools.values()} == {"context", "ctx"}
    async with connected(server) as client:
        tools = await list_tools(client, "2025-11-25")  # before the fix: -32603 for every tool
        for tool in tools.values():
            assert set(tool["inputSchema"]["properties"]) <= {"city", "place"}, tool
        assert tools["annotated"]["inputSchema"]["required"] == ["place"]
        assert text_of(await call(client, "optional", {"city": "Oslo"})) == "Oslo 2025-11-25"
        assert text_of(await call(client, "old_style", {"city": "Oslo"})) == "Oslo"
        assert text_of(await call(client, "annotated", {"place": {"city": "Rome"}})) == "Rome"
        assert text_of(await call(client, "typing_only_import", {"city": "Bern"})) == "Bern"
        assert text_of(await call(client, "generic", {"city": "Riga"})) == "Riga"
        api = client.stub(ClientStub)
        read = await api.read_resource(mcp.ReadResourceRequestParams(uri="places://Lima"))
        assert read.model_dump(mode="json")["contents"][0]["text"] == "Lima"
        prompt = await api.get_prompt(mcp.GetPromptRequestParams(name="visit", arguments={"city": "Kyiv"}))
        assert prompt.model_dump(mode="json")["messages"][0]["content"]["text"] == "Kyiv"
        assert [a.name for a in (await api.list_prompts()).prompts[0].arguments or []] == ["city"]


def test_two_context_parameters_raise() -> None:
    server = Server("ctx")
    with pytest.raises(TypeError, match="two Context parameters"):

        @server.tool()
        def twice(a: Context, b: Context | None = None) -> str:
            return ""


# -- 4. signatures that have no JSON schema ----------------------------------------------------------------------


@dataclasses.dataclass
class Connection:
    sock: socket.socket


def test_a_parameter_without_a_json_schema_fails_at_registration_by_name() -> None:
    server = Server("schemas")
    with pytest.raises(TypeError, match=r"open_socket: parameter 'sock' \(socket\.socket\) has no JSON schema"):

        @server.tool()
        def open_socket(host: str, sock: socket.socket) -> str:
            return host

    with pytest.raises(TypeError, match=r"ask: parameter 'sock' \(socket\.socket\) has no JSON schema"):

        @server.prompt()
        def ask(sock: socket.socket) -> str:
            return ""

    with pytest.raises(TypeError, match=r"read: parameter 'sock' \(socket\.socket\) has no JSON schema"):

        @server.resource("sockets://{sock}")
        def read(sock: socket.socket) -> str:
            return ""

    assert not server.tools and not server.prompts and not server.templates


class Handle(BaseModel):
    """A model pydantic can validate (arbitrary types allowed) but not describe."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    sock: socket.socket


def test_a_return_annotation_without_an_output_schema_fails_at_registration() -> None:
    server = Server("schemas")
    # Before the fix this one registered, and tools/list then failed with -32603 for every tool.
    with pytest.raises(TypeError, match=r"open_handle: the return annotation .*Handle cannot make an outputSchema"):

        @server.tool()
        def open_handle(host: str) -> Handle:
            return Handle(sock=socket.socket())

    with pytest.raises(TypeError, match=r"connect: the return annotation .*Connection cannot make an outputSchema"):

        @server.tool()
        def connect(host: str) -> Connection:
            return Connection(socket.socket())

    # Unstructured on purpose: nothing to describe, so nothing fails.
    @server.tool(structured_output=False)
    def connect_text(host: str) -> Connection:
        raise NotImplementedError

    assert list(server.tools) == ["connect_text"]


def test_an_unresolvable_annotation_fails_at_registration_by_name() -> None:
    server = Server("schemas")
    with pytest.raises(TypeError, match=r"lookup: the annotation 'Missing' of parameter 'key' cannot be resolved"):

        @server.tool()
        def lookup(key: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
            return ""

    with pytest.raises(TypeError, match=r"lookup2: the return annotation 'Missing' cannot be resolved"):

        @server.tool()
        def lookup2(key: str) -> Missing:  # type: ignore[name-defined]  # noqa: F821
            return ""

    with pytest.raises(TypeError, match=r"\*\*extra cannot be described by a schema .*input_schema="):

        @server.tool()
        def loose(**extra: Any) -> str:
            return ""


# -- 5. structured output: the automatic rule and structured_output ----------------------------------------------


class Forecast(BaseModel):
    city: str
    celsius: float = Field(description="degrees")


async def test_structured_output_rule_and_option() -> None:
    server = Server("structured")

    @server.tool()
    def bare(city: str) -> dict:  # type: ignore[type-arg]
        return {"city": city}

    @server.tool(structured_output=True)
    def forced(city: str) -> dict:  # type: ignore[type-arg]
        return {"city": city}

    @server.tool()
    def typed_dict(city: str) -> dict[str, int]:
        return {city: 1}

    @server.tool()
    def model(city: str) -> Forecast:
        return Forecast(city=city, celsius=20.5)

    @server.tool(structured_output=False)
    def model_as_text(city: str) -> Forecast:
        return Forecast(city=city, celsius=20.5)

    async with connected(server) as client:
        tools = await list_tools(client, "2025-11-25")
        schemas = {name: tool.get("outputSchema") for name, tool in tools.items()}
        assert schemas["bare"] is None and schemas["model_as_text"] is None
        assert schemas["forced"] == {"type": "object", "additionalProperties": True}
        assert schemas["typed_dict"] == {"type": "object", "additionalProperties": {"type": "integer"}}
        assert schemas["model"] is not None and schemas["model"]["properties"]["celsius"]["description"] == "degrees"
        bare_result = await call(client, "bare", {"city": "Oslo"})
        assert "structuredContent" not in bare_result and json.loads(text_of(bare_result)) == {"city": "Oslo"}
        assert (await call(client, "forced", {"city": "Oslo"}))["structuredContent"] == {"city": "Oslo"}
        assert (await call(client, "typed_dict", {"city": "Oslo"}))["structuredContent"] == {"Oslo": 1}
        assert (await call(client, "model", {"city": "Oslo"}))["structuredContent"] == {"city": "Oslo", "celsius": 20.5}
        assert "structuredContent" not in await call(client, "model_as_text", {"city": "Oslo"})
    with pytest.raises(TypeError, match="structured_output=True needs a return annotation that is a JSON object"):

        @server.tool(structured_output=True)
        def text(city: str) -> str:
            return city


# -- 6. None for an optional parameter, end to end ---------------------------------------------------------------


async def test_none_for_an_optional_params_field_is_absent_on_the_wire() -> None:
    server = Server("prompts")

    @server.prompt()
    def hello() -> str:
        return "hello"

    async with connected(server) as client:
        # Type checkers accept arguments=None; before the fix the constructor raised a ValidationError.
        params = mcp.GetPromptRequestParams(name="hello", arguments=None, _meta=None)
        assert params.model_dump() == {"name": "hello"}
        prompt = await client.stub(ClientStub).get_prompt(params)
        assert prompt.model_dump(mode="json")["messages"][0]["content"]["text"] == "hello"


# -- 7. hand-written inputSchema / outputSchema ------------------------------------------------------------------

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"unit": {"enum": ["C", "F"]}},
    "properties": {"city": {"type": "string", "minLength": 1}, "unit": {"$ref": "#/$defs/unit"}},
    "required": ["city"],
    "if": {"properties": {"unit": {"const": "F"}}},
    "then": {"properties": {"city": {"pattern": "^[A-Z]"}}},
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"city": {"type": "string"}, "degrees": {"type": "number"}},
    "required": ["city", "degrees"],
    "unevaluatedProperties": False,
}


def build_schema_server() -> Server:
    server = Server("schemas")

    @server.tool(input_schema=JSON_SCHEMA_2020_12, output_schema=OUTPUT_SCHEMA)
    def typed(city: str, unit: str = "C") -> dict[str, Any]:
        """Arguments validated by the signature (pydantic), published with the hand-written schema."""
        return {"city": city, "degrees": 20 if unit == "C" else 68}

    @server.tool(input_schema={"type": "object", "properties": {"anything": {}}, "additionalProperties": True})
    def raw(**arguments: Any) -> str:
        """Every argument as it arrives."""
        return json.dumps(arguments, sort_keys=True)

    @server.tool(input_schema={"type": "object", "properties": {"count": {"type": "integer"}}})
    def mixed(count: int, ctx: Context, **rest: Any) -> str:
        return f"{count + 1} {sorted(rest)} {ctx.protocol_version}"

    return server


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_hand_written_schemas_are_published_verbatim(version: str) -> None:
    async with connected(build_schema_server(), version) as client:
        tools = await list_tools(client, version)
        assert tools["typed"]["inputSchema"] == JSON_SCHEMA_2020_12
        assert tools["raw"]["inputSchema"] == {
            "type": "object",
            "properties": {"anything": {}},
            "additionalProperties": True,
        }
        # outputSchema exists from 2025-06-18 on; older versions do not have the field.
        assert tools["typed"].get("outputSchema") == (OUTPUT_SCHEMA if version >= "2025-06-18" else None)


async def test_hand_written_schema_arguments_reach_the_function() -> None:
    async with connected(build_schema_server()) as client:
        typed = await call(client, "typed", {"city": "Oslo", "unit": "F"})
        assert typed["structuredContent"] == {"city": "Oslo", "degrees": 68} and not typed["isError"]
        # The signature still validates (pydantic): a missing required argument is an isError result.
        missing = await call(client, "typed", {"unit": "F"})
        assert missing["isError"] and "city" in text_of(missing)
        arguments = {"anything": [1, {"x": None}], "other": "kept", "n": 1.5}
        assert json.loads(text_of(await call(client, "raw", arguments))) == arguments
        assert text_of(await call(client, "mixed", {"count": 41, "extra": True})) == "42 ['extra'] 2025-11-25"
        assert (await call(client, "mixed", {"count": "many"}))["isError"]


def test_hand_written_schemas_that_cannot_match_the_signature_raise() -> None:
    server = Server("schemas")
    with pytest.raises(TypeError, match=r"input_schema must be a JSON schema with \"type\": \"object\""):
        server.tool(input_schema={"type": "array"})(second_weather)
    with pytest.raises(TypeError, match=r"output_schema must be a JSON schema with \"type\": \"object\""):
        server.tool(output_schema={"properties": {}})(second_weather)
    with pytest.raises(TypeError, match="parameter 'city' is required, but input_schema has no property 'city'"):
        server.tool(input_schema={"type": "object", "properties": {"town": {}}})(second_weather)
    with pytest.raises(TypeError, match="input_schema has properties that are not parameters: country"):
        server.tool(input_schema={"type": "object", "properties": {"city": {}, "country": {}}})(second_weather)
    with pytest.raises(TypeError, match="output_schema= makes the output structured"):
        server.tool(output_schema=OUTPUT_SCHEMA, structured_output=False)(second_weather)
    with pytest.raises(TypeError, match="input_schema is not JSON"):
        server.tool(input_schema={"type": "object", "default": object()})(second_weather)
    assert not server.tools
