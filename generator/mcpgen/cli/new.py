"""The `mcpgen new NAME` command: scaffold an MCP server project (features.scaffold does the work).

Where it sits: registered by the `mcpgen` group in cli/__init__.py with `main.add_command(new.new)`; like every
command module it imports nothing from cli/__init__.py, so registering it cannot become a circular import. Bad
input (`ScaffoldError`) is one `error:` line and exit code 2, with nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..features.scaffold import (
    DEFAULT_PROTOCOL_VERSION,
    PROTOCOL_VERSIONS,
    TRANSPORTS,
    ScaffoldError,
    ScaffoldRequest,
    next_steps,
    scaffold,
)
from ..pipeline.spec_loader import ProjectPaths

EXIT_BAD_INPUT = 2  # as cli/__init__.py: 0 ok, 2 bad input


def _paths(context: click.Context) -> ProjectPaths:
    # Under `mcpgen`, the group has put ProjectPaths (with --templates-dir applied) in ctx.obj.
    paths = context.find_object(ProjectPaths)
    return paths if paths is not None else ProjectPaths.discover()


@click.command(
    epilog="""\b
Examples:
  mcpgen new weather                                  ./weather: stdio and HTTP, every example
  mcpgen new my-weather --dir ~/src/my-weather --transport stdio --template minimal
  mcpgen new weather --templates my-templates/        (my-templates/server.py.j2 overrides the built-in one)
  mcpgen new weather --auth                           HTTP protected by bearer tokens (MCP_AUTH_ISSUER, ...)
\b
Then, in any shell with python3 (the project's wheels/ holds the runtime, so mcpgen itself is not needed):
  cd weather && python3 -m venv .venv && .venv/bin/pip install --find-links wheels -e '.[test]' && .venv/bin/pytest""",
)
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    help="The project directory itself (default: ./NAME). Must be new or empty unless --force.",
)
@click.option("--transport", type=click.Choice(TRANSPORTS), default="both", show_default=True)
@click.option(
    "--protocol-version",
    type=click.Choice(PROTOCOL_VERSIONS),
    default=DEFAULT_PROTOCOL_VERSION,
    show_default=True,
    help="The MCP version of the bindings the project's typed code uses: 2026-07-28 (no handshake), or a version of "
    "the handshake era older clients use. The server serves both eras either way, and its tests run in both.",
)
@click.option(
    "--template", default="full", show_default=True, metavar="minimal|full", help="minimal, or full (every example)."
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty directory: overwrite the scaffold's own files only."
)
@click.option(
    "--templates",
    type=click.Path(file_okay=False, path_type=Path),
    help="Search this template directory first.",
)
@click.option(
    "--auth",
    is_flag=True,
    help="Protect the HTTP transport with OAuth bearer tokens (JWTs of the issuer in MCP_AUTH_ISSUER, for the "
    "resource in MCP_AUTH_RESOURCE).",
)
@click.pass_context
def new(
    context: click.Context,
    name: str,
    directory: Path | None,
    transport: str,
    protocol_version: str,
    template: str,
    force: bool,
    templates: Path | None,
    auth: bool,
) -> None:
    """Scaffold a new MCP server project NAME that runs, passes its own tests and talks to real clients."""
    target = directory if directory is not None else Path(name)
    request = ScaffoldRequest(name, template, transport, protocol_version, templates, auth)
    try:
        files = scaffold(request, target, _paths(context).templates, force=force)
    except ScaffoldError as error:
        click.echo(f"error: {error}", err=True)
        click.echo("nothing was written.", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"wrote {len(files)} files to {target}:")
    for relative in files:
        click.echo(f"  {relative}")
    click.echo(f"next: {next_steps(target)}")
