"""A malicious MCP server over stdio, written by hand so that every byte it sends is ours to choose.

    python tests/hostile_server.py CASE SECRET_PATH URL

CASE is a key of ``hostile_cases.CASES``; SECRET_PATH and URL are the ``Bait`` the case's schemas point at. It
answers ``initialize`` (always MCP 2025-06-18), ``tools/list`` (paged as the case says, possibly forever) and
``ping``; anything else gets "method not found". It never reads or fetches anything itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hostile_cases import CASES, Bait, Case

PROTOCOL_VERSION = "2025-06-18"


def _tools_page(case: Case, tools: list[dict[str, Any]], cursor: str | None) -> dict[str, Any]:
    if case.paging == "one page":
        return {"tools": tools}
    page = int(cursor or "0")
    if case.paging == "empty pages forever":
        return {"tools": [], "nextCursor": str(page + 1)}
    # One tool per page, under a new name each time, and always another page.
    return {"tools": [{**tools[0], "name": f"{tools[0]['name']}{page}"}], "nextCursor": str(page + 1)}


def _answer(case: Case, tools: list[dict[str, Any]], message: dict[str, Any]) -> dict[str, Any]:
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": case.server_name, "version": case.server_version},
        }
    elif method == "tools/list":
        result = _tools_page(case, tools, params.get("cursor"))
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    case = CASES[sys.argv[1]]
    bait = Bait(secret_path=Path(sys.argv[2]), url=sys.argv[3])
    tools = case.tools(bait)
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue  # a notification (initialized, cancelled) or a response: nothing to answer
        # ensure_ascii: NUL, CR and friends go out as \\u escapes, as a JSON encoder must write them.
        sys.stdout.buffer.write(json.dumps(_answer(case, tools, message), ensure_ascii=True).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
