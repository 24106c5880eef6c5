"""Society of mind: an inner writer/editor team answers as one agent, then a translator.

    society_of_mind --> translator          (outer RoundRobinGroupChat, max_turns=2)
    [ inner: writer <-> editor until "APPROVE" ]

``SocietyOfMindAgent`` runs its inner team (a writer and an editor taking turns until the
editor approves) and has a model turn the inner transcript into one standalone answer.
The outer team sees only that answer, not the inner discussion (which is still streamed
to the console). The translator then translates it; ``max_turns=2`` ends the run.

Run offline: python examples/society_of_mind.py
With a real model: OPENAI_API_KEY=... python examples/society_of_mind.py
(the model plays all four roles; the inner team is bounded by max_turns=6 in case the
editor never approves).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent, SocietyOfMindAgent
from flowlib.conditions import TextMentionTermination
from flowlib.teams import RoundRobinGroupChat
from flowlib.ui import Console

TASK = "Write a short poem about the fall season."


def build() -> RoundRobinGroupChat:
    """Build the outer team, with the inner team inside the society-of-mind agent."""
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            [
                "Leaves let go of summer,\nred and gold on the wind.",
                "Leaves let go of summer,\nred and gold, and the wind\ncarries them home.",
            ]
        ),
        system_message="You are a writer. Write or revise the poem.",
    )
    editor = AssistantAgent(
        "editor",
        model_client=model_client(["Give it a third line that lands.", "APPROVE"]),
        system_message=(
            "You are an editor. Give one piece of feedback, or reply APPROVE when the poem "
            "is ready."
        ),
    )
    inner_team = RoundRobinGroupChat(
        [writer, editor],
        termination_condition=TextMentionTermination("APPROVE", sources=["editor"]),
        max_turns=6,
    )
    society_of_mind = SocietyOfMindAgent(
        "society_of_mind",
        team=inner_team,
        model_client=model_client(
            ["Leaves let go of summer,\nred and gold, and the wind\ncarries them home."]
        ),
    )
    translator = AssistantAgent(
        "translator",
        model_client=model_client(
            ["Las hojas sueltan el verano,\nrojo y oro, y el viento\nlas lleva a casa."]
        ),
        system_message="Translate the poem into Spanish. Reply with the translation only.",
    )
    return RoundRobinGroupChat([society_of_mind, translator], max_turns=2)


async def main() -> None:
    """Run the outer team, print its stream and how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
