"""Real processes for the scale-out tests: a redis-server on a free port, and a server run with several workers
(``python -m mcpgen_runtime.server.runner --workers N --redis URL``), with a client that opens a new connection per
request (so that requests spread over the workers) and finds which worker holds a connection."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from support.ports import free_port

HERE = Path(__file__).resolve().parent
SERVER = HERE / "scale_server.py"
ANNOUNCEMENT = "mcpgen: serving MCP on "
VERSION = "2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json", "connection": "close"}


def start_redis(port: int, directory: Path) -> subprocess.Popen[bytes]:
    """A redis-server with no persistence on 127.0.0.1:``port``, returned once it answers PING (10 s at most)."""
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
    process = subprocess.Popen(
        [*command, "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return process
        except OSError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """A throwaway redis-server (no persistence) on a free port; yields its URL."""
    port = free_port()
    process = start_redis(port, directory)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class ScaledServer:
    url: str
    process: subprocess.Popen[str]
    port: int
    prefix: str
    redis_url: str
    stderr: list[str] = field(default_factory=list)

    def workers(self) -> list[int]:
        """The pids of the worker processes now."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in path.read_text().split()]

    def holder(self, client_port: int) -> int | None:
        """The worker whose socket is the other end of the client's connection from ``client_port``."""
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                local, remote, inode = parts[1], parts[2], parts[9]
                if int(local.rsplit(":", 1)[1], 16) == self.port and int(remote.rsplit(":", 1)[1], 16) == client_port:
                    inodes.add(f"socket:[{inode}]")
        for pid in self.workers():
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    try:
                        if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                            return pid
                    except OSError:
                        continue
            except OSError:
                continue
        return None


@contextmanager
def scaled_server(
    redis_url: str, *, workers: int = 3, env: Mapping[str, str] | None = None, options: tuple[str, ...] = ()
) -> Iterator[ScaledServer]:
    """The test server with ``workers`` workers on one port (and the runner's ``options``); yields once every worker
    has answered."""
    prefix = f"t{free_port()}"
    environment = {**os.environ, "MCPGEN_REDIS_PREFIX": prefix, **(env or {})}
    command = [
        sys.executable,
        "-m",
        "mcpgen_runtime.server.runner",
        str(SERVER),
        "--transport",
        "http",
        "--port",
        "0",
        "--workers",
        str(workers),
        "--redis",
        redis_url,
        "--log-level",
        "warning",
        *options,
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)
    lines: list[str] = []
    found: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith(ANNOUNCEMENT) and not found:
                found.append(line[len(ANNOUNCEMENT) :].strip())

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 20
        while not found:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the server did not start:\n" + "".join(lines))
            time.sleep(0.02)
        url = found[0]
        server = ScaledServer(url, process, int(url.rsplit(":", 1)[1].split("/")[0]), prefix, redis_url, lines)
        client = Client(url)
        seen: set[int] = set()
        while len(seen) < workers:  # every worker up (and the kernel spreading connections); one session
            if time.monotonic() > deadline:
                raise RuntimeError(f"only workers {seen} answered:\n" + "".join(lines))
            try:
                if client.session_id is None:
                    client.initialize()
                seen.add(client.call("whoami"))
            except httpx2.TransportError:
                time.sleep(0.05)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Event:
    data: Any
    event_id: str | None


def sse_events(lines: Iterator[str]) -> Iterator[Event]:
    """The SSE events of a response's lines (priming events, with no data, included as data None)."""
    data: list[str] = []
    event_id: str | None = None
    for line in lines:
        if line == "":
            if data or event_id is not None:
                text = "\n".join(data)
                yield Event(json.loads(text) if text.strip() else None, event_id)
            data, event_id = [], None
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()


class Client:
    """A legacy-era client on raw HTTP: a new connection per request, so requests spread over the workers."""

    def __init__(self, url: str, session_id: str | None = None) -> None:
        self.url, self.session_id, self._next = url, session_id, 100

    def headers(self, **extra: str) -> dict[str, str]:
        headers = dict(HEADERS)
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = VERSION
        return {**headers, **extra}

    def initialize(self, capabilities: Mapping[str, Any] | None = None) -> str:
        params = {
            "protocolVersion": VERSION,
            "capabilities": dict(capabilities or {}),
            "clientInfo": {"name": "scale-test-client", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        response = httpx2.post(self.url, content=json.dumps(body), headers=self.headers(), timeout=10)
        assert response.status_code == 200 and "mcp-session-id" in response.headers, response.text
        self.session_id = response.headers["mcp-session-id"]
        assert self.notify("notifications/initialized").status_code == 202
        return self.session_id

    def notify(self, method: str, params: Any = None) -> httpx2.Response:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        return httpx2.post(self.url, content=json.dumps(body), headers=self.headers(), timeout=10)

    def respond(self, request_id: Any, result: Any) -> httpx2.Response:
        body = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return httpx2.post(self.url, content=json.dumps(body), headers=self.headers(), timeout=10)

    def request_events(self, method: str, params: Any = None) -> list[Event]:
        """POST one request; every event of its SSE answer (the answer last)."""
        self._next += 1
        body = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params or {}}
        response = httpx2.post(self.url, content=json.dumps(body), headers=self.headers(), timeout=20)
        if response.status_code != 200:
            raise RequestFailed(response.status_code, response.text)
        return [event for event in sse_events(iter(response.text.splitlines())) if event.data is not None]

    def request(self, method: str, params: Any = None) -> Any:
        answer = self.request_events(method, params)[-1].data
        if "error" in answer:
            raise RequestFailed(200, json.dumps(answer["error"]))
        return answer["result"]

    def call(self, tool: str, **arguments: Any) -> Any:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        text = result["content"][0]["text"]
        return int(text) if text.isdigit() else text


class RequestFailed(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"{status}: {text}")
        self.status = status
