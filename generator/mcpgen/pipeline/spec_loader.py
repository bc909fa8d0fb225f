"""Stage 1: find the vendored spec, verify it against the manifest, apply known-defect patches.

Pipeline position: **load and verify** -> parse -> render -> format -> write.

The manifest (spec/manifest.json) records the sha256, upstream repository and upstream commit of
every vendored file. A file whose bytes differ from the manifest is refused, by name, before it is
parsed: what we generate from is exactly what upstream published, plus the patches we can account for.
"""

from __future__ import annotations

import hashlib
import keyword
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError, join_pointer
from ..json_input import read_spec_json
from .patches import apply_patch_file

MANIFEST_NAME = "manifest.json"
SCHEMA_NAME = "schema.json"
PATCHES_DIR = "patches"
# Extensions (spec/extensions/<name>/<revision>/schema.json) are not protocol versions: they add methods to one, so
# list_versions leaves them out and pipeline/extensions.py loads them (see docs/how-to/extensions.md).
EXTENSIONS_DIR = "extensions"


def module_name_for(version: str) -> str:
    """'2025-06-18' -> 'v2025_06_18'; 'draft' stays 'draft'."""
    if version[:1].isdigit():
        return "v" + version.replace("-", "_")
    return version.replace("-", "_")


def version_sort_key(version: str) -> tuple[int, str]:
    # Dated versions sort by date; named ones (draft) come after every dated one.
    return (0 if version[:1].isdigit() else 1, version)


@dataclass(frozen=True)
class ProjectPaths:
    """Where the spec, the templates and the output live."""

    spec: Path
    templates: Path
    generated: Path

    @classmethod
    def discover(cls) -> ProjectPaths:
        """The checkout this package was installed from (editable), else the bundled copies."""
        package = Path(__file__).resolve().parents[1]  # mcpgen/ (this module is mcpgen/pipeline/spec_loader.py)
        for root in (package.parent.parent, Path.cwd()):
            if (root / "spec" / MANIFEST_NAME).is_file() and (root / "templates").is_dir():
                return cls(root / "spec", root / "templates", root / "generated")
        bundled = package / "_bundled"
        return cls(bundled / "spec", bundled / "templates", Path.cwd() / "generated")


@dataclass(frozen=True)
class ManifestEntry:
    path: str  # relative to the spec directory
    sha256: str
    repository: str
    commit: str
    upstream_path: str


@dataclass(frozen=True)
class LoadedSpec:
    version: str
    label: str  # how messages name the file: spec/<version>/schema.json
    sha256: str
    document: dict[str, Any]  # after patches
    patches: tuple[str, ...]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_manifest_name(name: str, label: str) -> None:
    # Names are joined to the spec directory: an absolute path or '..' would verify files outside it.
    parts = name.split("/")
    if not name or "\0" in name or "\\" in name or any(part in ("", ".", "..") for part in parts):
        raise SpecError(label, join_pointer("/files", name), "a file name must be a relative path inside spec/")


def read_manifest(spec_dir: Path) -> dict[str, ManifestEntry]:
    label = f"spec/{MANIFEST_NAME}"
    path = spec_dir / MANIFEST_NAME
    if not path.is_file():
        raise SpecError(label, "", f"no manifest at {path}")
    raw = read_spec_json(path, label)
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict):
        raise SpecError(label, "/files", "the manifest needs a 'files' object")
    entries = {}
    for name, entry in files.items():
        _check_manifest_name(name, label)
        pointer = join_pointer("/files", name)
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("sha256", "repository", "commit")
        ):
            raise SpecError(label, pointer, "each file needs string 'sha256', 'repository' and 'commit'")
        entries[name] = ManifestEntry(
            path=name,
            sha256=entry["sha256"],
            repository=entry["repository"],
            commit=entry["commit"],
            upstream_path=str(entry.get("upstream_path", name)),
        )
    return entries


def list_versions(spec_dir: Path) -> list[str]:
    """Every version the manifest vendors a schema.json for, oldest first, draft last."""
    manifest = read_manifest(spec_dir)
    versions = {
        name.split("/")[0]
        for name in manifest
        if name.endswith("/" + SCHEMA_NAME) and not name.startswith(EXTENSIONS_DIR + "/")
    }
    for version in sorted(versions):
        module = module_name_for(version)
        if not module.isidentifier() or keyword.iskeyword(module):
            pointer = join_pointer("/files", f"{version}/{SCHEMA_NAME}")
            raise SpecError(f"spec/{MANIFEST_NAME}", pointer, f"version {version!r} cannot name a Python subpackage")
    return sorted(versions, key=version_sort_key)


def verify_file(spec_dir: Path, entry: ManifestEntry) -> None:
    path = spec_dir / entry.path
    label = f"spec/{entry.path}"
    try:
        if not path.is_file():
            raise SpecError(label, "", "listed in spec/manifest.json but missing")
        actual = sha256_of(path)
    except OSError as error:  # no permission, a name too long for the file system
        raise SpecError(label, "", f"cannot read {path}: {error.strerror or error}") from None
    if actual != entry.sha256:
        raise SpecError(
            label,
            "",
            f"sha256 mismatch: spec/manifest.json says {entry.sha256}, the file has {actual}. "
            "Vendored files are never edited by hand: fix defects with a patch in spec/patches/.",
        )


def verify_all(spec_dir: Path) -> None:
    for entry in read_manifest(spec_dir).values():
        verify_file(spec_dir, entry)


def load_version(spec_dir: Path, version: str) -> LoadedSpec:
    manifest = read_manifest(spec_dir)
    relative = f"{version}/{SCHEMA_NAME}"
    if relative not in manifest:
        known = ", ".join(list_versions(spec_dir))
        raise SpecError(f"spec/{relative}", "", f"unknown version {version!r}; vendored versions: {known}")
    return load_schema(spec_dir, manifest[relative], version, version)


def load_schema(spec_dir: Path, entry: ManifestEntry, version: str, patches: str) -> LoadedSpec:
    """One vendored schema, verified, with the patches of spec/patches/<patches>/ applied in name order
    (a protocol version's are under its version, an extension's under extensions/<name>/<revision>)."""
    label = f"spec/{entry.path}"
    verify_file(spec_dir, entry)
    document = read_spec_json(spec_dir / entry.path, label)
    if not isinstance(document, dict):
        raise SpecError(label, "", f"the schema root must be an object, not {type(document).__name__}")
    applied = []
    patch_dir = spec_dir / PATCHES_DIR / patches
    for patch_path in sorted(patch_dir.glob("*.json")) if patch_dir.is_dir() else []:
        patch_label = f"spec/{PATCHES_DIR}/{patches}/{patch_path.name}"
        document = apply_patch_file(document, patch_path, patch_label)
        applied.append(patch_label)
    return LoadedSpec(version, label, entry.sha256, document, tuple(applied))
