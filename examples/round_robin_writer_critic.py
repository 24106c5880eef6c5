"""Round-robin writer and critic: take turns until the critic says APPROVE.

    writer --> critic
      ^          |
      +----------+      (stops when the critic's message mentions "APPROVE")

``RoundRobinGroupChat`` compiles to a ring with no conditional edge, so the loop is ended
by the termination condition: ``TextMentionTermination("APPROVE", sources=["critic"])``
(only the critic can approve; a writer quoting the word does not count). Offline, the
critic asks for one revision and approves the second draft.

Run offline: python examples/round_robin_writer_critic.py
With a real model: OPENAI_API_KEY=... python examples/round_robin_writer_critic.py
(the model writes and judges; max_turns=10 bounds the run if it never approves).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import TextMentionTermination
from flowlib.teams import RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Write a haiku about a lighthouse."


def build() -> RoundRobinGroupChat:
    """Build the two-agent round robin on fresh agents."""
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            [
                "Tall white tower stands\nLight turning over the sea\nShips pass in the night",
                "One eye on the dark\nsweeping the same patient arc\nfor boats it won't see",
            ]
        ),
        system_message="Write the haiku. When the critic gives feedback, revise it.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=model_client(
            [
                "Too literal. Give the lighthouse a feeling; avoid 'ships pass in the night'.",
                "APPROVE",
            ]
        ),
        system_message=(
            "Critique the latest haiku in one sentence. If it is good, reply only APPROVE."
        ),
    )
    return RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE", sources=["critic"]),
        max_turns=10,
    )


async def main() -> None:
    """Run the chat, print its stream and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
