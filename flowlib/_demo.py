"""The demo behind ``flowlib demo``: a review loop with a parallel fan-out and a join.

::

    plan -> (research, risks) -> draft -> review --"APPROVE"--> publish
                                   ^         |
                                   +--else---+

Every node is a plain async function, so the demo runs offline and instantly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .base import TaskResult
from .conditions import MaxMessageTermination
from .messages import BaseChatMessage
from .teams import DiGraphBuilder, GraphFlow

__all__ = ["build_demo_flow", "run_demo"]


def build_demo_flow() -> GraphFlow:
    """Build the demo team (fresh state every call)."""
    reviews = 0

    async def plan(messages: Sequence[BaseChatMessage]) -> str:
        topic = messages[-1].to_text() if messages else "the topic"
        return f"Plan for '{topic}': gather facts and risks, then draft."

    async def research(messages: Sequence[BaseChatMessage]) -> str:
        await asyncio.sleep(0.05)
        return "Facts: graphs make control flow explicit; joins wait for every branch."

    async def risks(messages: Sequence[BaseChatMessage]) -> str:
        await asyncio.sleep(0.03)
        return "Risks: loops need an exit; unbounded loops need a termination condition."

    async def draft(messages: Sequence[BaseChatMessage]) -> str:
        notes = [m.to_text() for m in messages if m.source in {"research", "risks", "review"}]
        return "Draft v{}: {}".format(reviews + 1, " ".join(notes)[:120])

    async def review(messages: Sequence[BaseChatMessage]) -> str:
        nonlocal reviews
        reviews += 1
        return "APPROVE" if reviews >= 2 else "REVISE: add an example of a join."

    async def publish(messages: Sequence[BaseChatMessage]) -> str:
        return f"Published after {reviews} review(s)."

    builder = DiGraphBuilder()
    for func in (plan, research, risks, draft, review, publish):
        builder.add_node(func)
    builder.add_edge("plan", "research").add_edge("plan", "risks")
    builder.add_edge("research", "draft").add_edge("risks", "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "publish", condition="APPROVE")
    builder.add_edge("review", "draft", condition="REVISE")
    builder.set_entry_point("plan")
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(30),
    )


async def run_demo(task: str = "Why build agent teams as graphs?") -> TaskResult:
    """Run the demo, printing its stream; return the result."""
    flow = build_demo_flow()
    result: TaskResult | None = None
    async for item in flow.run_stream(task=task):
        if isinstance(item, TaskResult):
            result = item
            continue
        print(f"---------- {item.source} ----------")
        print(item.to_text())
    if result is None:  # pragma: no cover - run_stream always ends with a TaskResult
        raise RuntimeError("The demo run ended without a result.")
    print("---------- Summary ----------")
    print(f"Stop reason: {result.stop_reason}")
    print(f"Path taken: {' -> '.join(flow.trace.steps)}")
    return result
