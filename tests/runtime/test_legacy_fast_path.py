"""The legacy era's (2025-11-25, sessions) per-request path over streamable HTTP (issue 22): a POST carrying one
request is answered from the POST's own task, its answer handed back by the session (``Session.answer_inline``)
rather than written to the session's stream and routed back; an SSE answer whose events are all there is sent
without watching for a disconnect; and nothing of it is left in a reference cycle. What such an answer must still
do (a client's ``notifications/cancelled`` from another POST ends it with -32800) is checked on the same path.
Counted, not timed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from support.garbage import cyclic_garbage
from support.legacy_http import answer_of, legacy_session

from mcpgen_runtime.jsonrpc.answers import ANYIO_SHIELD_STATE
from mcpgen_runtime.server import Server
from mcpgen_runtime.transports.http.server import legacy, sse
from mcpgen_runtime.transports.http.server import session as http_session

pytestmark = pytest.mark.anyio


def build_server(hang: anyio.Event | None = None) -> Server:
    server = Server("legacy-fast-path", version="1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        if hang is not None:
            hang.set()
        await anyio.sleep(30)
        return "done"

    return server


def call(request_id: int, name: str = "add") -> dict[str, Any]:
    arguments = {"a": request_id, "b": 1} if name == "add" else {}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch, *targets: tuple[Any, str]) -> Iterator[Counter[str]]:
    """How often each ``(owner, name)`` function is called in the block."""
    calls: Counter[str] = Counter()
    for owner, name in targets:
        original = getattr(owner, name)

        def wrapper(*args: Any, __original: Any = original, __name: str = name, **kwargs: Any) -> Any:
            calls[__name] += 1
            return __original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)
    yield calls


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_a_single_request_is_answered_without_routing_its_answer_back(
    json_response: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = ((http_session.HTTPSessionStream, "send_message"), (legacy, "DisconnectWatch"), (sse, "DisconnectWatch"))
    with anyio.fail_after(15):
        async with legacy_session(build_server(), json_response=json_response) as (client, url, headers):
            with counted(monkeypatch, *targets) as calls:
                for n in range(1, 6):
                    response = await client.post(url, json=call(n), headers=headers)
                    assert response.status_code == 200, response.text
                    assert answer_of(response)["result"]["content"][0]["text"] == str(n + 1)
    assert calls["send_message"] == 0  # the answer came back from the session, not through the stream
    # A JSON answer of a tool that never suspends is there before anything is set up for it (answer_eagerly: see
    # test_legacy_eager); an SSE answer is all there when its response starts, which then sends it at once,
    # unwatched: neither is watched for a disconnect.
    assert calls["DisconnectWatch"] == (5 if json_response and not ANYIO_SHIELD_STATE.active else 0)  # safe mode


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_legacy_http_requests_leave_nothing_in_reference_cycles(json_response: bool) -> None:
    with anyio.fail_after(15):
        async with legacy_session(build_server(), json_response=json_response) as (client, url, headers):
            assert (await client.post(url, json=call(1), headers=headers)).status_code == 200  # loads the models
            with cyclic_garbage() as garbage:
                for n in range(2, 52):
                    response = await client.post(url, json=call(n), headers=headers)
                    assert response.status_code == 200, response.text
                    assert answer_of(response)["result"]["content"][0]["text"] == str(n + 1)
    assert Counter(garbage) == Counter()


@pytest.mark.parametrize("json_response", [True, False], ids=["json", "sse"])
async def test_a_request_cancelled_from_another_post_is_answered_request_cancelled(json_response: bool) -> None:
    hang = anyio.Event()
    with anyio.fail_after(15):
        async with legacy_session(build_server(hang), json_response=json_response) as (client, url, headers):
            answers: list[httpx2.Response] = []

            async def waiting() -> None:
                answers.append(await client.post(url, json=call(7, "wait"), headers=headers))

            async with anyio.create_task_group() as tg:
                tg.start_soon(waiting)
                await hang.wait()
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
                assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
            # The session serves on, and the id may be used again.
            again = await client.post(url, json=call(7), headers=headers)
            assert answer_of(again)["result"]["content"][0]["text"] == "8"
    assert answers[0].status_code == 200
    assert answer_of(answers[0])["error"]["code"] == -32800
