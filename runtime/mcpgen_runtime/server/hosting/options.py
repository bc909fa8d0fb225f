"""How a server process runs: Python logging (on stderr), the URL it announces, and which Host names it accepts.

Where it sits: in the ``server`` layer, under ``server.Server`` (whose ``run_http`` / ``run_stdio`` are meant to
delegate to ``run_http`` / ``run_stdio`` here) and under ``runner`` (``python -m mcpgen_runtime.server.runner``,
which ``mcpgen dev`` starts). It imports only the standard library, anyio and the stdio transport's limits, so that a
stdio server does not import starlette or uvicorn; the server it runs is anything with ``serve_http`` and ``serve_stdio`` (``Servable``), which
keeps ``server.server`` free to import this module without an import cycle.

The Host check (DNS-rebinding protection, in ``transports.http.server.app``) accepts only local names by default. A
server bound to one address (``--host 192.168.1.20``) also accepts that address; one bound to every interface
(``0.0.0.0``, ``::``) cannot know the names clients will use, so it accepts the local ones plus those it is given
(``allowed_hosts``, the scaffold's ``--allowed-host``) and warns, naming the flag, when it was given none.

The HTTP stack: ``run_http`` (so ``Server.run_http``, the runner, the scaffold's ``main`` and every ``--workers``
worker) runs the event loop ``MCPGEN_HTTP_STACK`` chooses (default ``auto``: uvloop when it imports, else asyncio's;
``fast``; ``h11``: see ``transports.http.server.serving``, which picks the parser to match); a bad value is one
``error:`` line and exit 2. ``run_stdio`` keeps asyncio's loop.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, TextIO

import anyio

from ...jsonrpc.inflight import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_REQUESTS_IN_FLIGHT
from ...transports.stdio.ndjson import DEFAULT_MAX_FRAME_BYTES

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ...scaleout.settings import ScaleOutSettings
    from ...transports.http.server.app import HTTPAppOptions

    class HTTPServingOptions(HTTPAppOptions, total=False):
        """The options of ``Server.serve_http`` / ``run_http``: the app's (``StreamableHTTPApp``), and how uvicorn
        serves it (``transports.http.server.app.run_http``). A misspelt one fails in mypy, and at run time with a
        TypeError naming it (``check_http_options``)."""

        shutdown_timeout: float
        reuse_port: bool


__all__ = [
    "DEFAULT_LOG_LEVEL",
    "LOCAL_HOSTS",
    "LOG_FORMAT",
    "LOG_LEVEL_NAMES",
    "WILDCARD_HOSTS",
    "Announcer",
    "Servable",
    "allowed_hosts_for",
    "announce",
    "check_http_options",
    "configure_logging",
    "http_options",
    "run_http",
    "run_stdio",
    "scale_out_settings",
    "wildcard_warning",
]

LOG_LEVEL_NAMES: Final = ("debug", "info", "warning", "error", "critical")
DEFAULT_LOG_LEVEL: Final = "info"
LOG_FORMAT: Final = "%(asctime)s %(name)s %(levelname)s %(message)s"
# As transports.http.server.app.LOCAL_HOSTS, which is not imported: that module needs starlette (a test keeps them equal).
LOCAL_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS: Final = frozenset({"", "0.0.0.0", "::", "[::]"})
DEFAULT_PATH: Final = "/mcp"  # StreamableHTTPApp's default


class Servable(Protocol):
    """What ``run_http`` and ``run_stdio`` run: ``server.Server``."""

    async def serve_http(
        self,
        host: str = ...,
        port: int = ...,
        *,
        task_status: Any = ...,
        scale_out: ScaleOutSettings | None = ...,
        **options: Unpack[HTTPServingOptions],
    ) -> None: ...

    async def serve_stdio(
        self, *, max_requests_in_flight: int = ..., max_batch_size: int = ..., max_frame_bytes: int = ...
    ) -> None: ...


_SERVING_OPTIONS: Final = frozenset({"shutdown_timeout", "reuse_port"})


def check_http_options(options: Mapping[str, object], where: str) -> None:
    """A ``TypeError`` naming every key of ``options`` that is not an option of ``Server.serve_http`` (the app's and
    how it is served): what mypy says of a misspelt option, said at run time too, before anything starts."""
    from ...transports.http.server.app import HTTPAppOptions  # an HTTP server: starlette is needed anyway

    known = HTTPAppOptions.__optional_keys__ | HTTPAppOptions.__required_keys__ | _SERVING_OPTIONS
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"{where}() got unexpected keyword arguments: {', '.join(unknown)}")


_handler_marker = "_mcpgen_run_options"  # marks the handler configure_logging installed, so a second call replaces it


def _level_number(level: str | int) -> int:
    if isinstance(level, bool):  # an int, but never a level
        raise ValueError(f"invalid log level {level!r}")
    if isinstance(level, int):
        return level
    name = level.strip().lower()
    if name not in LOG_LEVEL_NAMES:
        raise ValueError(f"invalid log level {level!r}; choose one of: {', '.join(LOG_LEVEL_NAMES)}")
    number: int = logging.getLevelNamesMapping()[name.upper()]
    return number


def configure_logging(level: str | int | None = DEFAULT_LOG_LEVEL, *, stream: TextIO | None = None) -> None:
    """Python logging for this server process: records of ``level`` and above (a name of ``LOG_LEVEL_NAMES`` in any
    case, or a number) go to ``stream`` (default: stderr, since over stdio stdout carries only the protocol).

    ``None`` leaves logging as it is. Logging configured elsewhere first (a root handler that is not ours) keeps its
    handlers: only the root level is set. Calling it again replaces what the previous call set up. uvicorn's own
    loggers are not touched (``transports.http.server.serving`` runs it at "warning"). A bad name raises ``ValueError``.
    """
    if level is None:
        return
    number = _level_number(level)
    root = logging.getLogger()
    ours = [handler for handler in root.handlers if getattr(handler, _handler_marker, False)]
    for handler in ours:
        root.removeHandler(handler)
    if not root.handlers:
        handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        setattr(handler, _handler_marker, True)
        root.addHandler(handler)
    root.setLevel(number)


def announce(url: str, *, file: TextIO | None = None) -> None:
    """One line on stderr (or ``file``) saying where the server listens, e.g.
    ``mcpgen: serving MCP on http://127.0.0.1:8000/mcp``."""
    print(f"mcpgen: serving MCP on {url}", file=file if file is not None else sys.stderr, flush=True)


class Announcer:
    """A ``task_status`` for ``Server.serve_http``: when the socket listens, ``announce`` its URL (the real port,
    also for port 0) with the endpoint's ``path``."""

    def __init__(self, path: str = DEFAULT_PATH, *, file: TextIO | None = None) -> None:
        self.path = path
        self.file = file
        self.url: str | None = None

    def started(self, value: Any = None) -> None:
        self.url = f"{value}{self.path}"
        announce(self.url, file=self.file)


def _host_name(host: str) -> str:
    return host.strip().strip("[]").lower()


def allowed_hosts_for(host: str, allowed_hosts: Iterable[str] | None = None) -> list[str]:
    """The Host names a server bound to ``host`` accepts: the local names, ``host`` itself unless it is a wildcard
    (every interface), and ``allowed_hosts`` (``"*"`` among them turns the check off)."""
    names = list(LOCAL_HOSTS)
    extra = [] if host in WILDCARD_HOSTS else [host]
    for name in (*extra, *(allowed_hosts or ())):
        if _host_name(name) and _host_name(name) not in names:
            names.append(_host_name(name))
    return names


def wildcard_warning(host: str, allowed_hosts: Iterable[str] | None, flag: str | None = None) -> str | None:
    """The warning for a wildcard bind without any allowed host (every remote request would be refused), naming
    the command-line ``flag`` that fixes it (e.g. ``"--allowed-host"``; None: the ``allowed_hosts`` argument);
    None when there is nothing to warn about."""
    if host not in WILDCARD_HOSTS or any(_host_name(name) for name in allowed_hosts or ()):
        return None
    if flag is None:
        fix, off = "allowed_hosts=[NAME, ...] with each name or address", "allowed_hosts=['*']"
    else:
        fix, off = f"{flag} NAME (repeatable) for each name or address", f"{flag} '*'"
    return (
        f"mcpgen: warning: listening on {host or 'every interface'} (every interface), but only requests with Host "
        f"localhost, 127.0.0.1 or ::1 are accepted; pass {fix} clients use to reach this machine, or {off} to turn "
        "the Host and Origin checks off behind a proxy that checks them"
    )


def http_options(
    host: str, options: dict[str, Any], *, allowed_hosts_flag: str | None = None, file: TextIO | None = None
) -> dict[str, Any]:
    """``options`` for ``Server.serve_http``, completed: ``allowed_hosts`` follows ``host`` (``allowed_hosts_for``),
    and ``task_status`` announces the URL unless one was given. Prints the wildcard warning (naming
    ``allowed_hosts_flag``, see ``wildcard_warning``) to stderr (or ``file``) when there is one."""
    given = options.get("allowed_hosts")
    warning = wildcard_warning(host, given, allowed_hosts_flag)
    if warning is not None:
        print(warning, file=file if file is not None else sys.stderr, flush=True)
    completed = {**options, "allowed_hosts": allowed_hosts_for(host, given)}
    completed.setdefault("task_status", Announcer(options.get("path", DEFAULT_PATH), file=file))
    return completed


def scale_out_settings(workers: int | None = None, redis: str | None = None, scale_out: Any = None) -> Any:
    """The ``scaleout.ScaleOutSettings`` of a run: ``scale_out`` if given, else the environment (``MCPGEN_*``) with
    ``workers`` and ``redis`` on top. Raises ``scaleout.settings.SettingsError`` (a ``ValueError``) for bad ones."""
    from ...scaleout.settings import ScaleOutSettings  # standard library only

    if scale_out is not None:
        return scale_out
    return ScaleOutSettings.from_env(workers=workers, redis_url=redis)


def run_http(
    server: Servable,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str | int | None = DEFAULT_LOG_LEVEL,
    allowed_hosts_flag: str | None = None,
    workers: int | None = None,
    redis: str | None = None,
    scale_out: ScaleOutSettings | None = None,
    redis_extra: str | None = None,
    **options: Unpack[HTTPServingOptions],
) -> None:
    """What ``Server.run_http`` does: configure logging, serve ``server`` over streamable HTTP until interrupted,
    announcing its URL on stderr; ``allowed_hosts`` follows ``host`` (see ``http_options``; a command line passes
    the name of its option as ``allowed_hosts_flag``, for the warning). ``options``: those of ``Server.serve_http``.

    ``workers`` / ``redis`` / ``scale_out``: see ``scale_out_settings``. With a Redis URL, sessions are shared
    through Redis (``scaleout``); with more than one worker, ``scaleout.supervisor`` forks them, all on ``port``.
    Bad settings, a bad URL, an unreachable Redis or redis-py not installed (the error names ``redis_extra``, what to
    ``pip install``; default ``mcpgen-runtime[redis]``): one ``error:`` line on stderr and ``SystemExit(2)``.
    """
    check_http_options(options, "run_http")
    configure_logging(log_level)
    from ...transports.http.server.serving import http_stack, loop_options  # an HTTP server: uvicorn is needed anyway

    try:
        loop = loop_options(http_stack())
        settings = scale_out_settings(workers, redis, scale_out)
        if settings.shared:
            from ...scaleout.settings import RUNTIME_REDIS_EXTRA, require_redis_client  # standard library only

            require_redis_client(redis_extra or RUNTIME_REDIS_EXTRA)
            from ...scaleout.redis_client import check_redis  # only scaled-out servers need redis

            check_redis(settings)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    completed = http_options(host, dict(options), allowed_hosts_flag=allowed_hosts_flag)
    if not settings.shared:
        anyio.run(functools.partial(server.serve_http, host, port, **completed), **loop)
    elif settings.workers == 1:
        anyio.run(functools.partial(server.serve_http, host, port, scale_out=settings, **completed), **loop)
    else:
        _run_workers(server, host, port, settings, completed, loop)


def _run_workers(
    server: Servable, host: str, port: int, settings: Any, options: dict[str, Any], loop: dict[str, Any]
) -> None:
    from ...scaleout.supervisor import RestartPolicy, reserve_port, run_workers

    try:
        policy = RestartPolicy.from_env()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    announcer = options.pop("task_status")
    reserved = reserve_port(host, port)  # OSError (a port that cannot be bound): as without workers
    try:
        port = reserved.getsockname()[1]
        url_host = f"[{host}]" if ":" in host else host
        announcer.started(f"http://{url_host}:{port}")
        print(f"mcpgen: {settings.workers} workers, sharing sessions through Redis", file=sys.stderr, flush=True)

        def serve(index: int) -> None:
            # Each forked worker starts its own loop (the stack's): the parent never runs one while it supervises.
            serve_http = functools.partial(
                server.serve_http, host, port, scale_out=settings, reuse_port=True, **options
            )
            anyio.run(serve_http, **loop)

        code = run_workers(serve, settings.workers, policy=policy)
    finally:
        reserved.close()
    if code:
        raise SystemExit(code)


def run_stdio(
    server: Servable,
    *,
    log_level: str | int | None = DEFAULT_LOG_LEVEL,
    max_requests_in_flight: int = DEFAULT_MAX_REQUESTS_IN_FLIGHT,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
) -> None:
    """What ``Server.run_stdio`` does: configure logging (on stderr), serve one client over stdin/stdout. The limits:
    see ``Server.serve_stdio``."""
    configure_logging(log_level)
    serve = functools.partial(
        server.serve_stdio,
        max_requests_in_flight=max_requests_in_flight,
        max_batch_size=max_batch_size,
        max_frame_bytes=max_frame_bytes,
    )
    anyio.run(serve)
