"""What ``Context`` gives a handler besides progress and logging: ``read_resource`` (the server's own resources),
``list_roots`` (roots/list, capability-checked), typed ``elicit`` (a pydantic model in, ``Accepted[Model] |
Declined | Cancelled`` out; the JSON-schema form unchanged), typed ``sample``, and the HTTP request (None in
memory). A real ``Server`` and a real ``Client`` over memory streams (``connect_in_memory``).

Typed: tests/test_typing.py runs mypy --strict on this file."""

from __future__ import annotations

import enum
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from mcp_bindings import v2024_11_05 as v1
from mcp_bindings import v2025_06_18 as v3
from mcp_bindings import v2025_11_25 as v4
from mcpgen_runtime import Accepted, Cancelled, Context, Declined, JSONRPCError, Server, connect_in_memory
from mcpgen_runtime.client import ClientContext
from mcpgen_runtime.server import CapabilityError, InvalidClientResultError
from mcpgen_runtime.transports.http.server import session as http_session

pytestmark = pytest.mark.anyio

WAIT = 10.0


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


class Booking(BaseModel):
    name: str = Field(description="Who books")
    guests: int = Field(ge=1, le=12)
    size: Size = Size.SMALL
    seat: Literal["window", "aisle"] = "window"
    note: str | None = None
    vegan: bool = False


class Nested(BaseModel):
    booking: Booking


# What each test's handler saw, by name (the tools return text; the assertions are made here).
seen: dict[str, Any] = {}


def build() -> Server:
    server = Server("conveniences")

    @server.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return "buy milk"

    @server.resource("notes://{day}/count")
    def count(day: str) -> dict[str, Any]:
        return {"day": day, "count": 3}

    @server.tool()
    async def read(uri: str, context: Context) -> str:
        try:
            result = await context.read_resource(uri)
        except JSONRPCError as exc:
            seen["read_error"] = exc
            raise
        seen["read"] = result
        content = result.contents[0]
        return content.text if isinstance(content, v4.TextResourceContents) else "?"

    @server.tool()
    async def roots(context: Context) -> str:
        found = await context.list_roots()
        seen["roots"] = found
        return ",".join(root.uri for root in found)

    @server.tool()
    async def book(context: Context) -> str:
        outcome = await context.elicit("Book a table?", schema=Booking)
        seen["book"] = outcome
        match outcome:
            case Accepted(data=booking):
                return f"{booking.name} x{booking.guests} {booking.size.value} {booking.seat}"
            case Declined():
                return "declined"
            case Cancelled():
                return "cancelled"

    @server.tool()
    async def book_untyped(context: Context) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        result = await context.elicit("Name?", schema)
        seen["book_untyped"] = result
        return f"{result.action}:{(result.content or {}).get('name')}"

    @server.tool()
    async def book_nested(context: Context) -> str:
        await context.elicit("Nested?", schema=Nested)
        return "unreachable"

    @server.tool()
    async def ask(context: Context) -> str:
        result = await context.sample("Hi?", max_tokens=5)
        seen["ask"] = result
        return result.model

    @server.tool()
    async def transport(context: Context) -> str:
        seen["transport"] = (context.http_request, context.headers)
        return "ok"

    return server


class Client4(v4.client.ClientHandlers[ClientContext]):
    """A 2025-11-25 client with roots, sampling and elicitation; ``answer`` is what it elicits back."""

    def __init__(self, answer: v4.ElicitResult) -> None:
        self.answer = answer
        self.elicited: list[v4.ElicitRequestParams] = []

    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> v4.ListRootsResult:
        return v4.ListRootsResult(roots=[v4.Root(uri="file:///work", name="work"), v4.Root(uri="file:///tmp")])

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        self.elicited.append(params)
        return self.answer

    async def create_message(
        self, params: v4.CreateMessageRequestParams, context: ClientContext
    ) -> v4.CreateMessageResult:
        return v4.CreateMessageResult(role="assistant", model="tiny", content=v4.TextContent(text="hello"))


class Client1(v1.client.ClientHandlers[ClientContext]):
    async def create_message(
        self, params: v1.CreateMessageRequestParams, context: ClientContext
    ) -> v1.CreateMessageResult:
        return v1.CreateMessageResult(role="assistant", model="old", content=v1.TextContent(text="hello"))


ACCEPT = v4.ElicitResult(action="accept", content={"name": "Ada", "guests": 2, "size": "large"})


async def call(server: Server, tool: str, handlers: Any = None, **arguments: Any) -> tuple[str, bool]:
    """Call ``tool`` on a fresh in-memory connection: (its text, isError)."""
    seen.clear()
    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, handlers=handlers or Client4(ACCEPT), version="2025-11-25") as client:
            api = client.stub(v4.client.ClientStub)
            result = await api.call_tool(v4.CallToolRequestParams(name=tool, arguments=arguments))
    block = result.content[0]
    assert block.type == "text"
    return block.text, bool(result.is_error)


# -- read_resource -----------------------------------------------------------------------------------------------


async def test_read_resource_reads_a_static_resource_as_the_negotiated_model() -> None:
    assert await call(build(), "read", uri="notes://today") == ("buy milk", False)
    result = seen["read"]
    assert isinstance(result, v4.ReadResourceResult)
    assert result.contents[0].mime_type == "text/plain" and result.contents[0].uri == "notes://today"


async def test_read_resource_reads_a_template() -> None:
    assert await call(build(), "read", uri="notes://monday/count") == ('{"day": "monday", "count": 3}', False)


async def test_read_resource_of_an_unknown_uri_raises_resource_not_found() -> None:
    text, is_error = await call(build(), "read", uri="notes://nowhere")
    assert is_error and "Resource not found" in text  # the tool's exception, as its error result
    error = seen["read_error"]
    assert (error.code, error.data) == (-32002, {"uri": "notes://nowhere"})


async def test_read_resource_does_not_go_through_the_middleware() -> None:
    server = build()
    methods: list[str] = []

    @server.middleware
    async def record(request: Any, call_next: Any) -> Any:
        methods.append(request.method)
        return await call_next(request)

    assert await call(server, "read", uri="notes://today") == ("buy milk", False)
    assert methods == ["initialize", "tools/call"]


# -- list_roots --------------------------------------------------------------------------------------------------


async def test_list_roots_returns_the_clients_roots() -> None:
    assert await call(build(), "roots") == ("file:///work,file:///tmp", False)
    assert all(isinstance(root, v4.Root) for root in seen["roots"])
    assert seen["roots"][0].name == "work"


async def test_list_roots_needs_the_roots_capability() -> None:
    text, is_error = await call(build(), "roots", handlers=Client1())
    assert is_error and "'roots'" in text


async def test_list_roots_raises_capability_error_in_the_handler() -> None:
    server = Server("roots")
    raised: list[BaseException] = []

    @server.tool()
    async def roots(context: Context) -> str:
        try:
            await context.list_roots()
        except CapabilityError as exc:
            raised.append(exc)
        return "done"

    with anyio.fail_after(WAIT):
        async with connect_in_memory(server, version="2025-11-25") as client:  # no handlers: no capabilities
            await client.stub(v4.client.ClientStub).call_tool(v4.CallToolRequestParams(name="roots"))
    assert len(raised) == 1 and "roots/list" in str(raised[0])


# -- elicit ------------------------------------------------------------------------------------------------------


async def test_elicit_with_a_model_sends_its_fields_and_returns_accepted() -> None:
    handlers = Client4(ACCEPT)
    assert await call(build(), "book", handlers=handlers) == ("Ada x2 large window", False)
    outcome = seen["book"]
    assert isinstance(outcome, Accepted) and outcome.data == Booking(name="Ada", guests=2, size=Size.LARGE)
    # What code written for the untyped ElicitResult reads is still there.
    assert outcome.action == "accept" and outcome.content == {"name": "Ada", "guests": 2, "size": "large"}
    assert isinstance(outcome.result, v4.ElicitResult)
    params = handlers.elicited[0]
    assert isinstance(params, v4.ElicitRequestFormParams)
    schema = params.requested_schema
    assert schema.required == ["name", "guests"]
    properties = {name: prop.model_dump(by_alias=True, exclude_unset=True) for name, prop in schema.properties.items()}
    assert properties["name"] == {"type": "string", "title": "Name", "description": "Who books"}
    assert properties["guests"] == {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 12}
    # The Enum is inlined, the Literal is an enum, the optional field is a plain (not required) string.
    assert properties["size"] == {"type": "string", "title": "Size", "enum": ["small", "large"], "default": "small"}
    assert properties["seat"]["enum"] == ["window", "aisle"]
    assert properties["note"] == {"type": "string", "title": "Note"}
    assert properties["vegan"] == {"type": "boolean", "title": "Vegan", "default": False}


@pytest.mark.parametrize(
    ("answer", "expected", "outcome_type"),
    [
        (v4.ElicitResult(action="decline"), "declined", Declined),
        (v4.ElicitResult(action="cancel"), "cancelled", Cancelled),
    ],
)
async def test_elicit_declined_and_cancelled(
    answer: v4.ElicitResult, expected: str, outcome_type: type[Declined | Cancelled]
) -> None:
    assert await call(build(), "book", handlers=Client4(answer)) == (expected, False)
    outcome: Declined | Cancelled = seen["book"]
    assert type(outcome) is outcome_type and outcome.content is None and outcome.action == answer.action


async def test_elicit_answer_that_does_not_fit_the_model_is_the_clients_error() -> None:
    server = build()
    raised: list[InvalidClientResultError] = []

    @server.tool()
    async def strict(context: Context) -> str:
        try:
            await context.elicit("Book?", schema=Booking)
        except InvalidClientResultError as exc:
            raised.append(exc)
        return "done"

    bad = v4.ElicitResult(action="accept", content={"name": "Ada", "guests": 40})
    assert await call(server, "strict", handlers=Client4(bad)) == ("done", False)
    assert raised and raised[0].details[0]["loc"] == ["guests"]
    assert "accepted answer to elicitation/create" in str(raised[0])


async def test_elicit_with_a_nested_model_raises_type_error_before_sending() -> None:
    handlers = Client4(ACCEPT)
    text, is_error = await call(build(), "book_nested", handlers=handlers)
    assert is_error and "Nested.booking" in text and "primitive" in text
    assert not handlers.elicited


async def test_elicit_with_a_json_schema_returns_the_versions_elicit_result() -> None:
    answer = v4.ElicitResult(action="accept", content={"name": "Ada"})
    assert await call(build(), "book_untyped", handlers=Client4(answer)) == ("accept:Ada", False)
    assert isinstance(seen["book_untyped"], v4.ElicitResult)


# -- sample ------------------------------------------------------------------------------------------------------


async def test_sample_returns_the_negotiated_versions_create_message_result() -> None:
    assert await call(build(), "ask") == ("tiny", False)
    assert isinstance(seen["ask"], v4.CreateMessageResult)


async def test_sample_on_2024_11_05_returns_that_versions_model() -> None:
    seen.clear()
    with anyio.fail_after(WAIT):
        async with connect_in_memory(build(), version="2024-11-05", handlers=Client1()) as client:
            api = client.stub(v1.client.ClientStub)
            result = await api.call_tool(v1.CallToolRequestParams(name="ask"))
    assert not result.is_error and isinstance(seen["ask"], v1.CreateMessageResult)
    assert not isinstance(seen["ask"], v3.CreateMessageResult)


# -- the transport -----------------------------------------------------------------------------------------------


async def test_no_http_request_in_memory() -> None:
    assert await call(build(), "transport") == ("ok", False)
    assert seen["transport"] == (None, None)


async def test_the_http_request_is_built_from_the_transports_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    # What streamable HTTP hands over (transports.http.server.session.current_http_scope): the ASGI scope of the POST.
    # Over real HTTP, once the transport has it: the proposal in the report (tested there against uvicorn).
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "path": "/mcp",
        "query_string": b"",
        "headers": [(b"x-tenant", b"acme"), (b"authorization", b"Bearer t")],
    }
    monkeypatch.setattr(http_session, "current_http_scope", lambda: scope, raising=False)
    assert await call(build(), "transport") == ("ok", False)
    request, headers = seen["transport"]
    assert request is not None and request.method == "POST" and str(request.url) == "http://127.0.0.1:8000/mcp"
    assert headers is not None and headers["X-Tenant"] == "acme" and headers.get("authorization") == "Bearer t"
