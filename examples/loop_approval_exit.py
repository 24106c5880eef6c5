"""A review loop with an exit: revise until the reviewer approves, then publish.

    writer --> reviewer --"APPROVE"--> publisher
      ^           |
      +--not APPROVE

``reviewer -> publisher`` fires when the review contains "APPROVE" (the loop's exit);
``reviewer -> writer`` fires otherwise (a callable condition), so the writer revises.
``MaxMessageTermination(20)`` bounds the loop in case approval never comes; flowlib
refuses to build a looping team without such a bound. Offline, the first draft is sent
back once and the second one is approved.

Run offline: python examples/loop_approval_exit.py
With a real model: OPENAI_API_KEY=... python examples/loop_approval_exit.py
(the model decides when to approve; the loop may run more or fewer rounds, never more
than 20 messages).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TASK = "Write a two-line slogan for a bicycle repair shop."


def needs_revision(message: BaseChatMessage) -> bool:
    """The reviewer did not approve: back to the writer."""
    return "APPROVE" not in message.to_model_text()


def build() -> GraphFlow:
    """Build the loop on fresh agents."""
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            [
                "Bikes fixed fast.\nCome in, ride out.",
                "Flat tyre? Loose chain?\nWe'll have you rolling by lunch.",
            ]
        ),
        system_message="Write the slogan; when given feedback, revise it.",
    )
    reviewer = AssistantAgent(
        "reviewer",
        model_client=model_client(["Too generic: name a problem riders actually have.", "APPROVE"]),
        system_message=(
            "Review the latest slogan. Reply APPROVE if it is good, otherwise give one "
            "concrete improvement (and do not write APPROVE)."
        ),
    )
    publisher = AssistantAgent(
        "publisher",
        model_client=model_client(["Published on the shop window: the approved slogan."]),
        system_message="Announce where the approved slogan will be published, in one line.",
    )
    builder = DiGraphBuilder()
    builder.add_node(writer).add_node(reviewer).add_node(publisher)
    builder.add_edge(writer, reviewer)
    builder.add_edge(reviewer, publisher, condition="APPROVE")
    builder.add_edge(reviewer, writer, condition=needs_revision)
    builder.set_entry_point(writer)  # every node has an incoming edge: say where to start
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
    )


async def main() -> None:
    """Run the loop, print its stream, the path taken and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("path:", " -> ".join(team.trace.steps))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
