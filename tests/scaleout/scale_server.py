"""The server the scale-out tests run with several workers: tools that say which worker answered, log, notify in
the background, ask the client (elicitation, sampling), and touch a resource."""

from __future__ import annotations

import asyncio
import contextvars
import os

from mcpgen_runtime import Context, Server

server = Server("scale-test", version="1.0.0")
_background: set[asyncio.Task[None]] = set()


@server.tool()
async def whoami() -> int:
    """The pid of the worker that answered."""
    return os.getpid()


@server.tool()
async def log_levels(ctx: Context) -> int:
    """One log message at each of debug, info, warning and error; returns the pid."""
    await ctx.debug("debug message")
    await ctx.info("info message")
    await ctx.warning("warning message")
    await ctx.error("error message")
    return os.getpid()


@server.tool()
async def touch(uri: str) -> int:
    """Announce that ``uri`` changed (notifications/resources/updated to its subscribers); returns the pid."""
    await server.notify_resource_updated(uri)
    return os.getpid()


@server.tool()
async def ticker(count: int, interval: float, ctx: Context, avoid_pid: int = 0) -> int:
    """After answering, log "tick 1" .. "tick count" every ``interval`` seconds (they go to the GET stream); does
    nothing on the worker ``avoid_pid``. Returns the pid."""
    if os.getpid() == avoid_pid:
        return 0

    async def tick() -> None:
        await asyncio.sleep(interval)
        for n in range(1, count + 1):
            await ctx.info(f"tick {n}")
            await asyncio.sleep(interval)

    task = asyncio.get_running_loop().create_task(tick())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return os.getpid()


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Ask the client to sample an answer; returns "{pid}:{its text}"."""
    result = await ctx.sample(question, max_tokens=20)
    return f"{os.getpid()}:{result.content.text}"


@server.resource("test://thing", mime_type="text/plain")
async def thing() -> str:
    """A resource to subscribe to."""
    return "thing"


@server.on_subscribe
async def subscribed(uri: str) -> None:
    """Declares resources.subscribe; the subscriptions themselves are the session's (in Redis when shared)."""


@server.tool()
async def count(n: int, interval: float, ctx: Context) -> int:
    """Log "count 1" .. "count n", ``interval`` seconds apart, on the request's own stream; returns the pid."""
    for i in range(1, n + 1):
        await ctx.info(f"count {i}")
        await asyncio.sleep(interval)
    return os.getpid()


@server.tool()
async def sleepy(seconds: float) -> int:
    """Sleep, then return the pid (cancelled, it returns nothing)."""
    await asyncio.sleep(seconds)
    return os.getpid()


@server.tool()
async def announce(kind: str) -> int:
    """Raise a server-wide list change ("tools", "resources" or "prompts") from a background task, outside any
    session's request; returns the pid."""
    notify = {
        "tools": server.notify_tools_changed,
        "resources": server.notify_resources_changed,
        "prompts": server.notify_prompts_changed,
    }[kind]
    # A fresh context: the task belongs to no request (as a file watcher's would).
    task = asyncio.get_running_loop().create_task(notify(), context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return os.getpid()


@server.tool()
async def flood(count: int, size: int, ctx: Context, inline: bool = False) -> int:
    """Log "flood 1 xxx.." .. "flood count xxx.." (each ``size`` bytes of x): on the request's own stream before
    answering (``inline``), else after answering (they go to the GET stream). Returns the pid."""
    filler = "x" * size

    async def run() -> None:
        for n in range(1, count + 1):
            await ctx.info(f"flood {n} {filler}")

    if inline:
        await run()
        return os.getpid()
    task = asyncio.get_running_loop().create_task(run())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return os.getpid()
