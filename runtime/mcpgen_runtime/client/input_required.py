"""Multi round-trip requests (MRTR, MCP 2026-07-28, SEP-2322) on the client side: an ``InputRequiredResult`` to
``tools/call``, ``prompts/get`` or ``resources/read`` is answered by the client's handlers and the request retried
until the server gives its complete result, within a round limit.

Where it sits: in the ``client`` layer, driven by ``requests.RequestPath`` (which supplies how to answer one input request
with the registered ``ClientHandlers`` and how to resend the original request); works on the wire dicts, so it
needs no generated model. Spec: basic/patterns/mrtr.mdx, "Client Requirements".

- Every input request of a round is answered (concurrently: an elicitation need not wait for a sampling call), and
  the original request is sent again as a new JSON-RPC request (the session gives it a new id) with
  ``inputResponses`` and, only when the server sent one, the exact ``requestState``.
- A round with ``requestState`` but no input requests is retried after a short, growing pause (the server is
  polling us; 50 ms doubling to 250 ms, as the official SDK does).
- ``inputResponses``/``requestState`` go on the retry of this request only: each call has its own loop.
- After ``max_rounds`` rounds (``DEFAULT_MAX_INPUT_ROUNDS``, 10, the value of the official SDKs) the call fails
  with ``InputRequiredError``, as it does when an input request names a method no handler answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio

from .errors import ClientError

__all__ = [
    "DEFAULT_MAX_INPUT_ROUNDS",
    "INPUT_REQUIRED",
    "InputRequiredError",
    "answer_input_requests",
    "call_with_rounds",
    "resolve_input_required",
]

DEFAULT_MAX_INPUT_ROUNDS: Final = 10
INPUT_REQUIRED: Final = "input_required"
_STATE_ONLY_FIRST_PAUSE: Final = 0.05
_STATE_ONLY_MAX_PAUSE: Final = 0.25

# (key, method, params) of one input request -> the result to send back under that key.
AnswerInput = Callable[[str, str, Mapping[str, Any]], Awaitable[dict[str, Any]]]
# (inputResponses or None, requestState or None) -> the server's next answer to the original request.
Retry = Callable[[dict[str, Any] | None, str | None], Awaitable[dict[str, Any]]]


class InputRequiredError(ClientError):
    """A multi round-trip request that could not be completed: the server asked for input more than ``rounds``
    times, or asked for something this client cannot answer (``reason`` says which)."""

    def __init__(self, method: str, reason: str, rounds: int) -> None:
        super().__init__(f"{method!r} could not be completed: {reason}")
        self.method = method
        self.reason = reason
        self.rounds = rounds


def is_input_required(result: Mapping[str, Any]) -> bool:
    return result.get("resultType") == INPUT_REQUIRED


async def call_with_rounds(
    method: str,
    params: Mapping[str, Any] | None,
    send: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
    answer: Callable[[str, Mapping[str, Any]], Awaitable[dict[str, Any]]],
    max_rounds: int | None,
) -> dict[str, Any]:
    """Send ``params`` and, when the server answers ``InputRequiredResult``, drive the rounds: ``answer`` (an input
    request's method and params -> its result; ``LookupError`` when nothing answers it) and ``send`` (the params of
    one attempt -> the server's answer). ``max_rounds`` None: a method that has no rounds (the answer is returned
    as it is, and fails as the method's result model would)."""
    first = await send(dict(params) if params is not None else None)
    if max_rounds is None or not is_input_required(first):
        return first
    # Each retry is the original request plus this round's answers: never another request's responses or state.
    original = {key: value for key, value in (params or {}).items() if key not in ("inputResponses", "requestState")}

    async def retry(responses: dict[str, Any] | None, request_state: str | None) -> dict[str, Any]:
        again = dict(original)
        if responses is not None:
            again["inputResponses"] = responses
        if request_state is not None:
            again["requestState"] = request_state
        return await send(again)

    async def answer_one(key: str, input_method: str, input_params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return await answer(input_method, input_params)
        except LookupError as exc:
            raise InputRequiredError(method, str(exc), 0) from None

    return await resolve_input_required(method, first, answer=answer_one, retry=retry, max_rounds=max_rounds)


async def resolve_input_required(
    method: str, first: dict[str, Any], *, answer: AnswerInput, retry: Retry, max_rounds: int
) -> dict[str, Any]:
    """Drive the rounds from ``first`` (an input-required answer) to the complete result, as a wire dict."""
    current, rounds, pause = first, 0, _STATE_ONLY_FIRST_PAUSE
    while is_input_required(current):
        rounds += 1
        if rounds > max_rounds:
            raise InputRequiredError(method, f"the server still asked for input after {max_rounds} rounds", rounds)
        requests = current.get("inputRequests")
        state = current.get("requestState")
        if state is not None and not isinstance(state, str):
            raise InputRequiredError(method, "the server sent a requestState that is not a string", rounds)
        if requests:
            if not isinstance(requests, dict):
                raise InputRequiredError(method, "inputRequests is not an object", rounds)
            pause = _STATE_ONLY_FIRST_PAUSE
            responses: dict[str, Any] | None = await answer_input_requests(method, requests, answer, rounds)
        elif state is None:
            raise InputRequiredError(
                method, "an InputRequiredResult with neither inputRequests nor requestState", rounds
            )
        else:
            await anyio.sleep(pause)
            pause = min(pause * 2, _STATE_ONLY_MAX_PAUSE)
            responses = None
        current = await retry(responses, state)
    return current


async def answer_input_requests(
    method: str, requests: dict[str, Any], answer: AnswerInput, rounds: int
) -> dict[str, Any]:
    """Every input request of ``requests`` (key -> ``{method, params}``) answered concurrently: key -> result
    (also what a task's ``input_required`` status asks, answered through ``tasks/update``); the first failure is
    raised as itself."""
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise InputRequiredError(method, f"input request {key!r} is not a request object", rounds)

    failures: list[Exception] = []

    async def run(key: str, request: dict[str, Any], scope: anyio.CancelScope) -> None:
        params = request.get("params")
        try:
            responses[key] = await answer(key, request["method"], params if isinstance(params, dict) else {})
        except Exception as exc:
            # The first failure ends the round (and is raised as itself, not wrapped in an ExceptionGroup).
            failures.append(exc)
            scope.cancel()

    async with anyio.create_task_group() as tg:
        for key, request in requests.items():
            tg.start_soon(run, key, request, tg.cancel_scope)
    if failures:
        raise failures[0]
    return responses
