"""The import graphs of the runtime and of the toolchain: no cycles, every import goes down the layers, nothing
forbidden; and no module of either package over MAX_MODULE_LINES lines.

Every module of runtime/mcpgen_runtime and of generator/mcpgen is parsed with `ast` (nothing is imported) and every
import counts: top-level ones, those under `if TYPE_CHECKING:`, function-level ones, and
`importlib.import_module("literal")`; relative imports are resolved. The checks are functions of a package
directory and a layer table, and each package has a table of its own:

    graph = build_graph(ROOT / "generator" / "mcpgen")
    assert not find_cycles(graph)
    assert not layer_violations(graph, TOOLCHAIN_LAYERS, together=[FOUNDATION])

A layer table maps a layer (a subpackage or module path relative to the package, "" for the package's own
`__init__.py`) to a rank. A module belongs to the longest layer that is it or contains it. An import from one
layer into another must go to a lower rank; layers of equal rank may not import each other, unless `together`
groups them into one layer (the toolchain's foundation is five top-level modules); inside a layer anything goes
(except cycles, which `find_cycles` reports).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime" / "mcpgen_runtime"
GENERATOR = ROOT / "generator" / "mcpgen"
# CONTRIBUTING's "modules stay under ~600 lines", for every hand-written package.
MAX_MODULE_LINES = 600

# jsonrpc < {transports, protocol} < scaleout (sessions, events and workers shared through Redis) < {server,
# client} < testing (a client and a server in one process) < the package's __init__ (the public API).
RUNTIME_LAYERS: Mapping[str, int] = {
    "safe_mode": -1,  # the switch and registry of fast paths on private APIs (stdlib only): below everything
    "jsonrpc": 0,
    "versions": 0,  # the version facts (generated mcp_bindings.protocol_facts), read by transports and up
    "transports": 1,
    "protocol": 1,
    "scaleout": 2,
    "server": 3,
    "client": 3,
    "testing": 4,
    "": 5,
}
# Inside server/, bottom up: auth (tokens and verifiers) < authoring (what a server author writes: decorators, the
# registry, Context) < dispatch (how one request is handled, in either era) < hosting (running and mounting) <
# server.py (Server) < runner.py (`python -m mcpgen_runtime.server.runner`) < the package's __init__.
SERVER_LAYERS: Mapping[str, int] = {
    "server.auth": 0,
    "server.authoring": 1,
    "server.dispatch": 2,
    "server.hosting": 3,
    "server.server": 4,
    "server.runner": 5,
    "server": 6,
}
# Inside transports/: the three wires never import each other; what they share lies directly in transports/
# (below them), and transports/http/__init__ is above its two sides.
TRANSPORT_LAYERS: Mapping[str, int] = {
    "transports": 0,
    "transports.stdio": 1,
    "transports.http.server": 1,
    "transports.http.client": 1,
    "transports.http": 2,
}

# The runtime ships without the toolchain: a scaffolded server depends on mcpgen-runtime and the bindings only.
TOOLCHAIN = frozenset({"mcpgen", "black", "jinja2", "click"})
# Distributions whose import name is not the distribution name with "-" -> "_".
IMPORT_NAMES = {"mcpgen-bindings": "mcp_bindings"}

# The toolchain: foundation < pipeline < features < cli (generator/mcpgen/__init__.py draws the map). The
# foundation is one layer of five paths, so its modules may import each other (json_input raises errors' SpecError).
FOUNDATION = ("", "ir", "errors", "naming", "json_input")
TOOLCHAIN_LAYERS: Mapping[str, int] = {**dict.fromkeys(FOUNDATION, 0), "pipeline": 1, "features": 2, "cli": 3}
# The one part of the toolchain that may import the runtime: it connects to a live server.
RUNTIME_USERS = ("features.client_from_server",)
# What the pipeline and the foundation never import: the runtime, the network, and the bindings they generate (a
# generation that imported mcp_bindings would depend on the previous one).
OFFLINE = frozenset({"mcpgen_runtime", "mcp_bindings", "anyio", "http", "socket", "ssl", "urllib"})


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
        if e.target in banned and (scope is None or _within(graph, e.importer, scope))
    ]


def _within(graph: ImportGraph, module: str, paths: Iterable[str]) -> bool:
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


# -- the runtime -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runtime() -> ImportGraph:
    graph = build_graph(RUNTIME)
    assert not graph.problems, "\n".join(graph.problems)
    assert len(graph.internal) > 50, "suspiciously few imports: is the parser still finding them?"
    return graph


def test_runtime_has_no_import_cycles(runtime: ImportGraph) -> None:
    cycles = find_cycles(runtime)
    assert not cycles, "\n".join(cycles)


def test_runtime_imports_go_down_the_layers(runtime: ImportGraph) -> None:
    problems = layer_violations(runtime, RUNTIME_LAYERS)
    assert not problems, "\n".join(problems)


def test_runtime_imports_nothing_of_the_toolchain(runtime: ImportGraph) -> None:
    problems = forbidden_imports(runtime, TOOLCHAIN)
    assert not problems, "\n".join(problems)


def test_runtime_imports_only_its_declared_dependencies(runtime: ImportGraph) -> None:
    pyproject = RUNTIME.parent / "pyproject.toml"
    declared = declared_imports(pyproject)
    assert "mcp_bindings" in declared and not declared & TOOLCHAIN
    auth_only = declared_imports(pyproject, extra="auth") - declared
    assert auth_only, "the auth extra declares no library of its own"
    redis_only = declared_imports(pyproject, extra="redis") - declared
    assert redis_only == {"redis"}, "the redis extra declares redis-py (and nothing else)"
    problems = undeclared_imports(runtime, declared | auth_only | redis_only)
    assert not problems, "\n".join(problems)
    # The redis extra's library only inside the scaleout package: a server without Redis never imports it.
    outside_scaleout = forbidden_imports(runtime, redis_only)
    outside_scaleout = [problem for problem in outside_scaleout if ".scaleout." not in problem.split(": ", 1)[1]]
    assert not outside_scaleout, "\n".join(outside_scaleout)
    # The auth extra's libraries only inside the auth packages: a server or client without OAuth never needs them.
    outside_auth = [
        problem
        for problem in undeclared_imports(runtime, declared | redis_only)
        if ".auth." not in problem.split(": ", 1)[1]
    ]
    assert not outside_auth, "\n".join(outside_auth)


def test_every_layer_says_what_it_holds_and_may_import() -> None:
    for key in RUNTIME_LAYERS:
        init = RUNTIME.joinpath(*key.split("."), "__init__.py") if key else RUNTIME / "__init__.py"
        if key and not init.exists():  # a layer that is one module (testing.py)
            init = RUNTIME.joinpath(*key.split(".")).with_suffix(".py")
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert docstring, f"{init} has no docstring"
        assert not key or "May import" in docstring, f"{init}: the docstring does not say what the layer may import"


@pytest.mark.parametrize(("scope", "layers"), [("server", SERVER_LAYERS), ("transports", TRANSPORT_LAYERS)])
def test_runtime_layers_keep_their_own_order_inside(
    runtime: ImportGraph, scope: str, layers: Mapping[str, int]
) -> None:
    problems = layer_violations(scoped(runtime, scope), layers)
    assert not problems, "\n".join(problems)


def test_no_private_name_is_imported_across_runtime_modules() -> None:
    found = private_imports(RUNTIME)
    assert not found, "\n".join(found)


def test_every_runtime_package_maps_its_modules() -> None:
    found = unmapped_modules(RUNTIME)
    assert not found, "\n".join(found)


# -- the toolchain -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toolchain() -> ImportGraph:
    graph = build_graph(GENERATOR)
    assert not graph.problems, "\n".join(graph.problems)
    assert len(graph.internal) > 50, "suspiciously few imports: is the parser still finding them?"
    return graph


def test_toolchain_has_no_import_cycles(toolchain: ImportGraph) -> None:
    cycles = find_cycles(toolchain)
    assert not cycles, "\n".join(cycles)


def test_toolchain_imports_go_down_the_layers(toolchain: ImportGraph) -> None:
    problems = layer_violations(toolchain, TOOLCHAIN_LAYERS, together=[FOUNDATION])
    assert not problems, "\n".join(problems)


def test_toolchain_imports_the_runtime_only_in_client_from_server(toolchain: ImportGraph) -> None:
    imports = [e for e in toolchain.external if e.target == "mcpgen_runtime"]
    assert imports, "client_from_server connects through mcpgen_runtime: is the parser still finding its imports?"
    problems = [
        f"{e.where}: {e.importer} imports mcpgen_runtime; only {', '.join(RUNTIME_USERS)} may"
        for e in imports
        if not _within(toolchain, e.importer, RUNTIME_USERS)
    ]
    assert not problems, "\n".join(problems)


def test_toolchain_pipeline_and_foundation_stay_offline(toolchain: ImportGraph) -> None:
    problems = forbidden_imports(toolchain, OFFLINE, importers=[*FOUNDATION, "pipeline"])
    assert not problems, "\n".join(problems)


def test_every_toolchain_layer_says_what_it_holds_and_may_import() -> None:
    package_docstring = ast.get_docstring(ast.parse((GENERATOR / "__init__.py").read_text(encoding="utf-8"))) or ""
    for init in sorted(GENERATOR.rglob("__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert docstring, f"{init} has no docstring"
        if init.parent != GENERATOR:
            folder = init.parent.relative_to(GENERATOR.parent).as_posix()
            assert "May import" in docstring, f"{init}: the docstring does not say what the folder may import"
            assert f"{folder}/" in package_docstring, f"the map in mcpgen/__init__.py does not show {folder}/"


@pytest.mark.parametrize("package", [GENERATOR, RUNTIME], ids=lambda path: path.name)
def test_no_module_is_over_the_line_limit(package: Path) -> None:
    found = long_modules(package)
    assert not found, "\n".join(found)


# -- the checks themselves: each one fails on a package built to break it ------------------------------------------


def _package(root: Path, files: Mapping[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


BAD_PACKAGE = {
    "pkg/__init__.py": "from .high.top import Top\n",
    "pkg/low/__init__.py": "",
    # low.a <-> low.b only through a TYPE_CHECKING import and a function-level one.
    "pkg/low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
    "pkg/low/b.py": "class B:\n    def f(self):\n        from pkg.low import a\n        return a\n",
    # Up the layers, from inside a function.
    "pkg/low/c.py": "def late():\n    from ..high import top\n    return top\n",
    "pkg/high/__init__.py": "",
    "pkg/high/top.py": "import click\nimport pkg.low.a\nfrom ..side import s\nclass Top: ...\n",
    # Across to a layer of the same rank.
    "pkg/side/__init__.py": "",
    "pkg/side/s.py": "import importlib\nimportlib.import_module('pkg.high.top')\n",
    "pkg/stray.py": "from . import low\n",
}
BAD_LAYERS = {"low": 0, "high": 1, "side": 1, "": 2}


def test_the_checks_fail_on_a_package_that_breaks_them(tmp_path: Path) -> None:
    graph = build_graph(_package(tmp_path, BAD_PACKAGE))
    assert graph.problems == []

    cycles = find_cycles(graph)
    assert len(cycles) == 2, cycles
    low_cycle = next(c for c in cycles if "pkg.low.a" in c)
    assert "pkg.low.a -> pkg.low.b" in low_cycle and "pkg.low.b -> pkg.low.a" in low_cycle
    assert "a.py:3" in low_cycle and "b.py:3" in low_cycle
    assert any("pkg.high.top -> pkg.side.s" in c and "pkg.side.s -> pkg.high.top" in c for c in cycles), cycles

    problems = "\n".join(layer_violations(graph, BAD_LAYERS))
    assert "pkg.low.c (layer low) imports pkg.high.top (layer high)" in problems
    assert "pkg.high.top (layer high) imports pkg.side.s (layer side)" in problems
    assert "pkg.side.s (layer side) imports pkg.high.top (layer high)" in problems
    assert "stray.py: pkg.stray belongs to no layer" in problems
    assert "pkg.high.top (layer high) imports pkg.low.a" not in problems  # downward is fine

    assert forbidden_imports(graph, TOOLCHAIN) == [f"{tmp_path / 'pkg/high/top.py'}:1: pkg.high.top imports click"]
    assert undeclared_imports(graph, {"anyio"}) == [
        f"{tmp_path / 'pkg/high/top.py'}:1: pkg.high.top imports click, which is not a declared dependency"
    ]


def test_a_relative_import_out_of_the_package_is_reported(tmp_path: Path) -> None:
    graph = build_graph(_package(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "from ..other import x\n"}))
    assert graph.problems == [f"{tmp_path / 'pkg/m.py'}:1: relative import leaves the package pkg"]


def test_layers_grouped_together_may_import_each_other_and_nothing_above(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "def late():\n    from .top import t\n",
            "pkg/top/__init__.py": "",
            "pkg/top/t.py": "from .. import a\nimport socket\n",
        },
    )
    graph = build_graph(root)
    layers = {"": 0, "a": 0, "b": 0, "top": 1}
    apart = "\n".join(layer_violations(graph, layers))
    assert "pkg.a (layer a) imports pkg.b (layer b)" in apart
    together = "\n".join(layer_violations(graph, layers, together=[("", "a", "b")]))
    assert "pkg.a (layer a) imports pkg.b" not in together
    assert "pkg.b (layer b) imports pkg.top.t (layer top)" in together  # grouped, but still below top
    assert forbidden_imports(graph, {"socket"}, importers=["a", "b"]) == []
    assert forbidden_imports(graph, {"socket"}, importers=["top"]) == [
        f"{tmp_path / 'pkg/top/t.py'}:2: pkg.top.t imports socket"
    ]


def test_a_long_module_is_reported(tmp_path: Path) -> None:
    root = _package(tmp_path, {"pkg/__init__.py": "", "pkg/short.py": "x = 1\n" * 3, "pkg/long.py": "x = 1\n" * 4})
    assert long_modules(root, limit=3) == [f"{tmp_path / 'pkg/long.py'}: 4 lines > 3"]


def test_private_names_taken_across_modules_are_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "from .a import __version__\n",
            "pkg/a.py": "__version__ = '1'\n_y = 1\nz = _y\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/b.py": "from ..a import _y, z as _z\nfrom .. import a\nimport pkg.a as m\nq = a._y, m._y, a.z\n",
        },
    )
    assert private_imports(root) == [
        f"{tmp_path / 'pkg/sub/b.py'}:1: pkg.sub.b imports _y from pkg.a",
        f"{tmp_path / 'pkg/sub/b.py'}:4: pkg.sub.b uses _y of pkg.a",
        f"{tmp_path / 'pkg/sub/b.py'}:4: pkg.sub.b uses _y of pkg.a",
    ]


def test_a_package_whose_docstring_misses_a_module_is_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": '"""``a`` and ``sub/``; b is in prose only."""\n',
            "pkg/a.py": "",
            "pkg/b.py": "",
            "pkg/sub/__init__.py": '"""Holds `c.py`."""\n',
            "pkg/sub/c.py": "",
        },
    )
    assert unmapped_modules(root) == [f"{tmp_path / 'pkg/__init__.py'}: the docstring does not name b"]


def test_sublayers_are_checked_inside_their_scope_only(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/outer.py": "from .inner.top import t\n",
            "pkg/inner/__init__.py": "",
            "pkg/inner/low.py": "from .top import t\n",
            "pkg/inner/top.py": "t = 1\n",
        },
    )
    graph = scoped(build_graph(root), "inner")
    assert sorted(graph.modules) == ["pkg.inner", "pkg.inner.low", "pkg.inner.top"]
    problems = layer_violations(graph, {"inner": 2, "inner.low": 0, "inner.top": 1})
    assert len(problems) == 1 and "pkg.inner.low (layer inner.low) imports pkg.inner.top" in problems[0]


def test_scaleout_subclasses_nothing_of_the_transports() -> None:
    """Scale-out plugs its storage into the transport (``transports.http.server.storage``): no class in
    ``scaleout`` has a base class (or a base's module) imported from ``transports``."""
    found = []
    for path in sorted((RUNTIME / "scaleout").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        from_transports: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if module.startswith("transports") or module.startswith("mcpgen_runtime.transports"):
                    from_transports.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                from_transports.update(
                    (alias.asname or alias.name).split(".")[0]
                    for alias in node.names
                    if alias.name.startswith("mcpgen_runtime.transports")
                )
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                root = base
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in from_transports:
                    found.append(f"{path.relative_to(RUNTIME)}:{node.lineno}: {node.name}({ast.unparse(base)})")
    assert not found, "\n".join(found)
