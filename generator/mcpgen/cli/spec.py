"""The `mcpgen spec` command group: `mcpgen spec fetch` updates the vendored spec from upstream.

Pipeline position: in front of the pipeline. It drives spec_fetch (download, check, install into
spec/) and, with --regenerate, pipeline.generate.generate_files + pipeline.output.write_tree like `mcpgen generate`.

cli/__init__.py registers the group (`main.add_command(spec.spec)`); this module does not import
cli/__init__.py so that registration cannot become a circular import. Bad input and failed downloads exit 2, as
for every command.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import NoReturn

import click

from ..errors import SpecError, SpecErrors
from ..features.spec_fetch import (
    DEFAULT_REF,
    DEFAULT_REPOSITORY,
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    FetchError,
    check_sha256,
    fetch,
    install,
    source_for,
    verify,
)
from ..pipeline.formatting import FormatError
from ..pipeline.generate import GenerationRequest, generate_files
from ..pipeline.output import OutputError, write_tree
from ..pipeline.render import TemplateRenderError
from ..pipeline.spec_loader import ProjectPaths

EXIT_BAD_INPUT = 2


def _fail(message: str, consequence: str = "spec/ was not changed") -> NoReturn:
    click.echo(f"error: {message}; {consequence}.", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _paths(context: click.Context) -> ProjectPaths:
    # Under `mcpgen`, the parent group has put ProjectPaths (with --spec-dir applied) in ctx.obj.
    paths = context.find_object(ProjectPaths)
    return paths if paths is not None else ProjectPaths.discover()


@click.group()
def spec() -> None:
    """Manage the vendored spec (spec/ and spec/manifest.json)."""


@spec.command(
    "fetch",
    epilog=f"""\b
Examples:
  mcpgen spec fetch 2025-11-25                       from github.com/{DEFAULT_REPOSITORY} at {DEFAULT_REF}
  mcpgen spec fetch draft --ref 0123abcd... --regenerate
  mcpgen spec fetch 2025-11-25 --verify 268a5f82...  refuse a schema with another sha256
  mcpgen spec fetch 2026-07-28 --from https://example.org/mcp-spec   (<URL>/<V>/schema.json, examples/index.json)
  mcpgen spec fetch 2026-07-28 --from ../modelcontextprotocol/schema  (a directory laid out like spec/)
\b
Exit codes: 0 ok, 2 bad input or a failed download (spec/ unchanged).""",
)
@click.argument("version", metavar="VERSION|draft")
@click.option("--from", "origin", metavar="URL|DIR", help="Another source: a base URL or a local directory.")
@click.option(
    "--ref",
    metavar="GIT_REF",
    help=f"Branch, tag or commit of the official repository (default: {DEFAULT_REF}); with --from, recorded as the commit.",
)
@click.option("--verify", "expected", metavar="SHA256", help="Refuse a schema.json whose sha256 is different.")
@click.option("--regenerate", is_flag=True, help="Run `mcpgen generate` afterwards.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory for --regenerate (default: generated/).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1, max=MAX_TIMEOUT),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Deadline for the whole download: the schema and every example (connect, headers and bodies).",
)
@click.pass_context
def fetch_command(
    context: click.Context,
    version: str,
    origin: str | None,
    ref: str | None,
    expected: str | None,
    regenerate: bool,
    out: Path | None,
    timeout: float,
) -> None:
    """Download VERSION's schema.json (and examples) into spec/VERSION/ and update spec/manifest.json."""
    paths = _paths(context)
    try:
        expected_sha256 = check_sha256(expected) if expected is not None else None
        source = source_for(origin, ref)
        fetched = fetch(source, version, timeout)
        verify(fetched, expected_sha256)
        install(paths.spec, fetched)
    except FetchError as error:
        _fail(str(error))
    except SpecError as error:  # the existing manifest is broken
        _fail(str(error))
    except OSError as error:  # writing into spec/ failed; install() has restored the old tree
        _fail(f"cannot write into {paths.spec}: {error}")
    examples = len(fetched.files) - 1
    schema = next(item for item in fetched.files if item.relative == "schema.json")
    click.echo(
        f"fetched {version} from {fetched.repository}@{fetched.commit}: schema.json and {examples} example(s) "
        f"into {paths.spec / version}"
    )
    click.echo(f"sha256 {schema.upstream_path}: {hashlib.sha256(schema.data).hexdigest()}")
    if regenerate:
        _regenerate(paths, out or paths.generated)


def _regenerate(paths: ProjectPaths, target: Path) -> None:
    # The new schema is installed even if it does not generate: upstream defects are fixed by a
    # patch in spec/patches/<version>/, which needs the vendored file in place.
    consequence = "spec/ was updated, the bindings were not written (add a patch in spec/patches/, then generate)"
    try:
        files = generate_files(GenerationRequest(paths))
    except SpecErrors as many:
        for problem in many.errors[:-1]:
            click.echo(f"error: {problem}", err=True)
        _fail(str(many.errors[-1]), consequence)
    except SpecError as error:
        _fail(str(error), consequence)
    except (TemplateRenderError, FormatError) as error:
        _fail(f"template: {error}", consequence)
    try:
        changed = write_tree(target, files)
    except OutputError as error:
        _fail(str(error), consequence)
    click.echo(f"wrote {len(changed)} changed file(s) of {len(files)} to {target}")
