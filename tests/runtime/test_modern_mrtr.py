"""Multi round-trip requests (MCP 2026-07-28): the same ``Context.elicit`` / ``sample`` / ``list_roots`` code answers
``InputRequiredResult`` in the modern era and gets its answers on the retry; the ``requestState`` is signed, bound
to its request, expires, and is refused (-32602) otherwise. And the same tool in the legacy era, for contrast.
A real ``Server`` against a raw ``Session`` over memory streams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from mcpgen_runtime import ErrorCode, JSONParams, JSONRPCError, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.server import Accepted, Context, RequestStateCodec, Server

pytestmark = pytest.mark.anyio

WAIT = 5.0
ALL = {"elicitation": {}, "sampling": {}, "roots": {}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Color(BaseModel):
    color: str


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": ALL if capabilities is None else capabilities,
    }


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def build_server(**options: Any) -> Server:
    server = Server("mrtr", **options)
    runs: list[str] = []
    server.runs = runs  # type: ignore[attr-defined]

    @server.tool()
    async def ask_name(context: Context) -> str:
        runs.append("ask_name")
        answer = await context.elicit("Your name?", NAME_SCHEMA, input_key="user_name")
        return f"hello {answer.content['name']}"

    @server.tool()
    async def two_steps(context: Context) -> str:
        name = await context.elicit("Step 1", NAME_SCHEMA)
        color = await context.elicit("Step 2", Color)
        assert isinstance(color, Accepted)
        return f"{name.content['name']} likes {color.data.color}"

    @server.tool()
    async def everything(context: Context) -> str:
        name, sampled, roots = await context.gather(
            context.elicit("Name?", NAME_SCHEMA), context.sample("Capital?", max_tokens=5), context.list_roots()
        )
        return f"{name.content['name']} {sampled.content.text} {roots[0].uri}"

    @server.tool()
    async def what_you_can(context: Context) -> str:
        calls = []
        if "sampling" in context.client_capabilities:
            calls.append(context.sample("hi", max_tokens=5))
        if "elicitation" in context.client_capabilities:
            calls.append(context.elicit("hi", NAME_SCHEMA))
        await context.gather(*calls)
        return "ok"

    @server.tool()
    async def swallow(context: Context) -> str:
        try:
            await context.list_roots()
        except Exception:  # an author's catch-all must not eat the input request
            return "swallowed"
        return "answered"

    @server.prompt()
    async def briefing(context: Context) -> str:
        answer = await context.elicit("Context?", {"type": "object", "properties": {"c": {"type": "string"}}})
        return f"brief: {answer.content['c']}"

    @server.resource("test://secret")
    async def secret(context: Context) -> str:
        answer = await context.elicit("Password?", {"type": "object", "properties": {"p": {"type": "string"}}})
        return "open" if answer.content["p"] == "sesame" else "closed"

    return server


@asynccontextmanager
async def connect(server: Server | None = None, answers: dict[str, Any] | None = None) -> AsyncIterator[Session]:
    server = server or build_server()
    server_end, client_end = memory_stream_pair()

    async def on_request(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if answers and method in answers:
            return dict(answers[method])
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, "no")

    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve_stream, server_end)
        async with Session(client_end, request_handler=on_request) as session:
            yield session
        tg.cancel_scope.cancel()


async def call(session: Session, method: str, params: dict[str, Any]) -> Any:
    with anyio.fail_after(WAIT):
        return await session.request(method, {"_meta": meta(), **params})


async def refused(session: Session, method: str, params: dict[str, Any]) -> JSONRPCError:
    with pytest.raises(JSONRPCError) as caught:
        await call(session, method, params)
    return caught.value


async def test_elicitation_round_trip_with_a_named_key() -> None:
    server = build_server()
    async with connect(server) as session:
        first = await call(session, "tools/call", {"name": "ask_name"})
        assert first["resultType"] == "input_required"
        request = first["inputRequests"]["user_name"]
        assert request == {
            "method": "elicitation/create",
            "params": {"message": "Your name?", "requestedSchema": NAME_SCHEMA},
        }
        assert first["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mrtr"
        assert "ttlMs" not in first
        retry = {
            "name": "ask_name",
            "inputResponses": {"user_name": accept(name="Ada")},
            "requestState": first["requestState"],
        }
        done = await call(session, "tools/call", retry)
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "hello Ada"
    assert server.runs == ["ask_name", "ask_name"]  # type: ignore[attr-defined]


async def test_answers_without_state_are_used_and_unknown_keys_ignored() -> None:
    async with connect() as session:
        responses = {"user_name": accept(name="Bo"), "extra": accept(x=1)}
        done = await call(session, "tools/call", {"name": "ask_name", "inputResponses": responses})
        again = await call(session, "tools/call", {"name": "ask_name", "inputResponses": {"wrong": accept(x=1)}})
    assert done["content"][0]["text"] == "hello Bo"
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["user_name"]


async def test_multi_round_carries_earlier_answers_in_the_state() -> None:
    async with connect() as session:
        first = await call(session, "tools/call", {"name": "two_steps"})
        assert list(first["inputRequests"]) == ["elicitation-1"]
        second = await call(
            session,
            "tools/call",
            {
                "name": "two_steps",
                "inputResponses": {"elicitation-1": accept(name="Cy")},
                "requestState": first["requestState"],
            },
        )
        assert list(second["inputRequests"]) == ["elicitation-2"]
        assert second["inputRequests"]["elicitation-2"]["params"]["requestedSchema"]["properties"] == {
            "color": {"type": "string", "title": "Color"}
        }
        assert second["requestState"] != first["requestState"]
        third = await call(
            session,
            "tools/call",
            {
                "name": "two_steps",
                "inputResponses": {"elicitation-2": accept(color="blue")},
                "requestState": second["requestState"],
            },
        )
    assert third["content"][0]["text"] == "Cy likes blue"


async def test_gather_asks_everything_in_one_round() -> None:
    async with connect() as session:
        first = await call(session, "tools/call", {"name": "everything"})
        methods = {key: request["method"] for key, request in first["inputRequests"].items()}
        assert methods == {
            "elicitation-1": "elicitation/create",
            "sampling-2": "sampling/createMessage",
            "roots-3": "roots/list",
        }
        answers = {"elicitation-1": accept(name="Di"), "sampling-2": SAMPLED, "roots-3": ROOTS}
        done = await call(
            session,
            "tools/call",
            {"name": "everything", "inputResponses": answers, "requestState": first["requestState"]},
        )
    assert done["content"][0]["text"] == "Di Paris file:///work"


async def test_only_declared_capabilities_are_asked_for() -> None:
    async with connect() as session:
        with anyio.fail_after(WAIT):
            result = await session.request("tools/call", {"_meta": meta({"sampling": {}}), "name": "what_you_can"})
    assert [request["method"] for request in result["inputRequests"].values()] == ["sampling/createMessage"]


async def test_a_catch_all_in_the_tool_does_not_swallow_the_input_request() -> None:
    async with connect() as session:
        result = await call(session, "tools/call", {"name": "swallow"})
    assert result["resultType"] == "input_required"


async def test_prompts_and_resources_may_ask_too() -> None:
    async with connect() as session:
        prompt = await call(session, "prompts/get", {"name": "briefing"})
        key = next(iter(prompt["inputRequests"]))
        done = await call(
            session,
            "prompts/get",
            {"name": "briefing", "inputResponses": {key: accept(c="sunny")}, "requestState": prompt["requestState"]},
        )
        assert done["messages"][0]["content"]["text"] == "brief: sunny"
        read = await call(session, "resources/read", {"uri": "test://secret"})
        key = next(iter(read["inputRequests"]))
        opened = await call(
            session,
            "resources/read",
            {"uri": "test://secret", "inputResponses": {key: accept(p="sesame")}, "requestState": read["requestState"]},
        )
    assert opened["contents"][0]["text"] == "open" and opened["resultType"] == "complete"


async def test_tampered_foreign_expired_and_misplaced_states_are_refused() -> None:
    now = [1000.0]
    server = build_server()
    server.request_states = RequestStateCodec(b"k" * 32, ttl=60, clock=lambda: now[0])
    other = RequestStateCodec(b"x" * 32)
    async with connect(server) as session:
        first = await call(session, "tools/call", {"name": "ask_name"})
        state = first["requestState"]
        answers = {"user_name": accept(name="Ed")}
        forged = other.seal({"m": "tools/call", "d": "whatever", "a": {}})
        for bad in (state + "-TAMPERED", forged, "not-a-state", state[:-2]):
            error = await refused(
                session, "tools/call", {"name": "ask_name", "inputResponses": answers, "requestState": bad}
            )
            assert error.code == -32602, bad
        # The same state on another request (other arguments, or another method) is refused too.
        error = await refused(
            session, "tools/call", {"name": "two_steps", "inputResponses": answers, "requestState": state}
        )
        assert error.code == -32602
        now[0] += 61
        error = await refused(
            session, "tools/call", {"name": "ask_name", "inputResponses": answers, "requestState": state}
        )
        assert error.code == -32602 and "expired" in error.message


async def test_a_shared_key_lets_another_server_accept_the_state() -> None:
    first_server, second_server = (build_server(request_state_key="s" * 32) for _ in range(2))
    async with connect(first_server) as session:
        first = await call(session, "tools/call", {"name": "ask_name"})
    async with connect(second_server) as session:
        retry = {
            "name": "ask_name",
            "inputResponses": {"user_name": accept(name="Fi")},
            "requestState": first["requestState"],
        }
        done = await call(session, "tools/call", retry)
    assert done["content"][0]["text"] == "hello Fi"


async def test_invalid_answers_are_invalid_params() -> None:
    async with connect() as session:
        for responses in ({"user_name": 12345}, {"user_name": {"action": "maybe"}}):
            error = await refused(session, "tools/call", {"name": "ask_name", "inputResponses": responses})
            assert error.code == -32602


async def test_the_same_tool_in_the_handshake_era_asks_the_client() -> None:
    answers = {"elicitation/create": accept(name="Gus")}
    async with connect(answers=answers) as session:
        with anyio.fail_after(WAIT):
            init = {"protocolVersion": "2025-11-25", "capabilities": ALL, "clientInfo": {"name": "c", "version": "1"}}
            await session.request("initialize", init)
            result = await session.request("tools/call", {"name": "ask_name"})
    assert result["content"][0]["text"] == "hello Gus" and "resultType" not in result


async def test_the_state_size_is_bounded() -> None:
    with pytest.raises(ValueError):
        RequestStateCodec(b"short")
    codec = RequestStateCodec(max_bytes=300)
    with pytest.raises(ValueError):
        codec.seal({"a": "x" * 400})


async def test_gather_in_the_handshake_era_asks_concurrently() -> None:
    answers = {"elicitation/create": accept(name="Hal"), "sampling/createMessage": SAMPLED, "roots/list": ROOTS}
    async with connect(answers=answers) as session:
        with anyio.fail_after(WAIT):
            init = {"protocolVersion": "2025-11-25", "capabilities": ALL, "clientInfo": {"name": "c", "version": "1"}}
            await session.request("initialize", init)
            result = await session.request("tools/call", {"name": "everything"})
    assert result["content"][0]["text"] == "Hal Paris file:///work"


async def test_list_requests_cannot_ask_for_input() -> None:
    server = build_server()

    @server.completion(prompt="briefing", argument="context")
    async def complete(value: str, context: Context) -> list[str]:
        await context.list_roots()  # completion/complete may not answer InputRequiredResult
        return ["never"]

    async with connect(server) as session:
        with pytest.raises(JSONRPCError) as caught:
            await call(
                session,
                "completion/complete",
                {"ref": {"type": "ref/prompt", "name": "briefing"}, "argument": {"name": "context", "value": ""}},
            )
    assert caught.value.code == -32603  # the author's bug (a CapabilityError), not an input round
