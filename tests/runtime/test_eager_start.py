"""A request of a plain tool over streamable HTTP is started at once, in the POST's task, before anything is set up
to track it (``jsonrpc.eager``; ``Session.answer_eagerly`` for the legacy era's JSON POSTs, ``Server.start_modern``
for the modern era's). One that finishes without suspending is answered untracked; one that suspends is adopted by
the usual path and goes on where it stopped. Both must answer what the usual path answers, byte for byte, and a
request that suspended must be cancellable as before, shields included. Each case runs with eager starts on and off;
how often each outcome happened is counted, so a start that never happens fails the test (in safe mode, where
``TaskScope`` is off, no request may start eagerly)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
import pytest
from support.legacy_http import answer_of, legacy_session
from support.servers import serving_server
from support.tool_zoo import MODERN, MODERN_META, TOOL_CALLS, tool_zoo

from mcpgen_runtime.jsonrpc import eager as eager_module
from mcpgen_runtime.jsonrpc import session as session_module
from mcpgen_runtime.jsonrpc.answers import ANYIO_SHIELD_STATE
from mcpgen_runtime.server import Server
from mcpgen_runtime.server import server as server_module
from mcpgen_runtime.server.dispatch.connection import ServerConnection

pytestmark = pytest.mark.anyio

EAGER = ANYIO_SHIELD_STATE.active  # off in safe mode


def build_server() -> Server:
    server = tool_zoo("eager")

    @server.tool()
    async def later(a: int) -> str:
        """Suspends once, then answers."""
        await anyio.sleep(0.01)
        return str(a)

    return server


@contextmanager
def starts(monkeypatch: pytest.MonkeyPatch, on: bool) -> Iterator[Counter[str]]:
    """Eager starts on (each outcome counted: "finished" or "suspended") or off (none is started)."""
    outcomes: Counter[str] = Counter()
    original = eager_module.first_step

    def counted(coro: Any, task: Any) -> tuple[bool, Any]:
        done, outcome = original(coro, task)
        outcomes["finished" if done else "suspended"] += 1
        return done, outcome

    with monkeypatch.context() as patch:
        patch.setattr(session_module, "first_step", counted)
        patch.setattr(server_module, "first_step", counted)
        if not on:
            patch.setattr(ServerConnection, "_eager_call", lambda self, method, params: None)
            patch.setattr(Server, "start_modern", lambda self, request, task: None)
        yield outcomes


def legacy_call(request_id: int, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


Case = tuple[str, dict[str, Any] | None]
CASES: list[Case] = [*TOOL_CALLS, ("later", {"a": 5})]
# What a case's first step does: the sync tool runs in a thread, `later` sleeps: both suspend.
SUSPENDS = {"blocking", "later"}
# A ProtocolError raised in the first step (answered as the request's error): neither finished nor suspended.
RAISES = {"protocol", "missing"}


async def legacy_answers(cases: list[Case]) -> list[Any]:
    found = []
    async with legacy_session(build_server(), json_response=True) as (client, url, headers):
        for request_id, (name, arguments) in enumerate(cases, start=1):
            response = await client.post(url, json=legacy_call(request_id, name, arguments), headers=headers)
            found.append((response.status_code, response.headers["content-type"], response.content))
    return found


async def both_ways(
    monkeypatch: pytest.MonkeyPatch, answers: Callable[[list[Case]], Awaitable[list[Any]]], cases: list[Case]
) -> Counter[str]:
    """``cases`` answered with eager starts off, then on: the same answers, byte for byte, none started with them
    off; how the started ones went."""
    with anyio.fail_after(30):
        with starts(monkeypatch, on=False) as off:
            usual = await answers(cases)
        with starts(monkeypatch, on=True) as on:
            started = await answers(cases)
    assert off == Counter()
    assert started == usual
    return on


async def test_legacy_json_posts_answer_what_the_usual_path_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    on = await both_ways(monkeypatch, legacy_answers, CASES)
    suspended = sum(name in SUSPENDS for name, _ in CASES)
    raised = sum(name in RAISES for name, _ in CASES)
    expected = Counter(finished=len(CASES) - suspended - raised, suspended=suspended) if EAGER else Counter()
    assert on == expected


async def modern_answers(cases: list[Case]) -> list[Any]:
    found = []
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN}
    async with serving_server(build_server(), json_response=True) as url, httpx2.AsyncClient(timeout=5) as client:
        for request_id, (name, arguments) in enumerate(cases, start=1):
            params: dict[str, Any] = {"name": name, "_meta": MODERN_META}
            if arguments is not None:
                params["arguments"] = arguments
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            sent = {**headers, "mcp-method": "tools/call", "mcp-name": name}
            response = await client.post(url, json=body, headers=sent)
            found.append((response.status_code, response.headers["content-type"], response.content))
    return found


async def test_modern_posts_answer_what_the_usual_path_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    cases = CASES + CASES  # the first of each validates and caches its _meta (the direct lane starts with the next)
    on = await both_ways(monkeypatch, modern_answers, cases)
    # The first request validated the _meta, on the general path; every other one was started (the direct lane
    # answers a ProtocolError itself: it finishes).
    suspended = sum(name in SUSPENDS for name, _ in cases)
    assert on == (Counter(finished=len(cases) - 1 - suspended, suspended=suspended) if EAGER else Counter())


async def test_a_suspended_request_is_cancelled_as_before_its_shield_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool that enters a shielded scope in its first step and is cancelled (``notifications/cancelled``) while
    suspended in it: the cancellation waits for the shield (the adopted ``TaskScope`` sees the tool's own scopes),
    then ends the request with -32800; the session serves on."""
    server = Server("eager-shield", version="1")
    entered, shielded_done = anyio.Event(), anyio.Event()

    @server.tool()
    async def shielded() -> str:
        """Half a second in a shield, then waits to be cancelled."""
        with anyio.CancelScope(shield=True):
            entered.set()
            await anyio.sleep(0.5)
            shielded_done.set()
        await anyio.sleep(30)
        return "not cancelled"

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    answers: list[httpx2.Response] = []
    with anyio.fail_after(15), starts(monkeypatch, on=True) as outcomes:
        async with legacy_session(server, json_response=True) as (client, url, headers):

            async def call() -> None:
                answers.append(await client.post(url, json=legacy_call(9, "shielded", {}), headers=headers))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await entered.wait()
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
                assert (await client.post(url, json=cancel, headers=headers)).status_code == 202
                assert not shielded_done.is_set()
            assert shielded_done.is_set()  # the shield held: the cancellation came after it
            again = await client.post(url, json=legacy_call(9, "add", {"a": 1, "b": 2}), headers=headers)
            assert answer_of(again)["result"]["content"][0]["text"] == "3"
    assert answer_of(answers[0])["error"]["code"] == -32800
    assert outcomes == (Counter(suspended=1, finished=1) if EAGER else Counter())


async def test_a_suspended_modern_request_is_cancelled_when_its_client_goes_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A modern request started eagerly that suspends is adopted by its exchange: the client closing the connection
    cancels the tool (the exchange's disconnect watch and ``TaskScope``), as on the usual path."""
    server = Server("eager-gone", version="1")
    waiting, ended = anyio.Event(), anyio.Event()
    outcome: list[str] = []

    @server.tool()
    async def wait() -> str:
        """Waits to be cancelled."""
        waiting.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise
        finally:
            ended.set()
        return "not cancelled"

    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN}
    params = {"name": "wait", "_meta": MODERN_META, "arguments": {}}
    sent = {**headers, "mcp-method": "tools/call", "mcp-name": "wait"}
    with anyio.fail_after(15), starts(monkeypatch, on=True) as outcomes:
        async with serving_server(server, json_response=True) as url, httpx2.AsyncClient(timeout=5) as client:
            first = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}}
            assert (await client.post(url, json=first, headers=headers | {"mcp-method": "tools/list"})).is_success
            # tools/list validated the _meta: the next tools/call takes the direct lane, and is started eagerly.
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
                    await client.post(url, json=body, headers=sent)

                tg.start_soon(call)
                await waiting.wait()
                tg.cancel_scope.cancel()  # the client goes away: its connection is closed
            await ended.wait()
    assert outcome == ["cancelled"]
    assert outcomes == (Counter(suspended=1) if EAGER else Counter())
