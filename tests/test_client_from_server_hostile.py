"""`mcpgen client-from-server` against a malicious server (``hostile_server.py``, cases in ``hostile_cases.py``).

For every case either the command refuses (exit 2, one ``error:`` line naming the tool and the ref, no file), or
the module it writes imports and validates data in a fresh interpreter without the canary firing: a
``canary_mod`` on ``sys.path`` marks a file when imported, a secret file's text must not appear in the module, and
an audit hook (in-process) and a local listener (end to end) show that no file outside the output was opened and
no connection was made. Most cases run in-process through ``render_client_module``; a few run the real CLI against
the real server process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import typing
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pydantic
import pytest
from click.testing import CliRunner
from hostile_cases import BOUND_CASES, CANARY_MODULE, OK_CASES, REF_CASES, SECRET_FILE_NAME, Bait, Case

from mcpgen.cli import client_from_server as cli_client
from mcpgen.features.client_from_server.generate import ClientGenerationError, ServerSnapshot, render_client_module
from mcpgen.features.client_from_server.schema_guard import (
    MAX_SCHEMA_DEPTH,
    display_text,
    nesting_depth,
    one_line,
    pattern_problem,
    vet_schema,
)

REPO = Path(__file__).resolve().parents[1]
HOSTILE_SERVER = REPO / "tests" / "hostile_server.py"
MCPGEN = Path(sys.executable).with_name("mcpgen")
PROTOCOL_VERSION = "2025-06-18"


# -- the bait -------------------------------------------------------------------------------------------------------


@dataclass
class Trap:
    bait: Bait
    secret_text: str
    marker: Path  # written by canary_mod when it is imported
    canary_dir: Path
    connections: list[str] = field(default_factory=list)  # peers the listener accepted

    def assert_untouched(self) -> None:
        assert not self.marker.exists(), "the canary module was imported"
        assert self.connections == [], f"something connected to the bait URL: {self.connections}"


@pytest.fixture(scope="module")
def trap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trap]:
    root = tmp_path_factory.mktemp("bait")
    secret_text = f"SECRET-{uuid.uuid4().hex}"
    secret = root / SECRET_FILE_NAME
    secret.write_text(json.dumps({"type": "string", "description": secret_text, "$defs": {}}), encoding="utf-8")
    canary_dir = tmp_path_factory.mktemp("canary")
    marker = root / "canary-fired"
    (canary_dir / f"{CANARY_MODULE}.py").write_text(
        textwrap.dedent(f"""
            import pathlib
            pathlib.Path({str(marker)!r}).write_text("imported")
            Thing = str
            class Base: ...
            def make() -> dict: return {{}}
        """),
        encoding="utf-8",
    )
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
    result = Trap(Bait(secret_path=secret, url=url), secret_text, marker, canary_dir)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, peer = listener.accept()
            except TimeoutError:
                continue
            result.connections.append(str(peer))
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield result
    stop.set()
    thread.join(5)
    listener.close()


@dataclass
class _AuditLog:
    active: bool = False
    events: list[tuple[str, str]] = field(default_factory=list)


_AUDIT = _AuditLog()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _AUDIT.active and (event == "open" or event.startswith(("socket.", "http.", "urllib."))):
        _AUDIT.events.append((event, str(args[0]) if args else ""))


@pytest.fixture(scope="module")
def audit() -> _AuditLog:
    sys.addaudithook(_audit)  # cannot be removed; it records only while a test turns it on
    return _AUDIT


def _render(case: Case, trap: Trap, audit: _AuditLog, monkeypatch: pytest.MonkeyPatch, version: str = "") -> str:
    """``render_client_module`` as the CLI runs it, from the secret's directory (where a relative ref would land)
    with the canary importable; the audit log shows every file it opened and every socket it touched."""
    monkeypatch.chdir(trap.bait.secret_path.parent)
    monkeypatch.syspath_prepend(str(trap.canary_dir))
    snapshot = ServerSnapshot(
        name=case.server_name,
        version=case.server_version,
        protocol_version=version or PROTOCOL_VERSION,
        tools=tuple(case.tools(trap.bait)),
    )
    audit.events.clear()
    audit.active = True
    try:
        return render_client_module(snapshot)
    finally:
        audit.active = False
        sockets = [event for event in audit.events if event[0] != "open"]
        opened_bait = [path for event, path in audit.events if event == "open" and str(trap.bait.secret_path) in path]
        assert sockets == [] and opened_bait == [], (sockets, opened_bait)
        trap.assert_untouched()


# -- using a generated module ---------------------------------------------------------------------------------------

# Imports the module in a fresh interpreter that can import canary_mod, then validates data with every model:
# every field (by alias) set to the canary's dotted path, so that an ImportString or an import-on-validate type
# would import it. Prints the client's TOOL_NAMES.
_USE_MODULE = """
import importlib.util, json, sys, pydantic
spec = importlib.util.spec_from_file_location("hostile_client", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["hostile_client"] = module
spec.loader.exec_module(module)
bait = sys.argv[2]
for value in list(vars(module).values()):
    if isinstance(value, type) and issubclass(value, pydantic.BaseModel) and value.__module__ == "hostile_client":
        aliases = {(info.alias or name): bait for name, info in value.model_fields.items()}
        for sample in ({}, aliases, dict.fromkeys(value.model_fields, bait), bait, [bait]):
            try:
                value.model_validate(sample)
            except pydantic.ValidationError:
                pass
clients = [value for value in vars(module).values() if isinstance(value, type) and hasattr(value, "TOOL_NAMES")]
print(json.dumps(clients[0].TOOL_NAMES))
"""


def _use_in_subprocess(path: Path, trap: Trap) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(trap.canary_dir), os.environ.get("PYTHONPATH", "")])}
    used = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _USE_MODULE, str(path), f"{CANARY_MODULE}.Thing"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert used.returncode == 0, used.stderr[-3000:]
    trap.assert_untouched()
    tool_names: dict[str, str] = json.loads(used.stdout)
    return tool_names


def _check_module_text(text: str, trap: Trap) -> None:
    assert trap.secret_text not in text
    assert f"import {CANARY_MODULE}" not in text and f"from {CANARY_MODULE}" not in text
    # Nothing a docstring or comment could be broken (or disguised) by.
    assert not [char for char in text if char in "\x00\r\x1b\u202e\u2028" or "\ud800" <= char <= "\udfff"]
    compile(text, "generated", "exec")


def _import(path: Path) -> ModuleType:
    name = f"hostile_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _header_notes(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.startswith("# - "))


# -- refused ---------------------------------------------------------------------------------------------------------

IN_PROCESS_REFUSED = {name: case for name, case in {**REF_CASES, **BOUND_CASES}.items() if case.paging == "one page"}


@pytest.mark.parametrize("name", sorted(IN_PROCESS_REFUSED))
def test_refused_in_process(name: str, trap: Trap, audit: _AuditLog, monkeypatch: pytest.MonkeyPatch) -> None:
    case = IN_PROCESS_REFUSED[name]
    with pytest.raises(ClientGenerationError) as refused:
        _render(case, trap, audit, monkeypatch)
    message = str(refused.value)
    assert case.refused is not None and case.refused in message
    assert "\n" not in message and len(message) <= 500
    assert trap.secret_text not in message
    if name in REF_CASES:  # the tool, and the offending ref itself
        assert "tool 'fetch'" in message
        assert any(repr(ref) in message for ref in _ref_values(case.tools(trap.bait))), message


def _ref_values(node: object) -> list[object]:
    if isinstance(node, list):
        return [ref for item in node for ref in _ref_values(item)]
    if not isinstance(node, dict):
        return []
    own = [value for key, value in node.items() if key in ("$ref", "$dynamicRef", "$recursiveRef")]
    return own + [ref for value in node.values() for ref in _ref_values(value)]


def test_protocol_version_cannot_inject(trap: Trap, audit: _AuditLog, monkeypatch: pytest.MonkeyPatch) -> None:
    # It becomes an import (mcp_bindings.v...) and a docstring: only YYYY-MM-DD passes.
    with pytest.raises(ClientGenerationError, match="unsupported protocol version"):
        _render(OK_CASES["patterns"], trap, audit, monkeypatch, version='2025-06-18"""\nimport canary_mod\n"""')


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "bad\ud800", "inputSchema": {"type": "object"}}],
        [{"name": "t", "inputSchema": {"type": "object", "properties": {"p\udfff": {"type": "string"}}}}],
        [{"name": "t", "inputSchema": {"type": "object", "$defs": {"\ud800": {"type": "string"}}}}],
    ],
)
def test_lone_surrogates_in_names_are_refused(tools: list[dict[str, Any]]) -> None:
    # Valid as JSON escapes, not as UTF-8: pydantic-core cannot take such an alias, the file could not be written.
    snapshot = ServerSnapshot(name="s", version="1", protocol_version=PROTOCOL_VERSION, tools=tuple(tools))
    with pytest.raises(ClientGenerationError, match="not valid UTF-8"):
        render_client_module(snapshot)


# -- generated -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OK_CASES))
def test_generated_module_imports_and_runs_nothing(
    name: str, trap: Trap, audit: _AuditLog, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    case = OK_CASES[name]
    text = _render(case, trap, audit, monkeypatch)
    _check_module_text(text, trap)
    path = tmp_path / f"{name}_client.py"
    path.write_text(text, encoding="utf-8")
    tool_names = _use_in_subprocess(path, trap)
    assert sorted(tool_names.values()) == sorted(tool["name"] for tool in case.tools(trap.bait))
    CASE_CHECKS[name](text, path, trap)
    trap.assert_untouched()


def _check_extensions(text: str, path: Path, trap: Trap) -> None:
    assert CANARY_MODULE not in text
    notes = _header_notes(text)
    for keyword in ("customTypePath", "customBasePath", "x-python-type", "x-python-import"):
        assert f"dropped {keyword}" in notes, keyword


def _check_names(text: str, path: Path, trap: Trap) -> None:
    module = _import(path)
    names = module.HostileServerClient.TOOL_NAMES
    assert names["evil_name"] == "evil\x00name" and names["line_break"] == "line\r\nbreak" and names["tool"] == ""
    assert names["class_"] == "class" and names["client_2"] == "client"  # a keyword, and a reserved attribute
    field = module.EvilNameInput.model_fields
    assert {info.alias or name for name, info in field.items()} >= {"nul\x00name", "class", "self", "int", "count"}
    parsed = module.EvilNameInput.model_validate({"count": 3, "int": "x", "choice": 'q"""'})
    assert parsed.count == 3 and parsed.choice == 'q"""'  # an enum value is data: kept exactly, NUL and all
    assert module.EvilNameInput().choice == "nul\x00"
    assert text.splitlines()[0].startswith("# Code generated by mcpgen ") and "hostile" in text.splitlines()[0]


def _check_patterns(text: str, path: Path, trap: Trap) -> None:
    notes = _header_notes(text)
    dropped = ["not_python", "ecma_property", "ecma_named_group", "ecma_control", "ecma_empty_class", "lookbehind"]
    dropped += ["backreference", "nul", "too_long", "trailing_backslash"]
    for name in dropped:
        assert f"/properties/{name}: dropped pattern" in notes, name
    assert "/properties/quotes:" not in notes and "/properties/kept:" not in notes
    module = _import(path)
    assert module.PatternsInput(kept="abc", quotes="''").kept == "abc"
    with pytest.raises(pydantic.ValidationError):
        module.PatternsInput(kept="ABC")  # a kept pattern is still enforced


def _check_references(text: str, path: Path, trap: Trap) -> None:
    module = _import(path)
    # Refs into properties named like imports did not produce classes of those names.
    assert module.BaseModel is pydantic.BaseModel and module.Literal is typing.Literal
    assert module.Field is pydantic.Field
    model = module.ReferencesInput.model_validate(
        {"ref_Literal": {"v": "x"}, "choice": "a", "tree": [{"tree": []}], "node": 1}
    )
    assert model.ref_literal.v == "x" and model.tree[0].tree == []
    with pytest.raises(pydantic.ValidationError):
        module.ReferencesInput.model_validate({"node": "not an integer"})  # #/$defs/a~1b is the integer
    # Tool "a" has an inline model AInputBInput; tool "a_input_b" must still get its own input model.
    hints = typing.get_type_hints(module.HostileClient.a_input_b, vars(module))
    own_model = typing.get_args(hints["arguments"])[0]
    assert set(own_model.model_fields) == {"y"}
    assert set(typing.get_type_hints(module.HostileClient.a, vars(module))["arguments"].__args__[0].model_fields) == {
        "b_input"
    }


def _check_identity_tricks(text: str, path: Path, trap: Trap) -> None:
    assert trap.bait.url not in text and trap.bait.secret_dir_uri not in text
    module = _import(path)
    assert module.IdentityInput.model_validate({"item": 5, "id": "x"}).item.root == 5  # the local $defs ref held


def _check_formats(text: str, path: Path, trap: Trap) -> None:
    # email (email-validator is not installed: the module would not import), SecretStr (dumps "**********"), ...
    for name in ("EmailStr", "SecretStr", "ULID", "Base64", "Decimal", "Path"):
        assert name not in text, name
    module = _import(path)
    sent = {"s_password": "hunter2", "i_date_time": 5, "n_time_delta": 1.5, "ok_duration": "P1D", "ok_int64": 7}
    assert module.FormatsInput.model_validate(sent).model_dump(mode="json", exclude_unset=True) == sent
    assert module.FormatsInput(s_date_time="2025-01-01T00:00:00Z").s_date_time.year == 2025  # a safe format kept


def _check_values(text: str, path: Path, trap: Trap) -> None:
    notes = _header_notes(text)
    for name in ("nan_default: dropped default", "huge_int: dropped default", "enum_objects", "const_object"):
        assert name in notes, name
    assert "factory: dropped default_factory" in notes
    module = _import(path)
    loose = module.ValuesInput(inf_bound=1e308, huge_int=-(10**30), zero_multiple=0.5, negative_length="")
    assert loose.inf_bound == 1e308  # the infinite bounds, the huge one, multipleOf 0 and minLength -1 were dropped
    assert module.ValuesInput().ref_in_default == {"$ref": trap.bait.secret_path.as_uri()}  # data, never resolved


CASE_CHECKS = {
    "extensions": _check_extensions,
    "names": _check_names,
    "patterns": _check_patterns,
    "references": _check_references,
    "identity_tricks": _check_identity_tricks,
    "formats": _check_formats,
    "values": _check_values,
}


# -- end to end: the real CLI and the real hostile server process ---------------------------------------------------

END_TO_END = [
    "ref_file_uri",
    "ref_relative_path",
    "ref_http_local",
    "dynamic_ref_file",
    "too_many_tools",
    "endless_pages",
    "empty_pages_forever",
    "extensions",
    "names",
    "references",
]


@pytest.mark.parametrize("name", END_TO_END)
def test_cli_against_hostile_server(name: str, trap: Trap, tmp_path: Path) -> None:
    case = {**REF_CASES, **BOUND_CASES, **OK_CASES}[name]
    out = tmp_path / "out" / "client.py"
    out.parent.mkdir()
    server = [sys.executable, str(HOSTILE_SERVER), name, str(trap.bait.secret_path), trap.bait.url]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(trap.canary_dir), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [str(MCPGEN), "client-from-server", "--command", subprocess.list2cmdline(server), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=trap.bait.secret_path.parent,  # where a relative ref would land
    )
    trap.assert_untouched()
    if case.refused is not None:
        assert run.returncode == 2, run.stdout + run.stderr
        lines = run.stderr.splitlines()
        assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1] == "nothing was written.", run.stderr
        assert case.refused in lines[0] and trap.secret_text not in lines[0]
        assert list(out.parent.iterdir()) == []  # not the module, not a temporary file
        return
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"wrote {out}: ") and len(run.stdout.splitlines()) == 1
    assert "\x00" not in run.stdout and "\x1b" not in run.stdout and "\u202e" not in run.stdout
    text = out.read_text(encoding="utf-8")
    _check_module_text(text, trap)
    tool_names = _use_in_subprocess(out, trap)
    assert sorted(tool_names.values()) == sorted(tool["name"] for tool in case.tools(trap.bait))
    CASE_CHECKS[name](text, out, trap)


# -- the guard's pieces ----------------------------------------------------------------------------------------------


def test_names_that_look_like_keywords_are_kept() -> None:
    # Inside properties and $defs the keys are names: "x-python-type" or "$ref" there is a property, not a keyword.
    schema = {
        "type": "object",
        "x-python-type": "os.system",
        "properties": {
            "x-python-type": {"type": "string", "x-python-type": "os.system"},
            "$ref": {"type": "integer"},
            "$id": {"type": "string"},
            "customTypePath": {"$ref": "#/$defs/customBasePath"},
        },
        "$defs": {"customBasePath": {"type": "boolean", "customBasePath": "os.Base", "$id": "file:///etc/"}},
        "required": ["$ref"],
    }
    vetted, notes = vet_schema(schema, "tool 't' inputSchema")
    assert vetted == {
        "type": "object",
        "properties": {
            "x-python-type": {"type": "string"},
            "$ref": {"type": "integer"},
            "$id": {"type": "string"},
            "customTypePath": {"$ref": "#/$defs/customBasePath"},
        },
        "$defs": {"customBasePath": {"type": "boolean"}},
        "required": ["$ref"],
    }
    assert notes == [
        "tool 't' inputSchema /: dropped x-python-type: a schema extension that makes the generator write imports or code",
        "tool 't' inputSchema /properties/x-python-type: dropped x-python-type: a schema extension that makes the "
        "generator write imports or code",
        "tool 't' inputSchema /$defs/customBasePath: dropped customBasePath: a schema extension that makes the "
        "generator write imports or code",
    ]


def test_refs_into_dropped_keywords_are_dropped_not_followed() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/not"}, "b": {"$recursiveRef": "#"}, "c": {"$ref": "#/properties/b/$defs/X"}},
        "not": {"type": "string"},
    }
    schema["properties"]["b"]["$defs"] = {"X": {"type": "string"}}  # nested $defs are not kept
    vetted, notes = vet_schema(schema, "tool 't' inputSchema")
    assert vetted["properties"] == {"a": {}, "b": {"$ref": "#"}, "c": {}}
    assert [note.split(": ", 1)[0] for note in notes] == [
        "tool 't' inputSchema /properties/a",
        "tool 't' inputSchema /properties/c",
    ]


def test_pattern_problem() -> None:
    assert pattern_problem("^[a-z0-9_-]{1,64}$") is None
    assert pattern_problem("(?<=a)b") == "not a regex pydantic's Rust engine compiles"
    assert (pattern_problem(r"\p{L}") or "").startswith("not a Python regex")
    assert pattern_problem("a\x00") == "holds control characters"


def test_text_helpers() -> None:
    assert display_text("a\r\nb\rc\u2028d\x00e\x1b[0m\u202ef\tg\ud800") == "a\nb\nc\nde[0mf\tg"
    assert one_line("  a\n\n b\x00 ", 200) == "a b"
    assert one_line("x" * 50, 10) == "xxxxxxx..."
    deep: Any = []
    for _ in range(1000):
        deep = [deep]
    assert MAX_SCHEMA_DEPTH + 1 < nesting_depth(deep) <= MAX_SCHEMA_DEPTH + 3  # stops early, never recurses


def test_cli_errors_are_folded_to_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # datamodel-code-generator's errors run to many lines, and any of them may quote the server.
    async def snapshot(*args: Any) -> ServerSnapshot:
        return ServerSnapshot(name="s", version="1", protocol_version=PROTOCOL_VERSION, tools=())

    def fail(*args: Any) -> str:
        raise ClientGenerationError("Unresolved local $ref targets:\n- <dict>: #/x\n\x1b[2J" + "y" * 2000)

    monkeypatch.setattr(cli_client, "fetch_snapshot", snapshot)
    monkeypatch.setattr(cli_client, "render_client_module", fail)
    out = tmp_path / "client.py"
    result = CliRunner().invoke(cli_client.client_from_server, ["--command", "x", "--out", str(out)])
    assert result.exit_code == 2
    first, second = result.output.splitlines()
    assert first.startswith("error: Unresolved local $ref targets: - <dict>: #/x [2Jyyy") and first.endswith("...")
    assert len(first) <= len("error: ") + cli_client.MAX_ERROR_CHARS and second == "nothing was written."
    assert not out.exists()
