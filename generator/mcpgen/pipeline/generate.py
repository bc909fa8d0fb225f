"""The whole pipeline in order, as one call: load -> parse -> render -> format.

Pipeline position: the single entry point the CLI, the tests and the benchmarks use. `build_irs` is
the front half on its own, shared with `mcpgen render` (features/targets.py), which renders other template sets.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import TOO_DEEP_FOR_MCPGEN, SpecError, SpecErrors
from ..ir import VersionIR
from .build import build_version_ir
from .extensions import build_extension_ir, list_extensions
from .formatting import ChunkFormatter
from .ir_diff import CHANGES_PATH, render_changes_file
from .render import (
    make_environment,
    render_extension,
    render_extensions_package,
    render_facts,
    render_package,
    render_version,
)
from .spec_loader import MANIFEST_NAME, ProjectPaths, list_versions, verify_all
from .version_facts import build_protocol_facts


@dataclass(frozen=True)
class GenerationRequest:
    paths: ProjectPaths
    versions: tuple[str, ...] = ()  # empty: every vendored version
    extra_templates: Path | None = None


def build_version(spec_dir: Path, version: str) -> VersionIR:
    """build.build_version_ir, with a schema that exhausts the recursion limit refused as bad input."""
    try:
        return build_version_ir(spec_dir, version)
    except RecursionError:
        raise SpecError(f"spec/{version}/schema.json", "", TOO_DEEP_FOR_MCPGEN) from None


def _selected_versions(spec_dir: Path, versions: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(the versions to build, every vendored version), after verifying every vendored file."""
    all_versions = list_versions(spec_dir)
    verify_all(spec_dir)
    selected = list(versions) or all_versions
    unknown = [version for version in selected if version not in all_versions]
    if unknown:
        raise SpecError(
            "spec/manifest.json",
            "/files",
            f"unknown version(s) {', '.join(unknown)}; vendored: {', '.join(all_versions)}",
        )
    return selected, all_versions


def _built_versions(spec_dir: Path, selected: list[str]) -> Iterator[VersionIR]:
    """The IR of each version in turn. Raises SpecErrors at the end for bad input, after collecting the
    errors of every version (the IRs yielded before an error are then of no use)."""
    errors: list[SpecError] = []
    for version in selected:
        try:
            ir = build_version(spec_dir, version)
        except SpecErrors as many:
            errors.extend(many.errors)
        except SpecError as one:
            errors.append(one)
        else:
            if not errors:
                yield ir
    if errors:
        raise SpecErrors(errors)


def build_irs(spec_dir: Path, versions: tuple[str, ...]) -> tuple[list[VersionIR], list[str]]:
    """(the IR of every selected version, every vendored version). Raises SpecErrors for bad input,
    after collecting the errors of every version."""
    selected, all_versions = _selected_versions(spec_dir, versions)
    return list(_built_versions(spec_dir, selected)), all_versions


def generate_files(request: GenerationRequest) -> dict[str, str]:
    """Every generated file as {path relative to the output dir: text}. Raises SpecErrors for bad
    input, after collecting the errors of every version, before anything is written.

    Each version is handed to the formatter as soon as it is rendered, so black (in worker processes)
    formats one version while the next is parsed and rendered."""
    spec_dir = request.paths.spec
    selected, all_versions = _selected_versions(spec_dir, request.versions)
    template_dirs = [request.extra_templates] if request.extra_templates else []
    template_dirs.append(request.paths.templates / "bindings")
    environment = make_environment(template_dirs)
    manifest_sha256 = hashlib.sha256((spec_dir / MANIFEST_NAME).read_bytes()).hexdigest()
    formatter = ChunkFormatter()
    try:
        irs = []
        for ir in _built_versions(spec_dir, selected):
            irs.append(ir)
            formatter.add(render_version(environment, ir))
        formatter.add(render_package(environment, all_versions, manifest_sha256))
        by_version = {ir.version: ir for ir in irs}
        if len(all_versions) > 1 and set(by_version) == set(all_versions):
            # The changelog compares consecutive versions, so it is written only when every version is
            # generated (a partial run leaves it alone) and only when there is a pair to compare.
            ordered = [by_version[version] for version in all_versions]
            formatter.add({CHANGES_PATH: render_changes_file(ordered, manifest_sha256)})
        if set(by_version) == set(all_versions):
            # Facts span every version, so, like the changelog, only a complete run writes them.
            facts = build_protocol_facts(spec_dir, [by_version[version] for version in all_versions])
            if facts is not None:
                formatter.add(render_facts(environment, facts))
            # An extension imports its base version's models: generated with every version, like the facts.
            extensions = [build_extension_ir(spec_dir, name) for name in list_extensions(spec_dir)]
            for extension in extensions:
                formatter.add(render_extension(environment, extension))
            if extensions:
                formatter.add(render_extensions_package(environment, extensions, manifest_sha256))
        return formatter.finish()
    finally:
        formatter.close()
