"""Wheels of the installed runtime and bindings, so that a scaffolded project installs on a machine that has only
``python3``: neither ``mcpgen-runtime`` nor ``mcpgen-bindings`` is on a package index yet, so ``mcpgen new`` puts
their wheels in the project's ``wheels/`` and the project installs with ``pip install --find-links wheels``.

Where it sits: a helper of ``scaffold``. It packs what this interpreter imports (an editable checkout or an
installed wheel alike: the package directory found by the import system, the ``METADATA`` of the installed
distribution), so no build backend, network or source tree is needed. The archive is reproducible: sorted
entries, a fixed timestamp, and a ``RECORD`` with every file's sha256 (the wheel format, PEP 427 / PEP 376).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .. import __version__

# 1980-01-01, the earliest time a zip entry can carry: the archive's bytes depend only on the files packed.
_FIXED_TIME: Final = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS: Final = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES: Final = (".pyc", ".pyo")


class WheelError(Exception):
    """The distribution cannot be packed (not installed, or its package cannot be found): one line."""


@dataclass(frozen=True, slots=True)
class ProjectWheel:
    """One distribution this interpreter has installed, packed as a wheel: its file name and bytes."""

    distribution: str
    version: str
    filename: str
    content: bytes


def pack_installed(distribution: str, package: str) -> ProjectWheel:
    """The pure-Python wheel of the installed ``distribution``, whose one import package is ``package``."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise WheelError(f"{distribution} is not installed in this Python ({package} cannot be packed)") from None
    metadata = dist.read_text("METADATA")
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if metadata is None or len(locations) != 1:
        raise WheelError(f"the installed {distribution} has no METADATA or no single {package} directory")
    package_dir = Path(locations[0])
    version = dist.version
    stem = f"{_wheel_name(distribution)}-{version}"
    files = {f"{package}/{path.relative_to(package_dir).as_posix()}": path.read_bytes() for path in _files(package_dir)}
    dist_info = f"{stem}.dist-info"
    files[f"{dist_info}/METADATA"] = metadata.encode("utf-8")
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: mcpgen {__version__}\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode()
    record_name = f"{dist_info}/RECORD"
    record = "".join(f"{name},sha256={_digest(data)},{len(data)}\n" for name, data in files.items())
    files[record_name] = (record + f"{record_name},,\n").encode()
    return ProjectWheel(distribution, version, f"{stem}-py3-none-any.whl", _zip(files))


def _files(package_dir: Path) -> list[Path]:
    return sorted(
        path
        for path in package_dir.rglob("*")
        if path.is_file()
        and not _SKIPPED_DIRS.intersection(path.relative_to(package_dir).parts)
        and not path.name.endswith(_SKIPPED_SUFFIXES)
    )


def _wheel_name(distribution: str) -> str:
    # The wheel file name uses the normalised distribution name with "_" for any run of "-", "_" or ".".
    return re.sub(r"[-_.]+", "_", distribution).lower()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():  # RECORD last, as the wheel format recommends
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()
