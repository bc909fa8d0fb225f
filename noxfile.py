"""Sessions people run. They use the interpreter nox runs under (install once, then `.venv/bin/nox -s NAME`),
so no session re-installs the world; the README's first command sets that environment up."""

from __future__ import annotations

import sys

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests"]

PYTHON = sys.executable
CODE = ["generator", "runtime", "tests", "bench", "docs/hooks", "noxfile.py"]


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite: goldens, examples, parity, CLI, bad input, typing, lint."""
    session.run(PYTHON, "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and black --check on hand-written code; black --check on generated/ (it must be black-stable)."""
    session.run(PYTHON, "-m", "ruff", "check", *CODE)
    session.run(PYTHON, "-m", "black", "--check", "--quiet", *CODE)
    session.run(PYTHON, "-m", "black", "--check", "--quiet", "--line-length", "120", "generated")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the toolchain, the runtime and the generated bindings."""
    session.run(
        PYTHON,
        "-m",
        "mypy",
        "--strict",
        "generator/mcpgen",
        "runtime/mcpgen_runtime",
        "generated/mcp_bindings",
        "docs/hooks",
    )


@nox.session
def golden(session: nox.Session) -> None:
    """generated/ equals a fresh generation, and every tests/golden/<case> matches."""
    session.run(PYTHON, "-m", "mcpgen.cli", "generate", "--check", external=True)
    session.run(PYTHON, "-m", "pytest", "tests/test_golden.py", "tests/test_generated_in_sync.py", *session.posargs)


@nox.session
def update_golden(session: nox.Session) -> None:
    """Regenerate generated/ and every golden: tests/golden, golden_diff, golden_scaffold, golden_targets."""
    session.run(PYTHON, "-m", "mcpgen.cli", "generate")
    session.run(PYTHON, "tests/golden_support.py", "--update")
    session.run(PYTHON, "tests/golden_diff_support.py", "--update")
    session.run(PYTHON, "tests/scaffold_support.py", "--update")
    session.run(PYTHON, "tests/test_targets.py", "--update")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against mcp-types and datamodel-code-generator; prints the ratios."""
    session.run(PYTHON, "bench/run_all.py", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The session and server fuzz tests with more frames than the suite's 10,000 each (MCPGEN_FUZZ_FRAMES)."""
    session.env["MCPGEN_FUZZ_FRAMES"] = session.posargs[0] if session.posargs else "100000"
    session.run(PYTHON, "-m", "pytest", "-q", "tests/runtime/test_session_fuzz.py", "tests/runtime/test_server_fuzz.py")


# The libraries whose versions are bounded from above because the code relies on their private parts or builds on them
# closely (runtime/pyproject.toml, pyproject.toml: each bound says why).
BOUNDED = ["anyio", "uvicorn", "starlette", "black", "httptools", "uvloop"]


@nox.session(venv_backend="venv")
def newest(session: nox.Session) -> None:
    """tests/runtime against the newest anyio, uvicorn, starlette, black, httptools and uvloop the distributions'
    bounds allow, in a venv of its own: the dev extra (its pins are what CI tests), then those upgraded with the three
    distributions in the same resolve, so pip keeps to their bounds and to nothing else. Then again in safe mode.
    Before raising a bound: raise it, run this, and read the fast-path log lines (a failed self-check is a WARNING)."""
    session.install("-e", "./generated", "-e", "./runtime", "-e", ".[dev]")
    session.install("--upgrade", "-e", "./generated", "-e", "./runtime", "-e", ".", *BOUNDED)
    show = "import importlib.metadata as m, sys; print(*(f'{n}=={m.version(n)}' for n in sys.argv[1:]))"
    session.run("python", "-c", show, *BOUNDED)
    args = session.posargs or ["-q", "-p", "no:cacheprovider", "tests/runtime"]
    session.run("python", "-m", "pytest", *args)
    session.run("python", "-m", "pytest", *args, env={"MCPGEN_SAFE_MODE": "1"})


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site as CI does: `mkdocs build --strict` (a broken link, a missing page or any other
    warning fails) into site/, or into the directory given (`nox -s docs -- /tmp/site`). The reference pages' tables
    are generated from the code during the build (docs/hooks). To read the site while editing it, run
    `.venv/bin/mkdocs serve` instead: it rebuilds on every change and serves http://127.0.0.1:8000."""
    site = session.posargs[0] if session.posargs else "site"
    session.env["NO_MKDOCS_2_WARNING"] = "1"  # Material's banner about its successor, printed on every build
    session.run(PYTHON, "-m", "mkdocs", "build", "--strict", "--site-dir", site)


@nox.session
def quick(session: nox.Session) -> None:
    """The quick tier (tests/conftest.py): no npm, Node, redis-server, nginx or pip, no mypy, no fuzzing, nothing
    slow; a couple of minutes. `tests` runs everything."""
    session.run(PYTHON, "-m", "pytest", "-q", "--quick", *session.posargs)
