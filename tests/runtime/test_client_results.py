"""What our client's ``ClientHandlers`` return, against real peers: plain dicts (and other versions' models) are
validated against the negotiated version's result model, an invalid one is answered -32603 with the field paths,
and an ``ElicitResult`` may carry a non-integer number (the 2025-06-18+ patch ``*-elicitresult-content-number``).

Peers: the official SDK's server (``sdk_server.py``, a real stdio subprocess), whose ``ask_score`` tool elicits a
``float`` field; and a raw ``Session`` over in-memory streams, which shows the exact JSON-RPC answer."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from support.content import text_of

import mcp_bindings.v2025_06_18 as v3
import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONParams, JSONRPCError, MethodNotFound, RequestContext, Session, memory_stream_pair
from mcpgen_runtime.client import Client, ClientContext

pytestmark = pytest.mark.anyio

COMMAND = [sys.executable, str(Path(__file__).with_name("sdk_server.py"))]
ELICITATION_VERSIONS = ("2025-06-18", "2025-11-25")
ASK_SCORE = {
    "message": "Your score?",
    "requestedSchema": {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]},
}


class DictHandlers(v4.client.ClientHandlers[ClientContext]):
    """Every answer is a plain dict (or whatever ``answers`` says): the methods are annotated ``-> Any``, which an
    override of the stub's model-typed methods may be."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers or {}
        self.asked: list[Any] = []

    async def create_message(self, params: v4.CreateMessageRequestParams, context: ClientContext) -> Any:
        question = params.messages[0].content
        assert isinstance(question, v4.TextContent)
        default = {"role": "assistant", "model": "dict-llm", "content": {"type": "text", "text": question.text}}
        return self.answers.get("sampling/createMessage", default)

    async def list_roots(self, params: v4.RequestParams | None, context: ClientContext) -> Any:
        return self.answers.get("roots/list", {"roots": [{"uri": "file:///dict", "name": "dict"}]})

    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> Any:
        self.asked.append(params)
        return self.answers.get("elicitation/create", {"action": "accept", "content": {"score": 95.5}})


@pytest.mark.parametrize("version", ELICITATION_VERSIONS)
async def test_dict_answers_reach_the_official_sdk_server(version: str) -> None:
    handlers = DictHandlers()
    async with Client.connect_stdio(COMMAND, version=version, handlers=handlers, request_timeout=20) as client:
        m, api = client.bindings, client.api
        scored = await api.call_tool(m.CallToolRequestParams(name="ask_score", arguments={}))
        # The SDK server accepted our answer and holds 95.5 in its float field (the exact wire form of our answer
        # is checked against a raw session below).
        assert not scored.is_error and text_of(scored) == "accept: 95.5"
        (asked,) = handlers.asked
        assert asked.requested_schema.model_dump()["properties"]["score"]["type"] == "number"

        asked_llm = await api.call_tool(m.CallToolRequestParams(name="ask_llm", arguments={"question": "hi"}))
        assert text_of(asked_llm) == "dict-llm: hi"
        roots = await api.call_tool(m.CallToolRequestParams(name="client_roots", arguments={}))
        assert roots.model_dump()["structuredContent"] == {"result": ["file:///dict"]}


@asynccontextmanager
async def raw_server(handlers: Any, version: str) -> AsyncIterator[Session]:
    """A server that is nothing but a raw JSON-RPC session: it initializes our client, then asks it things."""

    async def handle(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "initialize":
            return {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "raw", "version": "0"}}
        raise MethodNotFound(method)

    async def ignore(method: str, params: JSONParams) -> None:
        return None

    client_end, server_end = memory_stream_pair()
    async with Session(server_end, request_handler=handle, notification_handler=ignore) as server:
        async with Client.connect(client_end, version=version, handlers=handlers):
            yield server


async def ask(server: Session, method: str, params: dict[str, Any] | None) -> Any:
    return await server.request(method, params, timeout=5)


@pytest.mark.parametrize("version", ELICITATION_VERSIONS)
async def test_a_non_integer_elicitation_answer_goes_out_exactly(version: str) -> None:
    async with raw_server(DictHandlers(), version) as server:
        answer = await ask(server, "elicitation/create", ASK_SCORE)
        assert answer == {"action": "accept", "content": {"score": 95.5}}
        assert type(answer["content"]["score"]) is float


async def test_models_of_another_version_are_validated_against_the_negotiated_one() -> None:
    # A 2025-06-18 model answered on a 2025-11-25 connection: re-validated, and sent as its wire form.
    answers = {"elicitation/create": v3.ElicitResult(action="accept", content={"score": 95.5, "ok": True})}
    async with raw_server(DictHandlers(answers), "2025-11-25") as server:
        assert await ask(server, "elicitation/create", ASK_SCORE) == {
            "action": "accept",
            "content": {"score": 95.5, "ok": True},
        }


async def test_an_invalid_dict_is_answered_internal_error_with_the_field_paths(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers = {
        "elicitation/create": {"action": "accept", "content": {"score": {"nested": 1}}},
        # A list of content blocks is a 2025-11-25 sampling result, not a 2025-06-18 one.
        "sampling/createMessage": {"role": "assistant", "model": "m", "content": [{"type": "text", "text": "x"}]},
        "roots/list": "not a result",
    }
    caplog.set_level(logging.ERROR, logger="mcpgen_runtime")
    async with raw_server(DictHandlers(answers), "2025-06-18") as server:
        with pytest.raises(JSONRPCError) as elicit_error:
            await ask(server, "elicitation/create", ASK_SCORE)
        assert elicit_error.value.code == -32603
        assert "'elicit'" in elicit_error.value.message and "ElicitResult" in elicit_error.value.message
        assert {tuple(e["loc"][:2]) for e in elicit_error.value.data["errors"]} == {("content", "score")}

        sampling = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
        with pytest.raises(JSONRPCError) as sampling_error:
            await ask(server, "sampling/createMessage", sampling)
        assert sampling_error.value.code == -32603 and "MCP 2025-06-18" in sampling_error.value.message
        assert all(e["loc"][0] == "content" for e in sampling_error.value.data["errors"])

        with pytest.raises(JSONRPCError) as roots_error:
            await ask(server, "roots/list", None)
        assert roots_error.value.code == -32603  # not a model or a dict at all: a plain internal error

        # The connection is still fine after all that.
        assert await ask(server, "ping", None) == {}
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "'elicit'" in logged and "content.score" in logged
    assert "'create_message'" in logged


async def test_the_official_sdk_server_sees_our_refusal() -> None:
    handlers = DictHandlers({"elicitation/create": {"action": "accept", "content": {"score": [1, 2]}}})
    async with Client.connect_stdio(COMMAND, version="2025-11-25", handlers=handlers, request_timeout=20) as client:
        # The SDK server's elicit raises on our -32603, and it answers its tools/call with that very error.
        with pytest.raises(JSONRPCError) as info:
            await client.api.call_tool(v4.CallToolRequestParams(name="ask_score", arguments={}))
    assert info.value.code == -32603 and "not a valid ElicitResult for MCP 2025-11-25" in info.value.message
    assert {tuple(e["loc"][:2]) for e in info.value.data["errors"]} == {("content", "score")}
