"""Fan-out and join: two agents work in parallel, a third waits for both.

                +-> optimist --+
    planner ----+              +--> judge   (activation "all": waits for both)
                +-> pessimist -+

The planner's message fires both of its edges, so ``optimist`` and ``pessimist`` start
at once and run concurrently. ``judge`` has two incoming edges in one "all" group (the
default), so it starts only when both branches have finished, and it sees both
arguments.

Run offline: python examples/fan_out_join.py
With a real model: OPENAI_API_KEY=... python examples/fan_out_join.py
(the model writes the arguments; the branches still run in parallel and the judge still
waits for both).
"""

from __future__ import annotations

import asyncio
import time

from _common import model_client

from flowlib.agents import AssistantAgent
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.ui import Console

TASK = "Should our team move the weekly meeting to Friday afternoon?"
BRANCH_SECONDS = 0.2  # how long each scripted branch "thinks"


def build() -> GraphFlow:
    """Build the fan-out/join graph on fresh agents."""
    planner = AssistantAgent(
        "planner",
        model_client=model_client(["Optimist: argue for Friday. Pessimist: argue against."]),
        system_message="Split the question into a case for and a case against.",
    )
    optimist = AssistantAgent(
        "optimist",
        model_client=model_client(
            ["For: the week's work is done, so the meeting can review it."],
            latency=BRANCH_SECONDS,
        ),
        system_message="Make the strongest case FOR, in one sentence.",
    )
    pessimist = AssistantAgent(
        "pessimist",
        model_client=model_client(
            ["Against: Friday afternoons are when people leave early."],
            latency=BRANCH_SECONDS,
        ),
        system_message="Make the strongest case AGAINST, in one sentence.",
    )
    judge = AssistantAgent(
        "judge",
        model_client=model_client(["Verdict: keep it, but on Friday morning."]),
        system_message="Weigh both cases and give a one-line verdict.",
    )
    builder = DiGraphBuilder()
    for agent in (planner, optimist, pessimist, judge):
        builder.add_node(agent)
    builder.add_edge(planner, optimist).add_edge(planner, pessimist)  # fan-out
    builder.add_edge(optimist, judge).add_edge(pessimist, judge)  # join
    return GraphFlow(builder.get_participants(), builder.build())


async def main() -> None:
    """Run the graph, print its stream, the path and how long the branches took."""
    team = build()
    started = time.perf_counter()
    result = await Console(team.run_stream(task=TASK))
    elapsed = time.perf_counter() - started
    print("path:", " -> ".join(team.trace.steps))
    print(f"took {elapsed:.2f} s (each branch alone takes {BRANCH_SECONDS} s offline)")
    print("stop reason:", result.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
