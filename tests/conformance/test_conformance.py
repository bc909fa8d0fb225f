"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in harness.py) against our server.

Server scenarios run against tests/conformance/server.py (mcpgen_runtime's Server over streamable HTTP, one process
for the module, serving both eras): every scenario each requirement set scores (``--requirements 2026-07-28``: the
modern era, input rounds, caching, subscriptions; ``--requirements 2025-11-25``: the legacy era), at that
revision's wire, plus the unscored ones mcpgen also passes (2025-11-25: SSE resumability, session lifecycle, JSON
Schema 2020-12; 2026-07-28: JSON Schema 2020-12, the standard and the Mcp-Param-* header checks) and the
extension scenarios (the tasks extension's ten, ``EXTENSION``). The scenarios run
in a thread pool, once for the module (each is one node process talking to the server); the client scenarios are
test_conformance_client.py's. The first run installs the suite with npm (once per cache directory, see harness.py);
after that the module takes about a minute on a 2-core machine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from harness import (
    Outcome,
    Suite,
    all_scenarios,
    install_suite,
    required_scenarios,
    run_server_scenario,
    run_suite_all,
    running_server,
)

# What each requirement set scores, as of the pinned suite (test_every_scored_server_scenario_is_run keeps it true).
SCORED = {
    "2026-07-28": (
        "server-stateless",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "server-sse-multiple-streams",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "sep-2164-resource-not-found",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
        "caching",
        "input-required-result-basic-elicitation",
        "input-required-result-basic-sampling",
        "input-required-result-basic-list-roots",
        "input-required-result-request-state",
        "input-required-result-multiple-input-requests",
        "input-required-result-multi-round",
        "input-required-result-missing-input-response",
        "input-required-result-non-tool-request",
        "input-required-result-result-type",
        "input-required-result-unsupported-methods",
        "input-required-result-tampered-state",
        "input-required-result-capability-check",
        "input-required-result-ignore-extra-params",
        "input-required-result-validate-input",
    ),
    "2025-11-25": (
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "server-sse-multiple-streams",
        "elicitation-sep1330-enums",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
    ),
}
# Not scored by the pinned suite (added after the release, or pending), passed all the same.
UNSCORED = {
    "2026-07-28": ("json-schema-2020-12", "http-header-validation", "http-custom-header-server-validation"),
    "2025-11-25": ("server-session-lifecycle", "json-schema-2020-12", "server-sse-polling"),
}
# Extension scenarios: on no revision's timeline (the CLI runs them only with --force), scored by nothing, passed
# all the same at the 2026-07-28 wire. The io.modelcontextprotocol/tasks extension (SEP-2663): the fixtures are
# server.py's "tasks" section. tasks-status-notifications reports one SKIPPED check (the suite's own harness is
# pending a rewrite for subscriptions/listen): it passes as long as nothing fails.
EXTENSION = {
    "2026-07-28": (
        "tasks-lifecycle",
        "tasks-capability-negotiation",
        "tasks-wire-fields",
        "tasks-request-state-removal",
        "tasks-mrtr-input",
        "tasks-request-headers",
        "tasks-dispatch-and-envelope",
        "tasks-status-notifications",
        "tasks-required-task-error",
        "tasks-mrtr-composition",
        # The skills extension (SEP-2640): server.py serves tests/conformance/skills with server.add_skills.
        "sep-2640-skills-directory",
        "sep-2640-skills-enumeration",
        "sep-2640-skills-manifest",
    ),
}
FORCED = frozenset(scenario for scenarios in EXTENSION.values() for scenario in scenarios)
# Scenarios whose checks the pinned suite skips for every implementation: they pass with nothing checked, and
# test_the_suite_still_skips_what_is_excused notices when a new pin starts checking them.
SKIPPED_BY_THE_SUITE = frozenset({"tasks-status-notifications"})

# SEP-1699 resumability: the suite reports its SHOULD checks as warnings; here each of them must be SUCCESS.
REQUIRED_CHECKS = {
    "server-sse-polling": ("server-sse-priming-event", "server-sse-retry-field", "server-sse-disconnect-resume"),
}
# Scenarios run at once: each is a node process that mostly waits on the server; CI has 2 cores.
PARALLEL = 3
# Scenarios that change the server's lists (server-stateless calls test_trigger_tool_change and _prompt_change to
# see list_changed on a listen stream): they get a server process of their own, or a tools-list running at the same
# time sees the list change between its two probes (tools-list-deterministic-order, a WARNING).
OWN_SERVER = frozenset({"server-stateless"})
CASES = [
    (revision, scenario)
    for table in (SCORED, UNSCORED, EXTENSION)
    for revision, scenarios in table.items()
    for scenario in scenarios
]


@pytest.fixture(scope="module")
def suite() -> Suite:
    return install_suite()


@pytest.fixture(scope="module")
def outcomes(suite: Suite, request: pytest.FixtureRequest) -> Iterator[dict[tuple[str, str], Outcome]]:
    """The outcome of every selected scenario, run in parallel once for the module against one server."""
    selected = [
        case for item in request.session.items if item.module is request.module and (case := _case_of(item)) is not None
    ]
    with (
        running_server() as shared_url,
        running_server() as own_url,
        tempfile.TemporaryDirectory(prefix="mcpgen-conformance-server-") as root,
    ):

        def run(case: tuple[str, str]) -> Outcome:
            revision, scenario = case
            out_dir = Path(root) / f"{revision}-{scenario}"
            out_dir.mkdir()
            required = REQUIRED_CHECKS.get(scenario, ())
            url = own_url if scenario in OWN_SERVER else shared_url
            force = scenario in FORCED
            excused = scenario in SKIPPED_BY_THE_SUITE
            return run_server_scenario(
                suite, url, scenario, out_dir, required, spec_version=revision, force=force, nothing_checked_ok=excused
            )

        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            yield dict(zip(selected, pool.map(run, selected), strict=True))


def _case_of(item: pytest.Item) -> tuple[str, str] | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "revision" in params and "scenario" in params:
        return params["revision"], params["scenario"]
    return None


@pytest.mark.parametrize("revision", sorted(SCORED))
def test_every_scored_server_scenario_is_run(suite: Suite, revision: str) -> None:
    """A new pin that adds or renames a scored server scenario must be looked at, not silently left out."""
    assert set(required_scenarios(suite, "server", revision)) == set(SCORED[revision])


@pytest.mark.parametrize(("revision", "scenario"), CASES, ids=[f"{r}:{s}" for r, s in CASES])
def test_server_scenario(outcomes: dict[tuple[str, str], Outcome], revision: str, scenario: str) -> None:
    outcome = outcomes[(revision, scenario)]
    if outcome.problems:
        pytest.fail(outcome.report(), pytrace=False)


@pytest.mark.parametrize("scenario", sorted(SKIPPED_BY_THE_SUITE))
def test_the_suite_still_skips_what_is_excused(outcomes: dict[tuple[str, str], Outcome], scenario: str) -> None:
    """An excused scenario is excused only while the suite checks nothing in it: once a pin checks it, it must pass
    like any other (drop it from SKIPPED_BY_THE_SUITE)."""
    (outcome,) = [found for (_, name), found in outcomes.items() if name == scenario]
    assert not any(
        check.get("status") == "SUCCESS" for check in outcome.checks
    ), f"{scenario} is checked now: remove it from SKIPPED_BY_THE_SUITE"


# -- a bare ``--suite all`` ----------------------------------------------------------------------------------------

# Every server scenario of the pinned suite (the ones this module runs one by one, which
# test_suite_all_runs_every_server_scenario holds to the suite's list): what a bare ``--suite all`` runs (pending, added-after-release and
# extension scenarios included, each at the wire the suite picks for it), judged strictly: a scenario passes with at
# least one SUCCESS of its own checks (the generic wire-schema check does not count), no FAILURE and no WARNING.
SUITE_ALL_SERVER = tuple(dict.fromkeys(scenario for _, scenario in CASES))


@pytest.fixture(scope="module")
def suite_all(suite: Suite) -> Iterator[dict[str, Outcome]]:
    """The outcome of every scenario of one bare ``--suite all`` run against a server process of its own."""
    with running_server() as url, tempfile.TemporaryDirectory(prefix="mcpgen-conformance-all-") as root:
        outcomes, _ = run_suite_all(suite, "server", url, Path(root))
        yield outcomes


def test_suite_all_runs_every_server_scenario(suite: Suite) -> None:
    """A new pin that adds or renames a server scenario must be looked at, not silently left out."""
    assert set(all_scenarios(suite, "server")) == set(SUITE_ALL_SERVER)


@pytest.mark.parametrize("scenario", SUITE_ALL_SERVER)
def test_suite_all_server_scenario(suite_all: dict[str, Outcome], scenario: str) -> None:
    outcome = suite_all.get(scenario)
    if outcome is None:
        pytest.fail(f"--suite all reported nothing for {scenario!r}", pytrace=False)
    outcome.judge(REQUIRED_CHECKS.get(scenario, ()), nothing_checked_ok=scenario in SKIPPED_BY_THE_SUITE)
    if outcome.problems:
        pytest.fail(outcome.report(), pytrace=False)
