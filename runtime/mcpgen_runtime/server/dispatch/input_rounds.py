"""Multi round-trip requests (MCP 2026-07-28 basic/patterns/mrtr) behind ``Context.elicit`` / ``sample`` /
``list_roots``: the same author code serves both eras.

Where it sits: in the ``server`` layer, above ``request_state`` (the sealed state) and below ``modern`` (which
creates a request's ``InputExchange`` when its handler first asks for input, or at once when it brings answers or a
state, and turns ``InputRequired`` into an ``InputRequiredResult``).

In the legacy era ``Context.elicit(...)`` sends ``elicitation/create`` to the client and waits for its answer.
In the modern era the server cannot ask within the request: the handler is run, and each of its input calls
(elicitation, sampling, roots) gets a key, the one the author passed (``input_key=``) or one the runtime chooses
from the call's position (``elicitation-1``, ``sampling-2``, ``roots-3``: the n-th input call of the handler). A
call whose key has an answer (in the retry's ``inputResponses``, or carried over from earlier rounds in the
``requestState``) returns it; the first one without stops the handler with ``InputRequired``, and the request is
answered ``InputRequiredResult``: ``inputRequests`` (key -> request) and a sealed ``requestState`` holding the
answers used so far. The client retries with a new id, the answers and the state, and the handler runs again from
the start, until it completes or asks for more (the multi-round flow). So a handler must ask the same questions in
the same order each time it runs (keys name questions, by position unless named), and do nothing before its
questions that must not happen twice. ``Context.gather`` asks several questions in one round.

The state is bound to the request (method and a digest of its params, without ``_meta``, ``inputResponses`` and
``requestState``) and, on a protected server, to the principal that made it (a digest of the access token's issuer
and subject, else its client: ``AccessToken.owner``), as the spec recommends against cross-user replay: a state
presented on another request or by another principal is refused, like a forged or expired one (-32602).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from ...jsonrpc.envelopes import InvalidParams
from ..authoring.errors import InputRequired
from .request_state import InvalidRequestStateError, RequestStateCodec

__all__ = ["INPUT_METHODS", "InputExchange", "InputRequired", "params_digest", "principal_digest"]

INPUT_METHODS: Final = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""The requests a server may put in ``inputRequests``, and the prefix of the keys the runtime gives them."""
_NOT_BOUND: Final = ("_meta", "inputResponses", "requestState")


def principal_digest(owner: str | None) -> str | None:
    """What binds a ``requestState`` to who asked: SHA-256 of ``AccessToken.owner`` (None when unauthenticated).
    A digest, so that the token, which the client can read, does not spell out the identity."""
    return None if owner is None else hashlib.sha256(owner.encode("utf-8")).hexdigest()


def params_digest(params: Mapping[str, Any]) -> str:
    """What binds a ``requestState`` to its request: SHA-256 of the params' canonical JSON, minus the MRTR fields."""
    bound = {key: value for key, value in params.items() if key not in _NOT_BOUND}
    canonical = json.dumps(bound, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class InputExchange:
    """The input of one modern request: the answers it arrived with, the questions the handler asked."""

    def __init__(
        self,
        codec: RequestStateCodec,
        method: str,
        params: Mapping[str, Any],
        principal: Callable[[], str | None] = lambda: None,
    ) -> None:
        """Reads ``inputResponses`` and ``requestState`` from ``params`` (already validated as the version's
        params). ``principal``: gives ``AccessToken.owner`` of the request, None when it is not authenticated. Raises
        ``InvalidParams`` (-32602) for a state that is not valid for this request and principal. The bindings (the
        params' digest, the principal's) are computed only when a state is verified or sealed: most requests that
        may ask for input never do."""
        self._codec, self._method, self._params, self._principal = codec, method, params, principal
        self.answers: dict[str, Any] = {}
        self.used: dict[str, Any] = {}  # answers the handler consumed: carried over to the next round
        self.requested: dict[str, dict[str, Any]] = {}
        self._calls = 0
        token = params.get("requestState")
        if token is not None:
            self.answers.update(self._verified(token))
        responses = params.get("inputResponses")
        if isinstance(responses, Mapping):
            # Keys nobody asks for are ignored (the spec: "ignore any information it does not recognize").
            self.answers.update(responses)

    def _verified(self, token: Any) -> dict[str, Any]:
        try:
            if not isinstance(token, str):
                raise InvalidRequestStateError("requestState must be a string")
            claims = self._codec.unseal(token)
            if claims.get("m") != self._method or claims.get("d") != params_digest(self._params):
                raise InvalidRequestStateError("requestState belongs to another request")
            if claims.get("p") != principal_digest(self._principal()):
                raise InvalidRequestStateError("requestState was issued to another principal")
        except InvalidRequestStateError as exc:
            raise InvalidParams(f"Invalid params: {exc}") from None
        answers = claims.get("a")
        return dict(answers) if isinstance(answers, dict) else {}

    def next_key(self, method: str, given: str | None) -> str:
        self._calls += 1
        return given if given is not None else f"{INPUT_METHODS[method]}-{self._calls}"

    def answer(self, key: str) -> Any:
        """The raw answer for ``key`` (recorded as used), or None when there is none yet."""
        if key not in self.answers:
            return None
        self.used[key] = self.answers[key]
        return self.answers[key]

    def ask(self, key: str, method: str, params: dict[str, Any]) -> InputRequired:
        """Record a question; the caller raises the returned ``InputRequired`` (or ``gather`` collects it)."""
        if key in self.requested:
            raise ValueError(f"two input requests of one round share the key {key!r}; give each its own input_key")
        self.requested[key] = {"method": method, "params": params}
        return InputRequired({key: self.requested[key]})

    def input_required_result(self) -> dict[str, Any]:
        """The ``InputRequiredResult`` for the questions asked (``resultType`` and ``_meta`` are added by the caller).
        Raises ``ValueError`` when the state would be too large (see ``RequestStateCodec``)."""
        claims: dict[str, Any] = {"m": self._method, "d": params_digest(self._params), "a": self.used}
        principal = principal_digest(self._principal())
        if principal is not None:
            claims["p"] = principal
        state = self._codec.seal(claims)
        return {"inputRequests": dict(self.requested), "requestState": state}
