"""Run a server from a file or a module: ``python -m mcpgen_runtime.server.runner TARGET [options]``.

Where it sits: the top of the ``server`` layer (it imports ``server.Server`` and ``run_options``; nothing in the
runtime imports it). ``mcpgen dev`` starts it as its child process, once per reload; a desktop client's config can
start it too (``mcpgen client-config``). TARGET is ``path/to/server.py`` or a module ``package.server`` (found from
the current directory), either with ``:NAME`` for the ``Server`` object; without it, the module's ``server`` or its
only ``Server``. The file is imported as a module, not run as ``__main__``, so its own ``main()`` does not run.

A project's own command is the same runner over its ``Server`` object: ``serve_command_line(server, argv,
prog=..., redis_extra="my-project[redis]")`` is the whole of the ``main()`` that ``mcpgen new`` writes, with the
same flags (``add_serving_arguments``: one parser, so the two cannot drift apart).

``--workers N --redis URL`` run N worker processes on the port, sharing sessions through Redis (``scaleout``);
``create_app`` is the same for an ASGI server's own workers (uvicorn ``--factory``).

Over HTTP it serves on uvicorn with httptools and uvloop when they import, else h11 and asyncio's loop;
``MCPGEN_HTTP_STACK=auto|fast|h11`` chooses (default ``auto``; see ``transports.http.server.serving``), and
``--log-level debug`` logs which stack serves.

Bad input (no such file or module, no ``Server`` in it, a port that cannot be bound, bad scale-out settings or
``MCPGEN_HTTP_STACK``, an unreachable Redis, ``--redis`` without redis-py installed) is one ``error:`` line on stderr
and exit code 2; an exception raised by the server's own code while it is imported shows its traceback first, since
that is what its author needs. Ctrl-C (SIGINT) stops the server cleanly with exit code 0.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from .hosting.options import DEFAULT_LOG_LEVEL, LOG_LEVEL_NAMES, run_http, run_stdio
from .server import Server, start_scaled_worker

__all__ = [
    "TRANSPORTS",
    "LoadError",
    "add_serving_arguments",
    "create_app",
    "load_server",
    "main",
    "runner_parser",
    "serve_command_line",
    "serve_parsed",
    "split_target",
]

EXIT_BAD_INPUT: Final = 2
TRANSPORTS: Final = ("stdio", "http")
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
PARENT_POLL_INTERVAL: Final = 0.5
_BIND_ERRORS: Final = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})


class LoadError(Exception):
    """TARGET does not name a server; the message says why."""


def split_target(target: str) -> tuple[str, str | None]:
    """(file or module, attribute name or None) of ``path/server.py:NAME``, ``package.server:NAME`` and the forms
    without ``:NAME``. A colon followed by something that is not an identifier is part of the path (``C:\\x.py``)."""
    where, colon, name = target.rpartition(":")
    if colon and where and name.isidentifier():
        return where, name
    return target, None


def is_file_target(where: str) -> bool:
    """Whether the first half of a target is a file path (else a dotted module name)."""
    return where.endswith(".py") or "/" in where or os.sep in where


def _import_file(path: Path) -> ModuleType:
    # Its directory first on sys.path, as `python path/server.py` would have it, so that its sibling imports work.
    sys.path.insert(0, str(path.parent))
    name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "_mcpgen_server_target"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, pickling and pydantic look modules up by name
    spec.loader.exec_module(module)
    return module


def _import_module(name: str) -> ModuleType:
    if not all(part.isidentifier() for part in name.split(".")):
        raise LoadError(f"{name!r} is neither a .py file nor a module name (package.module[:NAME])")
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)  # imports the parent packages, as the import itself would
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise LoadError(f"no module named {name!r} (looked from {os.getcwd()} and sys.path)")
    return importlib.import_module(name)


def _pick(module: ModuleType, target: str, name: str | None) -> Server:
    if name is not None:
        if not hasattr(module, name):
            raise LoadError(f"{target}: the module has no attribute {name!r}")
        found = getattr(module, name)
        if not isinstance(found, Server):
            raise LoadError(f"{target}:{name} is of type {type(found).__name__}, not an mcpgen_runtime Server")
        return found
    default = getattr(module, "server", None)
    if isinstance(default, Server):
        return default
    servers = sorted(key for key, value in vars(module).items() if isinstance(value, Server))
    if len(servers) == 1:
        found = getattr(module, servers[0])
        assert isinstance(found, Server)
        return found
    if not servers:
        raise LoadError(f"{target} defines no mcpgen_runtime Server; name the object with {target}:NAME")
    raise LoadError(f"{target} defines several Servers ({', '.join(servers)}); choose one with {target}:NAME")


def load_server(target: str) -> Server:
    """Import TARGET (see the module docstring) and return its ``Server``. Raises ``LoadError`` for bad input;
    whatever the module raises while it is imported propagates."""
    where, name = split_target(target)
    if is_file_target(where):
        path = Path(where)
        if not path.is_file():
            raise LoadError(f"{where}: no such file")
        module = _import_file(path.resolve())
    else:
        module = _import_module(where)
    return _pick(module, where, name)


def _exit_with_parent(pid: int) -> None:
    """Interrupt this process (as Ctrl-C would) once process ``pid`` is no longer its parent: a supervisor that is
    killed outright (``mcpgen dev`` on SIGKILL) leaves no server behind holding its port."""

    def watch() -> None:
        while os.getppid() == pid:
            time.sleep(PARENT_POLL_INTERVAL)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=watch, name="mcpgen-parent-watch", daemon=True).start()


def add_serving_arguments(parser: argparse.ArgumentParser, transports: Sequence[str] = TRANSPORTS) -> None:
    """Add the flags of a server's command line to ``parser``: ``--transport`` (``transports``, the first the
    default), ``--log-level`` and, when ``"http"`` is one of them, ``--host``, ``--port``, ``--allowed-host``,
    ``--workers`` and ``--redis``. One set of flags for ``python -m mcpgen_runtime.server.runner`` and every
    project's own command (``serve_command_line``), so they cannot drift apart."""
    unknown = sorted(set(transports) - set(TRANSPORTS))
    if not transports or unknown:
        raise ValueError(f"transports: choose from {', '.join(TRANSPORTS)}, not {list(transports)!r}")
    parser.add_argument(
        "--transport",
        choices=list(transports),
        default=transports[0],
        help=f"how clients connect (default: {transports[0]})",
    )
    if "http" in transports:
        parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP: the address to bind (default: {DEFAULT_HOST})")
        parser.add_argument(
            "--port", type=int, default=DEFAULT_PORT, help=f"HTTP: the port, 0 for a free one (default: {DEFAULT_PORT})"
        )
        parser.add_argument(
            "--allowed-host",
            action="append",
            default=[],
            metavar="NAME",
            help="HTTP: also accept requests for this host name (repeatable); needed with --host 0.0.0.0 ('*' turns "
            "the Host/Origin checks off, only behind a proxy that checks them)",
        )
        parser.add_argument(
            "--workers",
            type=int,
            metavar="N",
            help="HTTP: worker processes on the port; more than 1 needs --redis (default: MCPGEN_WORKERS, else 1)",
        )
        parser.add_argument(
            "--redis",
            metavar="URL",
            help="HTTP: share sessions, events and notifications through this Redis, redis://host:port/db "
            "(default: MCPGEN_REDIS_URL; other MCPGEN_* variables set the rest, see docs/how-to/deploy.md)",
        )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVEL_NAMES,
        default=DEFAULT_LOG_LEVEL,
        help=f"what the server logs, on stderr (default: {DEFAULT_LOG_LEVEL})",
    )


def runner_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m mcpgen_runtime.server.runner``: TARGET and the serving flags."""
    parser = argparse.ArgumentParser(
        prog="python -m mcpgen_runtime.server.runner",
        description="Run the mcpgen_runtime Server of a file or module.",
    )
    parser.add_argument("target", metavar="TARGET", help="path/to/server.py[:NAME] or package.module[:NAME]")
    add_serving_arguments(parser)
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)  # set by `mcpgen dev`
    return parser


def _print_user_traceback(error: BaseException) -> None:
    """The traceback of an exception the server's module raised, without this module's and importlib's frames."""
    summary = traceback.TracebackException.from_exception(error)
    frames = [frame for frame in summary.stack if frame.filename != __file__ and not frame.filename.startswith("<")]
    summary.stack = traceback.StackSummary.from_list(frames)
    print("".join(summary.format()), end="", file=sys.stderr, flush=True)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return EXIT_BAD_INPUT


def _bad_port(args: argparse.Namespace) -> str | None:
    port = getattr(args, "port", None)  # a stdio-only command has no --port
    if port is not None and not 0 <= port <= 65535:
        return f"--port {port}: not a port number (0 to 65535)"
    return None


def serve_parsed(
    server: Server,
    args: argparse.Namespace,
    *,
    auth: Callable[[], Any] | None = None,
    redis_extra: str | None = None,
) -> int:
    """Serve ``server`` as the flags of ``add_serving_arguments`` say until interrupted; returns the exit code: 0
    (Ctrl-C included), or 2 after one ``error:`` line (a port that cannot be bound; bad scale-out settings and a
    missing redis-py, whose line names ``redis_extra``, exit 2 from ``run_http`` itself). ``auth`` is called for
    the HTTP transport only: a server that needs tokens over HTTP still serves stdio without their settings."""
    problem = _bad_port(args)
    if problem is not None:
        return _fail(problem)
    try:
        if args.transport == "stdio":
            run_stdio(server, log_level=args.log_level)
            return 0
        options: dict[str, Any] = {} if auth is None else {"auth": auth()}
        try:
            run_http(
                server,
                args.host,
                args.port,
                log_level=args.log_level,
                allowed_hosts_flag="--allowed-host",
                allowed_hosts=args.allowed_host or None,
                workers=args.workers,
                redis=args.redis,
                redis_extra=redis_extra,
                **options,
            )
        except OSError as error:  # from binding the socket: the address is bad input
            if not isinstance(error, socket.gaierror) and error.errno not in _BIND_ERRORS:
                raise
            return _fail(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}")
    except KeyboardInterrupt:
        pass  # Ctrl-C, or the parent went away: uvicorn has shut down already
    return 0


def serve_command_line(
    server: Server,
    argv: Sequence[str] | None = None,
    *,
    prog: str | None = None,
    description: str | None = None,
    transports: Sequence[str] = TRANSPORTS,
    auth: Callable[[], Any] | None = None,
    redis_extra: str | None = None,
) -> None:
    """A project's whole ``main()``: parse ``argv`` (default ``sys.argv[1:]``) with the flags of
    ``add_serving_arguments`` (``transports``: what the command offers, the first the default) and serve ``server``
    until interrupted (``serve_parsed``). ``auth`` (e.g. a function that builds a ``server.auth.BearerAuth`` from the
    environment) protects HTTP; ``redis_extra`` is what the error for ``--redis`` without redis-py tells the user to
    install, e.g. ``"my-weather[redis]"`` (default ``mcpgen-runtime[redis]``). Bad input: one ``error:`` line on
    stderr and ``SystemExit(2)``; ``--help`` and argparse's own errors exit as argparse does.

        def main(argv: Sequence[str] | None = None) -> None:
            serve_command_line(server, argv, prog="weather", redis_extra="weather[redis]")
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_serving_arguments(parser, transports)
    code = serve_parsed(server, parser.parse_args(argv), auth=auth, redis_extra=redis_extra)
    if code:
        raise SystemExit(code)


def run(argv: Sequence[str] | None = None) -> int:
    """The command; returns its exit code."""
    args = runner_parser().parse_args(argv)
    problem = _bad_port(args)
    if problem is not None:  # before the server is imported: a typo should not wait for a slow import
        return _fail(problem)
    if args.parent_pid is not None:
        # A supervised server obeys SIGINT even when started with it ignored (a background job of a shell).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _exit_with_parent(args.parent_pid)
    try:
        try:
            server = load_server(args.target)
        except LoadError as error:
            return _fail(str(error))
        except Exception as error:  # the server's own code failed while it was imported: show where
            _print_user_traceback(error)
            return _fail(f"cannot load {args.target}: {type(error).__name__}: {error}")
    except KeyboardInterrupt:
        return 0
    return serve_parsed(server, args)


def create_app() -> Any:
    """An ASGI app for an ASGI server's own workers: ``MCPGEN_TARGET`` (a TARGET as above) served as one worker of
    a scaled-out server configured by the ``MCPGEN_*`` variables (``scaleout.ScaleOutSettings.from_env``; a Redis
    URL is required), accepting the Host names in ``MCPGEN_ALLOWED_HOSTS`` (comma-separated) besides the local ones:

        MCPGEN_TARGET=server.py MCPGEN_REDIS_URL=redis://127.0.0.1:6379/0 MCPGEN_REQUEST_STATE_KEY=... \
            uvicorn --factory mcpgen_runtime.server.runner:create_app --workers 4 --port 8000

    The endpoint is ``/mcp``; the server's lifespan runs inside the app's (uvicorn's ``lifespan="on"``, its default
    ``auto`` too)."""
    from ..scaleout.settings import ScaleOutSettings, SettingsError, require_redis_client

    require_redis_client()  # a SettingsError naming the extra, rather than redis-py's ModuleNotFoundError
    from ..scaleout.worker import ScaleOut, ScaleOutWorker
    from .hosting.options import allowed_hosts_for

    target = os.environ.get("MCPGEN_TARGET")
    if not target:
        raise SettingsError("MCPGEN_TARGET: set it to the server to serve (path/to/server.py[:NAME] or a module)")
    settings = ScaleOutSettings.from_env()
    if not settings.shared:
        raise SettingsError("MCPGEN_REDIS_URL: the workers of an ASGI server share sessions through Redis; set it")
    server = load_server(target)
    extra = [name for name in os.environ.get("MCPGEN_ALLOWED_HOSTS", "").split(",") if name.strip()]

    async def start_worker(worker: ScaleOutWorker) -> None:
        await start_scaled_worker(server, worker, settings)

    app_factory = ScaleOut(settings, around=server.running, on_started=[start_worker])
    return app_factory(
        server.serve_stream,
        modern_handler=server.serve_modern,
        modern_eager=server.start_modern,
        allowed_hosts=allowed_hosts_for("", extra),
    )


def main(argv: Sequence[str] | None = None) -> None:
    sys.exit(run(argv))


if __name__ == "__main__":
    main()
