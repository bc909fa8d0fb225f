"""Plain ASGI for the streamable HTTP server: the request as ``app`` reads it, the simple answers it sends,
and the watch for a client that goes away while its answer is pending.

Where it sits: in the ``transports`` layer, under ``app`` and ``sse``. Written against ASGI directly
rather than starlette's ``Request`` / ``Response`` / routing, because this is the per-request path of the server:
headers are decoded once into a dict (starlette's ``Headers.get`` scans and decodes the list on every lookup), the
answer is two ``send`` calls, and no middleware stack runs in between.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Collection
from typing import Final, Literal
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskGroup
from starlette.types import Receive, Scope, Send

__all__ = [
    "JSON",
    "SSE",
    "Answer",
    "DelayedCalls",
    "DisconnectWatch",
    "HTTPRequest",
    "OriginCheck",
    "accepts",
    "host_and_port",
    "is_json",
    "plain_text",
    "route_path",
    "running_loop",
    "running_task",
]

logger = logging.getLogger(__name__)

JSON: Final = "application/json"
SSE: Final = "text/event-stream"
DEFAULT_PORTS: Final = {"http": 80, "https": 443}
# How long a pending answer goes unwatched before a task watches its client for a disconnect (see DisconnectWatch).
DISCONNECT_WATCH_DELAY: Final = 0.01


class HTTPRequest:
    """One HTTP request: its method, scheme and headers (names lower-case, values decoded once; of a repeated header
    the first, as starlette's ``Headers.get``), and its ASGI ``receive``."""

    __slots__ = ("headers", "method", "receive", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope, self.receive = scope, receive
        self.method: str = scope["method"]
        self.headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in reversed(scope["headers"])}

    @property
    def scheme(self) -> str:
        return str(self.scope.get("scheme", "http"))

    async def body(self, limit: int) -> bytes | None:
        """The body, or None when it exceeds ``limit`` bytes (checked as it arrives: Content-Length may lie or be
        absent)."""
        declared = self.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return None
        message = await self.receive()
        body = message.get("body", b"") if message["type"] == "http.request" else b""
        if not message.get("more_body", False) or message["type"] != "http.request":
            return body if len(body) <= limit else None
        buffer = bytearray(body)
        while True:
            message = await self.receive()
            if message["type"] != "http.request":
                break
            buffer += message.get("body", b"")
            if len(buffer) > limit:
                return None
            if not message.get("more_body", False):
                break
        return bytes(buffer)


@functools.lru_cache(maxsize=1024)
def accepts(header: str) -> tuple[bool, bool]:
    """(accepts JSON, accepts SSE) for an ``Accept`` value, with the RFC 9110 wildcards (clients send the same few
    values over and over: cached)."""
    types = {part.split(";")[0].strip().lower() for part in header.split(",")}
    anything = "*/*" in types
    return anything or bool(types & {JSON, "application/*"}), anything or bool(types & {SSE, "text/*"})


@functools.lru_cache(maxsize=256)
def is_json(content_type: str) -> bool:
    """Whether a ``Content-Type`` value is JSON (any parameters; cached, as ``accepts``)."""
    return content_type.split(";")[0].strip().lower() == JSON


@functools.lru_cache(maxsize=1024)
def host_and_port(authority: str, scheme: str) -> tuple[str, int | None] | None:
    """(host name, port) of a ``Host`` value or an origin's authority; None if it does not parse (cached, as
    ``accepts``)."""
    try:
        parts = urlsplit(f"//{authority}")
        return (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None


class OriginCheck:
    """DNS-rebinding protection: a web page must not reach a local server through a name it controls, nor a page of
    another origin (another port or scheme of the same host) use it without being allowed to. ``allowed_hosts``:
    host names (any port) accepted in ``Host``, ``"*"`` for any (the Origin check is then off too);
    ``allowed_origins``: exact ``scheme://host[:port]`` origins, else an ``Origin`` must be the server's own."""

    def __init__(self, allowed_hosts: Collection[str], allowed_origins: Collection[str] | None) -> None:
        self._hosts = {host.strip("[]").lower() for host in allowed_hosts}
        self._origins = None if allowed_origins is None else {o.rstrip("/").lower() for o in allowed_origins}

    def problem(self, request: HTTPRequest) -> str | None:
        """Why ``request`` is refused; None if it is not."""
        if "*" in self._hosts:
            return None
        host = request.headers.get("host", "")
        scheme = request.scheme
        own = host_and_port(host, scheme)
        if own is None or own[0] not in self._hosts:
            return f"host {host!r} is not allowed"
        origin = request.headers.get("origin")
        if origin is None:  # not a browser: nothing to protect against
            return None
        if self._origins is not None:
            ok = origin.rstrip("/").lower() in self._origins
        else:
            origin_scheme, _, authority = origin.partition("://")
            theirs = host_and_port(authority.rstrip("/"), origin_scheme.lower())
            ok = origin_scheme.lower() == scheme and theirs is not None and theirs[0] in self._hosts
            ok = ok and theirs is not None and theirs[1] == own[1]
        return None if ok else f"origin {origin!r} is not allowed"


def route_path(scope: Scope) -> str:
    """The path inside the app, as starlette routes it (a mount's prefix is in ``root_path``)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None on another event loop (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def running_task(loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Task[object] | None:
    """The running asyncio task; None on another event loop (trio). ``loop``: the running loop, when the caller
    knows it (the app notes its own while it runs): then no look-up of the loop (a system call, for the pid)."""
    try:
        return asyncio.current_task(loop)
    except RuntimeError:
        return None


class Answer:
    """A complete HTTP answer (status, headers, body), sent as two ASGI messages. Header names are sent lower-case;
    ``content-length`` always (except for 1xx, 204 and 304) and ``content-type`` with ``media_type`` (``text/*`` with
    ``; charset=utf-8``), as starlette's ``Response`` does."""

    __slots__ = ("_headers", "body", "status")

    def __init__(
        self,
        body: bytes = b"",
        status: int = 200,
        headers: dict[str, str] | None = None,
        media_type: str | None = None,
    ) -> None:
        self.status, self.body = status, body
        raw = (
            [(key.lower().encode("latin-1"), value.encode("latin-1")) for key, value in headers.items()]
            if headers
            else []
        )
        if not (status < 200 or status in (204, 304)):
            raw.append((b"content-length", b"%d" % len(body)))
        if media_type is not None:
            raw.append(_content_type(media_type))
        self._headers = raw

    @property
    def headers(self) -> dict[str, str]:
        return {key.decode("latin-1"): value.decode("latin-1") for key, value in self._headers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self._headers})
        await send({"type": "http.response.body", "body": self.body})


@functools.lru_cache(maxsize=64)
def _content_type(media_type: str) -> tuple[bytes, bytes]:
    """The ``content-type`` header of ``media_type`` (``text/*`` with ``; charset=utf-8``), encoded once."""
    if media_type.startswith("text/"):
        media_type += "; charset=utf-8"
    return (b"content-type", media_type.encode("latin-1"))


def plain_text(status: int, text: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(text.encode(), status, headers, media_type="text/plain")


class DisconnectWatch:
    """``async with DisconnectWatch(receive, on_gone):`` calls ``on_gone`` (in a task of its own) if the client of an
    HTTP request disconnects while the block runs; ``gone`` then says so.

    Only a task blocked in ``receive`` learns of a disconnect, so watching costs a task. Most requests are answered
    within a millisecond, so on asyncio (uvicorn's loop) that task is created only for a block still running
    ``DISCONNECT_WATCH_DELAY`` seconds after it began (one timer of the loop checks every pending block: see
    ``DelayedCalls``): a client gone before then is noticed at that moment (``receive`` reports a disconnect that
    already happened). Other event loops get the watching task at once, in a task group.
    """

    __slots__ = ("_calls", "_done", "_loop", "_on_gone", "_receive", "_task", "_tg", "gone")

    def __init__(
        self,
        receive: Receive,
        on_gone: Callable[[], Awaitable[None]],
        loop: asyncio.AbstractEventLoop | Literal["look up"] | None = "look up",
    ) -> None:
        """``loop``: the running asyncio loop if the caller knows it (None: not on asyncio), so that it is not looked
        up again (each look-up is a system call, for the pid)."""
        self._receive, self._on_gone = receive, on_gone
        self.gone = False
        self._done = False
        self._calls: DelayedCalls | None = None
        self._task: asyncio.Task[None] | None = None
        self._tg: TaskGroup | None = None
        self._loop = running_loop() if isinstance(loop, str) else loop

    async def __aenter__(self) -> DisconnectWatch:
        if self._loop is None:
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            self._tg.start_soon(self._watch)
        else:
            self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        self.stop()
        if self._tg is not None:
            if not self.gone:
                self._tg.cancel_scope.cancel()
            return await self._tg.__aexit__(*exc_info)  # type: ignore[arg-type]
        return None

    def start(self) -> DisconnectWatch:
        """``async with`` without its awaits, on asyncio (a loop known): for the per-request path, which pairs it with
        ``stop`` in a ``finally`` (the two coroutines of ``async with`` were most of the watch's cost)."""
        assert self._loop is not None, "start() is for asyncio; elsewhere use async with"
        self._calls = calls = DelayedCalls.for_loop(self._loop, DISCONNECT_WATCH_DELAY)
        calls.add(self, self._spawn)
        return self

    def stop(self) -> None:
        """The end of the watched block (see ``start``)."""
        self._done = True
        if self._calls is not None:
            self._calls.discard(self)
        # A watch that saw the disconnect finishes on_gone (it may be delivering the cancellation of the client's
        # requests); one still waiting is cancelled.
        if self._task is not None and not self.gone:
            self._task.cancel()

    def _spawn(self) -> None:
        if not self._done and self._loop is not None:
            self._task = task = self._loop.create_task(self._watch())
            _WATCHING.add(task)  # asyncio keeps only weak references to tasks
            task.add_done_callback(_WATCHING.discard)

    async def _watch(self) -> None:
        try:
            while (await self._receive())["type"] != "http.disconnect":
                pass
        except Exception:  # a server whose receive fails once the connection is gone
            logger.debug("receive failed while watching for a disconnect", exc_info=True)
        if self._done:
            return
        self.gone = True
        try:
            await self._on_gone()
        except Exception:
            logger.exception("handling a client's disconnect failed")


_WATCHING: set[asyncio.Task[None]] = set()


class DelayedCalls:
    """Callbacks due a fixed ``delay`` after they were added, on one event loop, with ONE timer for all of them: a
    timer per request (``loop.call_later``) costs a ``TimerHandle`` and a heap push and pop on the hot path of
    every request, though nearly every request is over before its callback is due and takes it back (``discard``).
    The delay is the same for all, so the order they were added in is the order they are due; when the timer fires,
    the due ones are called and it is set again for the next one, if any. ``for_loop`` gives the one of the running
    loop for a delay (used by ``DisconnectWatch`` and by the modern era's ping deadline)."""

    __slots__ = ("delay", "loop", "pending", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        self.loop, self.delay = loop, delay
        self.pending: dict[object, tuple[float, Callable[[], None]]] = {}  # in the order they are due
        self.timer: asyncio.TimerHandle | None = None

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop, delay: float) -> DelayedCalls:
        key = (loop, delay)
        if _last_calls and _last_calls[0] == key:
            return _last_calls[1]  # type: ignore[return-value]
        by_delay = _DELAYED_CALLS.setdefault(loop, {})
        calls = by_delay.get(delay)
        if calls is None:
            if len(by_delay) >= _MAX_DELAYS_PER_LOOP:
                by_delay.clear()  # bounded: pending calls keep their instance's timer alive until they are done
            calls = by_delay[delay] = cls(loop, delay)
        _last_calls[:] = [key, calls]
        return calls

    def add(self, key: object, callback: Callable[[], None]) -> None:
        """Call ``callback`` ``delay`` seconds from now unless ``key`` is discarded first."""
        due = self.loop.time() + self.delay
        self.pending[key] = (due, callback)
        if self.timer is None:
            self.timer = self.loop.call_at(due, self._fire)

    def discard(self, key: object) -> None:
        self.pending.pop(key, None)

    def _fire(self) -> None:
        self.timer = None
        now = self.loop.time()
        due = []
        for key, (when, callback) in self.pending.items():
            if when > now:
                break
            due.append((key, callback))
        for key, callback in due:
            del self.pending[key]
            callback()
        if self.pending:
            self.timer = self.loop.call_at(next(iter(self.pending.values()))[0], self._fire)


_MAX_DELAYS_PER_LOOP: Final = 16  # distinct delays per loop (a server uses two: the disconnect watch and its pings)
_DELAYED_CALLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, DelayedCalls]] = (
    weakref.WeakKeyDictionary()
)
_last_calls: list[object] = []  # (loop, delay) and its DelayedCalls: the one looked up last, nearly always the same
