"""A sequential pipeline: each agent works on the previous agent's output.

    outliner -> writer -> editor

Each node starts when its one incoming edge fires, so the three agents run one after
the other, and the run ends when the last one has spoken (no loop, so no termination
condition is needed).

Run offline: python examples/sequential.py
With a real model: OPENAI_API_KEY=... python examples/sequential.py
(the scripted answers are replaced by the model's; the graph and the path stay the same).
"""

from __future__ import annotations

import asyncio

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TASK = "A short paragraph on why octopuses are clever."


def build() -> GraphFlow:
    """Build the pipeline on fresh agents."""
    outliner = AssistantAgent(
        "outliner",
        model_client=model_client(["1. Nine brains. 2. Tool use. 3. Escape artists."]),
        system_message="Write a three-point outline for the task. Be brief.",
    )
    writer = AssistantAgent(
        "writer",
        model_client=model_client(
            [
                "Octopuses have a central brain and a mini-brain in each of their eight arms, "
                "they carry coconut shells as portable shelters, and aquariums keep losing "
                "them through gaps no wider than their beak."
            ]
        ),
        system_message="Turn the outline into one paragraph.",
    )
    editor = AssistantAgent(
        "editor",
        model_client=model_client(
            [
                "Octopuses think with nine brains: one central, one per arm. They carry "
                "coconut shells as mobile homes and escape aquariums through any gap wider "
                "than their beak."
            ]
        ),
        system_message="Tighten the paragraph. Reply with the edited paragraph only.",
    )
    builder = DiGraphBuilder()
    builder.add_node(outliner).add_node(writer).add_node(editor)
    builder.add_edge(outliner, writer).add_edge(writer, editor)
    return GraphFlow(builder.get_participants(), builder.build())


async def main() -> None:
    """Run the pipeline and print its stream, then how it stopped."""
    team = build()
    result = await Console(team.run_stream(task=TASK))
    print("path:", " -> ".join(team.trace.steps))
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
