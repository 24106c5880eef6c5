"""Agents and teams as tools: a coordinator delegates to an agent and to a whole team.

    coordinator   (a one-agent team; stops at its first text answer)
      |- AgentTool(translator)                      an agent as a tool
      +- TeamTool(review: writer <-> critic)        a round-robin team as a tool

The coordinator's model calls ``translator`` and ``review`` like any other tools: each
call runs the agent or the team on the ``task`` argument, and the model gets the run's
messages back as the tool result (the translator's last message only, with
``return_value_as_last_message=True``). The inner runs are ordinary runs: the review team
keeps its state between calls, and cancelling the coordinator cancels them. Both tools
dump to and load from component configs.

Run offline: python examples/agents_as_tools.py
With a real model: OPENAI_API_KEY=... python examples/agents_as_tools.py
(the coordinator's model decides when to delegate; the delegates answer for real too).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TextMentionTermination, TextMessageTermination
from flowlib.teams import RoundRobinGroupChat
from flowlib.testing import tool_calls
from flowlib.tools import AgentTool, TeamTool
from flowlib.ui import Console

TASK = "Write a one-line slogan for a bakery, have it reviewed, then give it in French too."


def build() -> RoundRobinGroupChat:
    """Build the coordinator's team; its tools wrap an agent and a team."""
    translator = AssistantAgent(
        "translator",
        model_client=model_client(["Du pain frais, des sourires chaque matin."]),
        description="Translates English text to French.",
        system_message="Translate the text to French. Answer with the translation only.",
    )
    writer = AssistantAgent(
        "writer",
        model_client=model_client(["Fresh bread, warm smiles, every morning."]),
        system_message="Write what you are asked, briefly.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=model_client(["Short and warm. APPROVE"]),
        system_message="Review the text. Say APPROVE when it is good.",
    )
    review = RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(6),
        name="review",
    )
    coordinator = AssistantAgent(
        "coordinator",
        model_client=model_client(
            [
                tool_calls(("review", {"task": "A one-line slogan for a bakery."})),
                tool_calls(("translator", {"task": "Fresh bread, warm smiles, every morning."})),
                "Slogan: Fresh bread, warm smiles, every morning. "
                "French: Du pain frais, des sourires chaque matin.",
            ]
        ),
        tools=[
            AgentTool(translator, return_value_as_last_message=True),
            TeamTool(review, "review", "A writer and a critic who write and approve a text."),
        ],
        max_tool_iterations=3,
        system_message="Delegate writing to `review` and translation to `translator`.",
    )
    return RoundRobinGroupChat(
        [coordinator],
        termination_condition=TextMessageTermination("coordinator") | MaxMessageTermination(12),
    )


async def main() -> None:
    """Run the coordinator's team, print its stream and how it stopped."""
    result = await Console(build().run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
