"""The HTTP benchmark's reference: a bare ASGI app on the same uvicorn stack as the two MCP servers.

    python bench/servers/bare_asgi_server.py --port PORT [--stack fast|h11]

It reads the body, parses the JSON-RPC request and answers a fixed `tools/call`-like result for its id, with no
MCP at all: what uvicorn, the parser and the event loop cost per request, the ceiling any Python server on this
stack can reach. `--json-response`: one JSON body, as the JSON cells; without it an SSE stream, as the SSE cells:
a progress notification for the request's `_meta.progressToken` (if any) and the result, each an event written as
it is ready (two body messages and the end, chunked), as an MCP server streams them. Same uvicorn settings as the SDK server (log level warning, access log and `server` header off, as mcpgen's run_http).
"""

import json

import _stack

HEAD = {"type": "http.response.start", "status": 200}
JSON_RESPONSE = True  # set from --json-response


async def handle(scope, receive, send):  # type: ignore[no-untyped-def]
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body)
    result = {"content": [{"type": "text", "text": "3"}], "isError": False}
    out = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
    if JSON_RESPONSE:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]
        await send({**HEAD, "headers": headers})
        await send({"type": "http.response.body", "body": out})
        return
    await send({**HEAD, "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
    token = request.get("params", {}).get("_meta", {}).get("progressToken")
    if token is not None:
        params = {"progressToken": token, "progress": 1, "total": 1}
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}).encode()
        await send(
            {"type": "http.response.body", "body": b"event: message\ndata: " + note + b"\n\n", "more_body": True}
        )
    await send({"type": "http.response.body", "body": b"event: message\ndata: " + out + b"\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


app = _stack.plain_app(handle)  # (bench_stacks.py serves the bare app with granian too, which runs the lifespan)


if __name__ == "__main__":
    arguments = _stack.options()
    JSON_RESPONSE = arguments.json_response
    _stack.serve(app, arguments.port, arguments.stack, "bare ASGI")
