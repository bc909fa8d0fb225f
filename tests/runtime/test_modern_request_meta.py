"""A modern request's ``_meta`` is validated once per distinct value (``dispatch.request_meta``), and every check the
spec asks for still holds: a ``_meta`` without ``clientCapabilities`` (or with one of the wrong shape) is -32602 even
after a valid one was cached, a value equal under ``==`` but of another type (``1`` for ``true``) is not taken for
the cached one (a strict model would tell them apart), the cache is bounded and not changed by what a handler does to its request's ``_meta``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.servers import raw_session

from mcpgen_runtime import JSONRPCError
from mcpgen_runtime.jsonrpc.envelopes import InvalidParams
from mcpgen_runtime.server import Context, Server
from mcpgen_runtime.server.dispatch.generated import stub_for
from mcpgen_runtime.server.dispatch.request_meta import (
    MAX_CACHED_METAS,
    ValidatedMetas,
    meta_model,
    typed_modern_params,
)

MODERN = "2026-07-28"
CAPS = "io.modelcontextprotocol/clientCapabilities"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    CAPS: {"roots": {"listChanged": True}},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}
ROUTE = stub_for(MODERN).SERVER_ROUTES["tools/call"]


def params(meta: dict[str, Any]) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}


def test_an_equal_meta_is_validated_once_and_shared() -> None:
    metas = ValidatedMetas()
    first = typed_modern_params(ROUTE, params(copy.deepcopy(META)), metas)
    second = typed_modern_params(ROUTE, params(copy.deepcopy(META)), metas)
    assert len(metas) == 1
    assert first.meta is second.meta  # the cached instance, not validated again
    model = meta_model(ROUTE.params_type)
    assert model is not None and first.meta is metas.get(model, META)
    assert first.meta.client_capabilities.roots == {"listChanged": True}


def test_a_value_equal_only_under_python_equality_is_validated() -> None:
    metas = ValidatedMetas()
    first = typed_modern_params(ROUTE, params({**META, "example.com/flag": True}), metas)
    other = {**META, "example.com/flag": 1}  # == True, but not a JSON boolean: not the value validated
    assert other == {**META, "example.com/flag": True}
    typed = typed_modern_params(ROUTE, params(other), metas)
    assert typed.meta is not first.meta
    assert type(typed.meta.model_extra["example.com/flag"]) is int
    assert len(metas) == 2


def test_invalid_metas_are_rejected_after_a_valid_one_and_never_cached() -> None:
    metas = ValidatedMetas()
    typed_modern_params(ROUTE, params(copy.deepcopy(META)), metas)
    no_caps = {k: v for k, v in META.items() if k != CAPS}
    for bad in (no_caps, {**META, CAPS: "all"}, {**META, "io.modelcontextprotocol/clientInfo": {"name": "c"}}):
        with pytest.raises(InvalidParams):
            typed_modern_params(ROUTE, params(copy.deepcopy(bad)), metas)
    assert len(metas) == 1


def test_the_cache_is_bounded_and_keeps_its_own_copy() -> None:
    metas = ValidatedMetas()
    for n in range(MAX_CACHED_METAS + 3):
        meta = copy.deepcopy(META)
        meta["io.modelcontextprotocol/clientInfo"]["name"] = f"client {n}"
        typed_modern_params(ROUTE, params(meta), metas)
        meta[CAPS]["roots"]["listChanged"] = "changed by the handler afterwards"
    assert len(metas) == MAX_CACHED_METAS
    latest = copy.deepcopy(META)
    latest["io.modelcontextprotocol/clientInfo"]["name"] = f"client {MAX_CACHED_METAS + 2}"
    model = meta_model(ROUTE.params_type)
    assert model is not None and metas.get(model, latest) is not None  # the cached copy is the value validated


def test_per_request_values_and_numbers_in_lists_are_validated_each_time() -> None:
    metas = ValidatedMetas()
    typed = typed_modern_params(ROUTE, params({**META, "progressToken": 7}), metas)
    assert typed.meta.progress_token == 7
    typed_modern_params(ROUTE, params({**META, "example.com/list": [1, True]}), metas)
    assert len(metas) == 0
    typed_modern_params(ROUTE, params({**META, "example.com/list": ["a", {"b": None}]}), metas)
    assert len(metas) == 1


connect = raw_session  # the server over an in-memory stream, a bare Session as its client


@pytest.mark.anyio
async def test_over_a_stream_the_meta_is_checked_on_every_request() -> None:
    server = Server("meta", version="1.0.0")
    seen: list[Any] = []

    @server.tool()
    async def echo(text: str, context: Context[Any]) -> str:
        seen.append(context.client_capabilities)
        assert context.meta is not None
        context.meta[CAPS]["roots"] = "what a handler may do to its own request's _meta"
        return text

    async with connect(server) as session:
        for _ in range(3):
            result = await session.request("tools/call", params(copy.deepcopy(META)))
            assert result["content"][0]["text"] == "hi"
        no_caps = {k: v for k, v in META.items() if k != CAPS}
        with pytest.raises(JSONRPCError) as caught:
            await session.request("tools/call", params(no_caps))
        assert caught.value.code == -32602
        with pytest.raises(JSONRPCError) as caught:
            await session.request("tools/call", params({**META, "io.modelcontextprotocol/clientInfo": {"name": "c"}}))
        assert caught.value.code == -32602
    assert seen == [{"roots": {"listChanged": True}}] * 3
