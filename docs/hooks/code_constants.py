"""The module-level constants of mcpgen's source: found in the source (``ast``, which also gives the comment above or
after each, or the docstring under it: what the code says about it) and valued by importing its module. The settings page lists the ``DEFAULT_*`` / ``MAX_*`` ones, the errors page those that
hold an error code; ``cell`` and ``code`` put text into a Markdown table.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# The source roots scanned for constants: (import root, folder), as installed in the venv.
PACKAGES = (("mcpgen_runtime", REPO / "runtime" / "mcpgen_runtime"), ("mcpgen", REPO / "generator" / "mcpgen"))
SETTING_NAME = re.compile(r"^(DEFAULT|MAX)_[A-Z0-9_]+$")


@dataclass(frozen=True)
class Constant:
    module: str
    name: str
    source: str  # the value as written
    value: str  # repr of the value at import time
    doc: str  # what the code says about it, or ""
    arithmetic: bool = False  # the value is written as arithmetic (64 * 1024): the page shows both


def python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path


def module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def comments_by_line(text: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


def described(statement: ast.stmt, body: list[ast.stmt], index: int, lines: list[str], comments: dict[int, str]) -> str:
    """The docstring under an assignment, else its trailing comment, else the comment block right above it."""
    following = body[index + 1] if index + 1 < len(body) else None
    if (
        isinstance(following, ast.Expr)
        and isinstance(following.value, ast.Constant)
        and isinstance(following.value.value, str)
    ):
        return inspect.cleandoc(following.value.value)
    end = statement.end_lineno or statement.lineno
    for line in range(statement.lineno, end + 1):
        if line in comments and lines[line - 1].lstrip()[:1] != "#":
            return comments[line]
    above: list[str] = []
    line = statement.lineno - 1
    while line >= 1 and lines[line - 1].lstrip().startswith("#") and line in comments:
        above.insert(0, comments[line])
        line -= 1
    return " ".join(above)


def module_constants(name_filter: Callable[[str, ast.expr], bool]) -> list[Constant]:
    """Module-level assignments whose name passes ``name_filter``, in every module of PACKAGES."""
    found: list[Constant] = []
    for package, root in PACKAGES:
        for path in python_files(root):
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            lines = text.splitlines()
            comments = comments_by_line(text)
            module = module_name(package, root, path)
            for index, statement in enumerate(tree.body):
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    name, value_node = statement.target.id, statement.value
                elif (
                    isinstance(statement, ast.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                ):
                    name, value_node = statement.targets[0].id, statement.value
                else:
                    continue
                if value_node is None or not name_filter(name, value_node):
                    continue
                value = getattr(importlib.import_module(module), name)
                found.append(
                    Constant(
                        module,
                        name,
                        ast.get_source_segment(text, value_node) or "",
                        shown(value),
                        described(statement, tree.body, index, lines, comments),
                        isinstance(value_node, ast.BinOp),
                    )
                )
    return found


def shown(value: Any) -> str:
    if isinstance(value, IntEnum):
        return str(int(value))
    if isinstance(value, dict) and value and all(hasattr(item, "_asdict") for item in value.values()):
        return "{" + ", ".join(f"{key!r}: {item!r}" for key, item in value.items()) + "}"
    return repr(value)


def cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """Text as a code span in a table cell (the tables extension does not split cells at a pipe in a code span)."""
    text = " ".join(text.split())
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"
