"""The `mcpgen client-config NAME` command: a server's entry for a desktop MCP client's config file
(features.client_config does the work).

Where it sits: registered by the `mcpgen` group in cli/__init__.py with `main.add_command(client_config.client_config)`;
it imports nothing from cli/__init__.py. Prints `{"mcpServers": {NAME: entry}}` to stdout, or with `--write FILE`
merges the entry into FILE atomically, under a lock (see features.client_config). Bad input (`ClientConfigError`, or not exactly one of `-- COMMAND`, `--server`
and `--url`) is one `error:` line and exit code 2, with nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..features.client_config import (
    ClientConfigError,
    command_entry,
    config_document,
    merge_into_file,
    parse_env,
    runner_entry,
    url_entry,
)

EXIT_BAD_INPUT = 2  # as cli/__init__.py: 0 ok, 2 bad input


def _entry(
    command: tuple[str, ...], server: str | None, python: str | None, url: str | None, env: tuple[str, ...]
) -> dict[str, Any]:
    given = [flag for flag, value in (("-- COMMAND", command), ("--server", server), ("--url", url)) if value]
    if len(given) != 1:
        which = " and ".join(given) if given else "none"
        raise ClientConfigError(
            f"give exactly one of `-- COMMAND [ARGS]`, --server TARGET and --url URL ({which} given)"
        )
    if python is not None and server is None:
        raise ClientConfigError("--python goes with --server")
    if url is not None:
        if env:
            raise ClientConfigError("--env goes with a command or --server: a client does not start a --url server")
        return url_entry(url)
    variables = parse_env(env)
    if server is not None:
        return runner_entry(server, python, variables)
    return command_entry(command, variables)


@click.command(
    "client-config",
    epilog="""\b
Examples:
  mcpgen client-config weather -- /abs/path/weather/.venv/bin/weather
  mcpgen client-config weather --env API_KEY=secret -- uvx weather-server --verbose
  mcpgen client-config weather --server src/weather/server.py      (python -m mcpgen_runtime.server.runner FILE)
  mcpgen client-config weather --url http://127.0.0.1:8000/mcp
  mcpgen client-config weather --write ~/.config/Claude/claude_desktop_config.json -- .venv/bin/weather
\b
Prints {"mcpServers": {NAME: {"command", "args", "env"}}}; --write FILE sets only mcpServers.NAME in FILE (created
if missing), keeping everything else. An empty FILE counts as {}. A FILE that is not a JSON object, or a directory,
is refused (exit 2, nothing written). Concurrent writers to one FILE take turns (a lock file beside it,
.FILE.lock; each waits at most 10 s), so no entry is lost.""",
)
@click.argument("name")
@click.argument("command", nargs=-1, metavar="[-- COMMAND [ARGS]...]")
@click.option(
    "--server", metavar="TARGET", help="Start path/to/server.py[:NAME] (or a module) with the runtime's runner."
)
@click.option("--python", metavar="PATH", help="With --server: the interpreter (default: this one).")
@click.option("--url", metavar="URL", help="A running streamable HTTP server, e.g. http://127.0.0.1:8000/mcp.")
@click.option("--env", "env", multiple=True, metavar="KEY=VALUE", help="An environment variable (repeatable).")
@click.option(
    "--write",
    "write",
    type=click.Path(path_type=Path),  # a directory is refused by merge_into_file: one `error:` line, not click's
    metavar="FILE",
    help="Merge the entry into this config file (atomically, under a lock) instead of printing it; empty = {}.",
)
def client_config(
    name: str,
    command: tuple[str, ...],
    server: str | None,
    python: str | None,
    url: str | None,
    env: tuple[str, ...],
    write: Path | None,
) -> None:
    """The mcpServers entry NAME of a desktop MCP client's config: printed, or merged into FILE with --write."""
    try:
        entry = _entry(command, server, python, url, env)
        if write is None:
            click.echo(config_document(name, entry), nl=False)
            return
        outcome = merge_into_file(write, name, entry)
    except ClientConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"{outcome} mcpServers.{name} in {write}")
