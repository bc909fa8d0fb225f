"""`mcpgen spec fetch`: updating the vendored spec from a URL, a directory or (faked) GitHub.

Nothing here touches the network: sources are a loopback HTTP server (http.server in a thread on
127.0.0.1:0) or local directories, and every wait is bounded by `--timeout 5` (1 or 2 s for the timeout
cases). Each test fetches into its own spec directory built with tests/spec_fixtures.py; failures
must exit 2 with one `error:` line and leave that directory byte-for-byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from mcpgen.cli import main
from mcpgen.features.spec_fetch import GitHubSource, fetch, install, verify

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_fixtures import VERSION, minimal_schema, snapshot_tree, write_spec_dir

NEW = "2099-02-02"
SCHEMA = (json.dumps(minimal_schema(), indent=2) + "\n").encode()
EXAMPLES = {
    "PingRequest/ping.json": b'{"method": "ping"}\n',
    "CallToolRequest/call-tool.json": b'{"method": "tools/call", "params": {"name": "weather"}}\n',
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class Mirror:
    """A loopback HTTP server answering GET with `routes` (path with query -> body); 404 otherwise."""

    routes: dict[str, bytes] = field(default_factory=dict)
    url: str = ""
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def mirror() -> Iterator[Mirror]:
    state = Mirror()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            body = state.routes.get(self.path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def publish(mirror: Mirror, schema: bytes = SCHEMA, index: Any = None) -> str:
    """Serve NEW under /mirror like a spec/ directory plus examples/index.json; return the base URL."""
    root = f"/mirror/{NEW}"
    mirror.routes[f"{root}/schema.json"] = schema
    mirror.routes[f"{root}/examples/index.json"] = json.dumps(sorted(EXAMPLES) if index is None else index).encode()
    for path, data in EXAMPLES.items():
        mirror.routes[f"{root}/examples/{path}"] = data
    return f"{mirror.url}/mirror"


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    return write_spec_dir(tmp_path / "spec")


def run(spec_dir: Path, *args: str | Path) -> Result:
    return CliRunner().invoke(main, ["--spec-dir", str(spec_dir), *(str(arg) for arg in args)])


def fetch_cli(spec_dir: Path, origin: str | Path, *extra: str | Path) -> Result:
    return run(spec_dir, "spec", "fetch", NEW, "--from", origin, "--timeout", "5", *extra)


def manifest_files(spec_dir: Path) -> dict[str, dict[str, str]]:
    files: dict[str, dict[str, str]] = json.loads((spec_dir / "manifest.json").read_text())["files"]
    return files


def assert_installed(spec_dir: Path, repository: str, commit: str) -> None:
    folder = spec_dir / NEW
    assert (folder / "schema.json").read_bytes() == SCHEMA
    found = sorted(p.relative_to(folder / "examples").as_posix() for p in (folder / "examples").rglob("*.json"))
    assert found == sorted(EXAMPLES)  # the index is a listing, not an example
    for path, data in EXAMPLES.items():
        assert (folder / "examples" / path).read_bytes() == data
    files = manifest_files(spec_dir)
    expected = {f"{NEW}/schema.json": SCHEMA} | {f"{NEW}/examples/{p}": d for p, d in EXAMPLES.items()}
    assert {name for name in files if name.startswith(NEW)} == set(expected)
    for name, data in expected.items():
        entry = files[name]
        assert entry["sha256"] == sha(data)
        assert (entry["repository"], entry["commit"]) == (repository, commit)
        assert entry["upstream_path"] == name
    assert f"{VERSION}/schema.json" in files  # other versions are kept
    assert not [p.name for p in spec_dir.iterdir() if p.name.startswith(".")]  # no staging left


# -- success ---------------------------------------------------------------------------------------


def test_fetch_from_url(spec_dir: Path, mirror: Mirror) -> None:
    base = publish(mirror)
    result = fetch_cli(spec_dir, base, "--ref", "v9.9", "--verify", sha(SCHEMA).upper())
    assert result.exit_code == 0, result.output
    assert f"fetched {NEW} from {base}@v9.9: schema.json and 2 example(s)" in result.stdout
    assert_installed(spec_dir, base, "v9.9")
    versions = run(spec_dir, "versions")
    assert versions.exit_code == 0, versions.output
    assert [line.split()[0] for line in versions.stdout.splitlines()[:-1]] == [VERSION, NEW]
    assert sha(SCHEMA) in versions.stdout


def test_fetch_without_index_has_no_examples(spec_dir: Path, mirror: Mirror) -> None:
    base = publish(mirror)
    del mirror.routes[f"/mirror/{NEW}/examples/index.json"]
    result = fetch_cli(spec_dir, base)
    assert result.exit_code == 0, result.output
    assert not (spec_dir / NEW / "examples").exists()
    assert manifest_files(spec_dir)[f"{NEW}/schema.json"]["commit"] == "unknown"


def test_fetch_from_dir_and_refetch_replaces_the_version(spec_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "upstream"
    (source / NEW / "examples").mkdir(parents=True)
    (source / NEW / "schema.json").write_bytes(SCHEMA)
    for path, data in {**EXAMPLES, "Gone/old.json": b"{}"}.items():
        (source / NEW / "examples" / path).parent.mkdir(parents=True, exist_ok=True)
        (source / NEW / "examples" / path).write_bytes(data)
    assert fetch_cli(spec_dir, source).exit_code == 0
    assert f"{NEW}/examples/Gone/old.json" in manifest_files(spec_dir)

    (source / NEW / "examples" / "Gone" / "old.json").unlink()  # upstream deleted an example
    (source / NEW / "examples" / "index.json").write_text("[]")  # an index is not copied from a directory
    result = fetch_cli(spec_dir, source, "--ref", "abc123")
    assert result.exit_code == 0, result.output
    assert_installed(spec_dir, source.resolve().as_uri(), "abc123")
    assert not (spec_dir / NEW / "examples" / "Gone").exists()


def test_regenerate_writes_bindings(spec_dir: Path, mirror: Mirror, tmp_path: Path) -> None:
    out = tmp_path / "generated"
    result = fetch_cli(spec_dir, publish(mirror), "--regenerate", "--out", out)
    assert result.exit_code == 0, result.output
    models = out / "mcp_bindings" / "v2099_02_02" / "models.py"
    assert "class CallToolRequest(" in models.read_text()
    assert (out / "mcp_bindings" / "v2099_01_01" / "models.py").is_file()


def test_github_source_lists_examples_with_three_api_calls(spec_dir: Path, mirror: Mirror) -> None:
    commit, tree = "a" * 40, "b" * 40
    api = "/repos/o/r"
    mirror.routes[f"{api}/commits/main"] = commit.encode()
    listing = [{"name": "schema.json", "type": "file"}, {"name": "examples", "type": "dir", "sha": tree}]
    mirror.routes[f"{api}/contents/schema/{NEW}?ref={commit}"] = json.dumps(listing).encode()
    entries = [{"path": p.split("/")[0], "type": "tree"} for p in EXAMPLES]
    entries += [{"path": p, "type": "blob"} for p in EXAMPLES]
    mirror.routes[f"{api}/git/trees/{tree}?recursive=1"] = json.dumps({"tree": entries, "truncated": False}).encode()
    raw = f"/o/r/{commit}/schema/{NEW}"
    mirror.routes[f"{raw}/schema.json"] = SCHEMA
    for path, data in EXAMPLES.items():
        mirror.routes[f"{raw}/examples/{path}"] = data

    source = GitHubSource("o/r", "main", raw_base=mirror.url, api_base=mirror.url)
    fetched = fetch(source, NEW, timeout=5)
    verify(fetched, sha(SCHEMA))
    install(spec_dir, fetched)
    assert sum(path.startswith("/repos/") for path in mirror.requests) == 3
    files = manifest_files(spec_dir)
    assert files[f"{NEW}/schema.json"] == {
        "sha256": sha(SCHEMA),
        "repository": "o/r",
        "commit": commit,
        "upstream_path": f"schema/{NEW}/schema.json",
    }
    assert (
        files[f"{NEW}/examples/PingRequest/ping.json"]["upstream_path"]
        == f"schema/{NEW}/examples/PingRequest/ping.json"
    )
    assert (spec_dir / NEW / "examples" / "CallToolRequest" / "call-tool.json").read_bytes() == EXAMPLES[
        "CallToolRequest/call-tool.json"
    ]


# -- failures: exit 2, one clear line, spec/ unchanged ----------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def break_schema_404(mirror: Mirror) -> str:
    base = publish(mirror)
    del mirror.routes[f"/mirror/{NEW}/schema.json"]
    return base


FAILURES: dict[str, tuple[Any, list[str], str]] = {
    # name: (prepare(mirror) -> --from, extra args, expected message fragment)
    "404": (break_schema_404, [], f"/mirror/{NEW}/schema.json: HTTP 404"),
    "example 404": (lambda m: publish(m, index=[*EXAMPLES, "Missing/x.json"]), [], "Missing/x.json: HTTP 404"),
    "refused": (lambda m: f"http://127.0.0.1:{closed_port()}/mirror", [], "Connection refused"),
    "invalid json": (lambda m: publish(m, schema=b'{"$defs": '), [], "schema.json: invalid JSON at line 1 column 11"),
    # What json.loads alone turned into tracebacks: each names the file and the JSON pointer of the spot.
    "too deep": (
        lambda m: publish(m, schema=b'{"$defs": {"A": {"enum": ' + b"[" * 1000 + b"]" * 1000 + b"}}}"),
        [],
        f"{NEW}/schema.json#/$defs/A/enum{'/0' * 61}: nested deeper than 64 levels",
    ),
    "huge integer": (
        lambda m: publish(m, schema=b'{"$defs": {"A": {"maximum": ' + b"7" * 5000 + b"}}}"),
        [],
        f"{NEW}/schema.json#/$defs/A/maximum: an integer with 5000 digits",
    ),
    "not utf-8": (
        lambda m: publish(m, schema=b'{"$defs": {"A": {"description": "caf\xe9"}}}'),
        [],
        f"{NEW}/schema.json: not UTF-8 text: byte 0xe9 at offset 36 (line 1)",
    ),
    "example too deep": (
        lambda m: (publish(m), m.routes.update({f"/mirror/{NEW}/examples/PingRequest/ping.json": b"[" * 70}))[0],
        [],
        f"{NEW}/examples/PingRequest/ping.json#{'/0' * 64}: nested deeper than 64 levels",
    ),
    "no defs": (lambda m: publish(m, schema=b'{"type": "object"}'), [], "no '$defs' or 'definitions'"),
    "not an object": (lambda m: publish(m, schema=b"[1]"), [], "must be an object, not list"),
    "verify": (publish, ["--verify", "0" * 64], f"--verify expects {'0' * 64}, downloaded {sha(SCHEMA)}"),
    "bad verify": (publish, ["--verify", "xyz"], "is not a sha256"),
    "traversal": (lambda m: publish(m, index=["../../../evil.json"]), [], "unsafe or non-JSON example path"),
    "bad index": (lambda m: publish(m, index={"a": 1}), [], "must be a JSON array of example paths"),
    "not a source": (lambda m: "/nonexistent/mirror", [], "neither an http(s) URL nor an existing directory"),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_failures_leave_spec_untouched(case: str, spec_dir: Path, mirror: Mirror) -> None:
    prepare, extra, fragment = FAILURES[case]
    origin = prepare(mirror)
    before = snapshot_tree(spec_dir)
    result = fetch_cli(spec_dir, origin, *extra)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith("spec/ was not changed."), lines
    assert fragment in lines[0]
    assert "Traceback" not in result.output
    assert snapshot_tree(spec_dir) == before


def test_timeout_is_bounded(spec_dir: Path) -> None:
    # A server that accepts the connection (the kernel's backlog does) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        before = snapshot_tree(spec_dir)
        origin = f"http://127.0.0.1:{silent.getsockname()[1]}/mirror"
        result = run(spec_dir, "spec", "fetch", NEW, "--from", origin, "--timeout", "1")
    assert result.exit_code == 2, result.output
    assert "timed out after 1s" in result.stderr
    assert snapshot_tree(spec_dir) == before


@pytest.fixture
def misbehaving_server() -> Iterator[str]:
    """A loopback server whose GET answers one byte every 0.2 s: /body after complete headers, /headers
    from the status line on. Every byte restarts a socket timeout, so only a deadline stops the client.
    /short sends 2 bytes of a 1000-byte body, at once, and closes the connection. /slow serves a valid schema
    and ten examples, each whole answer after 0.5 s: every file fits a per-file timeout, the fetch does not."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/slow/"):
                if stop.wait(0.5):
                    return
                if self.path.endswith("/schema.json"):
                    body = json.dumps({"$defs": {"A": {"type": "string"}}}).encode()
                elif self.path.endswith("/examples/index.json"):
                    body = json.dumps([f"e{n}.json" for n in range(10)]).encode()
                else:
                    body = b"{}"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if self.path.startswith("/short/"):
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                self.wfile.write(b"{}")
                return  # HTTP/1.0: the server closes the connection
            if self.path.startswith("/headers/"):
                stream = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000
            else:
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.end_headers()
                stream = b" " * 1000
            try:
                for byte in stream:
                    if stop.wait(0.2):
                        return
                    self.wfile.write(bytes([byte]))
            except OSError:
                pass  # the client gave up and closed the connection, as it should

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("phase", ["body", "headers"])
def test_timeout_bounds_the_whole_download_of_a_misbehaving_server(
    phase: str, spec_dir: Path, misbehaving_server: str
) -> None:
    base = misbehaving_server
    before = snapshot_tree(spec_dir)
    started = time.monotonic()
    result = run(spec_dir, "spec", "fetch", NEW, "--from", f"{base}/{phase}", "--timeout", "2")
    elapsed = time.monotonic() - started
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: cannot download {base}/{phase}/{NEW}/schema.json: timed out after 2s; spec/ was not changed."
    ]
    # Not a speed test: the bug was 20 s past a 3 s timeout, and a 1000-byte drip takes 200 s. Generous bound.
    assert elapsed < 8, f"--timeout 2 took {elapsed:.1f}s"
    assert snapshot_tree(spec_dir) == before


def test_timeout_bounds_the_whole_fetch_not_each_file(spec_dir: Path, misbehaving_server: str) -> None:
    # Twelve answers of 0.5 s each: a deadline per file would let the fetch run for 6 s.
    before = snapshot_tree(spec_dir)
    started = time.monotonic()
    result = run(spec_dir, "spec", "fetch", NEW, "--from", f"{misbehaving_server}/slow", "--timeout", "2")
    elapsed = time.monotonic() - started
    assert result.exit_code == 2, result.output
    assert "timed out after 2s; spec/ was not changed." in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert elapsed < 5, f"--timeout 2 took {elapsed:.1f}s"
    assert snapshot_tree(spec_dir) == before


def test_a_body_cut_short_is_refused(spec_dir: Path, misbehaving_server: str) -> None:
    base = misbehaving_server
    before = snapshot_tree(spec_dir)
    result = run(spec_dir, "spec", "fetch", NEW, "--from", f"{base}/short", "--timeout", "5")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: cannot download {base}/short/{NEW}/schema.json: the connection closed 998 bytes before the end of "
        "the body; spec/ was not changed."
    ]
    assert snapshot_tree(spec_dir) == before


@pytest.mark.parametrize(
    ("timeout", "message"),
    [("nan", "error: --timeout nan is not a number of seconds"), ("inf", "Invalid value for '--timeout'")],
)
def test_a_timeout_that_is_not_a_duration_is_refused(timeout: str, message: str, spec_dir: Path) -> None:
    before = snapshot_tree(spec_dir)
    result = run(spec_dir, "spec", "fetch", NEW, "--from", "http://127.0.0.1:9/mirror", "--timeout", timeout)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert snapshot_tree(spec_dir) == before


def _upstream_dir(tmp_path: Path) -> Path:
    source = tmp_path / "upstream"
    (source / NEW / "examples" / "PingRequest").mkdir(parents=True)
    (source / NEW / "schema.json").write_bytes(SCHEMA)
    (source / NEW / "examples" / "PingRequest" / "ping.json").write_bytes(EXAMPLES["PingRequest/ping.json"])
    return source


@pytest.mark.parametrize("link", ["examples/PingRequest/leak.json", "schema.json"])
def test_a_symlink_out_of_the_source_dir_is_refused(link: str, spec_dir: Path, tmp_path: Path) -> None:
    source = _upstream_dir(tmp_path)
    outside = tmp_path / "private.json"
    outside.write_bytes(SCHEMA)  # valid JSON, so only the link itself can be the reason for refusing
    (source / NEW / link).unlink(missing_ok=True)
    (source / NEW / link).symlink_to(outside)
    before = snapshot_tree(spec_dir)
    result = fetch_cli(spec_dir, source)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"error: {source / NEW / link} leads through a symbolic link to {outside}, outside {source}: "
        "refusing to copy it; spec/ was not changed."
    ]
    assert snapshot_tree(spec_dir) == before


def test_a_symlink_inside_the_source_dir_is_copied(spec_dir: Path, tmp_path: Path) -> None:
    source = _upstream_dir(tmp_path)
    (source / NEW / "examples" / "PingRequest" / "again.json").symlink_to("ping.json")
    result = fetch_cli(spec_dir, source)
    assert result.exit_code == 0, result.output
    copied = spec_dir / NEW / "examples" / "PingRequest" / "again.json"
    assert not copied.is_symlink() and copied.read_bytes() == EXAMPLES["PingRequest/ping.json"]


@pytest.mark.parametrize("version", ["../escape", "2025-6-18", "latest"])
def test_bad_version_is_refused(version: str, spec_dir: Path, mirror: Mirror) -> None:
    before = snapshot_tree(spec_dir)
    result = run(spec_dir, "spec", "fetch", version, "--from", publish(mirror))
    assert result.exit_code == 2
    assert "is not YYYY-MM-DD or 'draft'" in result.stderr
    assert mirror.requests == []
    assert snapshot_tree(spec_dir) == before


def test_broken_manifest_is_refused_before_writing(spec_dir: Path, mirror: Mirror) -> None:
    (spec_dir / "manifest.json").write_text("{")
    before = snapshot_tree(spec_dir)
    result = fetch_cli(spec_dir, publish(mirror))
    assert result.exit_code == 2
    assert "spec/manifest.json" in result.stderr and "invalid JSON" in result.stderr
    assert snapshot_tree(spec_dir) == before


def test_failed_install_restores_the_old_version(
    spec_dir: Path, mirror: Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The manifest replacement is the last step; if it fails the swapped-in directory is undone.
    assert fetch_cli(spec_dir, publish(mirror)).exit_code == 0
    before = snapshot_tree(spec_dir)
    mirror.routes[f"/mirror/{NEW}/examples/PingRequest/ping.json"] = b'{"method": "ping", "id": 2}\n'

    def refuse(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("mcpgen.features.spec_fetch.os.replace", refuse)
    result = fetch_cli(spec_dir, f"{mirror.url}/mirror")
    assert result.exit_code == 2
    assert "cannot write into" in result.stderr
    assert snapshot_tree(spec_dir) == before
