"""Module-level functions for the FunctionTool dump/load tests (importable by name)."""

from __future__ import annotations

from flowlib.tools import tool


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


class Helpers:
    @staticmethod
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b


NOT_A_FUNCTION = 42
