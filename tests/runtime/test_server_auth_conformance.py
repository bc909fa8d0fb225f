"""The conformance suite's authorization-server scenarios (``conformance authorization``: RFC 8414 metadata, and the
authorization code grant with PKCE, run against a real redirect) pointed at tests/auth_server.py, as a check that
the test authorization server is a real one. The suite prints the authorization URL a person would open; here the
test opens it (the consent is automatic) and the redirect reaches the suite's callback server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest
from support.ports import free_port

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "conformance"))
from auth_server import running_auth_server  # noqa: E402
from harness import install_suite  # noqa: E402

SCENARIOS = ("authorization-server-metadata-endpoint", "authorization-code-grant")
PROCESS_TIMEOUT = 60.0


@pytest.mark.parametrize("confidential", [False, True], ids=["public", "confidential"])
def test_authorization_server_scenarios_pass(tmp_path: Path, confidential: bool) -> None:
    suite = install_suite()
    callback_port = free_port()
    redirect = f"http://127.0.0.1:{callback_port}/callback"
    # The suite authenticates with "none" whenever the metadata lists it, even with a secret: a confidential client's
    # server lists only the secret-based methods (the suite then picks client_secret_post).
    methods = ("client_secret_basic", "client_secret_post") if confidential else ("none",)
    with running_auth_server(token_auth_methods=methods) as auth:
        secret = "s3cret-for-the-suite" if confidential else None
        auth.register_client(
            redirect_uris=[redirect],
            auth_method="client_secret_basic" if confidential else "none",
            client_id="conformance",
            client_secret=secret,
        )
        command = suite.command("authorization", "--url", auth.issuer, "--client-id", "conformance")
        command += ["--resource", "http://127.0.0.1:8000/mcp", "-p", str(callback_port), "-o", str(tmp_path)]
        if secret is not None:
            command += ["--client-secret", secret]
        process = subprocess.Popen(
            command, env=suite.node.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
        )
        output: list[str] = []
        consented = threading.Event()

        def read_and_consent() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                output.append(line)
                if line.startswith(f"{auth.issuer}/authorize?") and not consented.is_set():
                    consented.set()
                    # What the user's browser does: the automatic consent redirects to the suite's callback.
                    httpx2.get(line.strip(), follow_redirects=True, timeout=10)

        reader = threading.Thread(target=read_and_consent, daemon=True)
        reader.start()
        try:
            process.wait(timeout=PROCESS_TIMEOUT)
        finally:
            process.kill()
            reader.join(timeout=5)
    checks = [check for path in sorted(tmp_path.glob("*/checks.json")) for check in json.loads(path.read_text())]
    statuses = {check["id"]: check["status"] for check in checks}
    failed = [check for check in checks if check["status"] == "FAILURE"]
    assert not failed and all(statuses.get(scenario) == "SUCCESS" for scenario in ("authorization-code-grant",)), (
        statuses,
        "".join(output)[-3000:],
    )
    assert statuses.get("authorization-server-metadata") == "SUCCESS", statuses
