"""The `mcpgen dev TARGET` command: serve a server over HTTP and restart it on every change (features.dev_server).

Where it sits: registered by the `mcpgen` group in cli/__init__.py with `main.add_command(dev.dev)`; like every
command module it imports nothing from cli/__init__.py. Bad input (`DevError`: no such file or module, a bad port)
is one `error:` line and exit code 2, with nothing started. Ctrl-C stops the server and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..features.dev_server import (
    DEBOUNCE,
    DEFAULT_HOST,
    DEFAULT_PORT,
    LOG_LEVELS,
    POLL_INTERVAL,
    DevError,
    DevRequest,
    run_dev,
)

EXIT_BAD_INPUT = 2  # as cli/__init__.py: 0 ok, 2 bad input


@click.command(
    epilog="""\b
Examples:
  mcpgen dev server.py                           http://127.0.0.1:8000/mcp, restarted when a *.py file changes
  mcpgen dev src/weather/server.py --port 9000
  mcpgen dev weather.server:server --watch src   a module (found from the current directory), another directory
  mcpgen dev server.py --python .venv/bin/python the project's own interpreter (it needs mcpgen-runtime)
\b
The server runs as `python -m mcpgen_runtime.server.runner TARGET --transport http` in a child process, which
prints its URL and logs. The directory of TARGET (and each --watch) is polled for *.py changes; the server is
restarted once a change has settled. Ctrl-C stops it.""",
)
@click.argument("target")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="The address to bind.")
@click.option("--port", type=int, default=DEFAULT_PORT, show_default=True, help="The port (0: a free one).")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Also accept this Host name (repeatable; needed with --host 0.0.0.0; '*' turns the check off).",
)
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True)
@click.option(
    "--watch",
    "watch",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Also watch this directory (repeatable).",
)
@click.option("--python", default=sys.executable, show_default="this interpreter", help="Runs the server.")
@click.option("--poll-interval", type=float, default=POLL_INTERVAL, show_default=True, help="Seconds between polls.")
@click.option("--debounce", type=float, default=DEBOUNCE, show_default=True, help="Seconds a change must settle.")
def dev(
    target: str,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    log_level: str,
    watch: tuple[Path, ...],
    python: str,
    poll_interval: float,
    debounce: float,
) -> None:
    """Serve TARGET (path/to/server.py[:NAME] or package.module[:NAME]) over HTTP, reloading on change."""
    request = DevRequest(
        target,
        host=host,
        port=port,
        log_level=log_level,
        allowed_hosts=allowed_hosts,
        watch=watch,
        python=python,
        poll_interval=poll_interval,
        debounce=debounce,
    )
    try:
        code = run_dev(request)
    except DevError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(code)
