"""Control, format and separator characters in schema text never break what is generated (issue 27).

A description holding a NUL byte used to give exit 0 and a package that does not import ("source code string cannot
contain null bytes"). Now every text that reaches generated code is escaped (`naming.escape_unprintable`, applied
in the views: docstrings keep the description's exact value, comments and Markdown show `\\x00`) or refused with
exit 2 and a JSON pointer (a method name; a lone surrogate, refused when the JSON is read: tests/bad_input_cases.py).
Each test runs the real console script and imports the result in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bad_input_cases import MCPGEN
from spec_fixtures import REPO_ROOT, minimal_schema, write_spec_dir

NASTY = 'a\x00b\x1bc\rd\u2028e\u2029f\x85g\u202eh\x7fi\u200bj"""\\'
MODULE = "mcp_bindings.v2099_01_01.models"
TIMEOUT = 120


def nasty_schema() -> dict[str, Any]:
    schema = minimal_schema()
    definitions = schema["$defs"]
    for name in ("Result", "PingRequest", "CallToolRequestParams", "CallToolResult"):
        definitions[name]["description"] = NASTY
        definitions[name]["title"] = NASTY
    name = definitions["CallToolRequestParams"]["properties"]["name"]
    name.update(description=NASTY, title=NASTY, examples=[NASTY], default=NASTY)
    definitions["CallToolRequestParams"]["properties"]["a\x00b\u2028c"] = {"type": "string", "description": NASTY}
    definitions["Level"] = {"type": "string", "enum": ["x\x00y", "a\u2028b", "c\x1bd", "e\rf"], "description": NASTY}
    definitions["Kind"] = {"type": "string", "const": "k\x00\r\u2028\u202e", "description": NASTY}
    return schema


def run(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT)


def unprintable(text: str) -> list[str]:
    return sorted(
        {repr(c) for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
    )


def test_unprintable_text_is_escaped_and_the_package_imports(tmp_path: Path) -> None:
    spec = write_spec_dir(tmp_path / "spec", nasty_schema())
    out = tmp_path / "out"
    generated = run(str(MCPGEN), "--spec-dir", str(spec), "generate", "--out", str(out))
    assert generated.returncode == 0, generated.stderr
    for path in sorted(out.rglob("*")):
        if path.is_file():
            assert unprintable(path.read_text(encoding="utf-8")) == [], path
    probe = (
        f"import json, {MODULE} as m\n"
        "print(json.dumps([m.Result.__doc__, m.CallToolRequestParams.__doc__, list(m.Level.__value__.__args__)"
        " if hasattr(m.Level, '__value__') else None, m.CallToolRequestParams(name='x', **{'a\\x00b\\u2028c': 'y'})"
        ".model_dump(by_alias=True, exclude_none=True)]))\n"
    )
    imported = run(sys.executable, "-c", probe, cwd=out)
    assert imported.returncode == 0, imported.stderr
    result_doc, params_doc, _levels, dumped = json.loads(imported.stdout)
    assert result_doc == NASTY and params_doc == NASTY  # escaped in the source, exact at run time
    assert dumped == {"name": "x", "a\x00b\u2028c": "y"}


def test_the_typescript_target_escapes_unprintable_text(tmp_path: Path) -> None:
    spec = write_spec_dir(tmp_path / "spec", nasty_schema())
    out = tmp_path / "ts"
    rendered = run(str(MCPGEN), "--spec-dir", str(spec), "render", "--template", "typescript", "--out", str(out))
    assert rendered.returncode == 0, rendered.stderr
    texts = {path.name: path.read_text(encoding="utf-8") for path in sorted(out.rglob("*")) if path.is_file()}
    assert texts and all(unprintable(text) == [] for name, text in texts.items() if name.endswith(".ts")), texts


def test_generated_is_unchanged() -> None:
    checked = run(str(MCPGEN), "generate", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
