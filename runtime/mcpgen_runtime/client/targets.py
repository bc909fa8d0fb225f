"""What ``Client.connect(target)`` connects to, and how each kind of target becomes a ``MessageStream``.

Where it sits: in the ``client`` layer, below ``client`` (``Client.connect`` opens a target here, then runs its
session over the stream); on the transports (``stdio.ndjson`` eagerly, ``http.client.stream`` only when an HTTP
target is opened, so that a stdio client never imports httpx2) and ``jsonrpc.streams``. It never imports
``server``: an in-process server is anything shaped like one (``InProcessServer``), so ``Server`` fits without the
client knowing it.

A target is one of:

- a URL ``str`` (``http://`` or ``https://``): streamable HTTP, as ``HTTP(url)``;
- a command, a sequence of ``str`` (or paths; never one ``str``: that would be split on a guess): a stdio server, as
  ``Stdio(command)``;
- a ``MessageStream`` the caller opened (the caller closes it too: the client's exit closes it as well);
- an in-process server (``Server``), served in a background task over memory streams, as ``InProcess(server)``;
- ``Stdio``, ``HTTP`` or ``InProcess``: the same with the transport's own settings.

Anything else is a ``TypeError`` (a ``ValueError`` for a ``str`` that is no URL, or an empty command) naming what
is accepted.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias

import anyio

from ..jsonrpc.streams import MessageStream, memory_stream_pair
from ..transports.http.client.inbox import DEFAULT_MAX_MESSAGE_BYTES
from ..transports.stdio.ndjson import open_subprocess_stream

if TYPE_CHECKING:
    import httpx2  # only for the annotation: stdio clients never import it

    from ..transports.http.client.auth import HTTPAuth
    from ..transports.http.client.resume import SSEReconnect

__all__ = [
    "HTTP",
    "SERVER_SHUTDOWN_TIMEOUT",
    "ConnectTarget",
    "InProcess",
    "InProcessServer",
    "OpenedTarget",
    "Stdio",
    "open_target",
]

# After the client has gone: how long an in-process server may take to finish (its handlers get the session's 2 s
# grace, then its lifespan exits) before it is cancelled.
SERVER_SHUTDOWN_TIMEOUT: Final = 5.0
_URL_SCHEMES: Final = ("http://", "https://")


class InProcessServer(Protocol):
    """What ``Client.connect`` needs of a server it runs in the same process (``mcpgen_runtime.Server`` is one):
    a lifespan to enter or join, and serving one client over a stream until the stream closes."""

    def running(self) -> AbstractAsyncContextManager[object]: ...

    async def serve_stream(self, stream: MessageStream, *, max_requests_in_flight: int = ...) -> None: ...


def _command(command: object) -> tuple[str, ...]:
    if isinstance(command, str | bytes):
        raise ValueError(
            f"a command is a sequence of arguments, such as [sys.executable, 'server.py'], not the string "
            f"{command!r} (a str target must be an http:// or https:// URL)"
        )
    if not isinstance(command, Sequence):
        raise TypeError(f"a command is a sequence of str, not {type(command).__name__}")
    if not command:
        raise ValueError("the command is empty: name the program to start, such as [sys.executable, 'server.py']")
    wrong = [arg for arg in command if not isinstance(arg, str | os.PathLike)]
    if wrong:
        raise TypeError(f"every argument of a command is a str, not {type(wrong[0]).__name__}: {wrong[0]!r}")
    return tuple(os.fspath(arg) for arg in command)


def _url(url: object) -> str:
    if not isinstance(url, str):
        raise TypeError(f"a URL is a str, not {type(url).__name__}")
    if not url.lower().startswith(_URL_SCHEMES):
        raise ValueError(f"a URL target starts with http:// or https://, not {url!r}")
    return url


@dataclass(frozen=True, slots=True)
class Stdio:
    """A stdio server: ``command`` started as a child process, spoken to over its stdin and stdout.

    ``env`` replaces the child's environment (pass ``{**os.environ, ...}`` to extend it); ``cwd`` is its working
    directory; ``capture_stderr`` keeps its stderr (``SubprocessStream.stderr_text``) instead of passing it through.
    The child is shut down when the client exits: its stdin closed, then SIGTERM, then SIGKILL."""

    command: Sequence[str | os.PathLike[str]]  # kept as a tuple of str
    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    capture_stderr: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", _command(self.command))


@dataclass(frozen=True, slots=True)
class HTTP:
    """A streamable HTTP server at ``url`` (e.g. http://127.0.0.1:8000/mcp).

    ``headers`` go on every request; ``http_client`` (an ``httpx2.AsyncClient``) replaces the default one;
    ``max_message_bytes`` bounds one JSON body or SSE event; ``reconnect`` is how SSE streams the server closes
    early are resumed (legacy era only: 2026-07-28 has no resumption); ``auth`` (an ``HTTPAuth``, e.g.
    ``client.auth.OAuthProvider``) adds its headers to every request and is asked to authorize on a 401 / 403
    ``insufficient_scope``. A legacy HTTP session is ended (DELETE) when the client exits."""

    url: str
    headers: Mapping[str, str] | None = None
    http_client: httpx2.AsyncClient | None = None
    auth: HTTPAuth | None = None
    reconnect: SSEReconnect | None = None
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        _url(self.url)


@dataclass(frozen=True, slots=True)
class InProcess:
    """A server in this process (a ``Server``), served in a background task over memory streams: no subprocess,
    no port, yet everything of a real connection runs (negotiation, the lifespan, middleware, server -> client
    requests). ``max_requests_in_flight``, if given, is the server's limit, as for ``serve_stream``.

    The lifespan is entered first (a failing one raises before any client exists), or joined when the server is
    running already (``async with server.running()`` around several clients shares one). On exit the client closes
    its stream, the server finishes as on a closed stdin and the lifespan exits; a server that takes longer than
    ``SERVER_SHUTDOWN_TIMEOUT`` is cancelled."""

    server: InProcessServer
    max_requests_in_flight: int | None = None


ConnectTarget: TypeAlias = (
    str | Sequence[str | os.PathLike[str]] | MessageStream | InProcessServer | Stdio | HTTP | InProcess
)
"""What ``Client.connect`` takes (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class OpenedTarget:
    """A target's open stream, and whether the client should guard its answers (``transports.answer_guard``):
    the HTTP transport does that itself."""

    stream: MessageStream
    guard_answers: bool


def _is_in_process_server(target: object) -> bool:
    return callable(getattr(target, "running", None)) and callable(getattr(target, "serve_stream", None))


def resolve_target(target: object) -> Stdio | HTTP | InProcess | MessageStream:
    """``target`` as one of the option objects, or the stream itself; ``TypeError`` / ``ValueError`` for anything
    that is not a target. Checked before anything is started."""
    if isinstance(target, Stdio | HTTP | InProcess):
        return target
    if isinstance(target, str):
        if target.lower().startswith(_URL_SCHEMES):
            return HTTP(target)
        _command(target)  # raises, saying a command is a sequence
    if _is_in_process_server(target):
        return InProcess(target)  # type: ignore[arg-type]  # shaped like InProcessServer, checked above
    if isinstance(target, MessageStream):
        return target
    if isinstance(target, Sequence) and not isinstance(target, bytes | bytearray):
        return Stdio(target)
    raise TypeError(
        "Client.connect takes an http(s):// URL str, a command (a sequence of str), a MessageStream, an "
        f"in-process Server, or Stdio(...) / HTTP(...) / InProcess(...), not {type(target).__name__}: {target!r}"
    )


@asynccontextmanager
async def open_target(target: object, guard_answers: bool) -> AsyncIterator[OpenedTarget]:
    """Open ``target`` (see ``resolve_target``) and yield its stream; on exit, what was started is stopped (the
    child process, the HTTP session, the in-process server). ``guard_answers`` is the caller's choice for every
    target but HTTP, whose transport guards its answers itself."""
    resolved = resolve_target(target)
    if isinstance(resolved, Stdio):
        async with open_subprocess_stream(
            _command(resolved.command), resolved.env, cwd=resolved.cwd, capture_stderr=resolved.capture_stderr
        ) as stream:
            yield OpenedTarget(stream, guard_answers)
    elif isinstance(resolved, HTTP):
        from ..transports.http.client.stream import open_http_stream  # only HTTP clients need httpx2

        async with open_http_stream(
            resolved.url,
            dict(resolved.headers) if resolved.headers else None,
            http_client=resolved.http_client,
            max_message_bytes=resolved.max_message_bytes,
            reconnect=resolved.reconnect,
            auth=resolved.auth,
        ) as stream:
            yield OpenedTarget(stream, False)
    elif isinstance(resolved, InProcess):
        async with _serve_in_process(resolved) as stream:
            yield OpenedTarget(stream, guard_answers)
    else:
        yield OpenedTarget(resolved, guard_answers)


@asynccontextmanager
async def _serve_in_process(target: InProcess) -> AsyncIterator[MessageStream]:
    server_end, client_end = memory_stream_pair()
    limits = {} if target.max_requests_in_flight is None else {"max_requests_in_flight": target.max_requests_in_flight}
    async with target.server.running():
        done = anyio.Event()

        async def serve() -> None:
            try:
                await target.server.serve_stream(server_end, **limits)
            finally:
                done.set()

        # Entered and left by hand, not with `async with`: the body's exception must come out as itself, not
        # wrapped in an ExceptionGroup by the task group.
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        try:
            task_group.start_soon(serve)
            yield client_end
        finally:
            try:
                # The client's exit closed its end, so the server's receive ends; a failed connect may not have.
                await client_end.aclose()
                with anyio.move_on_after(SERVER_SHUTDOWN_TIMEOUT):
                    await done.wait()
            finally:
                task_group.cancel_scope.cancel()
                await task_group.__aexit__(None, None, None)
