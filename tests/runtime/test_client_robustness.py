"""The typed client against servers that misbehave on purpose (``raw_servers``: a stdio script run as a real child
process, and a raw HTTP server on 127.0.0.1): every call ends, with a clear error, in bounded time.

- an answer with the wrong id: the call times out (the default timeout, the client's, or the call's own);
- an answer that arrives but cannot be delivered (damaged JSON, over the size limit, an id without result or
  error): the call fails at once with ``MalformedResponseError``, long before its timeout;
- a server that hands out new cursors forever, or repeats one: the list walk stops with ``PaginationError``;
- an exception inside ``async with Client.connect_http(...)`` comes out as itself.

"At once" is asserted as "well inside a bound that is a small fraction of the call's timeout", never as a speed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from raw_servers import Exchange, mcp_handler, raw_http_server, result, text_result

import mcp_bindings.v2025_11_25 as v4
from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.client import (
    DEFAULT_MAX_PAGES,
    DEFAULT_REQUEST_TIMEOUT,
    Client,
    MalformedResponseError,
    PaginationError,
)
from mcpgen_runtime.transports.frame_head import Head, scan_head
from mcpgen_runtime.transports.http.client.resume import SSEReconnect

pytestmark = pytest.mark.anyio

RAW_STDIO = [sys.executable, str(Path(__file__).with_name("raw_servers.py"))]
CALL = v4.CallToolRequestParams(name="misbehave", arguments={})
ECHO = v4.CallToolRequestParams(name="echo", arguments={})
LONG = 60.0  # a timeout no "at once" failure may come near (every such test is bounded well below it)


@asynccontextmanager
async def stdio_client(mode: str, **options: Any) -> AsyncIterator[Client]:
    async with Client.connect_stdio([*RAW_STDIO, mode], version="2025-11-25", **options) as client:
        yield client


def api(client: Client, **options: Any) -> v4.client.ClientStub:
    return client.stub(v4.client.ClientStub, **options)


# -- reading the id of a damaged answer ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "head"),
    [
        (b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [', Head(id=7, is_answer=True)),
        (b'{"id": "a", "error": {', Head(id="a", is_answer=True)),
        (b'{"jsonrpc": "2.0", "id": 7}', Head(id=7, complete=True)),
        (b' {"jsonrpc": "2.0", "id": 7} \r\n', Head(id=7, complete=True)),
        (b'{"jsonrpc": "2.0", "id": 7} and more', Head(id=7, broken=True)),
        (b'{"jsonrpc": "2.0", "id": 7, "resu', Head(id=7, broken=True)),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {',
            Head(7, "sampling/createMessage", is_request=True),
        ),
        (b'{"method": "notifications/message", "params": [', Head(method="notifications/message", is_request=True)),
        (b'{"result": {"id": 5}, "id": 6', Head(is_answer=True)),  # the id inside the result is not the message's
        (b'{"id": true, "result": {}}', Head(is_answer=True)),  # not a usable request id
        (b'{"id": 1.5}', Head(complete=True)),
        (b"{}", Head(complete=True)),
        (b'{"id": 7,}', Head(id=7, broken=True)),
        (b'{"id": 7 "result": 1}', Head(id=7, broken=True)),
        (b'{"\xff": 1, "id": 3}', Head(id=3, complete=True)),  # not UTF-8: read anyway, judged by the session
        (b'[{"jsonrpc": "2.0", "id": 1, "result": {}}]', None),
        (json.dumps({"id": 3, "params": {"x": "y" * 99_999}, "method": "m"}).encode(), Head(3, "m", is_request=True)),
        (json.dumps({"id": 3, "result": {"x": "y" * 99_999}}).encode()[:80_000], Head(id=3, is_answer=True)),
        (b"not JSON", None),
        (b"", None),
    ],
)
def test_the_head_of_a_frame_is_read_up_to_its_envelope_keys(frame: bytes, head: Head | None) -> None:
    assert scan_head(frame) == head


def test_the_reconnect_delay_obeys_retry_within_its_cap() -> None:
    policy = SSEReconnect(default_delay=1.0, max_delay=30.0)
    assert policy.delay(None) == 1.0
    assert policy.delay(500) == 0.5
    assert policy.delay(0) == 0.0
    assert policy.delay(-5) == 0.0
    assert policy.delay(3_600_000) == 30.0


# -- timeouts -----------------------------------------------------------------------------------------------------


def test_the_default_request_timeout_is_documented_and_bounded() -> None:
    assert DEFAULT_REQUEST_TIMEOUT == 300.0
    assert Client().request_timeout == DEFAULT_REQUEST_TIMEOUT
    assert Client(request_timeout=None).request_timeout is None  # waiting forever stays possible, on request


async def test_a_wrong_id_times_out_with_the_default_and_the_explicit_timeouts() -> None:
    with anyio.fail_after(30):
        async with stdio_client("wrong-id") as client:
            # Nothing configured: the default applies (shortened here through the attribute it sets).
            assert client.request_timeout == DEFAULT_REQUEST_TIMEOUT
            client.request_timeout = 0.3
            with pytest.raises(TimeoutError):
                await api(client).call_tool(CALL)
            client.request_timeout = LONG
            # The call's own timeout wins over the client's.
            with pytest.raises(TimeoutError):
                await api(client, timeout=0.3).call_tool(CALL)
            # The connection is fine for calls the server does answer.
            assert not (await api(client).call_tool(ECHO)).is_error
        async with stdio_client("wrong-id", request_timeout=0.3) as client:
            with pytest.raises(TimeoutError):
                await api(client).call_tool(CALL)


async def test_a_wrong_id_on_an_sse_stream_held_open_times_out() -> None:
    async def on_request(exchange: Exchange, message: dict[str, Any]) -> None:
        await exchange.start_sse()
        await exchange.send_event(text_result({"id": message["id"] + 1000}, "for someone else"))
        await exchange.hold()

    with anyio.fail_after(30):
        async with (
            raw_http_server(mcp_handler(on_request)) as server,
            Client.connect_http(server.url, request_timeout=0.3) as client,
        ):
            with pytest.raises(TimeoutError):
                await api(client).call_tool(CALL)


# -- answers that cannot be delivered -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("malformed", "malformed JSON"), ("id-only", 'neither "result" nor "error"')],
)
async def test_stdio_answers_that_cannot_be_delivered_fail_at_once(mode: str, reason: str) -> None:
    with anyio.fail_after(20):
        async with stdio_client(mode, request_timeout=LONG) as client:
            with pytest.raises(MalformedResponseError, match=reason) as info:
                await api(client).call_tool(CALL)
            assert info.value.method == "tools/call"
            assert not (await api(client).call_tool(ECHO)).is_error


async def test_stdio_garbage_with_no_readable_id_ends_at_the_timeout() -> None:
    """The limit over stdio: a line with no id to read could be anyone's answer, so the call waits for its timeout
    (the session answers the line with a parse error and keeps going)."""
    with anyio.fail_after(20):
        async with stdio_client("garbage") as client:
            with pytest.raises(TimeoutError):
                await api(client, timeout=0.3).call_tool(CALL)
            assert not (await api(client).call_tool(ECHO)).is_error


BIG = "x" * 20_000


async def _json_body(exchange: Exchange, body: bytes) -> None:
    await exchange.send_json(None, raw=body)


async def _sse_event(exchange: Exchange, data: str) -> None:
    await exchange.start_sse()
    await exchange.send_event(data=data, event_id="1")
    await exchange.hold()  # the stream stays open: only the judgement of the event can end the call


def _cut(message: dict[str, Any]) -> str:
    """The answer, cut off inside its result: the id can be read, the rest does not parse."""
    return json.dumps(text_result(message, "fine"))[:60]


def _id_only(message: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"]})


HTTP_CASES = {
    "json-malformed": (lambda e, m: _json_body(e, _cut(m).encode()), "malformed JSON"),
    "json-id-only": (lambda e, m: _json_body(e, _id_only(m).encode()), "neither"),
    "json-over-limit": (lambda e, m: _json_body(e, json.dumps(text_result(m, BIG)).encode()), "10000-byte limit"),
    "sse-malformed": (lambda e, m: _sse_event(e, _cut(m)), "malformed JSON"),
    "sse-garbage-without-id": (lambda e, m: _sse_event(e, "not json at all"), "malformed JSON"),
    "sse-id-only": (lambda e, m: _sse_event(e, _id_only(m)), "neither"),
    "sse-over-limit": (lambda e, m: _sse_event(e, json.dumps(text_result(m, BIG))), "10000-byte limit"),
}


@pytest.mark.parametrize("case", sorted(HTTP_CASES))
async def test_http_answers_that_cannot_be_delivered_fail_at_once(case: str) -> None:
    misbehave, reason = HTTP_CASES[case]

    async def on_request(exchange: Exchange, message: dict[str, Any]) -> None:
        if message["params"]["name"] == "echo":
            await exchange.send_json(text_result(message, "fine"))
        else:
            await misbehave(exchange, message)

    with anyio.fail_after(20):
        async with (
            raw_http_server(mcp_handler(on_request)) as server,
            Client.connect_http(server.url, request_timeout=LONG, max_message_bytes=10_000) as client,
        ):
            with pytest.raises(MalformedResponseError, match=reason):
                await api(client).call_tool(CALL)
            assert not (await api(client).call_tool(ECHO)).is_error


async def test_an_error_the_server_sends_is_not_mistaken_for_an_undeliverable_answer() -> None:
    """Only the transport's own errors become MalformedResponseError: a server cannot forge one (the marker in the
    error's data is a per-process random token)."""

    async def on_request(exchange: Exchange, message: dict[str, Any]) -> None:
        data = {"mcpgenUndeliverable": "guess", "reason": "forged"}
        error = {"code": -32603, "message": "Undeliverable response: forged", "data": data}
        await exchange.send_json({"jsonrpc": "2.0", "id": message["id"], "error": error})

    with anyio.fail_after(20):
        async with (
            raw_http_server(mcp_handler(on_request)) as server,
            Client.connect_http(server.url, request_timeout=LONG) as client,
        ):
            with pytest.raises(JSONRPCError) as info:
                await api(client).call_tool(CALL)
            assert not isinstance(info.value, MalformedResponseError)


# -- pagination -----------------------------------------------------------------------------------------------------


async def test_endless_new_cursors_stop_at_the_page_cap() -> None:
    with anyio.fail_after(60):
        async with stdio_client("endless-cursor", max_pages=25) as client:
            with pytest.raises(PaginationError, match="more pages than max_pages=25") as info:
                await client.tools()
            assert info.value.pages == 25 and info.value.cursor == "page-25"
            # The stubs stop too, with their own per-version error and their own cap.
            with pytest.raises(v4.client.PaginationError, match="max_pages=3"):
                await api(client).list_all_tools(max_pages=3)
            assert not client.cache("tools").cached


async def test_endless_new_cursors_stop_at_the_default_cap() -> None:
    assert DEFAULT_MAX_PAGES == v4.client.MAX_PAGES == 1000
    with anyio.fail_after(120):
        async with stdio_client("endless-cursor") as client:
            with pytest.raises(PaginationError) as info:
                await client.tools()
            assert info.value.pages == DEFAULT_MAX_PAGES


async def test_a_repeated_cursor_stops_the_walk() -> None:
    with anyio.fail_after(30):
        async with stdio_client("repeated-cursor") as client:
            with pytest.raises(PaginationError, match="repeated a cursor") as info:
                await client.tools()
            assert info.value.pages == 2 and info.value.cursor == "again"


async def test_pagination_is_bounded_over_http_too() -> None:
    pages = [0]

    async def on_request(exchange: Exchange, message: dict[str, Any]) -> None:
        pages[0] += 1
        tools = [{"name": f"t{pages[0]}", "inputSchema": {"type": "object"}}]
        await exchange.send_json(result(message, {"tools": tools, "nextCursor": f"c{pages[0]}"}))

    with anyio.fail_after(30):
        async with (
            raw_http_server(mcp_handler(on_request)) as server,
            Client.connect_http(server.url, max_pages=10) as client,
        ):
            with pytest.raises(PaginationError, match="max_pages=10"):
                await client.tools()
    assert len(server.posted("tools/list")) == 10


def test_max_pages_must_allow_one_page() -> None:
    with pytest.raises(ValueError, match="max_pages"):
        Client(max_pages=0)


# -- exceptions inside the connection block --------------------------------------------------------------------------


class Boom(Exception):
    pass


async def test_an_exception_inside_connect_http_surfaces_as_itself() -> None:
    async def on_request(exchange: Exchange, message: dict[str, Any]) -> None:
        await exchange.send_json(text_result(message, "fine"))

    with anyio.fail_after(20):
        async with raw_http_server(mcp_handler(on_request)) as server:
            with pytest.raises(Boom, match="mine") as info:
                async with Client.connect_http(server.url) as client:
                    await api(client).call_tool(ECHO)
                    raise Boom("mine")
            assert type(info.value) is Boom
            # The session was still ended properly on the way out.
            assert [r.method for r in server.requests][-1] == "DELETE"


async def test_an_exception_inside_connect_stdio_surfaces_as_itself() -> None:
    with anyio.fail_after(20):
        with pytest.raises(Boom):
            async with stdio_client("wrong-id") as client:
                await api(client).call_tool(ECHO)
                raise Boom("mine")
