"""The Weather MCP server: the tools, resources and prompts it offers, and `main()`, which runs it.

Run it as `weather` or `python -m weather.server`. It serves MCP 2026-07-28 (each request carries
its version) and the handshake era older clients use (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25),
on the same transport.
`weather --transport http` serves http://127.0.0.1:8000/mcp.
The weather data is made up, so that the examples need no network: replace it with your own.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpgen_runtime import Server
from mcpgen_runtime.server.runner import serve_command_line

server = Server("weather", version="0.1.0", title="Weather")

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


def main(argv: Sequence[str] | None = None) -> None:
    """The `weather` command (`weather --help` lists its flags): --transport http serves http://127.0.0.1:8000/mcp;
    --workers N --redis URL runs N worker processes sharing sessions through Redis (`pip install 'weather[redis]'`)."""
    serve_command_line(
        server,
        argv,
        prog="weather",
        description="The Weather MCP server.",
        transports=["http"],
        redis_extra="weather[redis]",  # what the error for --redis without redis-py says to install
    )


if __name__ == "__main__":
    main()
