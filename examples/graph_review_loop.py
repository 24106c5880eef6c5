"""A review loop with a parallel fan-out and a join, built with DiGraphBuilder.

    plan -> (research, risks) -> draft -> review --"APPROVE"--> publish
                                   ^         |
                                   +-not APPROVE-+

Every review that does not approve goes back to the draft (``Not("APPROVE")``), so no
reply leaves the run at a dead end.

Every node here is a plain async function, so it runs offline:

    python examples/graph_review_loop.py

To run the same graph with model-backed agents, replace the functions by
``AssistantAgent``s built on ``OpenAIChatCompletionClient`` (set ``OPENAI_API_KEY``); the
graph, the team and the stream handling stay the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from flowlib.base import TaskResult
from flowlib.conditions import MaxMessageTermination
from flowlib.graph import Not
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow


def build() -> GraphFlow:
    """Build the team."""
    reviews = 0

    async def plan(messages: Sequence[BaseChatMessage]) -> str:
        return f"Plan: research and list risks for '{messages[-1].to_text()}'."

    async def research(messages: Sequence[BaseChatMessage]) -> str:
        await asyncio.sleep(0.02)
        return "Research: joins wait for every incoming branch."

    async def risks(messages: Sequence[BaseChatMessage]) -> str:
        return "Risks: a loop needs an exit edge."

    async def draft(messages: Sequence[BaseChatMessage]) -> str:
        return f"Draft {reviews + 1}: " + " / ".join(m.to_text() for m in messages)

    async def review(messages: Sequence[BaseChatMessage]) -> str:
        nonlocal reviews
        reviews += 1
        return "APPROVE" if reviews == 2 else "REVISE: cite the join rule."

    async def publish(messages: Sequence[BaseChatMessage]) -> str:
        return "Published."

    builder = DiGraphBuilder()
    for node in (plan, research, risks, draft, review, publish):
        builder.add_node(node)
    builder.add_edge(plan, research).add_edge(plan, risks)
    builder.add_edge(research, draft).add_edge(risks, draft)
    builder.add_edge(draft, review)
    builder.add_edge(review, publish, condition="APPROVE")
    builder.add_edge(review, draft, condition=Not(condition="APPROVE"))
    builder.set_entry_point(plan)
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(25),
    )


async def main() -> TaskResult:
    """Run the team and print its stream."""
    team = build()
    result: TaskResult | None = None
    async for item in team.run_stream(task="How do joins work?"):
        if isinstance(item, TaskResult):
            result = item
        else:
            print(f"[{item.source}] {item.to_text()}")
    assert result is not None
    print("stop reason:", result.stop_reason)
    print("path:", " -> ".join(team.trace.steps))
    return result


if __name__ == "__main__":
    asyncio.run(main())
