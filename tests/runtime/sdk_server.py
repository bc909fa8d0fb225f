"""An MCP server written only with the official Python SDK (``mcp`` 2.x), run as a stdio subprocess by
``test_client_sdk_interop``: the peer our typed client must interoperate with.

It serves tools (one with structured output, one that reports progress and logs), a resource, a resource template,
a prompt, completions and ``logging/setLevel`` (MCPServer does not register that one itself, so it is added on the
low-level server, as the SDK does for completions).
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
)
from pydantic import BaseModel

# Sampling, roots and logging are deprecated as of 2026-07-28, but are exactly what the handshake versions use.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

server = MCPServer("sdk-interop", version="1.2.3", instructions="an SDK server for interop tests")

# What the last logging/setLevel asked for; the `last_level` tool reports it, which proves the call arrived.
_state: dict[str, Any] = {"level": None}


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(description="Add two integers")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Structured weather report")
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@server.tool(description="Counts to n, reporting progress and logging")
async def count(n: int, ctx: Context) -> str:
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    await ctx.info(f"counted to {n}")
    return f"counted {n}"


@server.tool(description="Always fails")
def broken() -> str:
    raise ValueError("this tool is broken")


@server.tool(description="The level of the last logging/setLevel")
def last_level() -> str:
    return str(_state["level"])


@server.tool(description="Sleeps; for timeouts and cancellation")
async def sleep(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "slept"


@server.tool(description="Asks the client's LLM (sampling/createMessage)")
async def ask_llm(question: str, ctx: Context) -> str:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=question))
    result = await ctx.session.create_message([message], max_tokens=50)
    content = result.content
    return f"{result.model}: {content.text if isinstance(content, TextContent) else content}"


@server.tool(description="Lists the client's roots (roots/list)")
async def client_roots(ctx: Context) -> list[str]:
    result = await ctx.session.list_roots()
    return [str(root.uri) for root in result.roots]


class Answer(BaseModel):
    name: str


@server.tool(description="Asks the user (elicitation/create)")
async def ask_user(ctx: Context) -> str:
    result = await ctx.elicit("What is your name?", Answer)
    return f"{result.action}: {result.data.name if result.action == 'accept' else None}"


class Score(BaseModel):
    score: float


@server.tool(description="Asks the user for a number (elicitation/create with a NumberSchema)")
async def ask_score(ctx: Context) -> str:
    result = await ctx.elicit("Your score?", Score)
    # The SDK has validated the answer into Score; repr shows what the float field holds.
    return f"{result.action}: {result.data.score!r}" if result.action == "accept" else result.action


@server.tool(description="Adds a tool, then tells the client the tool list changed")
async def add_tool(name: str, ctx: Context) -> str:
    server.add_tool(lambda: name, name=name, description="added at run time")
    await ctx.session.send_tool_list_changed()
    return "added"


@server.resource("config://app", name="app-config", description="static configuration", mime_type="text/plain")
def app_config() -> str:
    return "debug=true"


@server.resource("greeting://{name}", name="greeting", description="a greeting per name")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@server.prompt(description="Review some code")
def review(code: str, language: str = "python") -> str:
    return f"Please review this {language} code:\n{code}"


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument, context: CompletionContext | None
) -> Completion | None:
    if argument.name == "language":
        return Completion(values=[v for v in ("python", "perl", "rust") if v.startswith(argument.value)])
    if argument.name == "name":
        return Completion(values=["alice", "bob"])
    return None


async def _set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    _state["level"] = params.level
    return EmptyResult()


server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)

if __name__ == "__main__":
    server.run("stdio")
