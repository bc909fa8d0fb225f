"""docs/how-to/deploy.md's nginx site, run for real: a real nginx (Debian's package, installed by .ci/run) with the guide's
configuration in front of two "hosts" (two multi-worker servers on one Redis, as the guide deploys them), the
guide's upstream addresses and listen port swapped for local ones. Through the proxy: a session's requests spread
over both hosts, a request's events stream as they are written (not when the answer is done), and the 2026-07-28
era works too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from scale_support import HEADERS, Client, ScaledServer, free_port, scaled_server, sse_events
from support.system import missing_reason

# .ci/run installs nginx; without it each test is skipped by name (and counted in the summary's NOT TESTED).
pytestmark = pytest.mark.skipif(shutil.which("nginx") is None, reason=missing_reason("nginx"))

DEPLOY_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "deploy.md"
NGINX_BLOCK = re.compile(r"^```nginx\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PUBLIC_NAME = "mcp.example.com"  # the guide's server_name; the workers allow it (--allowed-host), as it says


def guide_site(upstreams: list[int], listen: int) -> str:
    """The guide's nginx site with its two upstream hosts and its port replaced by local ones."""
    (site,) = NGINX_BLOCK.findall(DEPLOY_GUIDE.read_text(encoding="utf-8"))
    hosts = re.findall(r"^\s*server (\d+\.\d+\.\d+\.\d+:\d+);$", site, re.MULTILINE)
    assert len(hosts) == len(upstreams) == 2, hosts
    for host, port in zip(hosts, upstreams, strict=True):
        site = site.replace(f"server {host};", f"server 127.0.0.1:{port};")
    assert "listen 80;" in site
    return site.replace("listen 80;", f"listen 127.0.0.1:{listen};")


def nginx_conf(directory: Path, site: str) -> str:
    """A whole nginx.conf around the site: everything nginx writes stays in ``directory``."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers that can reach the test's private directory
    temp = "\n".join(
        f"    {kind}_temp_path {directory / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\npid {directory / 'nginx.pid'};\nerror_log {directory / 'error.log'} warn;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n    access_log {directory / 'access.log'};\n{temp}\n{site}\n}}\n"
    )


@pytest.fixture(scope="module")
def hosts(redis_url: str) -> Iterator[list[ScaledServer]]:
    """Two servers of two workers each, sharing Redis (one prefix) as two hosts of one deployment would."""
    shared = {"MCPGEN_REDIS_PREFIX": f"nginx{free_port()}"}
    options = ("--allowed-host", PUBLIC_NAME)
    with scaled_server(redis_url, workers=2, env=shared, options=options) as first:
        with scaled_server(redis_url, workers=2, env=shared, options=options) as second:
            yield [first, second]


@pytest.fixture(scope="module")
def proxy(hosts: list[ScaledServer], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """nginx with the guide's site in front of ``hosts``; yields the MCP URL it serves."""
    directory = tmp_path_factory.mktemp("nginx")
    port = free_port()
    config = directory / "nginx.conf"
    config.write_text(nginx_conf(directory, guide_site([host.port for host in hosts], port)), encoding="utf-8")
    checked = subprocess.run(["nginx", "-t", "-c", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr  # the guide's configuration is valid as printed
    process = subprocess.Popen(
        ["nginx", "-c", str(config), "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx2.get(url, headers={"host": PUBLIC_NAME}, timeout=1)
                break
            except httpx2.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"nginx did not start: {(directory / 'error.log').read_text()}") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


class ProxiedClient(Client):
    """The scale-out tests' raw client, with the public Host name the proxy forwards."""

    def headers(self, **extra: str) -> dict[str, str]:
        return super().headers(host=PUBLIC_NAME, **extra)


def proxied_session(proxy: str) -> ProxiedClient:
    """A legacy-era session opened through the proxy."""
    client = ProxiedClient(proxy)
    client.initialize()
    return client


def test_a_session_is_served_by_both_hosts_through_the_proxy(proxy: str, hosts: list[ScaledServer]) -> None:
    client = proxied_session(proxy)
    pids = {client.call("whoami") for _ in range(24)}
    serving = [host for host in hosts if pids & set(host.workers())]
    assert len(serving) == 2, (pids, [host.workers() for host in hosts])  # nginx spreads over both upstreams


def test_events_stream_through_the_proxy_as_they_are_written(proxy: str) -> None:
    """`count` logs "count 1" at once and answers 1.8 s later: through the guide's proxy the first event must not
    wait for the answer. (This nginx streams these events even with buffering on; the guide still turns it off,
    which is what nginx documents for event streams.)"""
    client = proxied_session(proxy)
    client.request("logging/setLevel", {"level": "info"})
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "count", "arguments": {"n": 3}}}
    call["params"]["arguments"]["interval"] = 0.6
    started = time.monotonic()
    arrivals: list[tuple[float, object]] = []
    with httpx2.stream("POST", proxy, content=json.dumps(call), headers=client.headers(), timeout=20) as response:
        assert response.status_code == 200
        for event in sse_events(response.iter_lines()):
            if event.data is not None:
                arrivals.append((time.monotonic() - started, event.data))
    messages = [data for _, data in arrivals]
    assert [m["params"]["data"] for m in messages[:-1]] == ["count 1", "count 2", "count 3"], messages  # type: ignore[index]
    assert "result" in messages[-1], messages  # type: ignore[operator]
    first, last = arrivals[0][0], arrivals[-1][0]
    assert last >= 1.5 and first < last - 1.0, arrivals


def test_the_2026_era_through_the_proxy(proxy: str) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": meta, "name": "whoami"}}
    body["params"]["arguments"] = {}
    modern = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
        "host": PUBLIC_NAME,
    }
    answer = httpx2.post(proxy, content=json.dumps(body), headers={**HEADERS, **modern}, timeout=10)
    assert answer.status_code == 200, answer.text
    events = [e.data for e in sse_events(iter(answer.text.splitlines())) if e.data is not None]
    message = events[-1] if events else answer.json()
    assert message["result"]["content"][0]["text"].isdigit(), message
