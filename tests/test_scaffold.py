"""`mcpgen new`: golden snapshots of every variant, one scaffolded project running its own tests, and bad input.

Goldens (tests/golden_scaffold/<template>-<transport>/) pin the text; the functional test proves a scaffold works:
it runs the project's tests/test_server.py (real server processes over stdio and HTTP) with this interpreter, which
has mcpgen installed. Installing a project into a fresh virtual environment is the end-to-end test's job.
"""

from __future__ import annotations

import difflib
import io
import os
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mcpgen.cli import main
from mcpgen.features.scaffold import ScaffoldError, check_name, next_steps, package_name_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaffold_support import NAME, UPDATE_COMMAND, VARIANTS, read_snapshot, scaffold_variant, variant_dir
from spec_fixtures import snapshot_tree


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["new", *(str(arg) for arg in args)])


# -- goldens -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("template", "transport"), VARIANTS, ids=[f"{t}-{x}" for t, x in VARIANTS])
def test_scaffold_matches_its_golden_snapshot(template: str, transport: str) -> None:
    expected = read_snapshot(variant_dir(template, transport))
    actual = scaffold_variant(template, transport)
    diff = []
    for path in sorted(set(expected) | set(actual)):
        diff.extend(
            difflib.unified_diff(
                expected.get(path, "").splitlines(keepends=True),
                actual.get(path, "").splitlines(keepends=True),
                fromfile=f"golden/{path}" if path in expected else "/dev/null",
                tofile=f"scaffold/{path}" if path in actual else "/dev/null",
            )
        )
    assert not diff, "".join(diff) + f"\nThe scaffold changed. If that was intended, run: {UPDATE_COMMAND}"


def test_the_cli_writes_exactly_the_rendered_files(tmp_path: Path) -> None:
    target = tmp_path / "weather"
    result = run(NAME, "--dir", target, "--template", "minimal", "--transport", "stdio")
    assert result.exit_code == 0, result.output
    written = {path: data for path, data in snapshot_tree(target).items() if data != b"<dir>"}
    wheels = {path: written.pop(path) for path in list(written) if path.startswith("wheels/")}
    assert {path: data.decode() for path, data in written.items()} == scaffold_variant("minimal", "stdio")
    # The runtime and the bindings the project installs from, packed from what this mcpgen runs with.
    assert sorted(wheels) == sorted(f"wheels/{name}" for name in (RUNTIME_WHEEL, BINDINGS_WHEEL))
    with zipfile.ZipFile(io.BytesIO(wheels[f"wheels/{RUNTIME_WHEEL}"])) as archive:
        assert "mcpgen_runtime/__init__.py" in archive.namelist()
        assert archive.testzip() is None
    assert f"next: {next_steps(target)}" in result.output.splitlines()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["weather"]  # no staging directory left behind
    assert (target / "src").stat().st_mode & 0o777 == (target.parent / "weather").stat().st_mode & 0o777


def test_defaults_name_the_directory_and_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("my-weather")
    assert result.exit_code == 0, result.output
    project = tmp_path / "my-weather"
    pyproject = (project / "pyproject.toml").read_text()
    assert 'my-weather = "my_weather.server:main"' in pyproject
    assert '"pytest==9.2.0"' in pyproject and "'mcpgen-runtime==0.1.0'" in pyproject and "'mcpgen>" not in pyproject
    server = (project / "src" / "my_weather" / "server.py").read_text()
    assert 'transports=["stdio", "http"]' in server and "async def book_trip(" in server  # both, full
    # The bindings of 2026-07-28 by default; the tests run in both eras.
    assert "from mcp_bindings import v2026_07_28 as mcp" in (project / "tests/test_server.py").read_text()
    assert 'VERSIONS = ["2026-07-28", "2025-11-25"]' in (project / "tests/test_server.py").read_text()
    assert (
        'SERVER_COMMAND = [sys.executable, "-m", "my_weather.server"]' in (project / "tests/test_server.py").read_text()
    )
    readme = (project / "README.md").read_text()
    assert "npx @modelcontextprotocol/inspector my-weather" in readme and "http://127.0.0.1:8000/mcp" in readme


RUNTIME_WHEEL = "mcpgen_runtime-0.1.0-py3-none-any.whl"
BINDINGS_WHEEL = "mcpgen_bindings-0.1.0-py3-none-any.whl"


def test_the_readme_shows_the_next_line_mcpgen_new_prints() -> None:
    # The README's scaffolding block must be what a newcomer pastes: `mcpgen new weather`, then the printed line.
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Scaffolding a server: `mcpgen new`", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    assert commands == ["mcpgen new weather", next_steps(Path("weather"))]


def test_the_scaffolded_wheels_are_reproducible(tmp_path: Path) -> None:
    for attempt in ("one", "two"):
        assert run(NAME, "--dir", tmp_path / attempt, "--template", "minimal").exit_code == 0
    one, two = (sorted((tmp_path / attempt / "wheels").iterdir()) for attempt in ("one", "two"))
    assert [path.read_bytes() for path in one] == [path.read_bytes() for path in two]


# -- the scaffolded project works ---------------------------------------------------------------------------------


def test_a_scaffolded_project_passes_its_own_tests(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    assert run(NAME, "--dir", project).exit_code == 0  # full, stdio and HTTP: the most there is to break
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert " passed" in completed.stdout and "skipped" not in completed.stdout


# -- bad input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Weather", "lowercase"),
        ("my weather", "lowercase"),
        ("2fast", "starting with a letter"),
        ("-weather", "starting with a letter"),
        ("weather-", "end with a letter or digit"),
        ("météo", "lowercase"),
        ("class", "Python keyword"),
        ("json", "standard library"),
        ("test", "standard library"),
        ("mcp", "shadow a module"),
        ("mcpgen", "shadow a module"),
        ("pydantic", "shadow a module"),
        ("mcp-bindings", "shadow a module"),
        ("weather\n", "lowercase"),  # `re.match` with `$` accepted a trailing newline
        ("w" * 101, "101 characters; a distribution or package name longer than 100 characters is not reasonable"),
        ("w" * 300, "300 characters"),  # was ENAMETOOLONG from the staging directory, as a traceback
    ],
)
def test_bad_names_exit_2_and_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, why: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("--", name)  # "--": "-weather" is a name here, not an option
    assert result.exit_code == 2, result.output
    assert why in result.stderr and "nothing was written" in result.stderr
    assert snapshot_tree(tmp_path) == {}


def test_name_rules_as_a_function() -> None:
    assert package_name_for("my-weather") == "my_weather"
    check_name("weather2")
    check_name("my_weather-app")
    with pytest.raises(ScaffoldError, match="keyword"):
        check_name("import")


def test_an_existing_empty_directory_is_filled(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    project.mkdir()
    assert run(NAME, "--dir", project, "--template", "minimal").exit_code == 0
    assert (project / "src" / "weather" / "server.py").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["weather"]


def test_a_non_empty_directory_is_refused_and_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    before = snapshot_tree(tmp_path)
    result = run(NAME, "--dir", project)
    assert result.exit_code == 2, result.output
    assert "not empty" in result.stderr and "--force" in result.stderr
    assert snapshot_tree(tmp_path) == before


def test_force_overwrites_only_the_scaffolds_own_files(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    (project / "src" / "weather").mkdir(parents=True)
    (project / "notes.txt").write_text("mine")
    (project / "src" / "weather" / "extra.py").write_text("# mine\n")
    (project / "README.md").write_text("old readme")
    result = run(NAME, "--dir", project, "--force")
    assert result.exit_code == 0, result.output
    assert (project / "notes.txt").read_text() == "mine"
    assert (project / "src" / "weather" / "extra.py").read_text() == "# mine\n"
    assert (project / "README.md").read_text() == scaffold_variant("full", "both")["README.md"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["weather"]


def test_a_file_where_the_project_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "weather").write_text("a file")
    before = snapshot_tree(tmp_path)
    result = run(NAME, "--dir", tmp_path / "weather", "--force")
    assert result.exit_code == 2 and "not a directory" in result.stderr
    assert snapshot_tree(tmp_path) == before


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--template", "huge", "unknown template 'huge'"),
        ("--transport", "carrier-pigeon", "Invalid value for '--transport'"),
        ("--protocol-version", "2027-01-01", "Invalid value for '--protocol-version'"),
    ],
)
def test_unknown_choices_exit_2_and_write_nothing(tmp_path: Path, option: str, value: str, message: str) -> None:
    result = run(NAME, "--dir", tmp_path / "weather", option, value)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert snapshot_tree(tmp_path) == {}


def test_custom_templates_override_one_file(tmp_path: Path) -> None:
    templates = tmp_path / "my-templates"
    templates.mkdir()
    (templates / "README.md.j2").write_text("# {{ title }}, our way\n")
    result = run(NAME, "--dir", tmp_path / "weather", "--templates", templates)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "weather" / "README.md").read_text() == "# Weather, our way\n"
    assert (tmp_path / "weather" / "src" / "weather" / "server.py").read_text() == (
        scaffold_variant("full", "both")["src/weather/server.py"]
    )


@pytest.mark.parametrize(
    ("template", "text", "message"),
    [
        ("README.md.j2", "{{ no_such_variable }}", "'no_such_variable' is undefined"),
        ("README.md.j2", "{% if %}", "README.md.j2:1"),
        ("server.py.j2", "def broken(:\n", "does not parse"),
        # Errors that are not Jinja's own were tracebacks: the file and line of the template are named.
        ("README.md.j2", "line one\n{{ 1 / 0 }}\n", "README.md.j2:2: ZeroDivisionError: division by zero"),
        ("README.md.j2", "{{ [].pop() }}", "README.md.j2:1: IndexError: pop from empty list"),
        ("README.md.j2", "x\n{% include 'README.md.j2' %}", "README.md.j2:2: RecursionError"),
        ("README.md.j2", "{% extends 'README.md.j2' %}", "include, import or extend itself"),
    ],
)
def test_a_broken_custom_template_exits_2_and_writes_nothing(
    tmp_path: Path, template: str, text: str, message: str
) -> None:
    templates = tmp_path / "my-templates"
    templates.mkdir()
    (templates / template).write_text(text)
    before = snapshot_tree(tmp_path)
    result = run(NAME, "--dir", tmp_path / "weather", "--templates", templates)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert snapshot_tree(tmp_path) == before


def test_a_broken_template_is_one_error_line_naming_the_file(tmp_path: Path) -> None:
    templates = tmp_path / "my-templates"
    templates.mkdir()
    (templates / "README.md.j2").write_text("line one\n{{ 1 / 0 }}\n")
    result = run(NAME, "--dir", tmp_path / "weather", "--templates", templates)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: template {templates / 'README.md.j2'}:2: ZeroDivisionError: division by zero",
        "nothing was written.",
    ]


def test_a_template_that_is_not_utf8_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    templates = tmp_path / "my-templates"
    templates.mkdir()
    (templates / "README.md.j2").write_bytes(b"# caf\xe9\n")
    before = snapshot_tree(tmp_path)
    result = run(NAME, "--dir", tmp_path / "weather", "--templates", templates)
    assert result.exit_code == 2, result.output
    assert "error: template README.md.j2 cannot be read as UTF-8 text" in result.stderr
    assert snapshot_tree(tmp_path) == before


@pytest.mark.parametrize("where", ["a-file/weather", "x" * 300])
def test_a_directory_that_cannot_be_created_exits_2_and_writes_nothing(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    before = snapshot_tree(tmp_path)
    result = run(NAME, "--dir", tmp_path / where)
    assert result.exit_code == 2, result.output
    assert f"error: cannot write the project to {tmp_path / where}: " in result.stderr
    assert "Traceback" not in result.output
    assert snapshot_tree(tmp_path) == before


# -- main(): --log-level, --allowed-host, the announced URL -------------------------------------------------------


def _scaffolded_server(tmp_path: Path, transport: str) -> tuple[list[str], dict[str, str]]:
    """(the command that runs the scaffolded server, its environment) for a minimal project of `transport`."""
    project = tmp_path / "weather"
    assert run(NAME, "--dir", project, "--template", "minimal", "--transport", transport).exit_code == 0
    return [sys.executable, "-m", "weather.server"], {**os.environ, "PYTHONPATH": str(project / "src")}


def _first_lines(process: subprocess.Popen[str], until: str, timeout: float = 30) -> list[str]:
    """The lines of the process's stderr up to the first that contains `until`, read by a thread so that the wait
    is bounded."""
    import queue
    import threading

    lines: queue.Queue[str] = queue.Queue()
    stream = process.stderr
    assert stream is not None
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    seen = [lines.get(timeout=timeout)]
    while until not in seen[-1]:
        seen.append(lines.get(timeout=timeout))
    return seen


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.mark.parametrize("transport", ["stdio", "http", "both"])
def test_the_scaffolded_main_takes_log_level_and_for_http_allowed_host(tmp_path: Path, transport: str) -> None:
    command, env = _scaffolded_server(tmp_path, transport)
    completed = subprocess.run([*command, "--help"], env=env, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert "--log-level {debug,info,warning,error,critical}" in completed.stdout
    assert ("--allowed-host NAME" in completed.stdout) is (transport != "stdio")
    refused = subprocess.run([*command, "--log-level", "loud"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "invalid choice: 'loud'" in refused.stderr
    readme = (tmp_path / "weather" / "README.md").read_text()
    assert "`--log-level debug`" in readme
    assert ("--host 0.0.0.0 --allowed-host weather.example.com" in readme) is (transport != "stdio")


def test_the_scaffolded_server_announces_its_url_and_follows_allowed_hosts(tmp_path: Path) -> None:
    import re  # (this section is appended: its imports are local)

    import httpx2

    command, env = _scaffolded_server(tmp_path, "http")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    # Every interface, no --allowed-host: a warning that names the flag, then the URL with the real port.
    process = subprocess.Popen(
        [*command, "--host", "0.0.0.0", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        warning, announced = _first_lines(process, "mcpgen: serving MCP on")
    finally:
        _stop(process)
    assert warning.startswith("mcpgen: warning: listening on 0.0.0.0 (every interface)")
    assert "pass --allowed-host NAME (repeatable)" in warning
    assert re.fullmatch(r"mcpgen: serving MCP on http://0\.0\.0\.0:[1-9]\d*/mcp\n", announced), announced

    # With --allowed-host, a request for that name is served; another name is still refused.
    args = ["--host", "0.0.0.0", "--port", "0", "--allowed-host", "weather.example.test", "--log-level", "debug"]
    process = subprocess.Popen([*command, *args], env=env, stderr=subprocess.PIPE, text=True)
    try:
        *logged, announced = _first_lines(process, "mcpgen: serving MCP on")
        assert any(" DEBUG " in line for line in logged)  # --log-level debug: asyncio's "Using selector" line
        port = announced.strip().rsplit(":", 1)[1].removesuffix("/mcp")
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx2.Client(timeout=30) as http:
            named = http.post(url, json=initialize, headers={**headers, "host": f"weather.example.test:{port}"})
            other = http.post(url, json=initialize, headers={**headers, "host": f"elsewhere.test:{port}"})
    finally:
        _stop(process)
    assert named.status_code == 200, named.text
    assert other.status_code == 403 and "elsewhere.test" in other.text


@pytest.mark.parametrize("transport", ["stdio", "http", "both"])
def test_an_http_project_declares_the_redis_extra_and_shows_how_to_scale_out(tmp_path: Path, transport: str) -> None:
    import tomllib

    project = tmp_path / "weather"
    assert run(NAME, "--dir", project, "--template", "minimal", "--transport", transport).exit_code == 0
    extras = tomllib.loads((project / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    readme = (project / "README.md").read_text()
    server = (project / "src" / "weather" / "server.py").read_text()
    if transport == "stdio":  # no HTTP, no workers: nothing to scale out
        assert "redis" not in extras and "--redis" not in readme and "redis_extra" not in server
        return
    runtime = extras["redis"][0]
    assert runtime.startswith("mcpgen-runtime[redis]==") and runtime.split("==")[1] == version("mcpgen-runtime")
    assert extras["redis"][1] == f"redis=={version('redis')}"
    assert ".venv/bin/pip install --find-links wheels -e '.[redis]'" in readme
    assert "--transport http --workers 4 --redis redis://127.0.0.1:6379/0" in readme
    assert 'redis_extra="weather[redis]"' in server


@pytest.mark.parametrize("chosen", ["2026-07-28", "2025-11-25", "2024-11-05"])
def test_the_protocol_version_picks_the_bindings_and_the_tests_run_in_both_eras(tmp_path: Path, chosen: str) -> None:
    project = tmp_path / "weather"
    assert run(NAME, "--dir", project, "--protocol-version", chosen).exit_code == 0
    tests = (project / "tests" / "test_server.py").read_text()
    assert f"from mcp_bindings import v{chosen.replace('-', '_')} as mcp" in tests
    assert f'PROTOCOL_VERSION = "{chosen}"' in tests
    assert 'VERSIONS = ["2026-07-28", "2025-11-25"]' in tests
    assert 'TRANSPORTS = ["stdio", "http", "memory"]' in tests
