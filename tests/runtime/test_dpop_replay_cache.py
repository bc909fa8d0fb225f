"""The resource server's DPoP replay cache fails closed: when it holds ``replay_cache_size`` live proofs, a new proof
is refused with a retry delay (``BearerAuth`` answers 503 with ``Retry-After``) instead of forgetting a proof still
inside its window, whose replay would then pass. Proofs come from the client's real ``DPoP`` signer."""

from __future__ import annotations

import pytest

from mcpgen_runtime.client.auth import DPoP
from mcpgen_runtime.server.auth import DPoPVerifier
from mcpgen_runtime.server.auth.dpop import DPoPError

URL = "http://127.0.0.1:8125/mcp"
TOKEN = "a-bound-access-token"


def test_a_full_cache_refuses_new_proofs_and_still_refuses_replays() -> None:
    verifier = DPoPVerifier(replay_cache_size=2, max_age=60)
    dpop = DPoP()
    first, second, third = (dpop.proof("POST", URL, TOKEN) for _ in range(3))
    assert verifier.verify([first], "POST", [URL], TOKEN, dpop.thumbprint) == dpop.thumbprint
    verifier.verify([second], "POST", [URL], TOKEN, dpop.thumbprint)
    with pytest.raises(DPoPError, match="too many DPoP proofs") as full:
        verifier.verify([third], "POST", [URL], TOKEN, dpop.thumbprint)
    assert full.value.retry_after is not None and 1 <= full.value.retry_after <= 66
    # Nothing remembered was forgotten to make room: both earlier proofs are still replays.
    for replayed in (first, second):
        with pytest.raises(DPoPError, match="used before") as again:
            verifier.verify([replayed], "POST", [URL], TOKEN, dpop.thumbprint)
        assert again.value.retry_after is None


def test_expired_proofs_make_room_again() -> None:
    verifier = DPoPVerifier(replay_cache_size=1, max_age=1, leeway=0)
    dpop = DPoP()
    verifier.verify([dpop.proof("POST", URL, TOKEN)], "POST", [URL], TOKEN, dpop.thumbprint)
    with pytest.raises(DPoPError, match="too many"):
        verifier.verify([dpop.proof("POST", URL, TOKEN)], "POST", [URL], TOKEN, dpop.thumbprint)
    # The remembered proof's window ends (iat + max_age + leeway); then a new one is accepted.
    import time

    time.sleep(2.1)
    verifier.verify([dpop.proof("POST", URL, TOKEN)], "POST", [URL], TOKEN, dpop.thumbprint)
