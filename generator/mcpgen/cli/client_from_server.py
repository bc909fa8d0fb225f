"""`mcpgen client-from-server`: the click command around ``client_from_server``.

Where it sits: a sibling of the commands in ``cli/__init__.py`` (registered there with ``main.add_command``); it
parses the options, runs the async fetch, and turns every ``ClientGenerationError`` into one ``error:`` line and exit code 2,
with nothing written. The message is folded to one line and cut at ``MAX_ERROR_CHARS``.
"""

from __future__ import annotations

import keyword
import shlex
import sys
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlsplit

import anyio
import click

from ..features.client_from_server.generate import (
    ClientGenerationError,
    ServerTarget,
    fetch_snapshot,
    render_client_module,
    write_atomically,
)
from ..features.client_from_server.schema_guard import one_line

EXIT_BAD_INPUT = 2
MAX_ERROR_CHARS = 500


def _target(command: str | None, url: str | None) -> ServerTarget:
    if (command is None) == (url is None):
        raise ClientGenerationError("give exactly one of --command and --url")
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ClientGenerationError(f"--url {url!r} is not an http(s) URL such as http://127.0.0.1:8000/mcp")
        return ServerTarget(url=url)
    try:
        argv = shlex.split(command or "")
    except ValueError as exc:  # an unbalanced quote
        raise ClientGenerationError(f"--command cannot be split like a shell command: {exc}") from None
    if not argv:
        raise ClientGenerationError("--command is empty")
    return ServerTarget(command=tuple(argv))


def _check_class_name(name: str | None) -> None:
    if name is not None and (not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_")):
        raise ClientGenerationError(f"--class-name {name!r} is not a public Python class name")


def _fail(message: str) -> NoReturn:
    # One line, whatever the message holds: the generator's errors run to many lines, a server's text to anything.
    click.echo(f"error: {one_line(message, MAX_ERROR_CHARS)}", err=True)
    click.echo("nothing was written.", err=True)
    sys.exit(EXIT_BAD_INPUT)


@click.command(
    "client-from-server",
    epilog="""\b
Examples:
  mcpgen client-from-server --command "python server.py" --out weather_client.py
  mcpgen client-from-server --url http://127.0.0.1:8000/mcp --out weather_client.py --class-name Weather
\b
Exit codes: 0 ok, 2 bad input (server unreachable, command failed, bad URL, a schema refused as unsafe: a
non-local $ref, more than 1000 tools, nesting deeper than 64); nothing is written on error.""",
)
@click.option("--command", "command", metavar="CMD", help='A stdio server to start, e.g. "python server.py".')
@click.option("--url", metavar="URL", help="A streamable HTTP server, e.g. http://127.0.0.1:8000/mcp.")
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The Python module to write."
)
@click.option("--class-name", metavar="NAME", help="The client class (default: from the server's name).")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait for the server, in all.")
def client_from_server(command: str | None, url: str | None, out: Path, class_name: str | None, timeout: float) -> None:
    """Generate a typed Python client module for the tools a live MCP server lists.

    It connects as the generated client will: MCP 2026-07-28 when the server speaks it (server/discover), else the
    initialize handshake older servers use, so modern-only, handshake-only and dual servers all work."""
    try:
        target = _target(command, url)
        _check_class_name(class_name)
        snapshot = anyio.run(fetch_snapshot, target, timeout)
        source = render_client_module(snapshot, class_name)
        write_atomically(out, source)
    except (ClientGenerationError, OSError) as error:
        _fail(str(error))
    except Exception as error:  # a server must never get a traceback flood (or a half-written file) out of us
        _fail(f"internal error: {type(error).__name__}: {error}")
    # The server's name and version are its own text: never raw to the terminal (escape sequences, line breaks).
    click.echo(
        f"wrote {out}: {len(snapshot.tools)} tool(s) of {one_line(snapshot.name, 100)} {one_line(snapshot.version, 40)}"
    )
