"""The demo behind ``flowlib demo``: model-backed agents in a graph with a fan-out, a
join, a tool call and a review loop.



    planner -> (researcher, critic) -> writer -> reviewer --"APPROVE"--> publish
                                         ^          |
                                         +-REVISE---+

``publish`` is a plain Python function node beside the agents.

Offline by default: every agent plays a scripted model (``ReplayChatCompletionClient``).
With ``OPENAI_API_KEY`` set (or ``OPENAI_BASE_URL`` for a local OpenAI-compatible server
such as Ollama or vLLM), the same team runs on a real model; ``FLOWLIB_MODEL`` picks the
model (default ``gpt-4o-mini``).

The agents stream their model's tokens (``model_client_stream=True``) and the run is
printed by [`Console`][flowlib.ui.Console]. ``researcher`` and ``critic`` run at the same
time, so their tokens arrive interleaved; the demo shows one speaker at a time (the one
that started speaking first, holding the other's tokens back until it has finished), and
"Path taken" lists the speakers in the order they were printed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence

from ..agents import AssistantAgent
from ..base import TaskResult
from ..conditions import MaxMessageTermination
from ..messages import BaseAgentEvent, BaseChatMessage
from ..models import (
    ChatCompletionClient,
    CreateResult,
    FunctionCall,
    ModelInfo,
    ReplayChatCompletionClient,
    RequestUsage,
)
from ..teams import DiGraphBuilder, GraphFlow
from ..ui import Console

__all__ = ["build_demo_flow", "demo_model_clients", "one_speaker_at_a_time", "run_demo"]

DEFAULT_TASK = "Write a three-sentence note on why agent teams are easier to debug as graphs."


def word_count(text: str) -> int:
    """Count the words of a draft."""
    return len(text.split())


_SCRIPT: dict[str, list[str | CreateResult]] = {
    "planner": ["Plan: researcher gathers one fact, critic names one risk, writer drafts."],
    "researcher": ["Fact: a graph makes every hand-off between agents an explicit edge."],
    "critic": ["Risk: loops need an exit condition, or a bound on turns."],
    "writer": [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(
                    id="call_1",
                    name="word_count",
                    arguments='{"text": "Graphs show every hand-off as an edge."}',
                )
            ],
            usage=RequestUsage(prompt_tokens=60, completion_tokens=12),
            cached=False,
        ),
        "Draft 1: Graphs show every hand-off as an edge, so a failing run points at one node.",
        "Draft 2: Graphs show every hand-off as an edge; loops carry an explicit exit, so a "
        "stuck run names the node and edge to look at.",
    ],
    "reviewer": ["REVISE: mention what happens with loops.", "APPROVE"],
}

_SYSTEM = {
    "planner": "You plan. In one sentence, say who does what: researcher, critic, writer.",
    "researcher": "You research. Give exactly one short fact relevant to the task.",
    "critic": "You are a critic. Name exactly one risk relevant to the task, in one sentence.",
    "writer": (
        "You write the text the task asks for, using the fact and the risk you were given "
        "and the reviewer's feedback. Use the word_count tool once to check your draft."
    ),
    "reviewer": (
        "You review the latest draft. Reply with exactly APPROVE if it answers the task, "
        "otherwise reply REVISE: followed by one concrete fix."
    ),
}


def publish(messages: Sequence[BaseChatMessage]) -> str:
    """Publish the approved draft: the writer's latest message."""
    drafts = [m.to_text() for m in messages if m.source == "writer"]
    return "Published: " + (drafts[-1] if drafts else "(no draft)")


def demo_model_clients(
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, ChatCompletionClient], str]:
    """One model client per agent, and a label saying which model the demo uses.

    A real OpenAI-compatible model when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set;
    scripted replay clients otherwise.
    """
    env = os.environ if environ is None else environ
    if env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        from ..models import OpenAIChatCompletionClient

        model = env.get("FLOWLIB_MODEL", "gpt-4o-mini")
        base_url = env.get("OPENAI_BASE_URL") or None
        info = None
        if base_url is not None:  # a local server's model names are not known to flowlib
            info = ModelInfo(
                vision=False,
                function_calling=True,
                json_output=True,
                family="unknown",
                structured_output=False,
            )
        client = OpenAIChatCompletionClient(model, base_url=base_url, model_info=info)
        return dict.fromkeys(_SCRIPT, client), f"{model} at {base_url or 'OpenAI'}"
    scripted: dict[str, ChatCompletionClient] = {
        name: ReplayChatCompletionClient(list(script)) for name, script in _SCRIPT.items()
    }
    return scripted, "scripted replay models (set OPENAI_API_KEY for a real model)"


def build_demo_flow(clients: Mapping[str, ChatCompletionClient]) -> GraphFlow:
    """Build the demo team on the given model clients (one per agent name)."""
    agents = {
        name: AssistantAgent(
            name,
            clients[name],
            system_message=_SYSTEM[name],
            tools=[word_count] if name == "writer" else None,
            reflect_on_tool_use=True if name == "writer" else None,
            model_client_stream=True,
        )
        for name in _SCRIPT
    }
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    builder.add_node(publish)
    builder.add_edge("planner", "researcher").add_edge("planner", "critic")
    builder.add_edge("researcher", "writer").add_edge("critic", "writer")
    builder.add_edge("writer", "reviewer")
    builder.add_edge("reviewer", "writer", condition="REVISE")
    builder.add_edge("reviewer", "publish", condition="APPROVE")
    builder.set_entry_point("planner")
    return GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(20),
    )


StreamItem = BaseAgentEvent | BaseChatMessage | TaskResult


async def one_speaker_at_a_time(
    stream: AsyncIterator[StreamItem], path: list[str]
) -> AsyncIterator[StreamItem]:
    """Reorder a team's stream so that one speaker's items come out together.

    Agents that run concurrently stream their tokens interleaved. The first source to
    produce an item has the floor: its items pass through; every other source's items
    are held back, in order, until the speaker's chat message (the end of its turn)
    has passed, and then the source that was heard from first after it takes the floor
    with all it said meanwhile. Each chat message's source is appended to ``path`` as it
    is yielded, so ``path`` is the order in which the messages were printed.

    Args:
        stream: A team's ``run_stream(...)``.
        path: Filled with the source of every chat message yielded (the task excepted).
    """
    held: dict[str, list[StreamItem]] = {}  # waiting sources, in the order first heard
    speaker: str | None = None

    def emit(item: StreamItem) -> StreamItem:
        if isinstance(item, BaseChatMessage) and item.source != "user":
            path.append(item.source)
        return item

    def ends_turn(item: StreamItem) -> bool:
        return isinstance(item, BaseChatMessage)

    async for item in stream:
        if isinstance(item, TaskResult):
            for items in held.values():
                for waiting in items:
                    yield emit(waiting)
            held.clear()
            yield item
            continue
        source = item.source
        if speaker is None and source not in held:
            speaker = source
        if source != speaker:
            held.setdefault(source, []).append(item)
            continue
        yield emit(item)
        if not ends_turn(item):
            continue
        speaker = None
        # Hand the floor on: each waiting source in turn, as long as its turn is over.
        while held and speaker is None:
            source, items = next(iter(held.items()))
            del held[source]
            for waiting in items:
                yield emit(waiting)
            if not ends_turn(items[-1]):
                speaker = source


async def run_demo(task: str = DEFAULT_TASK) -> TaskResult:
    """Run the demo, printing its stream through ``Console``; return the result."""
    clients, label = demo_model_clients()
    print(f"flowlib demo on {label}\n", flush=True)
    flow = build_demo_flow(clients)
    path: list[str] = []
    try:
        result = await Console(one_speaker_at_a_time(flow.run_stream(task=task), path))
    finally:
        for client in {id(c): c for c in clients.values()}.values():
            await client.close()
    print("---------- Summary ----------")
    print(f"Stop reason: {result.stop_reason}")
    print(f"Path taken: {' -> '.join(path)}")
    return result
