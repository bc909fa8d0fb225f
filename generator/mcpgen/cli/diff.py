"""The `mcpgen diff A B` command: what changed between two vendored schema versions.

Pipeline position: beside the group in cli/__init__.py (which registers it with `main.add_command(diff.diff)`);
builds both IRs with pipeline.generate.build_version and prints pipeline.ir_diff's text, markdown or JSON rendering.

Kept out of cli/__init__.py so that file stays one screenful per command; it imports nothing from
cli/__init__.py, so the group can import this module at any point without a cycle.
"""

from __future__ import annotations

import sys

import click

from ..errors import SpecError, SpecErrors
from ..ir import VersionIR
from ..pipeline.generate import build_version
from ..pipeline.ir_diff import FORMATS, RENDERERS, diff_irs
from ..pipeline.spec_loader import ProjectPaths

EXIT_BAD_INPUT = 2  # as cli/__init__.py: 0 ok, 2 bad input (a diff is a report, so differences are not a failure)


def _build_both(spec: ProjectPaths, old: str, new: str) -> tuple[VersionIR, VersionIR]:
    """Both IRs, or SpecErrors with the problems of both versions, so one run reports everything."""
    irs: list[VersionIR] = []
    problems: list[SpecError] = []
    for version in (old, new):
        try:
            irs.append(build_version(spec.spec, version))
        except SpecErrors as many:
            problems.extend(many.errors)
        except SpecError as one:
            problems.append(one)
    if problems:
        raise SpecErrors(problems)
    return irs[0], irs[1]


@click.command(
    epilog="""\b
Examples:
  mcpgen diff 2025-11-25 2026-07-28             what the current protocol changed
  mcpgen diff 2025-11-25 2026-07-28 --format markdown
  mcpgen diff 2025-06-18 draft --format json | jq '.methods_added[].method'
\b
Exit codes: 0 ok (differences are not an error), 2 bad input (e.g. an unknown version).""",
)
@click.argument("old")
@click.argument("new")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.pass_context
def diff(context: click.Context, old: str, new: str, output_format: str) -> None:
    """Show what changed from schema version OLD to NEW: methods, pairings, definitions."""
    # Under `mcpgen` the group has resolved --spec-dir into a ProjectPaths; alone, use this checkout's.
    paths = context.find_object(ProjectPaths) or ProjectPaths.discover()
    try:
        old_ir, new_ir = _build_both(paths, old, new)
    except SpecErrors as error:
        # The same shape as cli/__init__.py's _fail: one "error: file#pointer: message" line per problem.
        for problem in error.errors:
            click.echo(f"error: {problem}", err=True)
        click.echo(f"{len(error.errors)} problem(s) in the input; nothing was compared.", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(RENDERERS[output_format](diff_irs(old_ir, new_ir)), nl=False)
