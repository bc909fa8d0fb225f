"""What a request's connection view sends toward the client or reads on its behalf, the same in both eras: log
messages (filtered by the client's level), the client's answers to questions (parsed as the version's models), and
this server's own resources read as the client would.

Where it sits: in the ``server`` layer, under the two connection views that ``Context`` talks through,
``connection.ServerConnection`` (legacy) and ``modern.ModernRequest`` (modern). Each view keeps what differs (where
a message goes, how a question is asked: a request on the session, or an input request of an
``InputRequiredResult``) and composes these parts for what does not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from ..authoring.context import LOG_LEVELS, Context
from .handlers import Handlers
from .validation import typed_params

__all__ = ["client_answer", "log_message", "read_own_resource"]


def log_message(level: str, data: Any, logger_name: str | None, threshold: str | None) -> dict[str, Any] | None:
    """The params of ``notifications/message`` at ``level``, or None when ``level`` is below ``threshold`` (None:
    every level goes out). An unknown level is the author's mistake: ``ValueError``, whatever the threshold."""
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
    if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
        return None
    params: dict[str, Any] = {"level": level, "data": data}
    if logger_name is not None:
        params["logger"] = logger_name
    return params


def client_answer(
    bindings: ModuleType, method: str, raw: Any, invalid: Callable[[str, ValidationError], Exception]
) -> Any:
    """The client's answer ``raw`` to ``method`` as ``bindings``' result model; ``invalid(model name, error)``
    builds what is raised when it does not validate (each era blames a different party)."""
    try:
        return bindings.parse_result(method, raw)
    except ValidationError as exc:
        raise invalid(bindings.RESULT_TYPES[method].__name__, exc) from None


async def read_own_resource(
    handlers: Handlers,
    stub: ModuleType,
    params: Mapping[str, Any],
    context: Context[Any],
    finish: Callable[[Any, Any, str], dict[str, Any]],
) -> Any:
    """``resources/read`` with ``params`` answered by ``handlers`` (not through the middleware: it is not a request
    from the client), its result passed through ``finish(model, returned, source)`` (the era's validation), as the
    version's ``ReadResourceResult``."""
    route = stub.SERVER_ROUTES["resources/read"]
    typed = typed_params(route, dict(params))
    returned = await getattr(handlers, route.handler)(typed, context)
    result = finish(route.result_type, returned, f"the resource {params['uri']!r}")
    return handlers.connection.bindings.parse_result("resources/read", result)
