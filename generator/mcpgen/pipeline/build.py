"""Runs stages 1-2 for one version: load and verify, parse, analyse -> a complete VersionIR.

Pipeline position: the front half of the pipeline; render.py takes it from here.
"""

from __future__ import annotations

from pathlib import Path

from .. import __version__
from ..ir import VersionIR
from .parser import SchemaParser
from .protocol import analyze_protocol
from .spec_loader import load_version, module_name_for


def build_version_ir(spec_dir: Path, version: str) -> VersionIR:
    spec = load_version(spec_dir, version)
    parser = SchemaParser(spec.document, spec.label)
    protocol = analyze_protocol(parser.parse(), parser.raw_definitions, spec.label)
    dialect = spec.document.get("$schema")
    return VersionIR(
        version=version,
        module=module_name_for(version),
        schema_path=spec.label,
        schema_sha256=spec.sha256,
        dialect=dialect if isinstance(dialect, str) else "",
        patches=spec.patches,
        definitions=tuple(protocol.definitions[name] for name in sorted(protocol.definitions)),
        methods=protocol.methods,
        union_slots=protocol.union_slots,
        error_codes=protocol.error_codes,
        generator_version=__version__,
    )
