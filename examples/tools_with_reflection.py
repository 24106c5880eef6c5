"""Tools with reflection: an agent calls two tools at once, then answers from the results.

    weather_agent   (a one-agent team; stops at its first text answer)
      |- get_weather(city)    tools run concurrently in one turn
      +- get_local_time(city)

In one turn the agent's model asks for tool calls (``ToolCallRequestEvent``), the tools
run concurrently (``ToolCallExecutionEvent``), and with ``reflect_on_tool_use=True`` the
model is called once more to turn the raw results into a plain answer (a
``TextMessage``; without reflection the turn would end with a
``ToolCallSummaryMessage`` of the raw results). ``TextMessageTermination`` stops the team
at that answer.

Run offline: python examples/tools_with_reflection.py
With a real model: OPENAI_API_KEY=... python examples/tools_with_reflection.py
(the model chooses which tools to call and with what arguments; the tools are real
Python functions either way).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TextMessageTermination
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import tool_calls
from flowlib.ui import Console

TASK = "I land in Lisbon soon. What's the weather there, and what time is it?"

_WEATHER = {"lisbon": "19 °C and sunny", "oslo": "4 °C and sleet"}
_UTC_OFFSET = {"lisbon": 1, "oslo": 2}


async def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return _WEATHER.get(city.lower(), "no data for that city")


def get_local_time(city: str) -> str:
    """Get the local time in a city (this demo's clock always reads 13:30 UTC)."""
    offset = _UTC_OFFSET.get(city.lower())
    return "unknown city" if offset is None else f"{13 + offset}:30 (UTC+{offset})"


def build() -> RoundRobinGroupChat:
    """Build a one-agent team around the tool-using agent."""
    agent = AssistantAgent(
        "weather_agent",
        model_client=model_client(
            [
                tool_calls(
                    ("get_weather", {"city": "Lisbon"}),
                    ("get_local_time", {"city": "Lisbon"}),
                ),
                "It's 19 °C and sunny in Lisbon, and the local time is 14:30.",
            ]
        ),
        tools=[get_weather, get_local_time],
        reflect_on_tool_use=True,
        system_message="Answer travel questions. Use your tools for weather and time.",
    )
    return RoundRobinGroupChat(
        [agent],
        termination_condition=TextMessageTermination("weather_agent") | MaxMessageTermination(6),
    )


async def main() -> None:
    """Run the team, print its stream (tool calls included) and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
