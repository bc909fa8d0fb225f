"""Misbehaving MCP servers that send exactly the bytes a test asks for: no MCP library on this side of the wire.

- ``raw_http_server(handler)``: an HTTP/1.1 server on 127.0.0.1 (anyio TCP, one request per connection, every
  response ``Connection: close``), in the test's own event loop so that the test can read what arrived
  (``server.requests``: method, headers, body, arrival time). ``mcp_handler(on_request, on_get=...)`` answers
  ``initialize`` (with an ``Mcp-Session-Id``), notifications (202), DELETE (200) and, unless told otherwise, GET
  (405), and hands every other request to the test's ``on_request(exchange, message)``. An ``Exchange`` writes the
  response: a JSON body, or an SSE stream event by event (``retry:``, ``id:``, raw bytes), and can hold it open.
- ``python raw_servers.py MODE``: a stdio server (newline-delimited JSON) that answers ``initialize`` and ``ping``
  properly and ``tools/call`` / ``tools/list`` the way MODE says (``STDIO_MODES``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream

SESSION_ID = "raw-session-1"
MAX_HEAD = 65536


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # anyio.current_time() when the request was read

    def json(self) -> Any:
        return json.loads(self.body)


class Exchange:
    """One request and the connection to answer it on (closed by the server once the handler returns)."""

    def __init__(self, request: RawRequest, stream: SocketStream) -> None:
        self.request = request
        self._stream = stream
        self.closed_at: float | None = None

    async def send_raw(self, data: bytes) -> None:
        await self._stream.send(data)

    async def respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", "connection: close"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        await self._stream.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    async def send_json(self, message: Any, *, raw: bytes | None = None) -> None:
        body = raw if raw is not None else json.dumps(message).encode()
        await self.respond(200, body, {"content-type": "application/json", "mcp-session-id": SESSION_ID})

    async def start_sse(self) -> None:
        """An SSE response with no length: it ends when the connection closes."""
        head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n"
        await self._stream.send(f"{head}mcp-session-id: {SESSION_ID}\r\n\r\n".encode())

    async def send_event(
        self, message: Any = None, *, data: str | None = None, event_id: str | None = None, retry: int | None = None
    ) -> None:
        """One event: ``message`` as JSON (or ``data`` verbatim, "" for a priming event), with ``id:``/``retry:``."""
        lines = []
        if event_id is not None:
            lines.append(f"id: {event_id}")
        if retry is not None:
            lines.append(f"retry: {retry}")
        text = data if data is not None else (json.dumps(message) if message is not None else "")
        lines += [f"data: {line}" for line in text.split("\n")]
        await self._stream.send(("\n".join(lines) + "\n\n").encode())

    async def hold(self) -> None:
        """Keep the response open until the client goes away (or the server stops)."""
        try:
            while True:
                await self._stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return


Handler = Callable[[Exchange], Awaitable[None]]


@dataclass
class RawHTTPServer:
    url: str
    requests: list[RawRequest] = field(default_factory=list)

    def posted(self, method: str) -> list[dict[str, Any]]:
        """The JSON-RPC messages POSTed with this method, in order."""
        bodies = [r.json() for r in self.requests if r.method == "POST"]
        return [b for b in bodies if isinstance(b, dict) and b.get("method") == method]

    def gets(self) -> list[RawRequest]:
        return [r for r in self.requests if r.method == "GET"]


async def _read_request(stream: SocketStream) -> RawRequest | None:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD:
            return None
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return None
    head, _, body = buffer.partition(b"\r\n\r\n")
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        body += await stream.receive()
    return RawRequest(method, path, headers, body, anyio.current_time())


@asynccontextmanager
async def raw_http_server(handler: Handler) -> AsyncIterator[RawHTTPServer]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    server = RawHTTPServer(f"http://127.0.0.1:{port}/mcp")

    async def serve(stream: SocketStream) -> None:
        async with stream:
            request = await _read_request(stream)
            if request is None:
                return
            server.requests.append(request)
            try:
                await handler(Exchange(request, stream))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the client went away mid-answer

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        yield server
        tg.cancel_scope.cancel()


def initialize_result(version: str = "2025-11-25") -> dict[str, Any]:
    capabilities = {"tools": {"listChanged": True}, "prompts": {}, "resources": {}}
    return {"protocolVersion": version, "capabilities": capabilities, "serverInfo": {"name": "raw", "version": "0"}}


def mcp_handler(
    on_request: Callable[[Exchange, dict[str, Any]], Awaitable[None]],
    *,
    on_get: Handler | None = None,
    version: str = "2025-11-25",
) -> Handler:
    """A legacy streamable HTTP endpoint that gets the handshake right (``server/discover`` is a method it does not
    have) and leaves every other request to ``on_request``."""

    async def handle(exchange: Exchange) -> None:
        request = exchange.request
        if request.method == "GET":
            if on_get is None:
                await exchange.respond(405)
            else:
                await on_get(exchange)
            return
        if request.method == "DELETE":
            await exchange.respond(200)
            return
        message = request.json()
        if "id" not in message:
            await exchange.respond(202)
        elif message["method"] == "initialize":
            await exchange.send_json({"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(version)})
        elif message["method"] == "server/discover":
            # What a legacy server answers a method it does not have: the client's auto mode then falls back to
            # initialize, so the tests' scripts only ever see the legacy era's requests.
            error = {"code": -32601, "message": "Method not found"}
            await exchange.send_json({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            await on_request(exchange, message)

    return handle


def result(message: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


def text_result(message: dict[str, Any], text: str) -> dict[str, Any]:
    return result(message, {"content": [{"type": "text", "text": text}]})


# -- the stdio server -----------------------------------------------------------------------------------------------

STDIO_MODES = {
    "wrong-id": "answers tools/call with the id plus 1000",
    "malformed": "answers tools/call with a line of JSON cut off inside the result",
    "id-only": 'answers tools/call with {"jsonrpc": "2.0", "id": ID} and nothing else',
    "garbage": "answers tools/call with a line that is not JSON at all (no id to read)",
    "endless-cursor": "answers tools/list with one tool and a new nextCursor, every time",
    "repeated-cursor": 'answers tools/list with one tool and nextCursor "again", every time',
}


def _stdio_answer(mode: str, message: dict[str, Any], pages: list[int]) -> bytes | None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or method is None:
        return None  # notifications, and whatever the client answers
    if method == "initialize":
        return json.dumps(result(message, initialize_result(message["params"]["protocolVersion"]))).encode()
    if method == "ping":
        return json.dumps(result(message, {})).encode()
    if method == "tools/call":
        if message["params"]["name"] == "echo":
            return json.dumps(text_result(message, "fine")).encode()
        if mode == "wrong-id":
            return json.dumps(text_result({"id": request_id + 1000}, "late")).encode()
        if mode == "malformed":
            return json.dumps(text_result(message, "x" * 100)).encode()[:60]
        if mode == "id-only":
            return json.dumps({"jsonrpc": "2.0", "id": request_id}).encode()
        if mode == "garbage":
            return b"this is not JSON"
    if method == "tools/list":
        pages[0] += 1
        cursor = f"page-{pages[0]}" if mode == "endless-cursor" else "again"
        tools = [{"name": f"tool{pages[0]}", "inputSchema": {"type": "object"}}]
        return json.dumps(result(message, {"tools": tools, "nextCursor": cursor})).encode()
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "nope"}}).encode()


def main(mode: str) -> None:
    pages = [0]
    for line in sys.stdin.buffer:
        answer = _stdio_answer(mode, json.loads(line), pages)
        if answer is not None:
            sys.stdout.buffer.write(answer + b"\n")
            sys.stdout.buffer.flush()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STDIO_MODES:
        sys.exit(f"usage: raw_servers.py {{{','.join(STDIO_MODES)}}}")
    main(sys.argv[1])
