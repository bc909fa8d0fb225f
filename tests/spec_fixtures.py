"""Helpers for tests that need a spec directory of their own (not a test module; import it).

A spec directory, as mcpgen reads it::

    manifest.json                   {"files": {"<version>/schema.json": {"sha256": ..., ...}}}
    <version>/schema.json           the schema, hashed into the manifest
    patches/<version>/<name>.json   optional known-defect patches (see mcpgen/pipeline/patches.py)

`write_spec_dir` builds one in a temporary directory from a schema dict (or raw text, for
malformed JSON), computing each file's sha256 so that the hash check passes unless a test breaks it
on purpose. `minimal_schema` is the smallest schema that generates successfully, with one request
(`ping` -> EmptyResult), one request paired by name (`tools/call` -> CallToolResult) and one
notification, so a test can break exactly one thing in it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
VERSION = "2099-01-01"
REPOSITORY = "example/test-spec"
COMMIT = "0" * 40


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _request(method: str, params: str | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {"method": {"const": method, "type": "string"}}
    required = ["method"]
    if params is not None:
        properties["params"] = {"$ref": f"#/$defs/{params}"}
        required.append("params")
    return {"type": "object", "properties": properties, "required": required}


def minimal_schema(defs_key: str = "$defs") -> dict[str, Any]:
    """A fresh copy of a small valid MCP-like schema (2020-12 style `$defs` by default)."""
    ref = f"#/{defs_key}/"
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        defs_key: {
            "Result": {
                "type": "object",
                "description": "Base result.",
                "properties": {"_meta": {"type": "object", "additionalProperties": {}}},
            },
            "EmptyResult": {"$ref": ref + "Result"},
            "PingRequest": _request("ping"),
            "CallToolRequestParams": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                "required": ["name"],
            },
            "CallToolRequest": _request("tools/call", "CallToolRequestParams"),
            "CallToolResult": {
                "type": "object",
                "properties": {
                    "content": {"type": "array", "items": {"type": "string"}},
                    "isError": {"type": "boolean"},
                },
                "required": ["content"],
            },
            "InitializedNotification": _request("notifications/initialized"),
            "ClientRequest": {"anyOf": [{"$ref": ref + "PingRequest"}, {"$ref": ref + "CallToolRequest"}]},
            "ClientNotification": {"$ref": ref + "InitializedNotification"},
            "ServerResult": {"anyOf": [{"$ref": ref + "EmptyResult"}, {"$ref": ref + "CallToolResult"}]},
        },
    }
    if defs_key != "$defs":
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        for definition in schema[defs_key].values():
            _rewrite_refs(definition, "#/$defs/", ref)
    return copy.deepcopy(schema)


def _rewrite_refs(node: Any, old: str, new: str) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                node[key] = value.replace(old, new, 1)
            else:
                _rewrite_refs(value, old, new)
    elif isinstance(node, list):
        for item in node:
            _rewrite_refs(item, old, new)


def write_spec_dir(
    root: Path,
    schema: Any = None,
    *,
    raw: str | None = None,
    version: str = VERSION,
    patches: dict[str, Any] | None = None,
) -> Path:
    """Create `root` as a spec dir holding one version and return it.

    `schema` is dumped as JSON (default: `minimal_schema()`); `raw` is written verbatim instead
    (for invalid JSON). `patches` maps a file name to a patch object (or raw text) written under
    patches/<version>/. The manifest's sha256 always matches what was written.
    """
    text = raw if raw is not None else json.dumps(minimal_schema() if schema is None else schema, indent=2) + "\n"
    relative = f"{version}/schema.json"
    (root / version).mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")
    manifest = {
        "files": {
            relative: {
                "sha256": sha256_hex(text.encode("utf-8")),
                "repository": REPOSITORY,
                "commit": COMMIT,
                "upstream_path": f"schema/{relative}",
            }
        }
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    for name, patch in (patches or {}).items():
        patch_dir = root / "patches" / version
        patch_dir.mkdir(parents=True, exist_ok=True)
        patch_text = patch if isinstance(patch, str) else json.dumps(patch, indent=2) + "\n"
        (patch_dir / name).write_text(patch_text, encoding="utf-8")
    return root


def snapshot_tree(root: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every file under `root` (directories as b"<dir>"), for
    byte-for-byte before/after comparisons."""
    if not root.exists():
        return {}
    return {
        path.relative_to(root).as_posix(): (b"<dir>" if path.is_dir() else path.read_bytes())
        for path in sorted(root.rglob("*"))
    }
