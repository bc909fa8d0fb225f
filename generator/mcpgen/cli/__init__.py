"""The `mcpgen` command line: click commands that parse options, call features/ and pipeline/, and map errors.

Holds: this module, the group `main` (the console script `mcpgen = "mcpgen.cli:main"`, and `python -m mcpgen.cli`
through __main__.py) with the bindings commands `generate`, `ir` and `versions`; one module per other command,
named after it: `new`, `diff`, `render`, `spec` (the `spec fetch` group), `client_from_server`, `dev`,
`client_config`.
May import: everything below it (features/, pipeline/, the foundation). Nothing imports cli/. The command modules
never import this one (it imports them to register them), so registering a command cannot become an import cycle.
Exit codes: 0 ok, 1 drift (`generate --check`), 2 bad input with one `error:` line per problem and nothing written.

The group lives here rather than in a `cli/main.py`: `mcpgen.cli.main` would then name both a module and the
function. For the same reason the command modules are imported as modules (`diff.diff`), never by their
function's name, so `mcpgen.cli.diff` stays the module.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import click

from .. import __version__
from ..errors import SpecError, SpecErrors
from ..pipeline.extensions import extension_schemas
from ..pipeline.formatting import FormatError
from ..pipeline.generate import GenerationRequest, build_version, generate_files
from ..pipeline.output import OutputError, diff_tree, write_tree
from ..pipeline.render import TemplateRenderError
from ..pipeline.spec_loader import MANIFEST_NAME, ProjectPaths, list_versions, read_manifest
from . import client_config, client_from_server, dev, diff, new, render, spec

EXIT_OK, EXIT_DRIFT, EXIT_BAD_INPUT = 0, 1, 2


def _fail(error: SpecError | SpecErrors) -> None:
    problems = error.errors if isinstance(error, SpecErrors) else [error]
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{len(problems)} problem(s) in the input; nothing was written.", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _paths(context: click.Context) -> ProjectPaths:
    paths: ProjectPaths = context.obj
    return paths


@click.group(
    epilog="""\b
Examples:
  mcpgen generate                      regenerate generated/ for every vendored version
  mcpgen generate --check              exit 1 and print a diff if generated/ is stale
  mcpgen generate --version 2026-07-28 --out /tmp/bindings
  mcpgen ir --version 2026-07-28 | jq '.methods[].method'
  mcpgen versions
\b
Protocol versions: 2026-07-28, the current one (no handshake: every request carries its version in _meta), is what
the official clients negotiate by default and what `mcpgen new` scaffolds; 2024-11-05 .. 2025-11-25, the handshake
era (initialize), are what older clients use. Every version gets bindings, and a server serves both eras.
\b
Exit codes: 0 ok, 1 generated output is stale (--check), 2 bad input.""",
)
@click.version_option(__version__, prog_name="mcpgen")
@click.option(
    "--spec-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Vendored spec (default: spec/ of this checkout).",
)
@click.option(
    "--templates-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Built-in templates (default: templates/).",
)
@click.pass_context
def main(context: click.Context, spec_dir: Path | None, templates_dir: Path | None) -> None:
    """Generate typed Python bindings for the Model Context Protocol from its JSON Schema."""
    paths = ProjectPaths.discover()
    context.obj = dataclasses.replace(paths, spec=spec_dir or paths.spec, templates=templates_dir or paths.templates)


@main.command(
    epilog="""\b
Examples:
  mcpgen generate
  mcpgen generate --check
  mcpgen generate --version 2026-07-28 --version 2025-11-25 --out build/bindings
  mcpgen generate --templates my-templates/   (my-templates/models.py.j2 overrides the built-in one)""",
)
@click.option("--version", "versions", multiple=True, metavar="V", help="Only this version (repeatable). Default: all.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Output directory (default: generated/).")
@click.option("--check", is_flag=True, help="Write nothing; print a unified diff and exit 1 if the output is stale.")
@click.option(
    "--templates",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Search this template directory first.",
)
@click.pass_context
def generate(
    context: click.Context, versions: tuple[str, ...], out: Path | None, check: bool, templates: Path | None
) -> None:
    """Regenerate the bindings package (mcp_bindings) from the vendored schemas."""
    paths = _paths(context)
    target = out or paths.generated
    try:
        files = generate_files(GenerationRequest(paths, versions, templates))
    except (SpecError, SpecErrors) as error:
        _fail(error)
    except (TemplateRenderError, FormatError) as error:
        # A broken template (usually a user's --templates) is bad input too, not drift.
        click.echo(f"error: template: {error}", err=True)
        click.echo("1 problem in the templates; nothing was written.", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        if check:
            _check(target, files)
            return
        changed = write_tree(target, files)
    except OutputError as error:
        click.echo(f"error: {error}; nothing was written.", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"wrote {len(changed)} changed file(s) of {len(files)} to {target}")


def _check(target: Path, files: dict[str, str]) -> None:
    diff = diff_tree(target, files)
    if diff:
        sys.stdout.writelines(diff)
        click.echo(f"\n{target} is stale. Regenerate with: mcpgen generate (or nox -s update_golden)", err=True)
        sys.exit(EXIT_DRIFT)
    click.echo(f"{target} is up to date ({len(files)} files).")


@main.command(epilog="Example:\n\n  mcpgen ir --version 2026-07-28 > ir.json")
@click.option(
    "--version",
    required=True,
    metavar="V",
    help="The schema version, e.g. 2026-07-28 (the current one), 2025-11-25 or draft.",
)
@click.pass_context
def ir(context: click.Context, version: str) -> None:
    """Print the intermediate representation of one version as JSON."""
    try:
        version_ir = build_version(_paths(context).spec, version)
    except (SpecError, SpecErrors) as error:
        _fail(error)
    click.echo(json.dumps(dataclasses.asdict(version_ir), indent=2))


@main.command(epilog="Example:\n\n  mcpgen versions")
@click.pass_context
def versions(context: click.Context) -> None:
    """List the vendored schema versions with their sha256 and upstream commit."""
    spec_dir = _paths(context).spec
    try:
        manifest = read_manifest(spec_dir)
        names = list_versions(spec_dir)
        extensions = extension_schemas(spec_dir)
    except SpecError as error:
        _fail(error)
    for version in names:
        entry = manifest[f"{version}/schema.json"]
        click.echo(f"{version:<12} {entry.sha256}  {entry.repository}@{entry.commit[:12]}")
    for label, schema in extensions:
        vendored = manifest.get(schema)
        where = (
            f"{vendored.sha256}  {vendored.repository}@{vendored.commit[:12]}" if vendored else "not in the manifest"
        )
        click.echo(f"extension {label}: spec/{schema} {where}")
    counted = f"{len(extensions)} extension{'' if len(extensions) == 1 else 's'}"
    click.echo(f"({len(names)} versions; {counted}; manifest: {spec_dir / MANIFEST_NAME})")


# Commands that live in modules of their own.
main.add_command(new.new)
main.add_command(spec.spec)
main.add_command(diff.diff)
main.add_command(render.render)
main.add_command(client_from_server.client_from_server)
main.add_command(dev.dev)
main.add_command(client_config.client_config)
