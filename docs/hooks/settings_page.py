"""The settings page (marker ``<!-- mcpgen:settings -->``): every module-level ``DEFAULT_*`` / ``MAX_*`` constant of
the runtime and the generator, grouped by area, then the keyword defaults of the calls a user configures
(``Server(...)``, ``run_http`` / ``serve_http``, the HTTP app, ``run_stdio``, ``Client(...)``, ``Client.connect``).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from code_constants import SETTING_NAME, Constant, cell, code, module_constants

# How the settings page groups modules: the first prefix that matches names the section (most specific first).
AREAS = (
    ("mcpgen_runtime.server.auth", "Server: authorization (resource server)"),
    ("mcpgen_runtime.server.tasks", "Server: tasks"),
    ("mcpgen_runtime.server.skills", "Server: skills"),
    ("mcpgen_runtime.server", "Server"),
    ("mcpgen_runtime.transports.http.server", "HTTP transport: server"),
    ("mcpgen_runtime.transports.http.client", "HTTP transport: client"),
    ("mcpgen_runtime.transports.stdio", "stdio transport"),
    ("mcpgen_runtime.jsonrpc", "JSON-RPC sessions"),
    ("mcpgen_runtime.client.auth", "Client: authorization"),
    ("mcpgen_runtime.client.skills", "Client: skills"),
    ("mcpgen_runtime.client", "Client"),
    ("mcpgen_runtime.task_store", "Task store"),
    ("mcpgen_runtime.scaleout", "Scale-out (Redis)"),
    ("mcpgen_runtime", "Runtime"),
    ("mcpgen", "Generator (mcpgen CLI)"),
)

# The keyword defaults listed on the settings page: (title, dotted callable, what it is).
SIGNATURES = (
    ("Server(...)", "mcpgen_runtime.server.server.Server.__init__", "The server: `Server(name, version, ...)`."),
    (
        "Server.run_http(...)",
        "mcpgen_runtime.server.server.Server.run_http",
        "Serve over Streamable HTTP until stopped; also takes every option of the two tables below.",
    ),
    (
        "Server.serve_http(...)",
        "mcpgen_runtime.server.server.Server.serve_http",
        "The same inside a running event loop (`await tg.start(server.serve_http, ...)`); also takes every option of"
        " the two tables below.",
    ),
    (
        "HTTP app options",
        "mcpgen_runtime.transports.http.server.app.StreamableHTTPApp.__init__",
        "The Streamable HTTP endpoint's options: keywords of `run_http` and `serve_http`.",
    ),
    (
        "HTTP server options",
        "mcpgen_runtime.transports.http.server.app.run_http",
        "How uvicorn serves the endpoint: keywords of `run_http` and `serve_http`.",
    ),
    ("Server.run_stdio(...)", "mcpgen_runtime.server.server.Server.run_stdio", "Serve over stdin and stdout."),
    (
        "Client(...)",
        "mcpgen_runtime.client.client.Client.__init__",
        "The client; `Client.connect(target, ...)` takes the same keywords.",
    ),
    (
        "Client.connect(...)",
        "mcpgen_runtime.client.client.Client.connect",
        "Connecting: these, the `Client` keywords above, and `version` / `initialize_timeout` (`ConnectOptions`).",
    ),
)
# Keyword parameters that are plumbing, not settings.
SKIPPED_PARAMETERS = frozenset({"self", "task_status", "options", "handler", "app_factory", "server", "target"})


def settings_constants() -> list[Constant]:
    return module_constants(lambda name, _value: bool(SETTING_NAME.match(name)))


def area_of(module: str) -> str:
    for prefix, title in AREAS:
        if module == prefix or module.startswith(prefix + "."):
            return title
    raise ValueError(f"no area for {module}")


def settings_reference() -> str:
    by_area: dict[str, list[Constant]] = {}
    for constant in settings_constants():
        by_area.setdefault(area_of(constant.module), []).append(constant)
    parts = ["## Limits and defaults by area\n"]
    for _prefix, title in AREAS:
        constants = by_area.get(title)
        if not constants:
            continue
        parts.append(f"### {title}\n\n| Constant | Value | Module | What it is |\n|---|---|---|---|")
        for constant in sorted(constants, key=lambda c: (c.module, c.name)):
            value = f"{constant.value} ({constant.source})" if constant.arithmetic else constant.value
            parts.append(
                f"| {code(constant.name)} | {code(value)} | {code(constant.module)} | " f"{cell(constant.doc) or '—'} |"
            )
        parts.append("")
    parts.append("## Keyword defaults\n")
    for title, dotted, what in SIGNATURES:
        parts.append(
            f"### {title}\n\n{what} (`{dotted.removesuffix('.__init__')}`)\n\n"
            "| Keyword | Default | Type |\n|---|---|---|"
        )
        for name, parameter in keyword_defaults(dotted):
            default = "required" if parameter.default is inspect.Parameter.empty else default_text(parameter.default)
            annotation = "" if parameter.annotation is inspect.Parameter.empty else str(parameter.annotation)
            parts.append(f"| {code(name)} | {code(default)} | {code(annotation) if annotation else ''} |")
        parts.append("")
    return "\n".join(parts)


def resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(dotted)


def default_text(value: Any) -> str:
    """A default as the page shows it: a function by its dotted name (its repr holds a memory address, which would
    make every build differ), anything else by its repr."""
    if inspect.isfunction(value) or inspect.isclass(value):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def keyword_defaults(dotted: str) -> list[tuple[str, inspect.Parameter]]:
    signature = inspect.signature(resolve(dotted))
    return [
        (name, parameter)
        for name, parameter in signature.parameters.items()
        if name not in SKIPPED_PARAMETERS
        and parameter.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    ]
