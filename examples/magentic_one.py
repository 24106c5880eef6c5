"""Magentic-One: an orchestrator plans, directs two agents with a ledger and answers.

               researcher
                 ^    |
        selected |    | after each turn
                 |    v
        MagenticOneOrchestrator      (the router at the hub)
                 |    ^
        selected |    | after each turn
                 v    |
                 writer

On a new task the orchestrator asks its model for a fact sheet and a plan (the task
ledger) and publishes them. After every turn it asks for a JSON progress ledger: is the
request satisfied, are we looping, is progress being made, who speaks next, and with what
instruction. Offline its model is scripted: researcher first, then writer, then
"satisfied", and a final answer that ends the run with the ledger's reason.

Run offline: python examples/magentic_one.py
With a real model: OPENAI_API_KEY=... python examples/magentic_one.py
(the orchestrator's model writes the ledgers itself, in JSON mode; max_turns=10 and
max_stalls=3 bound the run).
"""

from __future__ import annotations

import asyncio
import json

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.teams import MagenticOneGroupChat
from flowlib.ui import Console

TASK = "Write a two-sentence note on when the Eiffel Tower was built and how tall it is."


def progress_ledger(*, satisfied: bool, speaker: str, instruction: str, reason: str) -> str:
    """A progress ledger as the orchestrator's model is asked to write it."""

    def entry(answer: bool | str, why: str = "") -> dict[str, bool | str]:
        return {"reason": why, "answer": answer}

    return json.dumps(
        {
            "is_request_satisfied": entry(satisfied, reason),
            "is_in_loop": entry(False, "Every step asked for something new."),
            "is_progress_being_made": entry(True, "Each turn added what was asked."),
            "next_speaker": entry(speaker),
            "instruction_or_question": entry(instruction),
        }
    )


ORCHESTRATOR_SCRIPT = [
    # The task ledger: facts, then a plan.
    "1. GIVEN FACTS: None.\n2. FACTS TO LOOK UP: build dates and height of the Eiffel "
    "Tower.\n3. FACTS TO DERIVE: None.\n4. EDUCATED GUESSES: built for the 1889 fair.",
    "- researcher: look up the dates and the height.\n- writer: write the two sentences.",
    # One progress ledger after each turn.
    progress_ledger(
        satisfied=False,
        speaker="researcher",
        instruction="Find when the Eiffel Tower was built and its height today.",
        reason="Nothing has been looked up yet.",
    ),
    progress_ledger(
        satisfied=False,
        speaker="writer",
        instruction="Write the two-sentence note from the researcher's facts.",
        reason="We have the facts but not the note.",
    ),
    progress_ledger(
        satisfied=True,
        speaker="writer",
        instruction="",
        reason="The writer's note answers the request.",
    ),
    # The final answer.
    "The Eiffel Tower was built from 1887 to 1889 for the World's Fair in Paris. "
    "Today it stands 330 metres tall, antennas included.",
]


def build() -> MagenticOneGroupChat:
    """Build the team: two agents and a scripted orchestrator model."""
    researcher = AssistantAgent(
        "researcher",
        description="Looks up facts.",
        model_client=model_client(
            ["Built 1887-1889 for the 1889 World's Fair; 330 m tall with antennas."]
        ),
        system_message="You look up facts. Answer with the facts asked for.",
    )
    writer = AssistantAgent(
        "writer",
        description="Writes short texts from given facts.",
        model_client=model_client(
            [
                "The Eiffel Tower was built from 1887 to 1889 for the World's Fair. It is "
                "330 metres tall, antennas included."
            ]
        ),
        system_message="You write short, clear texts from the facts you are given.",
    )
    return MagenticOneGroupChat(
        [researcher, writer],
        model_client=model_client(ORCHESTRATOR_SCRIPT),
        max_turns=10,
        max_stalls=3,
    )


async def main() -> None:
    """Run the team, print its stream and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("path:", " -> ".join(team.trace.steps))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
