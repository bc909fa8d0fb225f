"""The errors of the skills client (SEP-2640): every way a listed skill or a fetched skill file can be refused.

Where it sits: in ``client.skills``, below every other module of the package; all of them are ``ClientError``s, so
code that catches the client's own errors catches these too. A refusal is always one of these, never a skill used
anyway: the SEP says hosts MUST NOT use content that fails verification.
"""

from __future__ import annotations

from typing import Literal

from ..errors import ClientError

__all__ = [
    "InvalidSkillEntryError",
    "SkillError",
    "SkillVerificationError",
    "UnknownSkillError",
    "UnverifiableSkillError",
    "VerificationFailure",
]

# What a fetched file failed: its byte length, its sha256, the SKILL.md frontmatter compared with the entry's (or
# missing / unparseable / without the required fields), or a read of a file the entry does not list.
VerificationFailure = Literal["size", "digest", "frontmatter", "unlisted"]


class SkillError(ClientError):
    """Base of the skills client's errors."""


class InvalidSkillEntryError(SkillError):
    """A ``skills/list`` or ``skills/get`` entry that breaks the SEP's rules (URI, frontmatter, resources, digests,
    sizes, limits): it is not held, so nothing of it can be loaded. ``uri`` is the entry's URI as sent (or None)."""

    def __init__(self, uri: object, reason: str) -> None:
        super().__init__(f"skill entry {uri!r} refused: {reason}")
        self.uri = uri if isinstance(uri, str) else None
        self.reason = reason


class SkillVerificationError(SkillError):
    """Fetched content that does not match the entry held for it; it was discarded. ``failure`` says which check
    failed, ``uri`` which file."""

    def __init__(self, uri: str, failure: VerificationFailure, detail: str) -> None:
        super().__init__(f"{uri}: {failure} verification failed: {detail}")
        self.uri = uri
        self.failure: VerificationFailure = failure
        self.detail = detail


class UnknownSkillError(SkillError):
    """The server does not serve a skill at ``uri`` (``skills/get`` answered -32602 Invalid params)."""

    def __init__(self, uri: str, message: str) -> None:
        super().__init__(f"the server serves no skill at {uri!r}: {message}")
        self.uri = uri


class UnverifiableSkillError(SkillError):
    """A skill whose entry lists its files as ``"dynamic"``: there is nothing to verify its content against, so it
    is loaded only when the caller says so (``load(..., allow_unverified=True)``)."""

    def __init__(self, uri: str) -> None:
        super().__init__(f'{uri}: the entry lists no resources ("dynamic"), so its files cannot be verified')
        self.uri = uri
