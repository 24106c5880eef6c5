"""A small MCP server for examples/mcp_tools.py, written with the MCP SDK's ``FastMCP``.

It runs on stdin/stdout: ``python examples/_mcp_server.py`` (the example starts it as a
subprocess through ``StdioServerParams``). Its tools: ``convert_temperature`` and
``city_population``; a resource ``facts://sources``, a resource template
``facts://city/{name}`` and a prompt ``compare``.
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

server = FastMCP("flowlib-example", log_level="ERROR")

_POPULATION = {"lisbon": 545_000, "oslo": 709_000, "kyoto": 1_460_000}


@server.tool()
def convert_temperature(celsius: float) -> str:
    """Convert a temperature from Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.1f} °F"


@server.tool()
def city_population(city: str) -> int:
    """The population of a city (a small built-in table)."""
    found = _POPULATION.get(city.lower())
    if found is None:
        raise ValueError(f"no population data for {city!r}")
    return found


@server.resource("facts://sources")
def sources() -> str:
    """Where the figures come from."""
    return "City population figures: a small built-in table."


@server.resource("facts://city/{name}")
def city(name: str) -> str:
    """One line about a city of the table."""
    found = _POPULATION.get(name.lower())
    return f"{name}: {found:,} people" if found else f"{name}: not in the table"


@server.prompt()
def compare(first: str, second: str) -> str:
    """Ask for a comparison of two cities."""
    return f"Compare {first} and {second} by population, with the tools you have."


if __name__ == "__main__":
    server.run("stdio")
