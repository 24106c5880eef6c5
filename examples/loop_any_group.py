"""A loop through two parallel checkers that goes on as soon as either one answers.

    planner --> coordinator --"exit"--> finalizer
                  |     ^
     not "exit"   |     | any of the two (activation group "loop_back_group")
                  v     |
          fact_checker + style_checker   (in parallel)

The coordinator sends its draft to both checkers at once. Both loop-back edges are in
one activation group, ``loop_back_group``, with ``activation_condition="any"``: the
coordinator runs again as soon as EITHER checker finishes, once per round (the slower
checker's answer is absorbed rather than starting another round). When the coordinator
says "exit", the loop ends at the finalizer; any other reply (it is asked to start with
PROCESS) goes to the checkers, so no reply leaves the run at a dead end. Offline, the
fact checker answers fast and the style checker slowly, and the loop goes round once.

Run offline: python examples/loop_any_group.py
With a real model: OPENAI_API_KEY=... python examples/loop_any_group.py
(whichever checker's model answers first triggers the next round; the model says
"exit" when it is done, and MaxMessageTermination(20) bounds the loop).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination
from flowlib.graph import Not
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TASK = "Write a one-sentence product description for a solar phone charger."


def build() -> GraphFlow:
    """Build the graph with the "any" loop-back group on fresh agents."""
    planner = AssistantAgent(
        "planner",
        model_client=model_client(["Mention the panel size, charge time and weight."]),
        system_message="Say what the description must cover, in one line.",
    )
    coordinator = AssistantAgent(
        "coordinator",
        model_client=model_client(
            [
                "PROCESS: A 10 W panel charges your phone in two hours and weighs 300 g.",
                "exit: A 10 W solar panel that charges a phone in about two hours and "
                "weighs just 300 g.",
            ]
        ),
        system_message=(
            "Write or revise the description. Start with PROCESS to send it to the "
            "checkers, or with exit when it is final."
        ),
    )
    fact_checker = AssistantAgent(
        "fact_checker",
        model_client=model_client(["Charge time varies with sunlight: say 'about'."]),
        system_message="Check the facts of the latest draft in one line.",
    )
    style_checker = AssistantAgent(
        "style_checker",
        model_client=model_client(["Reads well."], latency=0.2),
        system_message="Check the style of the latest draft in one line.",
    )
    finalizer = AssistantAgent(
        "finalizer",
        model_client=model_client(["Final copy approved for the product page."]),
        system_message="Confirm the final description in one line.",
    )
    builder = DiGraphBuilder()
    for agent in (planner, coordinator, fact_checker, style_checker, finalizer):
        builder.add_node(agent)
    builder.add_edge(planner, coordinator)
    builder.add_edge(coordinator, fact_checker, condition=Not(condition="exit"))
    builder.add_edge(coordinator, style_checker, condition=Not(condition="exit"))
    builder.add_edge(coordinator, finalizer, condition="exit")
    for checker in (fact_checker, style_checker):
        builder.add_edge(
            checker,
            coordinator,
            activation_group="loop_back_group",
            activation_condition="any",
        )
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
