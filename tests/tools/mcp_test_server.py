"""A real MCP server for the tests, written with the SDK's ``FastMCP``.

Run as ``python mcp_test_server.py stdio`` (on stdin/stdout) or
``python mcp_test_server.py streamable-http PORT`` / ``... sse PORT`` (on 127.0.0.1).
Its tools: ``add``, ``shout``, ``fail`` (raises), ``slow`` (sleeps), ``big`` (a text of
n MB), ``die`` (kills the server process in the middle of the call) and ``distance``
(takes two pydantic ``Point`` arguments, so its input schema has ``$defs``); a prompt
``greet``, a resource ``config://units`` and a resource template ``weather://{city}``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel


class Point(BaseModel):
    """A point on the plane."""

    x: float
    y: float


def build(port: int) -> FastMCP:
    server = FastMCP("flowlib-test", host="127.0.0.1", port=port, log_level="ERROR")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, with the given reason."""
        raise ValueError(f"refused: {reason}")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    def big(megabytes: float) -> str:
        """A text of the given size (hostile-input tests)."""
        return "x" * int(megabytes * 1024 * 1024)

    @server.tool()
    def die() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool()
    def distance(start: Point, end: Point) -> float:
        """The distance between two points."""
        return round(((end.x - start.x) ** 2 + (end.y - start.y) ** 2) ** 0.5, 3)

    @server.resource("config://units")
    def units() -> str:
        """The units the tools use."""
        return "metric"

    @server.resource("weather://{city}")
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    @server.prompt()
    def greet(name: str) -> str:
        """A greeting prompt."""
        return f"Say hello to {name}."

    return server


if __name__ == "__main__":
    transport = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    build(port).run(transport=transport)  # type: ignore[arg-type]
