"""The HTTP benchmark's floor: the least work a conforming 2026-07-28 server must do to answer `tools/call`, built
from mcpgen's real parts in one ASGI function, on the same uvicorn stack as the other servers.

    python bench/servers/floor_mcp_server.py --port PORT [--json-response] [--stack fast|h11]

Per POST to /mcp, in order, each check refusing as the runtime does (status and JSON-RPC error):
- Host and Origin (DNS-rebinding protection): `asgi.OriginCheck` with the runtime's default local hosts (403);
- Accept (JSON, and SSE unless `--json-response`: 406) and Content-Type (JSON: 415);
- the body, read with the runtime's size limit (`HTTPRequest.body`, 4 MiB: 413), decoded by `decode_frame` (one
  JSON-RPC request; a notification 202, anything else 400);
- the routing headers (`modern.routing_problem`: `_meta` carries the protocol version and the client capabilities,
  `header_problem` on the raw MCP-* headers, MCP-Protocol-Version / Mcp-Method / Mcp-Name equal to the body: -32020);
- the version (2026-07-28, else -32022) and the whole `_meta` validated as that version's `RequestMetaObject`
  (`ValidatedMetas`, cached per distinct value as the runtime caches it; a `_meta` with a progressToken validated
  each time, as the runtime does: a token differs per request);
- the method (`tools/call`, else -32601) and the tool's name (else -32602);
- the tool's arguments validated and the tool called (`server.tools[name].call(arguments, None)`: the same
  `ToolDef` as any mcpgen server's, bad arguments an `isError` result);
- the result with `resultType` and `_meta` serverInfo, encoded by `encode_frame`: one JSON answer with content-type
  and content-length; without `--json-response`, a request to `add_progress` with a progressToken is answered as an
  SSE stream (as the bare app's SSE mode and mcpgen's modern era): the `notifications/progress` event sent before
  the tool runs, then the result event, which ends the stream.

What it leaves out: no middleware, no auth configured (as the other benchmark servers), no sessions and no legacy
era, no batches, only `tools/call` of its two tools (`add_progress` does not take a Context: the progress event is
the floor's own, the one notification that tool sends), no in-flight limit, no disconnect watch, no pings, no
typed validation of the whole params or of the result (the tool's plain text is valid as it is), and no logging.

Why it is a limit: every step above is one that any conforming 2026-07-28 server must take for this request, done
with the runtime's own code and nothing around it (no layering, no dispatch, no per-request objects of its own).
A server doing all of its protocol work cannot be much faster than this on the same stack, and the share of the
floor's req/s it reaches is what its layering costs; the bare ASGI app, which does no MCP work at all, is the
ceiling of the stack, not a limit for an MCP server. The STACK line and uvicorn settings are the other servers'.
"""

from typing import Any

import _stack
from pydantic import ValidationError

from mcp_bindings.v2026_07_28.models import RequestMetaObject
from mcpgen_runtime.jsonrpc.envelopes import (
    ErrorCode,
    Invalid,
    Notification,
    Request,
    decode_frame,
    encode_frame,
    error_response,
    notification_message,
    success_response,
)
from mcpgen_runtime.server import Server
from mcpgen_runtime.server.dispatch.request_meta import ValidatedMetas
from mcpgen_runtime.transports.http.server.app import DEFAULT_MAX_BODY_SIZE, LOCAL_HOSTS
from mcpgen_runtime.transports.http.server.asgi import JSON, SSE, HTTPRequest, OriginCheck, accepts, is_json
from mcpgen_runtime.transports.http.server.modern import HTTP_STATUS_OF_ERROR, routing_problem
from mcpgen_runtime.transports.http.server.sse import sse_event
from mcpgen_runtime.versions import PROTOCOL_VERSION_META, SERVER_INFO_META, UNSUPPORTED_PROTOCOL_VERSION

VERSION = "2026-07-28"
JSON_RESPONSE = True  # set from --json-response

server = Server("bench-floor", version="1.0.0")


@server.tool()
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
async def add_progress(a: int, b: int) -> str:
    """Add two integers (the floor sends its progress event before calling it)."""
    return str(a + b)


ORIGINS = OriginCheck(LOCAL_HOSTS, None)  # StreamableHTTPApp's default
METAS = ValidatedMetas()
SERVER_INFO = {"name": "bench-floor", "version": "1.0.0"}
ONE_REQUEST = (ErrorCode.INVALID_REQUEST, "Invalid Request: the body must be one JSON-RPC request")
JSON_HEAD = [(b"content-type", JSON.encode())]
SSE_HEAD = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", SSE.encode()), (b"cache-control", b"no-cache")],
}


async def answer(send: Any, frame: bytes, status: int = 200) -> None:
    headers = [*JSON_HEAD, (b"content-length", b"%d" % len(frame))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": frame})


async def refuse(send: Any, code: int, message: str, request_id: Any = None, status: int | None = None) -> None:
    frame = encode_frame(error_response(request_id, code, message))
    await answer(send, frame, status or HTTP_STATUS_OF_ERROR.get(code, 200))


async def handle(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["path"] != "/mcp" or scope["method"] != "POST":
        await refuse(send, ErrorCode.INVALID_REQUEST, "Not Found: POST /mcp only", status=404)
        return
    request = HTTPRequest(scope, receive)
    problem = ORIGINS.problem(request)
    if problem is not None:
        await refuse(send, ErrorCode.INVALID_REQUEST, f"Forbidden: {problem}", status=403)
        return
    wants_json, wants_sse = accepts(request.headers.get("accept", ""))
    if not wants_json or not (wants_sse or JSON_RESPONSE):
        await refuse(send, ErrorCode.INVALID_REQUEST, "Not Acceptable", status=406)
        return
    if not is_json(request.headers.get("content-type", "")):
        await refuse(send, ErrorCode.INVALID_REQUEST, "Unsupported Media Type: use application/json", status=415)
        return
    body = await request.body(DEFAULT_MAX_BODY_SIZE)
    if body is None:
        await refuse(send, ErrorCode.INVALID_REQUEST, "Payload Too Large", status=413)
        return
    decoded = decode_frame(body)
    if isinstance(decoded, Notification):  # accepted and dropped, as the runtime's modern era does
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if not isinstance(decoded, Request):
        code, message = (decoded.code, decoded.message) if isinstance(decoded, Invalid) else ONE_REQUEST
        await refuse(send, code, message, getattr(decoded, "id", None), status=400)
        return
    routing = routing_problem(scope, request, decoded)
    if routing is not None:
        await refuse(send, *routing, decoded.id)
        return
    params: dict[str, Any] = decoded.params  # type: ignore[assignment]  # a dict: routing_problem read its _meta
    meta = params["_meta"]
    if meta[PROTOCOL_VERSION_META] != VERSION:
        await refuse(send, UNSUPPORTED_PROTOCOL_VERSION, f"Unsupported protocol version (supported: {VERSION})")
        return
    token = meta.get("progressToken")
    try:
        if token is None:
            METAS.validated(RequestMetaObject, meta)
        else:
            RequestMetaObject.__pydantic_validator__.validate_python(meta)
    except ValidationError:
        await refuse(send, ErrorCode.INVALID_PARAMS, "Invalid params: _meta", decoded.id)
        return
    if decoded.method != "tools/call":
        await refuse(send, ErrorCode.METHOD_NOT_FOUND, f"Method not found: {decoded.method}", decoded.id)
        return
    name, arguments = params.get("name"), params.get("arguments")
    tool = server.tools.get(name) if type(name) is str else None
    if tool is None or not (arguments is None or type(arguments) is dict):
        await refuse(send, ErrorCode.INVALID_PARAMS, "Invalid params: name or arguments", decoded.id)
        return
    streams = not JSON_RESPONSE and token is not None and name == "add_progress"
    if streams:
        progress = notification_message("notifications/progress", {"progressToken": token, "progress": 1, "total": 1})
        await send(SSE_HEAD)
        await send({"type": "http.response.body", "body": sse_event(encode_frame(progress)), "more_body": True})
    result = dict(await tool.call(arguments, None))  # type: ignore[arg-type]  # plain text: never a FullToolResult
    result["resultType"] = "complete"
    result["_meta"] = {SERVER_INFO_META: SERVER_INFO}
    frame = encode_frame(success_response(decoded.id, result))
    if streams:
        await send({"type": "http.response.body", "body": sse_event(frame)})
    else:
        await answer(send, frame)


app = _stack.plain_app(handle)


if __name__ == "__main__":
    arguments = _stack.options()
    JSON_RESPONSE = arguments.json_response
    _stack.serve(app, arguments.port, arguments.stack, "floor")
