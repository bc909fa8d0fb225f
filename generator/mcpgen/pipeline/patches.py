"""Known-defect patches for vendored schemas: JSON-pointer edits that test the old value first.

Pipeline position: applied by spec_loader right after the hash check, before parsing.

A patch file (spec/patches/<version>/<name>.json) looks like::

    {"description": "...", "evidence": "...",
     "operations": [{"op": "replace", "path": "/$defs/X/type", "old": "integer", "new": "number"}]}

`replace` requires the current value to equal `old`; `add` requires the path to be absent. So once
upstream fixes (or changes) the schema, the patch fails loudly instead of silently editing
something else.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from ..errors import SpecError, join_pointer
from ..json_input import nesting_error, read_spec_json

_MISSING = object()
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,8}")  # 9 digits: more items than any list holds


def _split_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {pointer!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def _step(container: Any, token: str) -> Any:
    if isinstance(container, dict):
        return container.get(token, _MISSING)
    # RFC 6901 array indices are ASCII digits without leading zeros ('01' and '١' are not indices).
    if isinstance(container, list) and _ARRAY_INDEX.fullmatch(token) and int(token) < len(container):
        return container[int(token)]
    return _MISSING


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at `pointer`, or raise KeyError naming the first missing token."""
    node = document
    for token in _split_pointer(pointer):
        node = _step(node, token)
        if node is _MISSING:
            raise KeyError(token)
    return node


def _apply_operation(document: Any, operation: dict[str, Any], label: str, index: int) -> None:
    where = f"/operations/{index}"
    op = operation.get("op")
    path = operation.get("path")
    if op not in ("replace", "add") or not isinstance(path, str) or "new" not in operation:
        raise SpecError(label, where, "an operation needs 'op' (replace|add), 'path' and 'new'")
    try:
        tokens = _split_pointer(path)
    except ValueError as error:
        raise SpecError(label, where + "/path", str(error)) from None
    if not tokens:
        raise SpecError(label, where + "/path", "a patch cannot replace the whole document")
    try:
        parent = resolve_pointer(document, join_pointer("", *tokens[:-1]))
    except KeyError as missing:
        raise SpecError(label, where, f"path {path} does not exist in the schema (no {missing})") from None
    last = tokens[-1]
    current = _step(parent, last)
    if op == "replace":
        if "old" not in operation:
            raise SpecError(label, where, "'replace' needs the expected 'old' value")
        if current is _MISSING:
            raise SpecError(label, where, f"path {path} does not exist in the schema")
        if current != operation["old"]:
            raise SpecError(
                label,
                where,
                f"old value at {path} no longer matches: expected {json.dumps(operation['old'])}, "
                f"found {json.dumps(current)}. Upstream changed; review or drop this patch.",
            )
    elif current is not _MISSING:
        raise SpecError(label, where, f"'add' target {path} already exists: {json.dumps(current)}")
    if isinstance(parent, dict):
        parent[last] = copy.deepcopy(operation["new"])
    elif isinstance(parent, list) and current is not _MISSING:
        parent[int(last)] = copy.deepcopy(operation["new"])
    elif isinstance(parent, list):
        # Only existing items can be set: RFC 6902's insert-and-shift ('-' or an index) is not supported.
        raise SpecError(label, where, f"cannot add {path}: an array item can only be replaced, not added")
    else:
        raise SpecError(label, where, f"cannot set {path}: parent is not an object or array")


def apply_patch_file(document: Any, patch_path: Path, label: str) -> Any:
    """Return a patched deep copy of `document`; raise SpecError naming the patch and pointer."""
    patch = read_spec_json(patch_path, label)
    if not isinstance(patch, dict) or not isinstance(patch.get("operations"), list):
        raise SpecError(label, "", "a patch file is an object with an 'operations' array")
    if not patch.get("evidence"):
        raise SpecError(label, "/evidence", "every patch must cite its evidence")
    patched = copy.deepcopy(document)
    for index, operation in enumerate(patch["operations"]):
        if not isinstance(operation, dict):
            raise SpecError(label, f"/operations/{index}", "an operation must be an object")
        _apply_operation(patched, operation, label, index)
    # Each 'new' value is shallow (read_spec_json checked the file), but operations can stack one inside
    # another; the patched schema must stay as shallow as a vendored one.
    too_deep = nesting_error(patched)
    if too_deep is not None:
        raise SpecError(label, "/operations", f"the patched schema at {too_deep.pointer} is {too_deep.message}")
    return patched
