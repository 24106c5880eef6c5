"""Nested teams: a round-robin writing team is one node of an outer graph.

    planner --> [ writing_team: writer <-> critic, until "APPROVE" ] --> publisher

A team can be a participant of another team. The outer ``GraphFlow`` treats
``writing_team`` like any node: it starts when the planner is done, runs its own
round-robin loop until the critic approves, and its messages are published to the outer
team, so the publisher sees the final draft. Drawings show it as a cluster with its own
graph.

Run offline: python examples/nested_teams.py
With a real model: OPENAI_API_KEY=... python examples/nested_teams.py
(the model plays every agent; the inner loop is bounded by max_turns=6).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import TextMentionTermination
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Announce the library's new Saturday opening hours."


def build() -> GraphFlow:
    """Build the outer graph with the writing team as its middle node."""
    planner = AssistantAgent(
        "planner",
        model_client=model_client(["Say: open Saturdays 10:00-16:00 from 1 June. Keep it short."]),
        system_message="Say in one line what the announcement must contain.",
    )
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            [
                "The library is now open on Saturdays.",
                "From 1 June the library is open on Saturdays, 10:00 to 16:00.",
            ]
        ),
        system_message="Write the announcement; revise it when the critic asks.",
    )
    critic = AssistantAgent(
        "critic",
        model_client=model_client(["Missing the hours and the start date.", "APPROVE"]),
        system_message="Check the announcement against the plan. Reply APPROVE when complete.",
    )
    writing_team = RoundRobinGroupChat(
        [writer, critic],
        name="writing_team",
        termination_condition=TextMentionTermination("APPROVE", sources=["critic"]),
        max_turns=6,
    )
    publisher = AssistantAgent(
        "publisher",
        model_client=model_client(["Posted to the website and the front door."]),
        system_message="Say where the approved announcement was posted, in one line.",
    )
    builder = DiGraphBuilder()
    builder.add_node(planner).add_node(writing_team).add_node(publisher)
    builder.add_edge(planner, writing_team).add_edge(writing_team, publisher)
    return GraphFlow(builder.get_participants(), builder.build())


async def main() -> None:
    """Run the outer team, print its stream, the outer path and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("outer path:", " -> ".join(team.trace.steps))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
