"""A ready-made ``redirect_handler`` for command-line tools: a one-shot HTTP listener on the loopback interface
(RFC 8252 §7.3) that opens the authorization URL in the user's browser and returns the URL the browser is
redirected back to.

    async with LoopbackRedirectHandler() as handler:
        auth = OAuthProvider(url, client_metadata=ClientMetadata([handler.redirect_uri]), redirect_handler=handler)
        async with Client.connect_http(url, auth=auth) as client: ...

It listens on 127.0.0.1 only, answers every request with a short page, and gives up after ``timeout`` seconds
(default 300) or ``max_requests`` stray requests (a browser may ask for /favicon.ico first).
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from types import TracebackType
from typing import Final

import anyio
from anyio.abc import SocketAttribute, SocketListener

from .errors import OAuthFlowError

__all__ = ["DEFAULT_REDIRECT_TIMEOUT", "LoopbackRedirectHandler"]

DEFAULT_REDIRECT_TIMEOUT: Final = 300.0
_PAGE: Final = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"<!doctype html><title>Authorized</title><p>You can close this window and return to the application.</p>"
)


def _open_in_browser(url: str) -> None:
    webbrowser.open(url)


class LoopbackRedirectHandler:
    """Receives the authorization redirect on ``http://127.0.0.1:<port><path>`` (``port`` 0: any free one)."""

    def __init__(
        self,
        *,
        port: int = 0,
        path: str = "/callback",
        open_url: Callable[[str], None] = _open_in_browser,
        timeout: float = DEFAULT_REDIRECT_TIMEOUT,
        max_requests: int = 20,
    ) -> None:
        self.port, self.path, self.open_url = port, path, open_url
        self.timeout, self.max_requests = timeout, max_requests
        self._listener: SocketListener | None = None

    @property
    def redirect_uri(self) -> str:
        if self._listener is None:
            raise RuntimeError("enter the handler (async with) before asking for its redirect URI")
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def __aenter__(self) -> LoopbackRedirectHandler:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        socket_listener = listener.listeners[0]
        assert isinstance(socket_listener, SocketListener)  # one TCP listener for one address
        self._listener = socket_listener
        self.port = socket_listener.extra(SocketAttribute.local_port)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._listener is not None:
            await self._listener.aclose()

    async def __call__(self, authorization_url: str) -> str:
        if self._listener is None:
            raise RuntimeError("enter the handler (async with) before using it")
        self.open_url(authorization_url)
        with anyio.move_on_after(self.timeout):
            for _ in range(self.max_requests):
                async with await self._listener.accept() as connection:
                    with anyio.move_on_after(10):
                        head = b""
                        while b"\r\n" not in head and len(head) < 8192:
                            head += await connection.receive(4096)
                        target = head.split(b"\r\n", 1)[0].split(b" ")
                        await connection.send(_PAGE)
                        if len(target) >= 2 and target[1].decode("latin-1").split("?")[0] == self.path:
                            return f"http://127.0.0.1:{self.port}{target[1].decode('latin-1')}"
        raise OAuthFlowError("no authorization redirect arrived at the loopback listener")
