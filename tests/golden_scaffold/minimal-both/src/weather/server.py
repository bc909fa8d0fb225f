"""The Weather MCP server: the tools, resources and prompts it offers, and `main()`, which runs it.

Run it as `weather` or `python -m weather.server`.
`weather --transport http` serves http://127.0.0.1:8000/mcp.
The weather data is made up, so that the examples need no network: replace it with your own.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from mcpgen_runtime import Server
from mcpgen_runtime.server.hosting.options import LOG_LEVEL_NAMES

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
    """The `weather` command."""
    parser = argparse.ArgumentParser(prog="weather", description="The Weather MCP server.")
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="how clients connect (default: stdio)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: the address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP: the port (default: 8000)")
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="HTTP: also accept requests for this host name (repeatable); needed with --host 0.0.0.0",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="HTTP: worker processes on the port; more than 1 needs --redis (default: MCPGEN_WORKERS, else 1)",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="HTTP: share sessions through this Redis, redis://host:port/db (default: MCPGEN_REDIS_URL)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVEL_NAMES,
        default="info",
        help="what the server logs, on stderr (default: info)",
    )
    args = parser.parse_args(argv)
    if args.transport == "http":
        server.run_http(
            args.host,
            args.port,
            log_level=args.log_level,
            # The Host check accepts local names, --host and each --allowed-host; a warning names the flag if needed.
            allowed_hosts=args.allowed_host,
            allowed_hosts_flag="--allowed-host",
            # Several workers share sessions through Redis (MCPGEN_* variables set the rest); bad values exit 2.
            workers=args.workers,
            redis=args.redis,
        )  # prints "mcpgen: serving MCP on http://HOST:PORT/mcp" on stderr
    else:
        server.run_stdio(log_level=args.log_level)  # stdout carries the protocol, logs go to stderr


if __name__ == "__main__":
    main()
