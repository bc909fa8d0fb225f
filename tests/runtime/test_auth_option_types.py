"""The ``auth=`` option of a server takes a ``BearerAuth`` as documented (``server.run_http(auth=BearerAuth(...))``):
``mypy --strict`` accepts it for every entry point, and the transport given one directly binds it to no tool scopes
rather than failing when a request arrives."""

from __future__ import annotations

import sys
from pathlib import Path

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.auth import BearerAuth, JWTVerifier
from mcpgen_runtime.transports.http.server.app import StreamableHTTPApp
from mcpgen_runtime.transports.http.server.auth import bound_authenticator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.code_blocks import strict_mypy

ISSUER = "https://auth.example.com"
CALLER = """
from mcpgen_runtime.server import Server
from mcpgen_runtime.server.auth import BearerAuth, JWTVerifier

server = Server("protected")
auth = BearerAuth(JWTVerifier("https://auth.example.com"), resource="http://127.0.0.1:8000/mcp",
                  authorization_servers=["https://auth.example.com"])
app = server.asgi_app(auth=auth)


async def serve() -> None:
    await server.serve_http("127.0.0.1", 0, auth=auth)


def run() -> None:
    server.run_http(auth=auth)
"""


def bearer() -> BearerAuth:
    return BearerAuth(JWTVerifier(ISSUER), resource="http://127.0.0.1:8000/mcp", authorization_servers=[ISSUER])


def test_mypy_accepts_a_bearer_auth_for_every_entry_point(tmp_path: Path) -> None:
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER, encoding="utf-8")
    done = strict_mypy([caller], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_transport_binds_a_bearer_auth_it_is_given_directly() -> None:
    app = StreamableHTTPApp(Server("bare").serve_stream, auth=bearer())
    assert app.auth is not None and hasattr(app.auth, "authenticate")
    assert app.auth.metadata("/.well-known/oauth-protected-resource/mcp") is not None
    authenticator = bearer().authenticator({})
    assert bound_authenticator(authenticator) is authenticator and bound_authenticator(None) is None


def test_a_server_binds_its_tool_scopes() -> None:
    server = Server("protected")

    @server.tool(scopes=["mcp:write"])
    def write() -> str:
        return "ok"

    options = server.http_auth_options({"auth": bearer()})
    refused = options["auth"].authorize(None, "tools/call", {"name": "write"})
    assert refused is not None and refused.status == 403
