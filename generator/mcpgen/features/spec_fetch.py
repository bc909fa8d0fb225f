"""Updating the vendored spec: download one version's schema.json (and its examples) into spec/.

Pipeline position: outside the pipeline, *before* stage 1. It produces the files and the manifest
entries that spec_loader later verifies; `mcpgen spec fetch` (cli/spec.py) drives it.

Three sources, one result (`Fetched`: bytes plus provenance):

- `GitHubSource` (the default): the official repository. The ref is resolved to a commit first and
  every file is read at that commit, so a branch that moves mid-fetch cannot mix two commits.
- `UrlSource`: any base URL with `<base>/<version>/schema.json` and, optionally,
  `<base>/<version>/examples/index.json` (a JSON array of paths relative to examples/).
- `DirSource`: a local directory laid out like spec/ (symbolic links out of it are refused).

Safety: nothing under spec/ changes until every file has been downloaded and checked (JSON, a
schema object with `$defs`/`definitions`, the optional expected sha256, safe relative paths).
Then the files are written to a staging directory inside spec/, swapped in with renames, and the
manifest is replaced atomically (temp file + os.replace); a failure part-way restores the old tree.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import socket
import ssl
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..json_input import JsonInputError, parse_json, read_spec_json
from ..pipeline.spec_loader import MANIFEST_NAME, SCHEMA_NAME, read_manifest

DEFAULT_REPOSITORY = "modelcontextprotocol/modelcontextprotocol"
DEFAULT_REF = "main"
GITHUB_RAW = "https://raw.githubusercontent.com"
GITHUB_API = "https://api.github.com"
DEFAULT_TIMEOUT = 120.0  # the whole fetch: the schema and, for 2026-07-28, about 130 examples
MAX_TIMEOUT = 3600.0  # beyond an hour a typo is likelier than a link that slow; time_t overflows at 1e300
# The largest upstream schema is well under 1 MB; the cap only stops a runaway or hostile response.
MAX_BYTES = 32 * 1024 * 1024
EXAMPLES_DIR = "examples"
EXAMPLES_INDEX = "index.json"
UNKNOWN_COMMIT = "unknown"
MANIFEST_DESCRIPTION = (
    "Vendored from the official MCP specification repository. Every file's sha256 is verified before generation; "
    "known defects are fixed by spec/patches/, never by editing these files."
)

_VERSION_RE = re.compile(r"\d{4}-\d{2}-\d{2}|draft")
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_COMMIT_RE = re.compile(r"[0-9a-f]{40}")
# One path segment of an example: no leading dot, so '..', '.' and hidden files are all refused.
_SEGMENT_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


class FetchError(Exception):
    """A download or check failed; spec/ has not been touched."""


@dataclass(frozen=True)
class FetchedFile:
    relative: str  # inside the version directory: 'schema.json' or 'examples/<Type>/<name>.json'
    data: bytes
    upstream_path: str  # where the source keeps it, for the manifest


@dataclass(frozen=True)
class Fetched:
    version: str
    repository: str  # 'owner/name', a base URL or a file: URI
    commit: str  # a commit sha, the --ref given, or 'unknown'
    files: tuple[FetchedFile, ...]


def check_version(version: str) -> None:
    # Versions become directory names and Python subpackages: only dates and 'draft', never a path.
    if not _VERSION_RE.fullmatch(version):
        raise FetchError(f"version {version!r} is not YYYY-MM-DD or 'draft'")


def check_sha256(expected: str) -> str:
    normalized = expected.strip().lower()
    if not _SHA256_RE.fullmatch(normalized):
        raise FetchError(f"--verify {expected!r} is not a sha256 (64 hex digits)")
    return normalized


def _example_path(path: str, where: str) -> str:
    """An example path relative to examples/, refused unless every segment is plain (no traversal)."""
    parts = path.split("/")
    if not path.endswith(".json") or not all(_SEGMENT_RE.fullmatch(part) for part in parts):
        raise FetchError(f"{where} lists an unsafe or non-JSON example path {path!r}")
    return path


# -- HTTP ------------------------------------------------------------------------------------------


@dataclass
class _Download:
    """One GET in a worker thread, so that the *whole* of it (connect, headers, body, redirects) fits in
    `timeout`: a socket timeout alone restarts at every byte, and a server that drips one byte at a
    time never trips it. At the deadline the caller stops waiting and shuts the worker's sockets down,
    which ends any read it is blocked in."""

    request: urllib.request.Request
    timeout: float
    sockets: list[socket.socket] = field(default_factory=list)
    body: bytes = b""
    error: BaseException | None = None

    def run(self) -> bytes:
        worker = threading.Thread(target=self._work, name="mcpgen-download", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            for sock in list(self.sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            raise TimeoutError
        if self.error is not None:
            raise self.error
        return self.body

    def _work(self) -> None:
        try:
            with self._opener().open(self.request, timeout=self.timeout) as response:
                chunks, size = [], 0
                while chunk := response.read(65536):
                    size += len(chunk)
                    if size > MAX_BYTES:
                        raise FetchError(f"cannot download {self.request.full_url}: larger than {MAX_BYTES} bytes")
                    chunks.append(chunk)
                # http.client ends a body that stops short of its Content-Length like a complete one; `length`
                # is what it still expected.
                if missing := getattr(response, "length", None):
                    raise FetchError(
                        f"cannot download {self.request.full_url}: the connection closed {missing} bytes before "
                        "the end of the body"
                    )
                self.body = b"".join(chunks)
        except BaseException as error:  # handed to the caller's thread, which decides what it means
            self.error = error

    def _opener(self) -> urllib.request.OpenerDirector:
        """http and https only (no ftp:, file: or data:, even after a redirect); every socket recorded."""
        sockets = self.sockets

        class Connection(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                sockets.append(self.sock)

        class SecureConnection(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                sockets.append(self.sock)

        class Handler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(Connection, req)

        class SecureHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(SecureConnection, req, context=ssl.create_default_context())

        opener = urllib.request.OpenerDirector()
        for handler in (
            urllib.request.ProxyHandler(),
            urllib.request.UnknownHandler(),
            Handler(),
            SecureHandler(),
            urllib.request.HTTPDefaultErrorHandler(),
            urllib.request.HTTPRedirectHandler(),
            urllib.request.HTTPErrorProcessor(),
        ):
            opener.add_handler(handler)
        return opener


class _Http:
    """GET under one deadline for the whole command: every file's download (see _Download) gets the time
    that is left, so `--timeout` bounds the fetch of a version's schema and all its examples together.
    Responses are capped at MAX_BYTES."""

    def __init__(self, timeout: float) -> None:
        if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
            raise FetchError(f"--timeout {timeout!r} is not a number of seconds between 0 and {MAX_TIMEOUT:g}")
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def _remaining(self, url: str) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise FetchError(f"cannot download {url}: timed out after {self.timeout:g}s")
        return left

    def get(self, url: str, accept: str = "*/*", missing_ok: bool = False) -> bytes | None:
        try:
            scheme = urllib.parse.urlsplit(url).scheme
        except ValueError as error:  # e.g. an unclosed IPv6 bracket
            raise FetchError(f"cannot download {url}: {error}") from None
        if scheme not in ("http", "https"):
            raise FetchError(f"refusing to fetch {url!r}: only http and https URLs")
        headers = {"User-Agent": f"mcpgen/{__version__}", "Accept": accept}
        try:
            request = urllib.request.Request(url, headers=headers)
            return _Download(request, self._remaining(url)).run()
        except urllib.error.HTTPError as error:
            if missing_ok and error.code == 404:
                return None
            raise FetchError(f"cannot download {url}: HTTP {error.code} {error.reason}") from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise FetchError(f"cannot download {url}: timed out after {self.timeout:g}s") from None
            text = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
            raise FetchError(f"cannot download {url}: {text}") from None
        except TimeoutError:
            raise FetchError(f"cannot download {url}: timed out after {self.timeout:g}s") from None
        except (OSError, ValueError, http.client.HTTPException) as error:
            # A reset connection, a malformed URL or host, a broken HTTP response (InvalidURL, IncompleteRead).
            raise FetchError(f"cannot download {url}: {type(error).__name__}: {error}") from None

    def get_json(self, url: str, accept: str = "application/json", missing_ok: bool = False) -> Any:
        data = self.get(url, accept, missing_ok)
        return None if data is None else _parse_json(data, url)


def _parse_json(data: bytes, where: str) -> Any:
    try:
        return parse_json(data)
    except JsonInputError as error:
        raise FetchError(f"{where}{'#' + error.pointer if error.pointer else ''}: {error.message}") from None


# -- sources ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitHubSource:
    """The official repository, read through raw.githubusercontent.com plus the REST API for listings.

    The API is unauthenticated (60 requests an hour), so a fetch uses three API calls whatever the
    number of examples: resolve the ref, list schema/<version>/ (which gives the examples tree's sha),
    and list that tree recursively. The contents API on examples/ would need one call per type.
    """

    repository: str = DEFAULT_REPOSITORY
    ref: str = DEFAULT_REF
    raw_base: str = GITHUB_RAW
    api_base: str = GITHUB_API

    def fetch(self, version: str, http: _Http) -> Fetched:
        api = f"{self.api_base.rstrip('/')}/repos/{self.repository}"
        commit = self.ref
        if not _COMMIT_RE.fullmatch(commit):
            url = f"{api}/commits/{urllib.parse.quote(self.ref, safe='')}"
            answer = (http.get(url, accept="application/vnd.github.sha") or b"").decode("ascii", "replace").strip()
            if not _COMMIT_RE.fullmatch(answer):
                raise FetchError(f"{url} did not answer with a commit sha for ref {self.ref!r}")
            commit = answer
        folder = f"schema/{version}"
        listing_url = f"{api}/contents/{folder}?ref={commit}"
        listing = http.get_json(listing_url, accept="application/vnd.github+json", missing_ok=True)
        if listing is None:
            raise FetchError(f"{self.repository}@{self.ref} has no {folder}/ (HTTP 404 from {listing_url})")
        if not isinstance(listing, list):
            raise FetchError(f"{listing_url} is not a directory listing")
        names = {item.get("name"): item for item in listing if isinstance(item, dict)}
        if SCHEMA_NAME not in names:
            raise FetchError(f"{self.repository}@{self.ref} has no {folder}/{SCHEMA_NAME}")
        raw = f"{self.raw_base.rstrip('/')}/{self.repository}/{commit}/{folder}"
        files = [_download(http, f"{raw}/{SCHEMA_NAME}", SCHEMA_NAME, f"{folder}/{SCHEMA_NAME}")]
        examples = names.get(EXAMPLES_DIR)
        if isinstance(examples, dict) and examples.get("type") == "dir":
            for path in self._example_paths(api, str(examples.get("sha", "")), http):
                upstream = f"{folder}/{EXAMPLES_DIR}/{path}"
                files.append(_download(http, f"{raw}/{EXAMPLES_DIR}/{path}", f"{EXAMPLES_DIR}/{path}", upstream))
        return Fetched(version, self.repository, commit, tuple(files))

    def _example_paths(self, api: str, tree_sha: str, http: _Http) -> list[str]:
        if not re.fullmatch(r"[0-9a-f]{40,64}", tree_sha):
            raise FetchError(f"the listing of {self.repository} gives no usable sha for {EXAMPLES_DIR}/")
        url = f"{api}/git/trees/{tree_sha}?recursive=1"
        tree = http.get_json(url, accept="application/vnd.github+json")
        if not isinstance(tree, dict) or not isinstance(tree.get("tree"), list):
            raise FetchError(f"{url} is not a git tree")
        if tree.get("truncated"):
            raise FetchError(f"{url} is truncated; the examples cannot be listed completely")
        paths = [
            item["path"]
            for item in tree["tree"]
            if isinstance(item, dict) and item.get("type") == "blob" and str(item.get("path", "")).endswith(".json")
        ]
        return [_example_path(path, url) for path in sorted(paths)]


@dataclass(frozen=True)
class UrlSource:
    """`<base>/<version>/schema.json`, plus the examples `<base>/<version>/examples/index.json` lists."""

    base: str
    ref: str | None = None

    def fetch(self, version: str, http: _Http) -> Fetched:
        root = f"{self.base.rstrip('/')}/{version}"
        files = [_download(http, f"{root}/{SCHEMA_NAME}", SCHEMA_NAME, f"{version}/{SCHEMA_NAME}")]
        index_url = f"{root}/{EXAMPLES_DIR}/{EXAMPLES_INDEX}"
        index = http.get_json(index_url, missing_ok=True)  # no index: no examples, which is normal
        if index is not None:
            if not isinstance(index, list) or not all(isinstance(item, str) for item in index):
                raise FetchError(f"{index_url} must be a JSON array of example paths")
            for path in sorted(set(index)):
                relative = f"{EXAMPLES_DIR}/{_example_path(path, index_url)}"
                files.append(_download(http, f"{root}/{relative}", relative, f"{version}/{relative}"))
        return Fetched(version, self.base.rstrip("/"), self.ref or UNKNOWN_COMMIT, tuple(files))


@dataclass(frozen=True)
class DirSource:
    """A local directory laid out like spec/: `<dir>/<version>/schema.json` and `examples/**/*.json`.
    Symbolic links are followed only while they stay inside the directory."""

    root: Path
    ref: str | None = None

    def fetch(self, version: str, http: _Http) -> Fetched:
        folder = self.root / version
        schema = folder / SCHEMA_NAME
        self._refuse_link_outside(schema)
        if not schema.is_file():
            raise FetchError(f"no {schema}")
        files = [FetchedFile(SCHEMA_NAME, _read_local(schema), f"{version}/{SCHEMA_NAME}")]
        examples = folder / EXAMPLES_DIR
        for path in sorted(examples.rglob("*.json")) if examples.is_dir() else []:
            relative = path.relative_to(examples).as_posix()
            if relative == EXAMPLES_INDEX:
                continue  # the index is a listing for URL sources, not an example
            self._refuse_link_outside(path)
            if not path.is_file():
                continue
            relative = f"{EXAMPLES_DIR}/{_example_path(relative, str(examples))}"
            files.append(FetchedFile(relative, _read_local(path), f"{version}/{relative}"))
        return Fetched(version, self.root.resolve().as_uri(), self.ref or UNKNOWN_COMMIT, tuple(files))

    def _refuse_link_outside(self, path: Path) -> None:
        """A symbolic link (of the file or of a directory above it) must stay inside --from DIR: the manifest
        records the copy as coming from DIR, and the link could pull any readable file into spec/."""
        try:
            root, target = self.root.resolve(strict=True), path.resolve()
        except (OSError, RuntimeError) as error:  # a link loop (RuntimeError until Python 3.13)
            raise FetchError(f"cannot resolve {path}: {error}") from None
        if not target.is_relative_to(root):
            raise FetchError(
                f"{path} leads through a symbolic link to {target}, outside {self.root}: refusing to copy it"
            )


Source = GitHubSource | UrlSource | DirSource


def source_for(origin: str | None, ref: str | None) -> Source:
    """--from: None (the official repository), an http(s) URL, or a directory."""
    if origin is None:
        return GitHubSource(ref=ref or DEFAULT_REF)
    if re.match(r"https?://", origin):
        return UrlSource(origin, ref)
    if Path(origin).is_dir():
        return DirSource(Path(origin), ref)
    raise FetchError(f"--from {origin!r} is neither an http(s) URL nor an existing directory")


def _download(http: _Http, url: str, relative: str, upstream_path: str) -> FetchedFile:
    return FetchedFile(relative, http.get(url) or b"", upstream_path)


def _read_local(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise FetchError(f"cannot read {path}: {error.strerror or error}") from None


# -- check and install -----------------------------------------------------------------------------


def fetch(source: Source, version: str, timeout: float = DEFAULT_TIMEOUT) -> Fetched:
    check_version(version)
    return source.fetch(version, _Http(timeout))


def verify(fetched: Fetched, expected_sha256: str | None = None) -> None:
    """Every file is JSON; the schema is an object with definitions; the schema's sha256 is the one
    the user expects. Raises FetchError naming the file (and both hashes on a mismatch)."""
    for item in fetched.files:
        document = _parse_json(item.data, item.upstream_path)
        if item.relative != SCHEMA_NAME:
            continue
        if not isinstance(document, dict):
            raise FetchError(f"{item.upstream_path}: the schema root must be an object, not {type(document).__name__}")
        if not any(isinstance(document.get(key), dict) for key in ("$defs", "definitions")):
            raise FetchError(f"{item.upstream_path}: not an MCP schema (no '$defs' or 'definitions' object)")
        actual = hashlib.sha256(item.data).hexdigest()
        if expected_sha256 is not None and actual != expected_sha256:
            raise FetchError(
                f"{item.upstream_path}: sha256 mismatch: --verify expects {expected_sha256}, downloaded {actual}"
            )


def updated_manifest(spec_dir: Path, fetched: Fetched) -> str:
    """The new manifest text: every entry of this version replaced, everything else kept as it was."""
    path = spec_dir / MANIFEST_NAME
    if path.exists():
        read_manifest(spec_dir)  # raises SpecError (exit 2) for a broken manifest, before any change
        raw: dict[str, Any] = read_spec_json(path, f"spec/{MANIFEST_NAME}")
    else:
        raw = {"description": MANIFEST_DESCRIPTION, "files": {}}
    prefix = f"{fetched.version}/"
    files = {name: entry for name, entry in raw["files"].items() if not name.startswith(prefix)}
    for item in fetched.files:
        files[prefix + item.relative] = {
            "sha256": hashlib.sha256(item.data).hexdigest(),
            "repository": fetched.repository,
            "commit": fetched.commit,
            "upstream_path": item.upstream_path,
        }
    raw["files"] = dict(sorted(files.items()))
    return json.dumps(raw, indent=2, ensure_ascii=False) + "\n"


def install(spec_dir: Path, fetched: Fetched) -> None:
    """Replace spec/<version>/ with the fetched files and update the manifest.

    The version directory is replaced as a whole, so examples upstream deleted disappear too. The
    directory swap and the manifest replacement are two steps; if the second fails the first is
    undone, so spec/ ends either fully old or fully new.
    """
    manifest_text = updated_manifest(spec_dir, fetched)
    spec_dir.mkdir(parents=True, exist_ok=True)
    target = spec_dir / fetched.version
    staging = Path(tempfile.mkdtemp(prefix=f".{fetched.version}.new-", dir=spec_dir))
    backup = spec_dir / f".{fetched.version}.old-{staging.name.rsplit('-', 1)[-1]}"
    manifest_temp = spec_dir / f".{MANIFEST_NAME}.new-{staging.name.rsplit('-', 1)[-1]}"
    try:
        for item in fetched.files:
            path = staging / item.relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(item.data)
        manifest_temp.write_text(manifest_text, encoding="utf-8")
        if target.exists():
            target.rename(backup)
        staging.rename(target)
        os.replace(manifest_temp, spec_dir / MANIFEST_NAME)
    except BaseException:
        if backup.exists():
            if target.exists():
                shutil.rmtree(target)
            backup.rename(target)
        elif target.exists() and not staging.exists():
            shutil.rmtree(target)  # the new directory was swapped in where none existed before
        manifest_temp.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(backup, ignore_errors=True)
