"""Map-reduce: a planner splits a question, one researcher per sub-question, a writer joins.

                 map: one per line
    planner ====================> researcher[0], researcher[1], ...  ---> writer
                                   (concurrently, at most 3 at once)      (activation "all")

The planner answers with one sub-question per line. The edge ``planner -> researcher`` is
a map edge: its function turns that answer into a list, and each item starts a fresh
instance of the researcher (``researcher[0]``, ``researcher[1]``, ...) that sees only its
own sub-question. The writer waits for every instance (the reduce) and receives their
answers in the planner's order, whichever finished first.

Run offline: python examples/map_reduce.py
With a real model: OPENAI_API_KEY=... python examples/map_reduce.py
(the model writes the sub-questions and the answers; there is one researcher instance per
line the planner writes).
"""

from __future__ import annotations

import asyncio

from _common import model_client, uses_real_model

from flowlib.agents import AssistantAgent
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TASK = "Is it worth moving our service from a VM to managed Kubernetes?"
SUB_QUESTIONS = [
    "What does each option cost per month for our load?",
    "How much operations work does each need?",
    "What changes for deployments and rollbacks?",
]
ANSWERS = {
    SUB_QUESTIONS[0]: "Cost: about the same at our size; Kubernetes costs more when idle.",
    SUB_QUESTIONS[1]: "Operations: managed Kubernetes removes OS patching but adds cluster upkeep.",
    SUB_QUESTIONS[2]: "Deployments: rolling updates and one-command rollbacks come built in.",
}


def sub_questions(message: BaseChatMessage | None) -> list[str]:
    """The map function: one item per non-empty line of the planner's answer."""
    text = message.to_text() if message is not None else ""
    return [line.strip("-* ").strip() for line in text.splitlines() if line.strip()]


def researcher(index: int) -> AssistantAgent:
    """A fresh researcher for sub-question ``index`` (offline: scripted with its answer)."""
    answer = ANSWERS[SUB_QUESTIONS[index]] if index < len(SUB_QUESTIONS) else "No data."
    return AssistantAgent(
        "researcher",
        model_client=model_client([answer], latency=0.1),
        system_message="Answer the one sub-question you are given in one sentence.",
    )


def build() -> GraphFlow:
    """Build the map-reduce graph on fresh agents."""
    planner = AssistantAgent(
        "planner",
        model_client=model_client(["\n".join(SUB_QUESTIONS)]),
        system_message="Split the question into at most five sub-questions, one per line.",
    )
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            ["Recommendation: move when deployments matter more than the idle cost."]
        ),
        system_message="Combine the researchers' answers into a short recommendation.",
    )
    builder = DiGraphBuilder()
    builder.add_node(planner)
    # Offline, each instance is built with its own scripted answer; with a real model
    # every instance is the same researcher, fresh per item.
    factory = None if uses_real_model() else researcher
    builder.add_node(researcher(0), instances=factory)
    builder.add_node(writer, activation="all")
    builder.add_edge(planner, "researcher", map=sub_questions, max_concurrency=3)
    builder.add_edge("researcher", writer)
    return GraphFlow(builder.get_participants(), builder.build())


async def main() -> None:
    """Run the graph and print its stream and how many researchers ran."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("path:", " -> ".join(team.trace.steps))
    print("researcher instances:", ", ".join(name for _, name in team.trace.instances))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
