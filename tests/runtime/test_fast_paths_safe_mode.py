"""The runtime's fast paths on other libraries' private parts (``mcpgen_runtime.safe_mode``): each falls back to
its public path in safe mode and when its self-check fails, and the behaviour stays what it was: a cancellation
still waits for an anyio shield, frames encode to the same bytes, an HTTP answer is still whole.

Each test decides the fast paths afresh (``reset``) under its own environment, and resets them again after, so the
rest of the suite sees the decision of the process's real environment (``MCPGEN_SAFE_MODE`` as .ci/run sets it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Iterator
from functools import partial
from typing import Any

import anyio
import pytest
from starlette.types import Receive, Scope, Send
from support.servers import answer_lifespan
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcpgen_runtime import safe_mode
from mcpgen_runtime.jsonrpc import (
    JSONParams,
    RequestContext,
    Session,
    answers,
    encode_frame,
    envelopes,
    memory_stream_pair,
)
from mcpgen_runtime.jsonrpc.envelopes import Request
from mcpgen_runtime.transports.http.server import coalesce
from mcpgen_runtime.transports.http.server.serving import serve_app

WAIT = 10
NAMES = ("anyio-shield-state", "json-c-encoder", "uvicorn-coalescing")


@pytest.fixture(autouse=True)
def decide_afresh() -> Iterator[None]:
    paths = safe_mode.registered_fast_paths()
    for path in paths.values():
        path.reset()
    yield
    for path in paths.values():
        path.reset()


@pytest.fixture
def safe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(safe_mode.SAFE_MODE_VARIABLE, "1")


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(safe_mode.SAFE_MODE_VARIABLE, raising=False)


def test_every_fast_path_is_registered_and_on_here(fast: None) -> None:
    assert set(NAMES) <= set(safe_mode.registered_fast_paths())
    assert set(NAMES) <= set(safe_mode.active_fast_paths())
    assert "json-c-encoder on" in safe_mode.describe_fast_paths()


def test_safe_mode_turns_every_one_off(safe: None) -> None:
    assert safe_mode.safe_mode()
    assert safe_mode.active_fast_paths() == ()
    assert "uvicorn-coalescing off (MCPGEN_SAFE_MODE=1)" in safe_mode.describe_fast_paths()


def test_a_failed_check_is_logged_once_with_its_reason(fast: None, caplog: pytest.LogCaptureFixture) -> None:
    def check() -> None:
        safe_mode.require(False, "the private part moved")

    path = safe_mode.FastPath("probe", "nothing real", check)
    with caplog.at_level(logging.WARNING, logger="mcpgen_runtime.safe_mode"):
        assert not path.active and not path.active
    assert [r.getMessage().count("the private part moved") for r in caplog.records] == [1]


# -- anyio's per-task state (TaskScope) --------------------------------------------------------------------------


async def _cancel_inside_a_shield() -> tuple[list[str], Any]:
    """A request run inline (``dispatch_now``) whose handler is in an anyio shield when the peer cancels it: the
    cancellation must wait until the shield is left. The log, and the scope class the session used."""
    started, log = asyncio.Event(), []

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        with anyio.CancelScope(shield=True):
            started.set()
            await asyncio.sleep(0.05)
            log.append("shielded part done")
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            log.append("cancelled after the shield")
            raise
        return {}

    server_end, peer = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(server_end, request_handler=handler) as session:
            await anyio.sleep(0.01)  # the session is serving
            scope_class = session._incoming.inline_scope
            running = asyncio.ensure_future(session.dispatch_now(Request(1, "work", None), inline=True))
            await started.wait()
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
            await peer.send(json.dumps(cancel).encode())
            assert await running
    return log, scope_class


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_shields_hold_with_the_fast_path(fast: None, anyio_backend: str) -> None:
    log, scope_class = await _cancel_inside_a_shield()
    assert getattr(scope_class, "func", scope_class) is answers.TaskScope  # (bound to the session's loop)
    assert log == ["shielded part done", "cancelled after the shield"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_shields_hold_in_safe_mode(safe: None, anyio_backend: str) -> None:
    log, scope_class = await _cancel_inside_a_shield()
    assert scope_class is anyio.CancelScope
    assert log == ["shielded part done", "cancelled after the shield"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_shields_hold_when_anyio_keeps_its_task_state_elsewhere(
    fast: None, anyio_backend: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # What a future anyio could do: the module attribute is still there, but nothing is kept in it. TaskScope would
    # then see no shield and cancel inside one; the self-check sees that and the session uses anyio's own scope.
    monkeypatch.setattr(answers, "_ANYIO_TASK_STATES", {})
    with caplog.at_level(logging.WARNING, logger="mcpgen_runtime.safe_mode"):
        log, scope_class = await _cancel_inside_a_shield()
    assert scope_class is anyio.CancelScope
    assert log == ["shielded part done", "cancelled after the shield"]
    assert "anyio-shield-state off" in caplog.text and "not where TaskScope looks" in caplog.text


def test_the_shield_check_fails_without_anyios_task_states(fast: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answers, "_ANYIO_TASK_STATES", None)
    assert not answers.ANYIO_SHIELD_STATE.active
    assert "_task_states is gone" in answers.ANYIO_SHIELD_STATE.reason


# -- json.encoder.c_make_encoder -----------------------------------------------------------------------------------

MESSAGES: list[Any] = [
    {"jsonrpc": "2.0", "id": 1, "result": {"text": 'é \u2028 "q" \\ \n \x00 😀', "n": [0, -1, 10**30, 2.5, -0.0]}},
    [{"jsonrpc": "2.0", "method": "x", "params": {"a": [True, False, None], "b": {}}}],
    {"jsonrpc": "2.0", "id": "s", "result": {"lone": "\ud800"}},  # a lone surrogate: the ASCII fallback
]


def _encoded_and_errors() -> list[Any]:
    out: list[Any] = [encode_frame(message) for message in MESSAGES]
    cycle: list[Any] = []
    cycle.append(cycle)
    for bad in (object(), float("nan"), cycle):
        try:
            encode_frame({"bad": bad})
        except (TypeError, ValueError) as exc:
            out.append(type(exc))
    return out


def test_frames_are_the_same_bytes_in_safe_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(safe_mode.SAFE_MODE_VARIABLE, raising=False)
    fast_result = _encoded_and_errors()
    assert envelopes.C_ENCODER.active
    monkeypatch.setenv(safe_mode.SAFE_MODE_VARIABLE, "1")
    envelopes.C_ENCODER.reset()
    assert _encoded_and_errors() == fast_result and not envelopes.C_ENCODER.active
    assert fast_result[-3:] == [TypeError, ValueError, ValueError]


def test_frames_are_the_same_bytes_when_the_c_encoder_misbehaves_or_is_missing(
    fast: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    expected = _encoded_and_errors()
    envelopes.C_ENCODER.reset()

    # c_make_encoder with a changed meaning of its arguments: here, other separators. (json's own encoder calls
    # c_make_encoder too, so the module attribute cannot be replaced; what envelopes builds from it is.)
    monkeypatch.setattr(envelopes, "_make_c_encoder", lambda: lambda value, level: iter([json.dumps(value)]))
    with caplog.at_level(logging.WARNING, logger="mcpgen_runtime.safe_mode"):
        assert _encoded_and_errors() == expected
    assert not envelopes.C_ENCODER.active and "json-c-encoder off" in caplog.text
    monkeypatch.undo()
    monkeypatch.delenv(safe_mode.SAFE_MODE_VARIABLE, raising=False)
    envelopes.C_ENCODER.reset()
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    envelopes.C_ENCODER.reset()
    assert _encoded_and_errors() == expected and "c_make_encoder is missing" in envelopes.C_ENCODER.reason


# -- uvicorn's protocol class (coalesce) -------------------------------------------------------------------------


async def _answer_over_http() -> bytes:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        await receive()
        body = b'{"answer":3}'
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def client(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
            data = b""
            for _ in range(2):  # two answers on one keep-alive connection
                sock.sendall(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                while not data.endswith(b'{"answer":3}'):
                    data += sock.recv(65536)
                data += b"|"
            return data

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            base = await tg.start(partial(serve_app, app))
            answer = await anyio.to_thread.run_sync(client, int(base.rsplit(":", 1)[1]))
            tg.cancel_scope.cancel()
    return answer


def _assert_two_whole_answers(data: bytes) -> None:
    first, second, _ = data.split(b"|")
    for answer in (first, second):
        assert answer.startswith(b"HTTP/1.1 200") and b"content-length: 12" in answer.lower(), answer
        assert answer.endswith(b'\r\n\r\n{"answer":3}'), answer


@pytest.mark.anyio
async def test_http_answers_whole_with_the_fast_path(fast: None) -> None:
    _assert_two_whole_answers(await _answer_over_http())
    assert coalesce.UVICORN_COALESCING.active and coalesce.http_protocol() is not None


@pytest.mark.anyio
async def test_http_answers_whole_in_safe_mode(safe: None) -> None:
    assert coalesce.http_protocol() == "auto"
    _assert_two_whole_answers(await _answer_over_http())


class _RenamedKeywords(H11Protocol):
    """What a future uvicorn could do: the protocol's constructor takes other keywords."""

    def __init__(self, config: Any, server_state: Any, state: Any = None, _loop: Any = None) -> None:
        super().__init__(config, server_state, state or {}, _loop)


@pytest.mark.anyio
async def test_http_answers_whole_when_uvicorns_protocol_changed(
    fast: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(coalesce, "_auto_protocol", lambda: _RenamedKeywords)
    with caplog.at_level(logging.WARNING, logger="mcpgen_runtime.safe_mode"):
        assert coalesce.http_protocol() == "auto"
    assert "uvicorn-coalescing off" in caplog.text and "app_state" in caplog.text
    _assert_two_whole_answers(await _answer_over_http())
