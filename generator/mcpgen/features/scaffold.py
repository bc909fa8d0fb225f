"""`mcpgen new`: scaffold an MCP server project that runs, passes its own tests and talks to real clients.

Pipeline position: a sibling of the bindings pipeline that reuses its last stages: validate the request ->
build one template context (every decision made here, in Python) -> **render** templates/server-project/
(`render.make_environment`) -> **format** with black (`formatting.format_files`) -> **write** atomically.

Nothing touches the file system until everything has rendered and formatted: bad input (a bad name, an unknown
template, a non-empty directory without --force, a broken user template) raises `ScaffoldError` and leaves the
file system exactly as it was. Writing goes through a staging directory next to the target, and never deletes
or changes a file the scaffold does not produce.
"""

from __future__ import annotations

import keyword
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Final

from ..pipeline.formatting import FormatError, format_files
from ..pipeline.output import MACHINE_ERRNOS
from ..pipeline.render import TemplateRenderError, make_environment, render_template
from ..pipeline.spec_loader import module_name_for
from .scaffold_wheels import WheelError, pack_installed

TEMPLATE_SUBDIR: Final = "server-project"
TEMPLATES: Final = ("minimal", "full")
TRANSPORTS: Final = ("stdio", "http", "both")
# Newest first: 2026-07-28 (no handshake: what new clients speak), then the handshake era older clients use. The
# chosen one is the bindings the project's typed code imports; the server serves every version either way.
PROTOCOL_VERSIONS: Final = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
DEFAULT_PROTOCOL_VERSION: Final = "2026-07-28"
# The project's tests run in both eras, at these versions (whatever the chosen bindings).
TEST_VERSIONS: Final = ("2026-07-28", "2025-11-25")
DEFAULT_HTTP_PORT: Final = 8000
DEFAULT_HTTP_HOST: Final = "127.0.0.1"
PYTEST_PIN: Final = "pytest==9.2.0"
# What the generated server imports at run time; pinned to what this mcpgen runs with, so a new project starts
# from a combination that is known to work (the user relaxes the pins when they want to).
RUNTIME_DEPENDENCIES: Final = ("pydantic", "anyio", "starlette", "uvicorn", "httptools", "uvloop", "httpx2")
# Where the runtime's own requirement carries an environment marker, the pin keeps it: uvloop does not exist on
# Windows and does not build on PyPy (the runtime falls back to asyncio's loop there).
DEPENDENCY_MARKERS: Final = {"uvloop": 'sys_platform != "win32" and platform_python_implementation == "CPython"'}
# The project's `redis` extra: scale-out (`--workers N --redis URL`) needs the runtime's, which brings redis-py.
REDIS_DEPENDENCIES: Final = ("redis",)
# What a server protected by bearer tokens (`--auth`) also imports: authlib's JOSE library checks the JWTs.
AUTH_DEPENDENCIES: Final = ("authlib", "joserfc")
# The environment a protected server is configured from (`--auth`).
AUTH_ENVIRONMENT: Final = {
    "issuer": "MCP_AUTH_ISSUER",
    "resource": "MCP_AUTH_RESOURCE",
    "scopes": "MCP_AUTH_SCOPES",
}
# Distribution -> import package of what the project runs on. Neither is on a package index yet, so their wheels
# (packed from this interpreter's installed copies) go into the project's wheels/ and pip finds them there.
PROJECT_WHEELS: Final = {"mcpgen-runtime": "mcpgen_runtime", "mcpgen-bindings": "mcp_bindings"}
WHEELS_DIR: Final = "wheels"
INSTALL_COMMAND: Final = f"python3 -m venv .venv && .venv/bin/pip install --find-links {WHEELS_DIR} -e '.[test]'"
REDIS_INSTALL_COMMAND: Final = f".venv/bin/pip install --find-links {WHEELS_DIR} -e '.[redis]'"
ELICITATION_SINCE: Final = "2025-06-18"  # the first protocol version with `elicitation/create`
MINIMAL_TOOLS: Final = ("get_forecast",)
FULL_TOOLS: Final = (*MINIMAL_TOOLS, "count_down", "book_trip")

# Project file -> template. `{package}` is filled in; `gitignore.j2` has no dot so that packaging keeps it.
OUTPUTS: Final = {
    ".gitignore": "gitignore.j2",
    "README.md": "README.md.j2",
    "pyproject.toml": "pyproject.toml.j2",
    "src/{package}/__init__.py": "package_init.py.j2",
    "src/{package}/server.py": "server.py.j2",
    "tests/test_server.py": "test_server.py.j2",
}
# Added by `--auth`: a stand-in issuer for the tests (the tests of the protection are in tests/test_server.py).
AUTH_OUTPUTS: Final = {"tests/conftest.py": "conftest.py.j2"}

_NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]*")  # always fullmatch: `$` would let a trailing newline through
# A distribution or package name this long is a mistake, and it becomes a directory name (255 bytes at most).
MAX_NAME_LENGTH: Final = 100
# Modules a project package must not shadow: what the generated server and its tests import, plus names that
# confuse tools (`test` is the stdlib's own test package, absent from sys.stdlib_module_names; `tests` is the
# project's test directory).
RESERVED_PACKAGES: Final = frozenset(
    {
        "anyio",
        "authlib",
        "black",
        "click",
        "hatchling",
        "httpcore",
        "httpx",
        "httpx2",
        "jinja2",
        "joserfc",
        "mcp",
        "mcp_bindings",
        "mcpgen",
        "mcpgen_runtime",
        "pydantic",
        "pydantic_core",
        "pytest",
        "sniffio",
        "starlette",
        "test",
        "tests",
        "typing_extensions",
        "uvicorn",
    }
)


class ScaffoldError(Exception):
    """Bad input for `mcpgen new`; the message says what and why. Nothing has been written."""


@dataclass(frozen=True)
class ScaffoldRequest:
    name: str
    template: str = "full"
    transport: str = "both"
    protocol_version: str = DEFAULT_PROTOCOL_VERSION
    templates: Path | None = None  # the user's directory, searched before the built-in templates
    auth: bool = False  # protect the HTTP transport with bearer tokens, configured from the environment


def package_name_for(name: str) -> str:
    """The import name of a project: 'my-weather' -> 'my_weather'."""
    return name.replace("-", "_")


def check_name(name: str) -> None:
    """Raise ScaffoldError unless `name` is both a distribution name and, with '-' -> '_', a safe package name."""
    if len(name) > MAX_NAME_LENGTH:
        raise ScaffoldError(
            f"invalid project name {name[:24] + '...'!r}: {len(name)} characters; a distribution or package name "
            f"longer than {MAX_NAME_LENGTH} characters is not reasonable"
        )
    if not _NAME_PATTERN.fullmatch(name):
        raise ScaffoldError(
            f"invalid project name {name!r}: use lowercase letters, digits, '-' and '_', starting with a letter "
            "(e.g. my-weather)"
        )
    if name[-1] in "-_":
        raise ScaffoldError(f"invalid project name {name!r}: a distribution name must end with a letter or digit")
    package = package_name_for(name)
    if keyword.iskeyword(package):
        raise ScaffoldError(f"invalid project name {name!r}: {package!r} is a Python keyword and cannot be imported")
    if package in sys.stdlib_module_names or package == "test":
        raise ScaffoldError(f"invalid project name {name!r}: package {package!r} would shadow the standard library")
    if package in RESERVED_PACKAGES:
        raise ScaffoldError(
            f"invalid project name {name!r}: package {package!r} would shadow a module the server or its tests import"
        )


def _pinned(distribution: str, extra: str | None = None) -> str:
    name = distribution if extra is None else f"{distribution}[{extra}]"
    marker = f"; {DEPENDENCY_MARKERS[distribution]}" if distribution in DEPENDENCY_MARKERS else ""
    try:
        return f"{name}=={version(distribution)}{marker}"
    except PackageNotFoundError:
        # Only when mcpgen runs without its own dependencies installed (or on a platform without uvloop): the bare
        # name still installs.
        return f"{name}{marker}"


def build_context(request: ScaffoldRequest) -> dict[str, Any]:
    """Everything the templates print. Validates the request first."""
    check_name(request.name)
    if request.template not in TEMPLATES:
        raise ScaffoldError(f"unknown template {request.template!r}; choose one of: {', '.join(TEMPLATES)}")
    if request.transport not in TRANSPORTS:
        raise ScaffoldError(f"unknown transport {request.transport!r}; choose one of: {', '.join(TRANSPORTS)}")
    if request.protocol_version not in PROTOCOL_VERSIONS:
        raise ScaffoldError(
            f"unknown protocol version {request.protocol_version!r}; choose one of: {', '.join(PROTOCOL_VERSIONS)}"
        )
    transports = ["stdio", "http"] if request.transport == "both" else [request.transport]
    if request.auth and "http" not in transports:
        raise ScaffoldError("--auth protects the HTTP transport: use it with --transport http or both")
    full = request.template == "full"
    tools = [*(FULL_TOOLS if full else MINIMAL_TOOLS), *(["whoami"] if request.auth else [])]
    runtime = (*PROJECT_WHEELS, *RUNTIME_DEPENDENCIES, *(AUTH_DEPENDENCIES if request.auth else ()))
    return {
        "name": request.name,
        "package": package_name_for(request.name),
        "title": " ".join(part.capitalize() for part in re.split(r"[-_]", request.name)),
        "full": full,
        "transports": transports,
        "default_transport": transports[0],
        "has_stdio": "stdio" in transports,
        "has_http": "http" in transports,
        "http_host": DEFAULT_HTTP_HOST,
        "http_port": DEFAULT_HTTP_PORT,
        "http_url": f"http://{DEFAULT_HTTP_HOST}:{DEFAULT_HTTP_PORT}/mcp",
        "protocol_version": request.protocol_version,
        "bindings": module_name_for(request.protocol_version),
        "tool_names": sorted(tools),
        # Elicitation needs a version that has it: the project's tests expect a confirmed booking only then.
        "test_elicitation": full and request.protocol_version >= ELICITATION_SINCE,
        "test_versions": list(TEST_VERSIONS),
        # In memory (the server object, no process) besides the real transports.
        "test_transports": [*transports, "memory"],
        "modern_version": PROTOCOL_VERSIONS[0],
        "legacy_versions": sorted(PROTOCOL_VERSIONS[1:]),
        # The runtime and the bindings, never the toolchain: a server installs only what it runs.
        "dependencies": [_pinned(distribution) for distribution in runtime],
        "wheels_dir": WHEELS_DIR,
        "install_command": INSTALL_COMMAND,
        "test_dependencies": [PYTEST_PIN],
        # The runtime with its own `redis` extra, at the same pin, and redis-py pinned as the rest are.
        "redis_dependencies": [
            _pinned("mcpgen-runtime", "redis"),
            *(_pinned(distribution) for distribution in REDIS_DEPENDENCIES),
        ],
        "redis_install_command": REDIS_INSTALL_COMMAND,
        "auth": request.auth,
        "auth_env": AUTH_ENVIRONMENT,
    }


def template_dirs(request: ScaffoldRequest, builtin_templates: Path) -> list[Path]:
    builtin = builtin_templates / TEMPLATE_SUBDIR
    return [request.templates, builtin] if request.templates is not None else [builtin]


def render_project(request: ScaffoldRequest, builtin_templates: Path) -> dict[str, str]:
    """{relative path: text} of the whole project, formatted; touches no file."""
    context = build_context(request)
    if request.templates is not None and not request.templates.is_dir():
        raise ScaffoldError(f"--templates {request.templates}: not a directory")
    environment = make_environment(template_dirs(request, builtin_templates))
    files: dict[str, str] = {}
    outputs = {**OUTPUTS, **(AUTH_OUTPUTS if request.auth else {})}
    for pattern, template_name in outputs.items():
        path = pattern.format(package=context["package"])
        try:
            files[path] = render_template(environment, template_name, context)
        except TemplateRenderError as error:
            raise ScaffoldError(f"template {error}") from None
    try:
        # No cache: six small files, and a scaffold should not write outside the project.
        return format_files(files, use_cache=False)
    except FormatError as error:
        raise ScaffoldError(f"template output: {error}") from None


def check_target(target: Path, files: Mapping[str, str | bytes], force: bool) -> None:
    """Refuse a target the scaffold could damage: a file, a non-empty directory without --force, or (even with
    --force) one where a project file's place is taken by a directory."""
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a directory")
    if not target.is_dir() or not any(target.iterdir()):
        return
    if not force:
        raise ScaffoldError(
            f"{target} exists and is not empty; choose another --dir, or pass --force to overwrite the scaffold's "
            "own files (nothing else is changed or deleted)"
        )
    for relative in files:
        node = target
        for part in relative.split("/"):
            node = node / part
            if node.exists() and not node.is_dir() and node != target / relative:
                raise ScaffoldError(f"{node} is a file where the project needs a directory")
        if node.is_dir():
            raise ScaffoldError(f"{node} is a directory where the project needs a file")


def next_steps(target: Path) -> str:
    """The command that installs and tests the new project, pasteable into a shell that has only ``python3``."""
    return f"cd {shlex.quote(str(target))} && {INSTALL_COMMAND} && .venv/bin/pytest"


def project_wheels() -> dict[str, bytes]:
    """{wheels/<file>: bytes} of the runtime and the bindings this mcpgen runs with."""
    wheels = {}
    for distribution, package in PROJECT_WHEELS.items():
        try:
            wheel = pack_installed(distribution, package)
        except WheelError as error:
            raise ScaffoldError(f"cannot ship the runtime with the project: {error}") from None
        wheels[f"{WHEELS_DIR}/{wheel.filename}"] = wheel.content
    return wheels


def write_project(target: Path, files: Mapping[str, str | bytes]) -> None:
    """Write `files` under `target` through a staging directory beside it: a new target appears whole (one
    rename); into an existing one, each file is replaced atomically and nothing else is touched."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # A short fixed prefix: one built from the project's name could exceed the file system's name limit.
    staging_root = Path(tempfile.mkdtemp(prefix=".mcpgen-new-", dir=target.parent))
    # mkdtemp's own directory is private (0700); the project directory is made inside it with the user's umask.
    staging = staging_root / "project"
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        if not target.exists():
            staging.rename(target)
            return
        for relative in files:
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, destination)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


def scaffold(
    request: ScaffoldRequest, target: Path, builtin_templates: Path, force: bool = False
) -> dict[str, str | bytes]:
    """Validate, render, pack the wheels, check the target, write. Returns the files written. Raises ScaffoldError
    on bad input, before anything is written."""
    files: dict[str, str | bytes] = {**render_project(request, builtin_templates), **project_wheels()}
    try:
        check_target(target, files, force)
        write_project(target, files)
    except OSError as error:  # --dir cannot be written: no permission, not a directory, a name too long
        if error.errno in MACHINE_ERRNOS:
            raise
        raise ScaffoldError(f"cannot write the project to {target}: {error.strerror or error}") from None
    return files
