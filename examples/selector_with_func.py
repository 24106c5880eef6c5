"""A selector group chat where a function brings the planner back after every turn.

    SelectorGroupChat_selector <--> planner      the router at the hub selects one
                               <--> researcher   speaker per turn; every speaker
                               <--> analyst      returns to it after its turn

``selector_func`` runs before the selector model on every turn: after any agent other
than the planner it returns ``"planner"``, so the planner reviews every step; after the
planner it returns None, and the selector model picks who acts on the planner's
instruction. The run stops when the planner says TERMINATE.

Run offline: python examples/selector_with_func.py
With a real model: OPENAI_API_KEY=... python examples/selector_with_func.py
(the model both plays the agents and selects the speaker after each planner turn;
MaxMessageTermination(15) bounds the run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TextMentionTermination
from flowlib.messages import BaseAgentEvent, BaseChatMessage
from flowlib.teams import SelectorGroupChat
from flowlib.ui import Console

TASK = "How many more points did the top scorer get this season than last season?"


def planner_after_others(thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> str | None:
    """Select the planner after anyone else; None lets the selector model choose."""
    if thread and thread[-1].source != "planner":
        return "planner"
    return None


def build() -> SelectorGroupChat:
    """Build the selector team on fresh agents."""
    planner = AssistantAgent(
        "planner",
        description="Plans the work and checks each result; says TERMINATE when done.",
        model_client=model_client(
            [
                "Researcher: find the top scorer's points this season and last season.",
                "Analyst: compute the difference between 1,845 and 1,612.",
                "The top scorer gained 233 points. TERMINATE",
            ]
        ),
        system_message=(
            "You plan. Give the next step to the researcher or the analyst, one at a time. "
            "When the question is answered, give the answer and say TERMINATE."
        ),
    )
    researcher = AssistantAgent(
        "researcher",
        description="Looks up facts and figures.",
        model_client=model_client(["This season: 1,845 points. Last season: 1,612 points."]),
        system_message="You look up facts. Answer with the figures asked for.",
    )
    analyst = AssistantAgent(
        "analyst",
        description="Does arithmetic and analysis on figures.",
        model_client=model_client(["1,845 - 1,612 = 233."]),
        system_message="You compute. Show the calculation in one line.",
    )
    selector_model = model_client(["researcher", "analyst"])
    return SelectorGroupChat(
        [planner, researcher, analyst],
        model_client=selector_model,
        selector_func=planner_after_others,
        termination_condition=TextMentionTermination("TERMINATE") | MaxMessageTermination(15),
    )


async def main() -> None:
    """Run the chat, print its stream and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("speakers:", " -> ".join(m.source for m in result.messages))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
