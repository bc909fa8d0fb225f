"""Issue 27, "2026-07-28 over HTTP": what a dual-era server does with requests that mix the eras or carry damaged
``Mcp-*`` headers, and how it logs a client's invalid elicitation answer. Real uvicorn servers on 127.0.0.1 (port
0), real HTTP requests (httpx2), and our client over HTTP for the legacy era.

- A request whose ``MCP-Protocol-Version`` header names a legacy version (with a live legacy ``Mcp-Session-Id``)
  while its body's ``_meta`` names 2026-07-28 is a header/body mismatch: 400, -32020.
- A modern request that also carries a live legacy ``Mcp-Session-Id`` is served as a modern request (the spec:
  "An ``Mcp-Session-Id`` header on a request: ignore it"); the session goes on.
- Two ``Mcp-Param-*`` headers of one name, or a raw (not ``=?base64?...?=``) value with characters outside visible
  ASCII, space and tab in ``Mcp-Param-*``, ``Mcp-Name``, ``Mcp-Method`` or ``MCP-Protocol-Version``: 400, -32020.
- An accepted elicitation answer that does not fit the tool's model is the client's mistake: one WARNING line, no
  ERROR and no traceback, in both eras (the tool answers ``isError`` as before).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx2
import pytest
from pydantic import BaseModel, Field
from support.servers import serving_server

from mcp_bindings import v2025_11_25 as v4
from mcpgen_runtime import Client
from mcpgen_runtime.client import ClientContext
from mcpgen_runtime.server import Context, HeaderMismatchError, Server
from mcpgen_runtime.server.dispatch.tool_headers import check_param_headers

pytestmark = pytest.mark.anyio

WAIT = 20.0
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
ELICITING_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
REGION = {"x-mcp-header": "Region"}


class Booking(BaseModel):
    guests: int = Field(ge=1, le=12)


def build_server() -> Server:
    server = Server("faults")

    @server.tool()
    async def run_query(query: str, region: str = Field(default="-", json_schema_extra=REGION)) -> str:
        return f"{region}:{query}"

    @server.tool()
    async def book(context: Context) -> str:
        outcome = await context.elicit("How many?", schema=Booking)
        return f"booked {outcome.data.guests}"  # type: ignore[union-attr]

    return server


def modern_headers(name: str = "run_query", **extra: str) -> dict[str, str]:
    return {"accept": ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name, **extra}


def call_body(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None, id_: int = 1) -> Any:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def message_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or an SSE answer (its last ``data:`` line)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


async def open_legacy_session(client: httpx2.AsyncClient, url: str) -> str:
    headers = {"accept": ACCEPT, "mcp-protocol-version": LEGACY}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
    }
    response = await client.post(url, json=init, headers=headers)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    headers["mcp-session-id"] = session_id
    done = await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert done.status_code == 202
    return session_id


JSON_TYPE = "application/json"


def assert_header_mismatch(response: httpx2.Response, *words: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == -32020, error
    for word in words:
        assert word in error["message"], error


async def test_a_legacy_header_over_a_modern_body_in_a_live_session_is_a_header_mismatch() -> None:
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url, httpx2.AsyncClient(timeout=5) as client:
            session_id = await open_legacy_session(client, url)
            headers = {**modern_headers(), "mcp-protocol-version": LEGACY, "mcp-session-id": session_id}
            response = await client.post(url, json=call_body("run_query", {"query": "q"}, META), headers=headers)
            assert_header_mismatch(response, "MCP-Protocol-Version", LEGACY)
            # The session itself is untouched: a legacy request on it is served.
            legacy = {"accept": ACCEPT, "mcp-protocol-version": LEGACY, "mcp-session-id": session_id}
            served = await client.post(url, json=call_body("run_query", {"query": "q"}, id_=2), headers=legacy)
            assert served.status_code == 200
            assert message_of(served)["result"]["content"][0]["text"] == "-:q"


async def test_a_modern_request_carrying_a_live_session_id_is_served_as_modern() -> None:
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url, httpx2.AsyncClient(timeout=5) as client:
            session_id = await open_legacy_session(client, url)
            headers = modern_headers(**{"mcp-session-id": session_id})
            response = await client.post(url, json=call_body("run_query", {"query": "q"}, META), headers=headers)
            assert response.status_code == 200, response.text
            assert message_of(response)["result"]["content"][0]["text"] == "-:q"
            assert "mcp-session-id" not in response.headers  # ignored: not echoed
            # Without its _meta it is still a modern request, told what it lacks (not "unsupported version").
            bare = await client.post(url, json=call_body("run_query", {"query": "q"}), headers=headers)
            assert bare.status_code == 400 and bare.json()["error"]["code"] == -32602, bare.text
            legacy = {"accept": ACCEPT, "mcp-protocol-version": LEGACY, "mcp-session-id": session_id}
            served = await client.post(url, json=call_body("run_query", {"query": "q"}, id_=2), headers=legacy)
            assert served.status_code == 200


@pytest.mark.parametrize(
    "raw_headers, words",
    [
        pytest.param(
            [(b"mcp-param-region", b"eu"), (b"mcp-param-region", b"eu")],
            ["mcp-param-region", "more than once"],
            id="twice",
        ),
        pytest.param(
            [(b"Mcp-Param-Region", b"eu"), (b"mcp-param-region", b"us")], ["more than once"], id="twice-cased"
        ),
        pytest.param([(b"mcp-param-region", b"\xe9u")], ["mcp-param-region", "invalid characters"], id="param-latin1"),
        pytest.param([(b"mcp-param-region", "éu".encode())], ["invalid characters"], id="param-utf8"),
        pytest.param([(b"mcp-param-region", b"e\x7fu")], ["invalid characters"], id="param-del"),
    ],
)
async def test_duplicate_or_non_ascii_param_headers_are_refused(
    raw_headers: list[tuple[bytes, bytes]], words: list[str]
) -> None:
    region = raw_headers[0][1].decode("latin-1")
    headers = [(key.encode(), value.encode()) for key, value in modern_headers().items()] + raw_headers
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url, httpx2.AsyncClient(timeout=5) as client:
            body = call_body("run_query", {"query": "q", "region": region}, META)
            response = await client.post(url, json=body, headers=headers)
            if b"\x7f" in raw_headers[0][1] and not response.headers.get("content-type", "").startswith(JSON_TYPE):
                # httptools (the fast stack) refuses a control character in a header value itself, before the app
                # sees the request: a plain 400 from the HTTP parser; h11 passes it on and the server refuses it.
                assert response.status_code == 400, response.text
            else:
                assert_header_mismatch(response, *words)
            # The same value, as the spec says to send it, is served.
            fine = [(k.encode(), v.encode()) for k, v in modern_headers(**{"mcp-param-region": "eu"}).items()]
            body = call_body("run_query", {"query": "q", "region": "eu"}, META)
            assert (await client.post(url, json=body, headers=fine)).status_code == 200


@pytest.mark.parametrize("header", ["mcp-name", "mcp-method", "mcp-protocol-version"])
async def test_non_ascii_routing_headers_are_refused(header: str) -> None:
    name = "café"
    values = {"mcp-name": name, "mcp-method": "tools/call", "mcp-protocol-version": MODERN}
    raw = {key: value.encode("latin-1") for key, value in modern_headers(name).items()}
    raw[header] = values[header].encode("latin-1") + (b"" if header == "mcp-name" else b"\xa0")
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url, httpx2.AsyncClient(timeout=5) as client:
            response = await client.post(url, json=call_body(name, {}, META), headers=list(raw.items()))
            assert_header_mismatch(response, header, "invalid characters")


def warnings_and_worse(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING]


def assert_logged_once_as_the_clients_mistake(caplog: pytest.LogCaptureFixture) -> None:
    records = warnings_and_worse(caplog)
    assert [record.levelno for record in records] == [logging.WARNING], [r.getMessage() for r in records]
    assert records[0].exc_info is None and "guests" in records[0].getMessage()


async def test_an_invalid_elicitation_answer_is_one_warning_in_the_modern_era(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url, httpx2.AsyncClient(timeout=5) as client:
            headers = modern_headers("book")
            first = await client.post(url, json=call_body("book", {}, ELICITING_META), headers=headers)
            assert first.status_code == 200, first.text
            result = message_of(first)["result"]
            (key,) = result["inputRequests"]
            params: dict[str, Any] = {
                "_meta": ELICITING_META,
                "name": "book",
                "arguments": {},
                "inputResponses": {key: {"action": "accept", "content": {"guests": 40}}},
                "requestState": result["requestState"],
            }
            caplog.clear()
            retry = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
            answer = await client.post(url, json=retry, headers=headers)
    assert answer.status_code == 200, answer.text
    assert message_of(answer)["result"]["isError"] is True
    assert_logged_once_as_the_clients_mistake(caplog)


class Answers(v4.client.ClientHandlers[ClientContext]):
    async def elicit(self, params: v4.ElicitRequestParams, context: ClientContext) -> v4.ElicitResult:
        return v4.ElicitResult(action="accept", content={"guests": 40})


async def test_an_invalid_elicitation_answer_is_one_warning_in_the_legacy_era(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    with anyio.fail_after(WAIT):
        async with serving_server(build_server()) as url:
            async with Client.connect_http(url, version=LEGACY, handlers=Answers(), request_timeout=10) as client:
                caplog.clear()
                result = await client.stub(v4.client.ClientStub).call_tool(v4.CallToolRequestParams(name="book"))
    assert result.is_error
    assert_logged_once_as_the_clients_mistake(caplog)


def test_the_tool_header_check_refuses_invalid_characters_on_its_own() -> None:
    # What the server layer does with a headers mapping that did not come through the HTTP transport's check.
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    check_param_headers("run_query", schema, {"region": "eu"}, {"Mcp-Param-Region": "eu"})
    with pytest.raises(HeaderMismatchError, match="invalid characters"):
        check_param_headers("run_query", schema, {"region": "éu"}, {"Mcp-Param-Region": "éu"})
