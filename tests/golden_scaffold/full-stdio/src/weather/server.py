"""The Weather MCP server: the tools, resources and prompts it offers, and `main()`, which runs it.

Run it as `weather` or `python -m weather.server`. It serves MCP 2026-07-28 (each request carries
its version) and the handshake era older clients use (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25),
on the same transport.
The weather data is made up, so that the examples need no network: replace it with your own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from mcpgen_runtime import Accepted, Context, Server
from mcpgen_runtime.server import CapabilityError
from mcpgen_runtime.server.runner import serve_command_line
from pydantic import BaseModel, Field


@dataclass
class Bookings:
    """What every handler shares for as long as the server runs (a database pool in a real server)."""

    cities: list[str] = field(default_factory=list)


@asynccontextmanager
async def lifespan(_server: Server[Bookings]) -> AsyncIterator[Bookings]:
    # Entered once before the first client is served, left when the server stops: open and close shared resources here.
    bookings = Bookings()
    yield bookings


server = Server("weather", version="0.1.0", title="Weather", lifespan=lifespan)

CITIES = ("Amsterdam", "Berlin", "Lisbon", "Oslo", "Paris", "Rome", "Tokyo")
CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "snowy")
MAX_DAYS = 7


def _condition(city: str, day: int) -> str:
    # Deterministic made-up weather, the same on every run (tests rely on that).
    return CONDITIONS[(sum(map(ord, city)) + day) % len(CONDITIONS)]


@server.tool()
async def get_forecast(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city for the next 1 to 7 days."""
    if not 1 <= days <= MAX_DAYS:
        # Raised errors become a tool result with isError: true, which the model can read and correct.
        raise ValueError(f"days must be between 1 and {MAX_DAYS}, not {days}")
    return "\n".join(f"Day {day}: {_condition(city, day)} in {city}" for day in range(1, days + 1))


@server.resource("weather://cities", mime_type="text/plain")
async def cities() -> str:
    """The cities with a forecast, one per line."""
    return "\n".join(CITIES)


@server.resource("weather://{city}/current", mime_type="text/plain")
async def current_conditions(city: str) -> str:
    """The current conditions in a city."""
    return f"{_condition(city, 0)} in {city}"


@server.prompt()
async def plan_trip(city: str, days: int = 3) -> str:
    """Plan a trip to a city, with the weather in mind."""
    return f"Plan a {days}-day trip to {city}. Check the forecast with get_forecast first and plan around the rain."


@server.completion(prompt="plan_trip", argument="city")
async def complete_city(value: str) -> list[str]:
    """The cities that start with what was typed so far."""
    return [city for city in CITIES if city.lower().startswith(value.lower())]


@server.tool()
async def count_down(n: int, ctx: Context) -> str:
    """Count down from n to zero, reporting progress and logging each step."""
    if not 0 <= n <= 100:
        raise ValueError(f"n must be between 0 and 100, not {n}")
    for done in range(1, n + 1):
        # Progress reaches the client only if it asked for it (a progressToken); logs, at the level it set.
        await ctx.report_progress(done, n, f"{n - done} to go")
        await ctx.info(f"{n - done}...")
    return "Lift-off!"


class Confirmation(BaseModel):
    confirm: bool = Field(description="Book the trip?")


@server.tool()
async def book_trip(city: str, ctx: Context[Bookings]) -> str:
    """Book a trip to a city, after asking the user to confirm."""
    try:
        # Typed elicitation: the model's fields are the form, the answer comes back validated into the model.
        answer = await ctx.elicit(f"Book a trip to {city}?", schema=Confirmation)
    except CapabilityError:
        # Clients without elicitation (or older protocol versions) cannot ask the user: say so, book nothing.
        return f"Cannot ask for confirmation: this client does not support elicitation. Nothing was booked for {city}."
    match answer:
        case Accepted(data=Confirmation(confirm=True)):
            ctx.lifespan_state.cities.append(city)  # the state the lifespan opened, typed as Bookings
            return f"Booked a trip to {city}."
        case _:
            return f"Not booked: the user did not confirm the trip to {city} ({answer.action})."


def main(argv: Sequence[str] | None = None) -> None:
    """The `weather` command (`weather --help` lists its flags)."""
    serve_command_line(
        server,
        argv,
        prog="weather",
        description="The Weather MCP server.",
        transports=["stdio"],
    )


if __name__ == "__main__":
    main()
