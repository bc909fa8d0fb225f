"""The methods extensions add (``Registry.serve_extension_method``), as the era's dispatch answers them.

Where it sits: in the ``server`` layer, beside ``validation`` and under ``modern``, whose dispatch consults it for a
method its version's routes lack. One mechanism for every extension, so that no extension needs code in the era's
dispatch: the method is served only where the request's (fitted) capabilities declare its extension. The legacy era
never does: no version before 2026-07-28 has ``capabilities.extensions`` (its fitting drops them), so there an
extension method is -32601, as any method the version lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ...jsonrpc.envelopes import InvalidParams, JSONParams
from ...protocol.results import field_errors
from ..authoring.context import Context
from ..authoring.registry import ExtensionMethod, Registry
from .request_meta import ValidatedMetas

__all__ = ["answer_extension_method", "extension_method"]


def extension_method(server: Registry, capabilities: Mapping[str, Any], method: str) -> ExtensionMethod | None:
    """The extension method answering ``method`` when ``capabilities`` (fitted to the request's version) declare its
    extension, else None."""
    found = server.extension_methods.get(method)
    if found is None:
        return None
    declared = capabilities.get("extensions")
    return found if isinstance(declared, Mapping) and found.extension in declared else None


async def answer_extension_method(
    found: ExtensionMethod,
    method: str,
    params: JSONParams,
    context: Context[Any],
    meta_model: type[BaseModel],
    metas: ValidatedMetas,
) -> dict[str, Any]:
    """``found``'s result for ``params``: its ``_meta`` checked first as any request's of the version (``meta_model``,
    -32602 with the field paths when it is not valid), its params handed over as a dict."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("Invalid params: params must be an object")
    meta = params.get("_meta")
    try:
        metas.validated(meta_model, meta if isinstance(meta, dict) else {})
    except ValidationError as exc:
        raise InvalidParams("Invalid params: _meta", {"errors": field_errors(exc)}) from None
    result = await found.handler(params, context)
    if not isinstance(result, Mapping):
        raise TypeError(f"the handler of {method} returned a {type(result).__name__}, not a dict")
    return dict(result)
