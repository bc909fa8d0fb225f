"""Stage 2c: version facts across every version: the IRs joined with the reviewed overlay spec/overlay/versions.json.

Pipeline position: load -> parse -> protocol (each version's IR) -> **version facts (all versions)** -> render
(mcp_bindings/protocol_facts.py).

The schemas say which methods a version has, in which direction, behind which capability, and whether it has
JSON-RPC batches. They cannot say which versions a runtime serves, which era each belongs to (2026-07-28
basic/versioning "Terminology"), which code answers a missing resource, or which `_meta` keys and error codes the
modern era names: the overlay does, each entry citing the specification text, and this module checks it against
the IRs (every vendored version classified, every named error code defined by every modern schema). Without an
overlay (a golden case, a user's own spec directory) there are no facts and no protocol_facts.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..errors import SpecError, SpecErrors, join_pointer
from ..ir import Era, NamedConstant, ProtocolFacts, ServedVersion, VersionIR
from ..json_input import read_spec_json

OVERLAY_PATH = "overlay/versions.json"  # relative to the spec directory
ERAS: tuple[Era, ...] = ("legacy", "modern")
BATCH_DEFINITION = "JSONRPCBatchRequest"
PROGRESS = "notifications/progress"


def overlay_file(spec_dir: Path) -> Path | None:
    path = spec_dir / OVERLAY_PATH
    return path if path.is_file() else None


class _Checker:
    def __init__(self, label: str) -> None:
        self.label = label
        self.errors: list[SpecError] = []

    def fail(self, pointer: str, message: str) -> None:
        self.errors.append(SpecError(self.label, pointer, message))

    def entries(self, raw: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
        """The object `key` of the overlay, each of its values an object with an `evidence` string."""
        value = raw.get(key)
        if not isinstance(value, dict):
            self.fail(f"/{key}", f"the overlay needs a {key!r} object")
            return {}
        found = {}
        for name, entry in value.items():
            pointer = join_pointer(f"/{key}", name)
            if not isinstance(entry, dict):
                self.fail(pointer, "an entry must be an object")
            elif not isinstance(entry.get("evidence"), str) or not entry["evidence"].strip():
                self.fail(join_pointer(pointer, "evidence"), "every entry must cite its evidence")
            else:
                found[name] = entry
        return found

    def typed(self, entry: dict[str, Any], pointer: str, key: str, kind: type) -> Any:
        value = entry.get(key)
        # bool is an int: a code of `true` is refused, a flag of 1 too.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(join_pointer(pointer, key), f"{key!r} must be {'a string' if kind is str else kind.__name__}")
            return None
        return value


def _methods(ir: VersionIR, kind: str, direction: str, delivery: str = "jsonrpc") -> tuple[str, ...]:
    return tuple(
        sorted(
            m.method
            for m in ir.methods
            if m.kind == kind and m.direction in (direction, "both") and m.delivery == delivery
        )
    )


def _has_progress_message(ir: VersionIR) -> bool:
    params = next((m.params_type for m in ir.methods if m.method == PROGRESS), None)
    return params is not None and any(f.wire_name == "message" for f in ir.definition(params).fields)


def _served(ir: VersionIR, entry: dict[str, Any], era: Era, resource_not_found: int, priming: bool) -> ServedVersion:
    return ServedVersion(
        version=ir.version,
        era=era,
        json_rpc_batches=any(d.name == BATCH_DEFINITION for d in ir.definitions),
        sse_priming_events=priming,
        progress_messages=_has_progress_message(ir),
        resource_not_found=resource_not_found,
        client_requests=_methods(ir, "request", "client_to_server"),
        server_requests=_methods(ir, "request", "server_to_client"),
        client_notifications=_methods(ir, "notification", "client_to_server"),
        server_notifications=_methods(ir, "notification", "server_to_client"),
        input_requests=_methods(ir, "request", "server_to_client", "input_request"),
        capabilities=tuple(sorted((m.method, m.capability) for m in ir.methods if m.capability is not None)),
        evidence=entry["evidence"],
    )


def _version(check: _Checker, ir: VersionIR, entry: dict[str, Any]) -> ServedVersion | None:
    pointer = join_pointer("/versions", ir.version)
    if check.typed(entry, pointer, "served", bool) is not True:
        return None
    era = entry.get("era")
    if era not in ERAS:
        check.fail(join_pointer(pointer, "era"), f"'era' must be one of {', '.join(ERAS)}")
        return None
    code = check.typed(entry, pointer, "resource_not_found", int)
    priming = check.typed(entry, pointer, "sse_priming_events", bool)
    if code is None or priming is None:
        return None
    if code not in {c.code for c in ir.error_codes}:
        check.fail(join_pointer(pointer, "resource_not_found"), f"{code} is no error code of {ir.schema_path}")
    return _served(ir, entry, era, code, priming)


def _constants(check: _Checker, raw: dict[str, Any], key: str, value_key: str, kind: type) -> list[NamedConstant]:
    constants = []
    for name, entry in sorted(check.entries(raw, key).items()):
        pointer = join_pointer(f"/{key}", name)
        if not name.isidentifier() or name.upper() != name:
            check.fail(pointer, "a name must be an UPPER_CASE Python identifier")
            continue
        value = check.typed(entry, pointer, value_key, kind)
        if value is not None:
            constants.append(NamedConstant(name, value, entry["evidence"]))
    return constants


def _check_error_codes(
    check: _Checker, raw: dict[str, Any], codes: list[NamedConstant], modern: list[VersionIR]
) -> None:
    """Each named code must be defined, as that definition's constant code, by every modern version's schema."""
    for constant in codes:
        definition = raw["modern_error_codes"][constant.name].get("definition")
        pointer = join_pointer("/modern_error_codes", constant.name)
        if not isinstance(definition, str):
            check.fail(join_pointer(pointer, "definition"), "'definition' must name the schema's error definition")
            continue
        for ir in modern:
            if not any(
                c.code == constant.value and c.source == f"schema definition {definition}" for c in ir.error_codes
            ):
                check.fail(pointer, f"{ir.schema_path} has no {definition} with code {constant.value}")


def build_protocol_facts(spec_dir: Path, irs: list[VersionIR]) -> ProtocolFacts | None:
    """The facts of every version in `irs` (all the vendored ones), or None without an overlay. Raises SpecErrors,
    naming the overlay and the JSON pointer of each problem."""
    path = overlay_file(spec_dir)
    if path is None:
        return None
    label = f"spec/{OVERLAY_PATH}"
    raw = read_spec_json(path, label)
    check = _Checker(label)
    if not isinstance(raw, dict):
        raise SpecError(label, "", "the overlay must be a JSON object")
    entries = check.entries(raw, "versions")
    served: list[ServedVersion] = []
    unserved: list[str] = []
    for ir in irs:
        entry = entries.get(ir.version)
        if entry is None:
            if "versions" in raw:
                check.fail(join_pointer("/versions", ir.version), f"vendored version {ir.version} has no entry")
            continue
        facts = _version(check, ir, entry)
        if facts is not None:
            served.append(facts)
        elif entry.get("served") is False:
            unserved.append(ir.version)
    for version in sorted(set(entries) - {ir.version for ir in irs}):
        check.fail(join_pointer("/versions", version), f"{version} is not vendored (spec/manifest.json)")
    meta_keys = _constants(check, raw, "modern_meta_keys", "key", str)
    error_codes = _constants(check, raw, "modern_error_codes", "code", int)
    by_version = {ir.version: ir for ir in irs}
    _check_error_codes(check, raw, error_codes, [by_version[s.version] for s in served if s.era == "modern"])
    if check.errors:
        raise SpecErrors(check.errors)
    modern = [set(s.client_requests) for s in served if s.era == "modern"]
    in_legacy = {method for s in served if s.era == "legacy" for method in s.client_requests}
    modern_only = set.intersection(*modern) - in_legacy if modern else set()
    return ProtocolFacts(
        overlay_path=label,
        overlay_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        served=tuple(served),
        unserved=tuple(unserved),
        modern_only_methods=tuple(sorted(modern_only)),
        meta_keys=tuple(meta_keys),
        error_codes=tuple(error_codes),
    )
