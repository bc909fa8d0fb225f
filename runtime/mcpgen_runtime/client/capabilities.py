"""Capabilities as dotted paths (``"resources.subscribe"``): whether one is declared, declaring one, and merging the
user's ``capabilities`` over the advertised ones.

Where it sits: in the ``client`` layer; pure functions over JSON, used by the request path (gating a call by the
server's capabilities), the handlers (advertising what they answer) and ``modern`` (the ``_meta`` capabilities).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["has_path", "merge_capabilities", "set_path"]


def has_path(capabilities: Mapping[str, Any], path: str) -> bool:
    """Whether a dotted capability path is declared: present and not null/false (``"subscribe": false`` is a no)."""
    node: Any = capabilities
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node is not None and node is not False


def set_path(capabilities: dict[str, Any], path: str) -> None:
    node = capabilities
    for part in path.split("."):
        node = node.setdefault(part, {})


def merge_capabilities(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge_capabilities(base[key], value)
        else:
            base[key] = value
    return base
