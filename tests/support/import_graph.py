"""Import graphs of a Python package, read with ``ast`` (nothing is imported), and the checks tests/test_layers.py
runs on them: cycles, layer order, forbidden and undeclared imports, private names taken across modules, module
length, and package docstrings that name every module.

Every import counts: top-level ones, those under ``if TYPE_CHECKING:``, function-level ones, and
``importlib.import_module("literal")``; relative imports are resolved. A layer table maps a layer (a subpackage or
module path relative to the package, "" for the package's own ``__init__.py``) to a rank. A module belongs to the
longest layer that is it or contains it. An import from one layer into another must go to a lower rank; layers of
equal rank may not import each other, unless ``together`` groups them into one layer; inside a layer anything goes
(except cycles, which ``find_cycles`` reports).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# CONTRIBUTING's "modules stay under ~600 lines", for every hand-written package.
MAX_MODULE_LINES = 600
# Distributions whose import name is not the distribution name with "-" -> "_".
IMPORT_NAMES = {"mcpgen-bindings": "mcp_bindings", "pyyaml": "yaml"}


@dataclass(frozen=True)
class Import:
    """One import statement's edge: `importer` imports `target` (a module of the package, or the top-level name of
    an outside one) at `path`:`line`."""

    importer: str
    target: str
    path: Path
    line: int

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


@dataclass
class ImportGraph:
    package: str
    modules: dict[str, Path] = field(repr=False)
    internal: list[Import] = field(default_factory=list, repr=False)  # edges between modules of the package
    external: list[Import] = field(default_factory=list, repr=False)  # anything else (target: its top-level name)
    problems: list[str] = field(default_factory=list)  # imports that could not be resolved


def module_names(root: Path) -> dict[str, Path]:
    """{dotted module name: file} for every module of the package directory `root` (a package is its __init__)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _statements(tree: ast.AST) -> Iterator[tuple[int, int, str | None, list[str]]]:
    """(line, level, module, imported names) of every import anywhere in `tree`; names is empty for `import x`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, 0, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.level, node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                target = node.args[0].value
                level = len(target) - len(target.lstrip("."))
                yield node.lineno, level, target[level:] or None, []


def _known(modules: Mapping[str, Path], name: str) -> str | None:
    """`name` if it is a module of the package, else its longest prefix that is (what Python would have run)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def build_graph(root: Path) -> ImportGraph:
    """Parse every module under the package directory `root` and resolve each import to its targets."""
    modules = module_names(root)
    graph = ImportGraph(root.name, modules)
    for importer, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, level, module, names in _statements(tree):
            if level:
                # The package a relative import starts from: the module's own for a package, else its parent's.
                anchor = importer.split(".") if is_package else importer.split(".")[:-1]
                if level - 1 >= len(anchor):
                    graph.problems.append(f"{path}:{line}: relative import leaves the package {graph.package}")
                    continue
                base = ".".join(anchor[: len(anchor) - (level - 1)] + ([module] if module else []))
            else:
                assert module is not None
                base = module
            if base != graph.package and not base.startswith(graph.package + "."):
                graph.external.append(Import(importer, base.partition(".")[0], path, line))
                continue
            # `from pkg import name`: the submodule pkg.name if there is one, else pkg itself (its __init__).
            wanted = [f"{base}.{name}" for name in names if f"{base}.{name}" in modules] if names else []
            if names and len(wanted) < len(names):
                wanted.append(base)
            for target in wanted or [base]:
                known = _known(modules, target)
                if known is None:
                    graph.problems.append(f"{path}:{line}: {target} is not a module of {graph.package}")
                else:
                    graph.internal.append(Import(importer, known, path, line))
    return graph


def find_cycles(graph: ImportGraph) -> list[str]:
    """One cycle per strongly connected component of the import graph, each edge with its file and line."""
    edges: dict[str, dict[str, Import]] = {module: {} for module in graph.modules}
    for edge in graph.internal:
        edges[edge.importer].setdefault(edge.target, edge)
    # Tarjan's algorithm; the graph is small, so recursion is fine.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    reports = []
    for component in components:
        members = set(component)
        start = component[0]
        if len(component) == 1 and start not in edges[start]:
            continue
        # A shortest way back to `start` inside the component (breadth first), reported edge by edge.
        paths: dict[str, list[Import]] = {start: []}
        frontier = [start]
        cycle: list[Import] | None = None
        while frontier and cycle is None:
            following = []
            for node in frontier:
                for nxt, edge in sorted(edges[node].items()):
                    if nxt == start:
                        cycle = [*paths[node], edge]
                        break
                    if nxt in members and nxt not in paths:
                        paths[nxt] = [*paths[node], edge]
                        following.append(nxt)
                if cycle is not None:
                    break
            frontier = following
        assert cycle is not None
        steps = "\n".join(f"  {e.importer} -> {e.target}   ({e.where})" for e in cycle)
        reports.append(f"import cycle among {', '.join(component)}:\n{steps}")
    return reports


def layer_of(graph: ImportGraph, module: str, layers: Mapping[str, int]) -> str | None:
    """The layer `module` belongs to: the longest key of `layers` that is its path or a package containing it."""
    relative = module[len(graph.package) + 1 :] if module != graph.package else ""
    found = [key for key in layers if relative == key or (key and relative.startswith(key + "."))]
    return max(found, key=len) if found else None


def layer_violations(
    graph: ImportGraph, layers: Mapping[str, int], together: Iterable[Iterable[str]] = ()
) -> list[str]:
    """Modules without a layer, and imports that go up the layers or across to a layer of the same rank.

    `together`: groups of layers (of one rank) that form one layer, so that they may import each other."""
    joined: dict[str, frozenset[str]] = {}
    for group in map(frozenset, together):
        assert len({layers[key] for key in group}) == 1, f"{sorted(group)} do not share a rank"
        joined.update(dict.fromkeys(group, group))
    problems = [
        f"{path}: {module} belongs to no layer of {sorted(layers)}"
        for module, path in graph.modules.items()
        if layer_of(graph, module, layers) is None
    ]
    for edge in graph.internal:
        source, target = layer_of(graph, edge.importer, layers), layer_of(graph, edge.target, layers)
        if source is None or target is None or source == target or target in joined.get(source, ()):
            continue
        if layers[target] >= layers[source]:
            below = sorted(key or "(package)" for key, rank in layers.items() if rank < layers[source])
            problems.append(
                f"{edge.where}: {edge.importer} (layer {source or '(package)'}) imports {edge.target} "
                f"(layer {target or '(package)'}); {source or '(package)'} may import only {below or 'nothing'}"
            )
    return problems


def forbidden_imports(
    graph: ImportGraph, forbidden: Iterable[str], importers: Iterable[str] | None = None
) -> list[str]:
    """Imports of the top-level names `forbidden`; with `importers` (paths relative to the package, as in a layer
    table), only by modules that are or lie in one of them."""
    banned = set(forbidden)
    scope = None if importers is None else tuple(importers)
    return [
        f"{e.where}: {e.importer} imports {e.target}"
        for e in graph.external
        if e.target in banned and (scope is None or within(graph, e.importer, scope))
    ]


def within(graph: ImportGraph, module: str, paths: Iterable[str]) -> bool:
    """Whether `module` is, or lies in, one of `paths` (relative to the package; "" is the package's __init__)."""
    relative = module[len(graph.package) + 1 :] if module != graph.package else ""
    return any(relative == path or (path and relative.startswith(path + ".")) for path in paths)


def long_modules(root: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """Every module under the package directory `root` with more than `limit` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {lines} lines > {limit}")
    return found


def undeclared_imports(graph: ImportGraph, allowed: Iterable[str]) -> list[str]:
    """Imports of anything that is neither the standard library nor one of `allowed` (top-level names)."""
    known = set(allowed) | set(sys.stdlib_module_names)
    return [
        f"{e.where}: {e.importer} imports {e.target}, which is not a declared dependency"
        for e in graph.external
        if e.target not in known
    ]


def declared_imports(pyproject: Path, extra: str | None = None) -> set[str]:
    """The top-level import names of a pyproject.toml's `[project] dependencies`, or of one of its
    `[project.optional-dependencies]` (``extra``)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    dependencies = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    names = set()
    for requirement in dependencies:
        match = re.match(r"[A-Za-z0-9._-]+", requirement)
        assert match is not None, requirement
        distribution = match.group(0).lower()
        names.add(IMPORT_NAMES.get(distribution, distribution.replace("-", "_")))
    return names


def scoped(graph: ImportGraph, scope: str) -> ImportGraph:
    """The part of `graph` inside `scope` (a subpackage path relative to the package): its modules and the imports
    between them, for a layer table of that subpackage's own parts."""
    prefix = f"{graph.package}.{scope}"
    inside = {
        module: path for module, path in graph.modules.items() if module == prefix or module.startswith(prefix + ".")
    }
    edges = [edge for edge in graph.internal if edge.importer in inside and edge.target in inside]
    return ImportGraph(graph.package, inside, edges)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path) -> list[str]:
    """Private names (a leading underscore, not a dunder) that one module of the package under `root` takes from
    another: `from .x import _y`, and `x._y` where `x` names a module of the package (`from . import x`,
    `import pkg.x as x`). An object's private attributes (`app._sessions`) cannot be told apart without types."""
    modules = module_names(root)
    package = root.name
    found = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        anchor = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        aliases: dict[str, str] = {}  # a local name -> the module of the package it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base != package and not base.startswith(package + "."):
                    continue
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
                    if _is_private(alias.name):
                        found.append(f"{where}:{node.lineno}: {importer} imports {alias.name} from {base}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _is_private(node.attr)
            ):
                target = aliases[node.value.id]
                found.append(f"{where}:{node.lineno}: {importer} uses {node.attr} of {target}")
    return found


def unmapped_modules(root: Path) -> list[str]:
    """Packages under `root` whose __init__ docstring does not name each of their modules and subpackages in
    backticks (``name``, ``name/`` or ``name.py``): the map a newcomer reads first stays true."""
    found = []
    for init in sorted(root.rglob("__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        members = {path.stem for path in init.parent.glob("*.py") if path.name != "__init__.py"}
        members |= {path.parent.name for path in init.parent.glob("*/__init__.py")}
        missing = sorted(name for name in members if not re.search(rf"`{re.escape(name)}(/|\.py)?`", docstring))
        if missing:
            where = init.relative_to(ROOT) if init.is_relative_to(ROOT) else init
            found.append(f"{where}: the docstring does not name {', '.join(missing)}")
    return found
