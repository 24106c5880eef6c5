"""A tool function in a module of its own, so that a dumped agent can name it
(``_weather:get_weather``) and a load that is allowed to can import it again; used by
docs/tools.md."""

from __future__ import annotations


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny, 21 °C in {city}."
