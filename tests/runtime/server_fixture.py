"""A small mcpgen ``Server`` run as a real stdio subprocess by tests/runtime/test_server_sdk_interop.py
(``python tests/runtime/server_fixture.py``): one of each thing the server runtime serves."""

from __future__ import annotations

import json
import os

import anyio
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from mcpgen_runtime import MessageStream, stdio_server_stream
from mcpgen_runtime.server import Context, Server

server = Server("weather", version="1.0.0", title="Weather", instructions="Ask about the weather.")


class Forecast(TypedDict):
    city: str
    celsius: float


CITIES = ["Berlin", "Lisbon", "London", "Paris"]


@server.tool()
async def get_forecast(latitude: float, longitude: float) -> str:
    """Get weather forecast for a location."""
    return f"Sunny at {latitude:.1f},{longitude:.1f}"


@server.tool()
async def forecast(city: str, ctx: Context) -> Forecast:
    """Structured forecast for a city, with progress and a log message."""
    await ctx.report_progress(1, 2, "looking up")
    await ctx.log("info", f"forecast for {city}")
    await ctx.log("debug", "only sent when the level allows")
    await ctx.report_progress(2, 2, "done")
    return {"city": city, "celsius": 21.5}


@server.tool()
def fail(reason: str) -> str:
    """Always fails (a sync tool, run in a thread)."""
    raise RuntimeError(reason)


@server.resource("weather://cities", mime_type="text/plain")
def cities() -> str:
    """The known cities."""
    return "\n".join(CITIES)


@server.resource("weather://{city}/current", mime_type="application/json")
def current(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return {"city": city, "celsius": 20}


@server.prompt(title="Plan a trip")
def plan_trip(city: str, days: int = 3) -> str:
    """Plan a trip to a city."""
    return f"Plan a {days}-day trip to {city}."


@server.completion(prompt="plan_trip", argument="city")
def complete_trip_city(value: str) -> list[str]:
    return [city for city in CITIES if city.lower().startswith(value.lower())]


@server.completion(resource="weather://{city}/current", argument="city")
def complete_current_city(value: str) -> list[str]:
    return [city for city in CITIES if city.startswith(value)]


class TracingStream:
    """Appends every incoming frame to a file (one per line), so the test can see what the SDK client sent."""

    def __init__(self, inner: MessageStream, path: str) -> None:
        self.inner, self.path = inner, path

    async def receive(self) -> bytes:
        frame = await self.inner.receive()
        with open(self.path, "a", encoding="utf-8") as trace:
            trace.write(json.dumps(json.loads(frame)) + "\n")
        return frame

    async def send(self, frame: bytes) -> None:
        await self.inner.send(frame)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def serve_traced(path: str) -> None:
    async with stdio_server_stream() as stream:
        await server.serve_stream(TracingStream(stream, path))


if __name__ == "__main__":
    trace_path = os.environ.get("MCPGEN_TRACE")
    if trace_path:
        anyio.run(serve_traced, trace_path)
    else:
        server.run_stdio()
