"""A fetched skill file checked against its entry: ``file_bytes`` takes the bytes out of a ``resources/read``
result, ``verify_file`` checks them against the ``SkillFile`` the entry lists (SEP-2640's integrity rules).

Where it sits: in ``client.skills``, on top of ``entries`` and ``errors``; pure functions over JSON. The size is
checked first (a base64 blob even before it is decoded): a read whose length differs from the entry's ``size`` is a
verification failure of its own, and it keeps a server from making the client hash or decode more than the entry
allowed. Then the sha256 digest. Content that fails either is discarded, never handed on.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidResultError
from .entries import SkillFile
from .errors import SkillVerificationError

__all__ = ["file_bytes", "sha256_digest", "verify_file"]


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_bytes(uri: str, result: Mapping[str, Any], expected_size: int | None) -> bytes:
    """The content of ``uri`` in a raw ``resources/read`` result: a text item as its UTF-8 bytes, a blob decoded.
    ``expected_size`` (the entry's size; None: unknown) refuses an oversized blob before decoding it."""
    contents = result.get("contents")
    if not isinstance(contents, list):
        raise InvalidResultError(f"resources/read of {uri} has no contents list")
    items = [item for item in contents if isinstance(item, Mapping) and item.get("uri") == uri]
    if len(items) != 1:
        raise InvalidResultError(f"resources/read of {uri} answered {len(items)} contents for that URI, not 1")
    item = items[0]
    text, blob = item.get("text"), item.get("blob")
    if isinstance(text, str) and blob is None:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidResultError(f"resources/read of {uri}: the text is not encodable as UTF-8") from None
    if isinstance(blob, str) and text is None:
        # Base64 is 4 characters per 3 bytes: a longer blob cannot decode to the listed size.
        if expected_size is not None and len(blob) > 4 * (expected_size // 3 + 1):
            raise SkillVerificationError(
                uri, "size", f"a {len(blob)}-character blob is longer than {expected_size} bytes"
            )
        try:
            return base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidResultError(f"resources/read of {uri}: the blob is not base64") from None
    raise InvalidResultError(f"resources/read of {uri}: the content has neither a text nor a blob")


def verify_file(listed: SkillFile, data: bytes) -> None:
    """``SkillVerificationError`` unless ``data`` has the listed size and digest."""
    if len(data) != listed.size:
        raise SkillVerificationError(listed.uri, "size", f"read {len(data)} bytes, the entry lists {listed.size}")
    digest = sha256_digest(data)
    if digest != listed.digest:
        raise SkillVerificationError(
            listed.uri, "digest", f"read content hashes to {digest}, the entry lists {listed.digest}"
        )
