"""`mcpgen render`: the command that renders a custom template set (a target) against the IR.

Pipeline position: drives pipeline.generate.build_irs -> features.targets.render_target -> (black, if the
target asks) -> pipeline.output.write_tree. A click command on its own, added to the `mcpgen` group in
cli/__init__.py with `main.add_command(render.render)`; bad input of any kind (template directory, manifest, template, version,
spec) is exit code 2 with nothing written, as for `generate`.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import NoReturn

import click

from ..errors import SpecError, SpecErrors
from ..features.targets import TargetError, load_target, render_target, resolve_target_dir
from ..pipeline.formatting import FormatError, format_files
from ..pipeline.generate import build_irs
from ..pipeline.output import OutputError, write_tree
from ..pipeline.render import TemplateRenderError
from ..pipeline.spec_loader import MANIFEST_NAME, ProjectPaths

EXIT_BAD_INPUT = 2


def _bad_input(problems: list[str], what: str) -> NoReturn:
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    click.echo(f"{len(problems)} problem(s) in the {what}; nothing was written.", err=True)
    sys.exit(EXIT_BAD_INPUT)


@click.command(
    epilog="""\b
Examples:
  mcpgen render --template typescript --out build/ts        (the built-in templates/targets/typescript)
  mcpgen render --template my-target/ --out out/ --version 2025-06-18 --version 2026-07-28
\b
A template set is a directory with target.toml (or target.json) naming its templates and output
paths; see docs/how-to/templates.md for the manifest and the context templates receive.
Exit codes: 0 ok, 2 bad input (template set, manifest, template, version); nothing is written then.""",
)
@click.option(
    "--template",
    "template_dir",
    required=True,
    metavar="DIR",
    type=click.Path(path_type=Path),
    help="A template set: a directory with target.toml or target.json, or a built-in target's name.",
)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output directory.")
@click.option("--version", "versions", multiple=True, metavar="V", help="Only this version (repeatable). Default: all.")
@click.pass_context
def render(context: click.Context, template_dir: Path, out: Path, versions: tuple[str, ...]) -> None:
    """Render a custom template set (TypeScript, docs, ...) against the IR of every version."""
    # Under the `mcpgen` group the paths come from --spec-dir/--templates-dir; standalone, from the checkout.
    paths = context.obj if isinstance(context.obj, ProjectPaths) else ProjectPaths.discover()
    try:
        # The manifest first: it is cheap, and a typo there should not wait for every schema to parse.
        target = load_target(resolve_target_dir(template_dir, paths.templates))
        irs, _ = build_irs(paths.spec, tuple(dict.fromkeys(versions)))
        manifest_sha256 = hashlib.sha256((paths.spec / MANIFEST_NAME).read_bytes()).hexdigest()
        files = render_target(target, irs, manifest_sha256)
        if target.format == "black":
            files = format_files(files)
    except TargetError as error:
        _bad_input([str(error)], "template set")
    except SpecErrors as error:
        _bad_input([str(problem) for problem in error.errors], "input")
    except SpecError as error:
        _bad_input([str(error)], "input")
    except (TemplateRenderError, FormatError) as error:
        _bad_input([f"template: {error}"], "templates")
    try:
        changed = write_tree(out, files)
    except OutputError as error:
        _bad_input([str(error)], "output directory")
    click.echo(f"wrote {len(changed)} changed file(s) of {len(files)} to {out} (target {target.name})")
