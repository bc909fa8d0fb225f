"""The verifiers' fetches of the documents they depend on (issuer metadata, JWKS, introspection answers), bounded.

Where it sits: under the verifiers of ``server.auth`` (``jwt``, ``introspection``), over ``tokens``. What a fetch
costs, at most, whatever the other side does:

- ``fetch_json``: one fetch has a total deadline (``timeout``, 5 s by default, ``tokens.DEFAULT_HTTP_TIMEOUT``), from
  connecting to the last byte (``anyio.fail_after`` around all of it: a server that drips one byte a second does not
  hold a request longer than the deadline), and at most ``tokens.MAX_DOCUMENT_BYTES``; redirects are not followed.
  A failure (timeout, connection, a 5xx, 408 or 429 status, size, not a JSON object) is a
  ``tokens.VerifierUnavailableError`` (503: retry), whose message (for the server's log) names the URL; another 4xx
  is a definite refusal by the authorization server (e.g. of the resource server's introspection credentials), an
  ``InvalidTokenError`` (401) whose message does not name the URL (that is logged at WARNING).
- ``SharedFetches``: concurrent fetches of the same document (the same key) are one fetch, whose outcome every
  waiter gets (20 requests with one unknown ``kid`` cost one JWKS fetch); a failed fetch of a source is remembered
  for ``failure_ttl`` seconds (``DEFAULT_FAILURE_TTL``, 5 s), during which requests that need that source are
  answered at once (503, ``Retry-After`` = what remains of it) instead of each waiting for a dead server.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, Final, Generic, TypeVar
from urllib.parse import quote

import anyio

from .tokens import MAX_DOCUMENT_BYTES, InvalidTokenError, VerifierUnavailableError

__all__ = ["DEFAULT_FAILURE_TTL", "SharedFetches", "fetch_json", "retry_after_seconds"]

logger = logging.getLogger(__name__)

DEFAULT_FAILURE_TTL: Final = 5.0  # seconds a failed fetch of a source is remembered (answered 503 meanwhile)

T = TypeVar("T")


async def fetch_json(
    url: str,
    *,
    timeout: float,
    form: Mapping[str, str] | None = None,
    basic_auth: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """GET ``url`` (POST ``form`` when given) and return its JSON object, all of it within ``timeout`` seconds;
    ``VerifierUnavailableError`` on any failure (see the module docstring)."""
    import httpx2  # only protected servers fetch anything

    try:
        with anyio.fail_after(timeout):
            async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
                method = "GET" if form is None else "POST"
                headers = {"accept": "application/json"} | (_basic_header(*basic_auth) if basic_auth else {})
                data = dict(form) if form is not None else None
                request = client.build_request(method, url, data=data, headers=headers)
                response = await client.send(request, stream=True)
                try:
                    status = response.status_code
                    if 400 <= status < 500 and status not in (408, 429):
                        logger.warning("%s answered HTTP %d: the token is refused", url, status)
                        raise InvalidTokenError(f"the authorization server answered HTTP {status}")
                    if status != 200:
                        raise VerifierUnavailableError(f"{url} answered HTTP {status}")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_DOCUMENT_BYTES:
                            raise VerifierUnavailableError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
                finally:
                    await response.aclose()
    except TimeoutError:
        raise VerifierUnavailableError(f"fetching {url} took longer than {timeout:g} s") from None
    except httpx2.HTTPError as error:
        raise VerifierUnavailableError(f"fetching {url} failed: {type(error).__name__}") from None
    try:
        document = json.loads(body)
    except ValueError:
        raise VerifierUnavailableError(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise VerifierUnavailableError(f"{url} did not answer a JSON object")
    return document


class _Flight(Generic[T]):
    __slots__ = ("done", "error", "result", "settled")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.settled = False  # False when done: the fetching request was cancelled, a waiter fetches again
        self.result: T | None = None
        self.error: Exception | None = None


class SharedFetches(Generic[T]):
    """One fetch at a time per key, shared by every concurrent caller; failures of a source remembered
    ``failure_ttl`` seconds (see the module docstring)."""

    def __init__(self, failure_ttl: float = DEFAULT_FAILURE_TTL) -> None:
        self.failure_ttl = failure_ttl
        self._flights: dict[Hashable, _Flight[T]] = {}
        self._failed: dict[Hashable, tuple[float, VerifierUnavailableError]] = {}

    def failed(self, source: Hashable) -> VerifierUnavailableError | None:
        """The remembered failure of ``source`` (its ``retry_after``: the seconds it is still remembered), or None."""
        failure = self._failed.get(source)
        if failure is None:
            return None
        remaining = failure[0] - time.monotonic()
        if remaining <= 0:
            del self._failed[source]
            return None
        return VerifierUnavailableError(str(failure[1]), retry_after=remaining)

    async def run(self, key: Hashable, source: Hashable, fetch: Callable[[], Awaitable[T]]) -> T:
        """``fetch()``'s result, shared with concurrent callers of ``key``; a ``VerifierUnavailableError`` it
        raises marks ``source`` failed for ``failure_ttl`` seconds (and is raised at once meanwhile)."""
        while True:
            if (failure := self.failed(source)) is not None:
                raise failure
            flight = self._flights.get(key)
            if flight is None:
                break
            await flight.done.wait()  # bounded: the fetch it waits for has a deadline
            if flight.settled:
                if flight.error is not None:
                    raise flight.error
                return flight.result  # type: ignore[return-value]  # settled without an error: a result
        flight = _Flight[T]()
        self._flights[key] = flight
        try:
            result = await fetch()
        except VerifierUnavailableError as error:
            error.retry_after = max(error.retry_after, self.failure_ttl)
            if self.failure_ttl > 0:
                self._failed[source] = (time.monotonic() + self.failure_ttl, error)
            flight.error, flight.settled = error, True
            raise
        except Exception as error:
            flight.error, flight.settled = error, True
            raise
        else:
            flight.result, flight.settled = result, True
            return result
        finally:
            del self._flights[key]
            flight.done.set()


def retry_after_seconds(error: VerifierUnavailableError) -> int:
    """``Retry-After`` for ``error``: whole seconds, at least 1."""
    return max(1, math.ceil(error.retry_after))


def _basic_header(client_id: str, client_secret: str) -> dict[str, str]:
    # RFC 6749 section 2.3.1: both parts form-urlencoded before base64.
    pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
    return {"authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
