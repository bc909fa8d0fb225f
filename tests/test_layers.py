"""The import graphs of the runtime and of the toolchain: no cycles, every import goes down the layers, nothing
forbidden; and no module of either package over MAX_MODULE_LINES lines. The machinery is tests/support/import_graph.py.

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
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.import_graph import (
    ImportGraph,
    build_graph,
    declared_imports,
    find_cycles,
    forbidden_imports,
    layer_violations,
    long_modules,
    private_imports,
    scoped,
    undeclared_imports,
    unmapped_modules,
    within,
)

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime" / "mcpgen_runtime"
GENERATOR = ROOT / "generator" / "mcpgen"

# jsonrpc < {transports, protocol} < scaleout (sessions, events and workers shared through Redis) < {server,
# client} < testing (a client and a server in one process) < the package's __init__ (the public API).
RUNTIME_LAYERS: Mapping[str, int] = {
    "safe_mode": -1,  # the switch and registry of fast paths on private APIs (stdlib only): below everything
    "jsonrpc": 0,
    "versions": 0,  # the version facts (generated mcp_bindings.protocol_facts), read by transports and up
    "transports": 1,
    "protocol": 1,
    "task_store": 1,  # what a task is and where it is kept (in memory; scaleout's Redis store implements it)
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
    "server.tasks": 2,  # long-running tool calls: the engine and the tasks/* methods of both eras
    "server.skills": 2,  # the skills extension: skill directories served as skills/* and skill:// resources
    "server.dispatch": 3,
    "server.hosting": 4,
    "server.server": 5,
    "server.runner": 6,
    "server": 7,
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

# The toolchain: foundation < pipeline < features < cli (generator/mcpgen/__init__.py draws the map). The
# foundation is one layer of five paths, so its modules may import each other (json_input raises errors' SpecError).
FOUNDATION = ("", "ir", "errors", "naming", "json_input")
TOOLCHAIN_LAYERS: Mapping[str, int] = {**dict.fromkeys(FOUNDATION, 0), "pipeline": 1, "features": 2, "cli": 3}
# The one part of the toolchain that may import the runtime: it connects to a live server.
RUNTIME_USERS = ("features.client_from_server",)
# What the pipeline and the foundation never import: the runtime, the network, and the bindings they generate (a
# generation that imported mcp_bindings would depend on the previous one).
OFFLINE = frozenset({"mcpgen_runtime", "mcp_bindings", "anyio", "http", "socket", "ssl", "urllib"})


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
    skills_only = declared_imports(pyproject, extra="skills") - declared
    assert skills_only == {"yaml"}, "the skills extra declares PyYAML (and nothing else)"
    problems = undeclared_imports(runtime, declared | auth_only | redis_only | skills_only)
    assert not problems, "\n".join(problems)
    # The skills extra's YAML parser only inside the skills packages (server.skills, client.skills).
    outside_skills = forbidden_imports(runtime, skills_only)
    outside_skills = [problem for problem in outside_skills if ".skills." not in problem.split(": ", 1)[1]]
    assert not outside_skills, "\n".join(outside_skills)
    # The redis extra's library only inside the scaleout package: a server without Redis never imports it.
    outside_scaleout = forbidden_imports(runtime, redis_only)
    outside_scaleout = [problem for problem in outside_scaleout if ".scaleout." not in problem.split(": ", 1)[1]]
    assert not outside_scaleout, "\n".join(outside_scaleout)
    # The auth extra's libraries only inside the auth packages: a server or client without OAuth never needs them.
    outside_auth = [
        problem
        for problem in undeclared_imports(runtime, declared | redis_only | skills_only)
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
        if not within(toolchain, e.importer, RUNTIME_USERS)
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
