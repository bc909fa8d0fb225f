"""mcpgen_runtime.jsonrpc.session: two real sessions talking over in-memory streams, or one session and a raw
JSON-RPC peer that writes exact frames (to check the wire, error codes and what is *not* sent)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpgen_runtime import (
    ErrorCode,
    JSONParams,
    JSONRPCError,
    MemoryMessageStream,
    MethodNotFound,
    RequestContext,
    Session,
    SessionClosedError,
    memory_stream_pair,
)
from mcpgen_runtime.jsonrpc import decode_frame, encode_frame

pytestmark = pytest.mark.anyio

WAIT = 5.0  # upper bound for anything that should happen "at once"; a hang fails instead of stalling the suite


class RecordingStream:
    """A real MessageStream wrapper that keeps every frame it saw, to assert on the wire traffic."""

    def __init__(self, inner: MemoryMessageStream) -> None:
        self.inner = inner
        self.received: list[Any] = []
        self.sent: list[Any] = []

    async def receive(self) -> bytes:
        frame = await self.inner.receive()
        self.received.append(json.loads(frame))
        return frame

    async def send(self, frame: bytes) -> None:
        self.sent.append(json.loads(frame))
        await self.inner.send(frame)

    async def aclose(self) -> None:
        await self.inner.aclose()


class RawPeer:
    """The far end of a session, driven frame by frame."""

    def __init__(self, stream: MemoryMessageStream, session: Session) -> None:
        self.stream = stream
        self.session = session
        self._sentinel = 0

    async def send(self, frame: Any) -> None:
        await self.stream.send(frame if isinstance(frame, bytes) else json.dumps(frame).encode())

    async def receive(self) -> Any:
        with anyio.fail_after(WAIT):
            return json.loads(await self.stream.receive())

    async def exchange(self, frame: Any) -> Any:
        await self.send(frame)
        return await self.receive()

    async def assert_nothing_pending(self) -> None:
        """A ping with a fresh id must be the very next answer: nothing else was (or will be) sent before it."""
        self._sentinel += 1
        sentinel = f"sentinel-{self._sentinel}"
        answer = await self.exchange({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})
        assert answer == {"jsonrpc": "2.0", "id": sentinel, "result": {}}


async def echo_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
    if method == "echo":
        return {"echo": params}
    if method == "boom":
        raise RuntimeError("secret detail that must not leak")
    if method == "custom_error":
        raise JSONRPCError(-32042, "custom", {"detail": [1, 2]})
    if method == "not_a_dict":
        return [1, 2]  # type: ignore[return-value]
    if method == "not_serializable":
        return {"value": object()}
    if method == "slow":
        await anyio.sleep(0.2)
        return {"slow": True}
    raise MethodNotFound(method)


@asynccontextmanager
async def raw_peer(**session_options: Any) -> AsyncIterator[RawPeer]:
    session_options.setdefault("request_handler", echo_handler)
    server_end, raw_end = memory_stream_pair()
    with anyio.fail_after(30):
        async with Session(server_end, **session_options) as session:
            yield RawPeer(raw_end, session)


@asynccontextmanager
async def session_pair(
    server_options: dict[str, Any] | None = None, client_options: dict[str, Any] | None = None
) -> AsyncIterator[tuple[Session, Session, RecordingStream, RecordingStream]]:
    """(server, client, server's stream, client's stream), both streams recording."""
    server_end, client_end = memory_stream_pair()
    server_stream, client_stream = RecordingStream(server_end), RecordingStream(client_end)
    with anyio.fail_after(30):
        async with (
            Session(server_stream, **{"request_handler": echo_handler, **(server_options or {})}) as server,
            Session(client_stream, **(client_options or {})) as client,
        ):
            yield server, client, server_stream, client_stream


# -- requests and responses ------------------------------------------------------------------------------------------


async def test_session_many_concurrent_requests_complete_out_of_order() -> None:
    count = 40
    releases = [anyio.Event() for _ in range(count)]
    all_started, started = anyio.Event(), set()
    completed: list[int] = []

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert isinstance(params, dict)
        n = params["n"]
        started.add(n)
        if len(started) == count:
            all_started.set()  # all 40 are in flight at once
        await releases[n].wait()
        return {"n": n, "id": context.request_id}

    results: dict[int, dict[str, Any]] = {}
    async with session_pair({"request_handler": handler}) as (_, client, _, _):

        async def call(n: int) -> None:
            results[n] = await client.request("work", {"n": n})
            completed.append(n)

        async with anyio.create_task_group() as tg:
            for n in range(count):
                tg.start_soon(call, n)
            await all_started.wait()
            for n in reversed(range(count)):  # finish them in the opposite order, one at a time
                releases[n].set()
                while n not in completed:
                    await anyio.sleep(0)
    assert completed == list(reversed(range(count)))
    assert all(results[n]["n"] == n for n in range(count))  # each caller got its own answer back
    assert len({result["id"] for result in results.values()}) == count  # every request had its own id


async def test_session_slow_handler_does_not_block_others() -> None:
    release = anyio.Event()

    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        if method == "wait":
            await release.wait()
        return {"method": method}

    async with session_pair({"request_handler": handler}) as (_, client, _, _):
        async with anyio.create_task_group() as tg:
            slow_result: list[dict[str, Any]] = []

            async def slow() -> None:
                slow_result.append(await client.request("wait"))

            tg.start_soon(slow)
            for _ in range(5):
                assert await client.request("fast") == {"method": "fast"}
            assert not slow_result
            release.set()
        assert slow_result == [{"method": "wait"}]


async def test_session_requests_both_ways_and_nested() -> None:
    async def client_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        assert method == "sampling/createMessage"
        return {"answer": 42}

    async def server_handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        # A server handler asking the client something while the client waits for the server: no deadlock.
        inner = await context.session.request("sampling/createMessage", {"q": 1}, timeout=WAIT)
        return {"inner": inner}

    async with session_pair({"request_handler": server_handler}, {"request_handler": client_handler}) as pair:
        server, client, _, _ = pair
        assert await client.request("tools/call", {}) == {"inner": {"answer": 42}}
        assert await server.request("sampling/createMessage") == {"answer": 42}


async def test_session_string_and_int_ids_are_echoed_with_their_type() -> None:
    async with raw_peer() as peer:
        for request_id in ["7", 7, "", -3, "x" * 300]:
            answer = await peer.exchange({"jsonrpc": "2.0", "id": request_id, "method": "echo", "params": [1]})
            assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {"echo": [1]}}
            assert type(answer["id"]) is type(request_id)


async def test_session_error_response_raises_jsonrpc_error_with_code_message_and_data() -> None:
    async with session_pair() as (_, client, _, _):
        with pytest.raises(JSONRPCError) as caught:
            await client.request("custom_error")
        assert (caught.value.code, caught.value.message, caught.value.data) == (-32042, "custom", {"detail": [1, 2]})
        with pytest.raises(JSONRPCError) as caught:
            await client.request("no/such/method")
        assert caught.value.code == ErrorCode.METHOD_NOT_FOUND


async def test_session_malformed_or_non_object_results_fail_the_request_instead_of_hanging() -> None:
    client_end, raw_end = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(client_end) as client:
            for bad_answer in [
                lambda i: {"jsonrpc": "2.0", "id": i, "result": [1]},
                lambda i: {"jsonrpc": "2.0", "id": i, "error": {"code": "x", "message": 1}},
                lambda i: {"jsonrpc": "1.0", "id": i, "result": {}},
                lambda i: {"jsonrpc": "2.0", "id": i, "result": {}, "error": {"code": 1, "message": ""}},
            ]:
                async with anyio.create_task_group() as tg:

                    async def answer(make: Any = bad_answer) -> None:
                        request = json.loads(await raw_end.receive())
                        await raw_end.send(json.dumps(make(request["id"])).encode())

                    tg.start_soon(answer)
                    with pytest.raises(JSONRPCError) as caught:
                        await client.request("x")
                    assert caught.value.code == ErrorCode.INTERNAL_ERROR


async def test_session_peer_closing_fails_pending_requests_and_ends_the_session() -> None:
    client_end, raw_end = memory_stream_pair()
    with anyio.fail_after(WAIT):
        async with Session(client_end) as client:
            async with anyio.create_task_group() as tg:

                async def close_after_request() -> None:
                    await raw_end.receive()
                    await raw_end.aclose()

                tg.start_soon(close_after_request)
                with pytest.raises(SessionClosedError):
                    await client.request("never/answered")
            await client.wait_closed()
            assert client.closed
            with pytest.raises(SessionClosedError):
                await client.request("ping")


async def test_session_running_handlers_still_answer_after_the_peer_stops_sending() -> None:
    async with raw_peer() as peer:
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await peer.stream.send_eof()  # like a client closing the server's stdin
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"slow": True}}
        with anyio.fail_after(WAIT):
            await peer.session.wait_closed()


async def test_session_body_exception_propagates_unwrapped() -> None:
    server_end, _ = memory_stream_pair()
    with pytest.raises(KeyError):
        async with Session(server_end):
            raise KeyError("mine")


async def test_session_notifications_arrive_in_order() -> None:
    seen: list[Any] = []
    done = anyio.Event()

    async def on_notification(method: str, params: JSONParams) -> None:
        seen.append((method, params))
        if len(seen) == 100:
            done.set()

    async with session_pair({"notification_handler": on_notification}) as (_, client, _, _):
        for n in range(100):
            await client.notify("notifications/message", {"n": n})
        with anyio.fail_after(WAIT):
            await done.wait()
    assert seen == [("notifications/message", {"n": n}) for n in range(100)]


# -- cancellation ----------------------------------------------------------------------------------------------------


def _hanging_handler(started: anyio.Event, cancelled: anyio.Event) -> Any:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    return handler


async def test_session_timeout_sends_cancelled_and_really_cancels_the_peer_handler() -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    async with session_pair({"request_handler": _hanging_handler(started, cancelled)}) as pair:
        _, client, server_stream, client_stream = pair
        with pytest.raises(TimeoutError):
            await client.request("tools/call", {"name": "hang"}, timeout=0.2)
        with anyio.fail_after(WAIT):
            await cancelled.wait()
        request_id = server_stream.received[0]["id"]
        assert server_stream.received[1]["method"] == "notifications/cancelled"
        assert server_stream.received[1]["params"]["requestId"] == request_id
        assert "timed out" in server_stream.received[1]["params"]["reason"]
        # The session keeps serving, and the cancelled request never got a response.
        assert await client.request("ping") == {}
        assert [frame.get("id") for frame in client_stream.received] == [client_stream.sent[-1]["id"]]


async def test_session_caller_cancellation_sends_cancelled() -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    async with session_pair({"request_handler": _hanging_handler(started, cancelled)}) as pair:
        _, client, server_stream, _ = pair
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.request, "tools/call")
                await started.wait()
                scope.cancel()
        with anyio.fail_after(WAIT):
            await cancelled.wait()
        notification = server_stream.received[-1]
        assert notification["method"] == "notifications/cancelled"
        assert notification["params"] == {"requestId": 1, "reason": "Request cancelled by the caller"}


async def test_session_cancelled_request_gets_no_response_on_the_wire() -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    async with raw_peer(request_handler=_hanging_handler(started, cancelled)) as peer:
        await peer.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call"})
        with anyio.fail_after(WAIT):
            await started.wait()
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}})
        with anyio.fail_after(WAIT):
            await cancelled.wait()
        await peer.assert_nothing_pending()
        # Cancelling unknown / finished / malformed ids is ignored.
        for params in [{"requestId": "c1"}, {"requestId": 99}, {}, {"requestId": [1]}, None]:
            frame: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
            if params is not None:
                frame["params"] = params
            await peer.send(frame)
        await peer.assert_nothing_pending()


async def test_session_duplicate_in_flight_request_id_is_rejected() -> None:
    started, cancelled = anyio.Event(), anyio.Event()
    async with raw_peer(request_handler=_hanging_handler(started, cancelled)) as peer:
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "x"})
        answer = await peer.exchange({"jsonrpc": "2.0", "id": 5, "method": "x"})
        assert answer["id"] == 5 and answer["error"]["code"] == ErrorCode.INVALID_REQUEST


# -- progress --------------------------------------------------------------------------------------------------------


async def test_session_progress_is_routed_to_the_requests_callback() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        for step in range(1, 4):
            await context.report_progress(step, 3, f"step {step}")
        return {"token": context.progress_token}

    stray: list[Any] = []

    async def on_notification(method: str, params: JSONParams) -> None:
        stray.append((method, params))

    async with session_pair({"request_handler": handler}, {"notification_handler": on_notification}) as pair:
        _, client, _, _ = pair
        updates: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, total, message))

        result = await client.request("tools/call", {"name": "t"}, progress_callback=on_progress)
        assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert result == {"token": 1}

        # The caller's own token is kept (and the caller's dict is not modified).
        updates.clear()
        params = {"_meta": {"progressToken": "mine"}}
        assert await client.request("x", params, progress_callback=on_progress) == {"token": "mine"}
        assert len(updates) == 3 and params == {"_meta": {"progressToken": "mine"}}

        # Without a token, report_progress sends nothing.
        assert await client.request("x") == {"token": None}
    assert stray == []


async def test_session_progress_for_unknown_tokens_goes_to_the_notification_handler() -> None:
    seen: list[Any] = []
    got = anyio.Event()

    async def on_notification(method: str, params: JSONParams) -> None:
        seen.append((method, params))
        got.set()

    async with raw_peer(notification_handler=on_notification) as peer:
        params = {"progressToken": "nobody", "progress": 1}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        with anyio.fail_after(WAIT):
            await got.wait()
        assert seen == [("notifications/progress", params)]


# -- ping ------------------------------------------------------------------------------------------------------------


async def test_session_ping_is_answered_automatically_both_ways() -> None:
    async with session_pair() as (server, client, _, _):
        assert await client.request("ping") == {}
        assert await server.request("ping") == {}


async def test_session_ping_goes_to_the_handler_when_automatic_answers_are_off() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return {"handled": method}

    async with session_pair({"request_handler": handler, "answer_pings": False}) as (_, client, _, _):
        assert await client.request("ping") == {"handled": "ping"}


# -- errors on the wire ----------------------------------------------------------------------------------------------

PARSE = ErrorCode.PARSE_ERROR
INVALID = ErrorCode.INVALID_REQUEST

ERROR_CASES: list[tuple[str, bytes | dict[str, Any] | list[Any], int, Any]] = [
    ("truncated json", b'{"jsonrpc": "2.0", "id": 1, "method": "echo"', PARSE, None),
    ("not utf-8", b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', PARSE, None),
    ("nan", b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[NaN]}', PARSE, None),
    ("overflowing number", b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[1e400]}', PARSE, None),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, PARSE, None),
    ("utf-8 bom", b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', PARSE, None),
    ("scalar", b"42", INVALID, None),
    ("string", b'"ping"', INVALID, None),
    ("null", b"null", INVALID, None),
    ("missing jsonrpc", {"id": 1, "method": "ping"}, INVALID, 1),
    ("wrong jsonrpc", {"jsonrpc": "1.0", "id": "a", "method": "ping"}, INVALID, "a"),
    ("numeric jsonrpc", {"jsonrpc": 2.0, "id": 1, "method": "ping"}, INVALID, 1),
    ("float id", {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, INVALID, None),
    ("bool id", {"jsonrpc": "2.0", "id": True, "method": "ping"}, INVALID, None),
    ("null id", {"jsonrpc": "2.0", "id": None, "method": "ping"}, INVALID, None),
    ("object id", {"jsonrpc": "2.0", "id": {}, "method": "ping"}, INVALID, None),
    ("method not a string", {"jsonrpc": "2.0", "id": 2, "method": 1}, INVALID, 2),
    ("method missing", {"jsonrpc": "2.0", "id": 3}, INVALID, 3),
    ("params a string", {"jsonrpc": "2.0", "id": 4, "method": "echo", "params": "x"}, INVALID, 4),
    ("params null", {"jsonrpc": "2.0", "id": 4, "method": "echo", "params": None}, INVALID, 4),
    ("invalid notification", {"jsonrpc": "2.0", "method": 1, "params": "bar"}, INVALID, None),
    ("batch while batches are off", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], INVALID, None),
    ("empty batch", [], INVALID, None),
    ("unknown method", {"jsonrpc": "2.0", "id": 5, "method": "no/such"}, ErrorCode.METHOD_NOT_FOUND, 5),
    ("handler raises", {"jsonrpc": "2.0", "id": 6, "method": "boom"}, ErrorCode.INTERNAL_ERROR, 6),
    ("non-dict result", {"jsonrpc": "2.0", "id": 7, "method": "not_a_dict"}, ErrorCode.INTERNAL_ERROR, 7),
    ("unserializable", {"jsonrpc": "2.0", "id": 8, "method": "not_serializable"}, ErrorCode.INTERNAL_ERROR, 8),
    ("custom error", {"jsonrpc": "2.0", "id": 9, "method": "custom_error"}, -32042, 9),
]


@pytest.mark.parametrize(
    ("frame", "code", "request_id"), [case[1:] for case in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
async def test_session_answers_each_bad_frame_with_the_right_error_and_keeps_serving(
    frame: bytes | dict[str, Any], code: int, request_id: Any
) -> None:
    async with raw_peer() as peer:
        for _ in range(2):  # twice: the first bad frame must not have damaged anything
            answer = await peer.exchange(frame)
            assert set(answer) == {"jsonrpc", "id", "error"}
            assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id
            assert answer["error"]["code"] == code
            assert isinstance(answer["error"]["message"], str)
            assert "secret" not in json.dumps(answer) and "Traceback" not in json.dumps(answer)
            await peer.assert_nothing_pending()


async def test_session_handler_exception_is_logged_not_leaked(caplog: pytest.LogCaptureFixture) -> None:
    async with raw_peer() as peer:
        answer = await peer.exchange({"jsonrpc": "2.0", "id": 1, "method": "boom"})
    assert answer["error"] == {"code": -32603, "message": "Internal error"}
    assert "secret detail that must not leak" in caplog.text


@pytest.mark.parametrize(
    "frame",
    [
        {"jsonrpc": "2.0", "id": 999, "result": {}},
        {"jsonrpc": "2.0", "id": "nope", "error": {"code": -32600, "message": "x"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "both"}},
        {"id": 1, "result": {}},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": [1, 2]},
        b"",
        b"   ",
    ],
    ids=lambda frame: json.dumps(frame) if isinstance(frame, dict) else repr(frame),
)
async def test_session_ignores_responses_and_notifications_it_must_not_answer(frame: Any) -> None:
    async with raw_peer() as peer:
        if frame in (b"", b"   "):
            # Blank frames are a parse error on a frame-level transport (NDJSON drops blank lines before this).
            assert (await peer.exchange(frame))["error"]["code"] == PARSE
        else:
            await peer.send(frame)
        await peer.assert_nothing_pending()


# -- batches ---------------------------------------------------------------------------------------------------------


async def test_session_batches_are_answered_with_an_array_when_allowed() -> None:
    async with raw_peer(allow_batches=True) as peer:
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": 1}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "p", "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": 7},
            {"jsonrpc": "2.0", "id": 4, "method": "no/such"},
            {"jsonrpc": "2.0", "id": 1, "method": "echo"},  # duplicate of an id still in flight in this batch
            {"jsonrpc": "2.0", "id": 99, "result": {}},  # a response inside a batch: never answered
            5,
        ]
        answer = await peer.exchange(batch)
        assert isinstance(answer, list)
        by_id: dict[Any, list[Any]] = {}
        for response in answer:
            by_id.setdefault(response["id"], []).append(response)
        assert {key: len(value) for key, value in by_id.items()} == {1: 2, "p": 1, 3: 1, 4: 1, None: 1}
        assert {"jsonrpc": "2.0", "id": 1, "result": {"echo": {"a": 1}}} in by_id[1]
        assert sorted(r.get("error", {}).get("code", 0) for r in by_id[1]) == [INVALID, 0]
        assert by_id["p"][0]["result"] == {}
        assert by_id[3][0]["error"]["code"] == INVALID
        assert by_id[4][0]["error"]["code"] == ErrorCode.METHOD_NOT_FOUND
        assert by_id[None][0]["error"]["code"] == INVALID

        # Only notifications: no answer at all. Empty: a single error, not an array.
        await peer.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
        await peer.assert_nothing_pending()
        empty = await peer.exchange([])
        assert empty["id"] is None and empty["error"]["code"] == INVALID


async def test_session_batches_are_one_invalid_request_when_not_allowed() -> None:
    async with raw_peer() as peer:
        answer = await peer.exchange([{"jsonrpc": "2.0", "id": 1, "method": "echo"}, {"jsonrpc": "2.0", "id": 2}])
        assert answer == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID, "message": "Invalid Request: JSON-RPC batches are not supported"},
        }
        await peer.assert_nothing_pending()


# -- the envelope codec on its own -----------------------------------------------------------------------------------


def test_jsonrpc_encode_frame_is_one_line_and_round_trips_lone_surrogates() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"text": "a\nb\u2028\ud800é"}}
    frame = encode_frame(message)
    assert b"\n" not in frame
    assert json.loads(frame) == message
    assert decode_frame(frame) == decode_frame(json.dumps(message))
    with pytest.raises(ValueError):
        encode_frame({"x": float("nan")})


async def test_session_next_request_id_is_the_id_the_next_request_carries() -> None:
    async def handler(method: str, params: JSONParams, context: RequestContext) -> dict[str, Any]:
        return {"id": context.request_id}

    async with session_pair({"request_handler": handler}) as (_, client, _, _):
        for _ in range(3):
            expected = client.next_request_id
            assert (await client.request("echo-id", None)) == {"id": expected}
        assert client.next_request_id == expected + 1
