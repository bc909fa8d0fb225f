"""The suite's tiers, and ``tests/`` on ``sys.path`` for ``tests/support``.

Being the rootdir's ``conftest.py`` with no ``__init__.py`` beside it, this file puts ``tests/`` on ``sys.path``
(pytest's default ``prepend`` import mode), so that a test in any folder can ``from support.ports import free_port``.

Tiers. Every test is marked here by where it lives and what it uses, so that a new test in one of those places is
tiered without a decorator (registered in pyproject.toml, which runs pytest with ``--strict-markers``):

- ``peers``: starts a program from outside this repository or needs the network: tests/conformance (the official
  suite, installed with npm on first use, on Node), tests/scaleout (redis-server, nginx), tests that install the
  conformance suite (``install_suite``), and scaffold end-to-end runs (pip into a fresh venv, the MCP Inspector);
- ``checks``: runs mypy, ruff or black over code, as ``nox -s lint typecheck`` do (a test whose code passes
  ``"mypy"`` to a command or calls a ``_mypy`` helper; tests/test_lint.py);
- ``sdk``: the official MCP SDK as the other side, its server or client in subprocesses (``test_*sdk*.py``);
- ``fuzz``: property-based and fuzz tests (a test module that imports hypothesis);
- ``slow``: long-running tests (decorated), a scaffolded project's own test run, and the hostile-server cases of
  ``client-from-server`` (``MODULES`` below).

The quick tier is everything else: ``pytest --quick`` (``.venv/bin/nox -s quick``); ``.venv/bin/nox -s tests`` runs
all of it (as ``.ci/run`` does).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parent
# What the quick tier (`pytest --quick`) leaves out: no network or outside servers, no mypy/ruff/black runs, no official
# SDK subprocesses, no fuzzing, nothing slow.
SLOW_TIERS = ("peers", "checks", "sdk", "fuzz", "slow")
# Folders (relative to tests/) whose every test gets the marker.
FOLDERS = {"conformance": "peers", "scaleout": "peers"}
# Modules (relative to tests/), or single tests in them ("module::test name", any parameters), and their marker.
MODULES = {
    "test_scaffold_e2e.py": "peers",
    "test_lint.py": "checks",
    # Each case starts a hostile server in a subprocess and runs the CLI, datamodel-code-generator included, on it.
    "test_client_from_server_hostile.py": "slow",
    # A scaffolded project's own test suite, run by pytest in a subprocess.
    "test_scaffold.py::test_a_scaffolded_project_passes_its_own_tests": "slow",
    "test_scaffold_auth.py::test_a_protected_project_passes_its_own_tests": "slow",
}
# Fixtures, and module-level names a test module imports, that bring an outside program along.
PEER_FIXTURES = frozenset({"redis_url", "scaled"})
PEER_NAMES = frozenset({"install_suite", "redis_server", "scaled_server"})
RUNS_MYPY = re.compile(r"""["']mypy["']|\b_mypy\(""")


def _from_hypothesis(value: object) -> bool:
    """Whether a module-level name of a test module is hypothesis or one of its parts (``given``, ``strategies``)."""
    name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
    return isinstance(name, str) and name.partition(".")[0] in {"hypothesis", "hypothesis_jsonschema"}


def tiers_of(item: pytest.Item) -> set[str]:
    """The tier markers of one collected test (besides those it is decorated with)."""
    path = Path(str(item.path)).resolve()
    relative = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.as_posix()
    found = {marker for folder, marker in FOLDERS.items() if relative.startswith(folder + "/")}
    if "sdk" in path.stem:
        found.add("sdk")
    for where in (relative, f"{relative}::{getattr(item, 'originalname', item.name)}"):
        if where in MODULES:
            found.add(MODULES[where])
    if PEER_FIXTURES & set(getattr(item, "fixturenames", ())):
        found.add("peers")
    module = getattr(item, "module", None)
    if module is not None:
        if PEER_NAMES & set(vars(module)):
            found.add("peers")
        if any(_from_hypothesis(value) for value in vars(module).values()):
            found.add("fuzz")
    function = getattr(item, "function", None)
    if function is not None:
        try:
            source = inspect.getsource(function)
        except (OSError, TypeError):
            source = ""
        if RUNS_MYPY.search(source):
            found.add("checks")
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help=f"run the quick tier only: the tests not marked {', '.join(SLOW_TIERS)} (nox -s quick)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted(tiers_of(item)):
            item.add_marker(marker)
    if config.getoption("--quick"):
        kept = [item for item in items if not any(item.get_closest_marker(name) for name in SLOW_TIERS)]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = kept


def _missing_program_skips(config: pytest.Config) -> dict[str, list[str]]:
    """{skip reason: [where]} for every test or module skipped because a system program is missing."""
    from support.system import MISSING_PROGRAM

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    found: dict[str, list[str]] = {}
    for report in getattr(reporter, "stats", {}).get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(MISSING_PROGRAM):
            found.setdefault(reason, []).append(report.nodeid or str(longrepr[0]))
    return found


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    """What was not tested because a program is missing, in a section of its own (not one line among the skips)."""
    missing = _missing_program_skips(config)
    if not missing:
        return
    terminalreporter.section("NOT TESTED: system programs missing", sep="!", red=True, bold=True)
    for reason, where in sorted(missing.items()):
        terminalreporter.line(f"{reason.removeprefix('not tested: ')}: {len(where)} skipped", red=True, bold=True)
        for place in sorted(where)[:10]:
            terminalreporter.line(f"    {place}")
    terminalreporter.line(
        "The full suite needs them (README, 'What the tests need'); .ci/run installs them.", bold=True
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI a missing program fails the run: .ci/run installs every one, so a skip there is a broken install."""
    import os

    if os.environ.get("CI") and _missing_program_skips(session.config) and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
