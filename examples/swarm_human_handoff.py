"""A swarm that hands off to a human and resumes with the human's answer.

    travel_agent <--handoff--> flights_refunder
          \\                      /
           +---> "user" <-------+    (not a participant: the run stops there)

In a ``Swarm`` the speaker changes only by handoff. When ``flights_refunder`` needs the
booking reference it hands off to ``"user"``; ``HandoffTermination(target="user")``
stops the run. The script then plays the human: it answers with a ``HandoffMessage``
addressed to the agent that asked, and runs the team again, which resumes with that
agent. It refunds the flight with its tool and hands back to the travel agent, who
closes with TERMINATE.

Run offline: python examples/swarm_human_handoff.py
With a real model: OPENAI_API_KEY=... python examples/swarm_human_handoff.py
(the model decides when to hand off; the human's answers still come from
``HUMAN_ANSWERS``: replace ``human_answer()`` with ``input()`` to answer yourself).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.base import Handoff, TaskResult
from flowlib.conditions import HandoffTermination, MaxMessageTermination, TextMentionTermination
from flowlib.messages import HandoffMessage
from flowlib.teams import Swarm
from flowlib.testing import tool_calls
from flowlib.ui import Console

TASK = "I need to cancel my flight to Lisbon and get a refund."
HUMAN_ANSWERS = ["My booking reference is LIS-4821."]
MAX_ROUNDS = 3  # how often the human may be asked before the script gives up


def refund_flight(booking_reference: str) -> str:
    """Refund the flight with this booking reference."""
    return f"Flight {booking_reference} refunded: 214.00 EUR to the original card."


def build() -> Swarm:
    """Build the swarm on fresh agents."""
    travel_agent = AssistantAgent(
        "travel_agent",
        model_client=model_client(
            [
                tool_calls(("transfer_to_flights_refunder", {})),
                "Your flight is refunded; the money is on its way. TERMINATE",
            ]
        ),
        handoffs=["flights_refunder", "user"],
        system_message=(
            "You are a travel agent. Hand refunds off to flights_refunder. When the "
            "customer's request is done, confirm it and say TERMINATE."
        ),
    )
    flights_refunder = AssistantAgent(
        "flights_refunder",
        model_client=model_client(
            [
                tool_calls(
                    ("transfer_to_user", {}),
                    thought="To refund the flight I need your booking reference.",
                ),
                tool_calls(
                    ("refund_flight", {"booking_reference": "LIS-4821"}),
                    ("transfer_to_travel_agent", {}),
                ),
            ]
        ),
        handoffs=[
            "travel_agent",
            Handoff(target="user", message="Over to you: please answer my question above."),
        ],
        tools=[refund_flight],
        system_message=(
            "You refund flights with refund_flight. If you need the booking reference, "
            "hand off to the user to ask for it. When done, hand back to travel_agent."
        ),
    )
    termination = (
        HandoffTermination(target="user")
        | TextMentionTermination("TERMINATE")
        | MaxMessageTermination(20)
    )
    return Swarm([travel_agent, flights_refunder], termination_condition=termination)


def human_answer(question: HandoffMessage, round_: int) -> str:
    """The human's reply to a handoff (scripted; use ``input()`` to type it yourself)."""
    return HUMAN_ANSWERS[min(round_, len(HUMAN_ANSWERS) - 1)]


async def main() -> None:
    """Run the swarm; whenever it hands off to the user, answer and resume."""
    team = build()
    result: TaskResult = await Console(team.run_stream(task=TASK))
    for round_ in range(MAX_ROUNDS):
        last = result.messages[-1]
        if not (isinstance(last, HandoffMessage) and last.target == "user"):
            break
        print(f"stop reason: {result.stop_reason}  (the human is asked)")
        answer = HandoffMessage(
            source="user", target=last.source, content=human_answer(last, round_)
        )
        result = await Console(team.run_stream(task=answer))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
