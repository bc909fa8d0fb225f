"""A protected mcpgen server whose key server (JWKS) or introspection endpoint stalls, fails or is gone, and requests
with more than one ``Authorization`` header (issue 27, "Authorization").

Real processes' worth of sockets on 127.0.0.1: the protected server under uvicorn, the test authorization server
(tests/auth_server.py) and ``KeyServer``, a raw asyncio HTTP server in a thread of its own that drips its answer one
byte a second, answers after a pause, or answers an error, and counts the requests it got. What is checked: a fetch
has a total deadline (``timeout``), concurrent requests share one fetch, a failure is remembered ``failure_ttl``
seconds and answered 503 with ``Retry-After`` (never 401, never the key server's URL), and then retried.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import httpx2
import pytest
from auth_server import AuthServer, running_auth_server
from joserfc import jwt
from joserfc.jwk import RSAKey
from support.ports import free_port
from support.servers import serving_server

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.auth import BearerAuth, IntrospectionVerifier, JWTVerifier, TokenVerifier

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": MODERN,
    "mcp-method": "tools/call",
    "mcp-name": "hello",
}
BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "hello", "arguments": {}}}


class KeyServer:
    """An HTTP server on 127.0.0.1 in a thread: ``mode`` "drip" (200, then one byte a second of a long body),
    "slow" (``body`` after ``pause`` seconds) or "error" (HTTP 500); ``requests`` counts the requests it got."""

    def __init__(self, mode: str, body: bytes = b"", pause: float = 0.0) -> None:
        self.mode, self.body, self.pause = mode, body, pause
        self.requests = 0
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            if self.mode == "error":
                writer.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
            elif self.mode == "slow":
                await asyncio.sleep(self.pause)
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(self.body)}\r\n\r\n"
                writer.write(head.encode() + self.body)
            else:
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
                for _ in range(100000):  # one byte a second: never done within a test
                    writer.write(b" ")
                    await writer.drain()
                    await asyncio.sleep(1)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/jwks"
        self._ready.set()
        self._loop.run_forever()
        server.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    @contextmanager
    def running(self) -> Iterator[KeyServer]:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        assert self._ready.wait(10), "the key server did not start"
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            thread.join(10)


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthServer]:
    with running_auth_server() as auth:
        yield auth


@asynccontextmanager
async def protected(auth: AuthServer, verifier: TokenVerifier) -> AsyncIterator[str]:
    server = Server("protected")

    @server.tool()
    def hello() -> str:
        """Says hello."""
        return "hello"

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    protection = BearerAuth(verifier=verifier, resource=url, authorization_servers=[auth.issuer])
    async with serving_server(server, port=port, auth=protection):
        yield url


async def call(url: str, authorization: list[str]) -> httpx2.Response:
    headers = list(HEADERS.items()) + [("authorization", value) for value in authorization]
    async with httpx2.AsyncClient(timeout=30) as client:
        return await client.post(url, content=json.dumps(BODY).encode(), headers=headers)


async def call_all(url: str, token: str, count: int) -> list[httpx2.Response]:
    responses: list[httpx2.Response] = []

    async def one() -> None:
        responses.append(await call(url, [f"Bearer {token}"]))

    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(one)
    return responses


def foreign_token(auth: AuthServer, audience: str) -> str:
    """A token the issuer's keys do not know (another key, an unknown kid)."""
    key = RSAKey.generate_key(2048, parameters={"kid": "unknown-kid", "use": "sig", "alg": "RS256"})
    claims = {"iss": auth.issuer, "sub": "u", "aud": audience, "exp": 2**31, "scope": "mcp"}
    return jwt.encode({"alg": "RS256", "kid": "unknown-kid"}, claims, key)


def assert_unavailable(response: httpx2.Response, hidden: str) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert "www-authenticate" not in response.headers  # not a challenge: the client keeps its token
    assert response.json()["error"]["message"].startswith("Service Unavailable")
    assert hidden not in response.text and hidden not in str(response.headers)


async def test_a_dripping_jwks_costs_one_fetch_and_a_503_within_the_deadline(issuer: AuthServer) -> None:
    with KeyServer("drip").running() as drip:
        verifier = JWTVerifier(issuer.issuer, jwks_uri=drip.url, timeout=2.0)
        async with protected(issuer, verifier) as url:
            token = foreign_token(issuer, url)
            with anyio.fail_after(15):  # the deadline (2 s) and some: without one, each waits ~100000 s
                responses = await call_all(url, token, 20)
                assert len(responses) == 20
                for response in responses:
                    assert_unavailable(response, drip.url.split("/jwks")[0].removeprefix("http://"))
                assert drip.requests == 1  # one fetch for 20 concurrent requests
                # remembered: answered at once, without another fetch
                assert_unavailable(await call(url, [f"Bearer {token}"]), "/jwks")
                assert drip.requests == 1


async def test_concurrent_requests_share_one_jwks_fetch(issuer: AuthServer) -> None:
    jwks = json.dumps({"keys": [issuer.key.as_dict(private=False)]}).encode()
    with KeyServer("slow", body=jwks, pause=0.5).running() as keys:
        async with protected(issuer, JWTVerifier(issuer.issuer, jwks_uri=keys.url)) as url:
            with anyio.fail_after(20):
                good = issuer.issue_token(audience=url, scopes=["mcp"])
                assert {response.status_code for response in await call_all(url, good, 20)} == {200}
                assert keys.requests == 1
                # a kid the fresh keys do not have: refused (401), and no refetch within refetch_interval
                refused = await call_all(url, foreign_token(issuer, url), 20)
                assert {response.status_code for response in refused} == {401}
                assert keys.requests == 1


async def test_an_unreachable_key_server_is_503_with_its_url_in_the_log_only(
    issuer: AuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    gone = f"http://127.0.0.1:{free_port()}/jwks"  # nothing listens there
    async with protected(issuer, JWTVerifier(issuer.issuer, jwks_uri=gone)) as url:
        with anyio.fail_after(20), caplog.at_level(logging.WARNING, "mcpgen_runtime.server.auth"):
            response = await call(url, [f"Bearer {issuer.issue_token(audience=url)}"])
    assert_unavailable(response, gone.removeprefix("http://").removesuffix("/jwks"))
    assert gone in caplog.text


async def test_the_key_server_is_asked_again_once_the_failure_is_forgotten(issuer: AuthServer) -> None:
    jwks = json.dumps({"keys": [issuer.key.as_dict(private=False)]}).encode()
    with KeyServer("error", body=jwks).running() as keys:
        verifier = JWTVerifier(issuer.issuer, jwks_uri=keys.url, failure_ttl=0.5)
        async with protected(issuer, verifier) as url:
            token = issuer.issue_token(audience=url)
            with anyio.fail_after(20):
                assert_unavailable(await call(url, [f"Bearer {token}"]), "/jwks")
                keys.mode = "slow"  # the key server is back
                await anyio.sleep(0.6)  # failure_ttl: not the 30 s refetch_interval of a fetch that worked
                assert (await call(url, [f"Bearer {token}"])).status_code == 200
                assert keys.requests == 2


async def test_an_unreachable_introspection_endpoint_is_503(issuer: AuthServer) -> None:
    gone = f"http://127.0.0.1:{free_port()}/introspect"
    verifier = IntrospectionVerifier(gone, client_id="rs", client_secret="secret")
    async with protected(issuer, verifier) as url:
        with anyio.fail_after(20):
            assert_unavailable(await call(url, ["Bearer opaque-token"]), gone.removeprefix("http://"))


@pytest.mark.parametrize("order", ["valid first", "garbage first"])
async def test_two_authorization_headers_are_refused(issuer: AuthServer, order: str) -> None:
    async with protected(issuer, JWTVerifier(issuer.issuer)) as url:
        valid = f"Bearer {issuer.issue_token(audience=url)}"
        pair = [valid, "Bearer garbage"] if order == "valid first" else ["Bearer garbage", valid]
        with anyio.fail_after(20):
            assert (await call(url, [valid])).status_code == 200
            response = await call(url, pair)
    assert response.status_code == 400, response.text
    assert 'error="invalid_request"' in response.headers["www-authenticate"]
    assert response.json()["error"]["code"] == -32600
