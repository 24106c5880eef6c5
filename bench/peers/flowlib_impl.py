"""flowlib peer.

flowlib's builder/team API is AutoGen AgentChat's (only the imports change), so the
shapes are built by the very same code as AutoGen's (``AgentChatShapes`` in
``autogen_graphflow``), with flowlib's classes handed in. Agents, not plain functions,
are the nodes, for a like-for-like comparison. Nothing is imported from flowlib until
:func:`version` / the ``make_*`` functions are called.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from bench.peers import agent_runs
from bench.peers.agent_runs import AgentAPI, TimedRunner
from bench.peers.autogen_graphflow import AgentChatAPI, AgentChatShapes
from bench.shapes import GraphSpec, Runner

NAME = "flowlib"
LABEL = "flowlib"
NOTES: list[str] = []


@cache
def _shapes() -> AgentChatShapes:
    from flowlib.agents import BaseChatAgent
    from flowlib.base import Response
    from flowlib.messages import HandoffMessage, TextMessage
    from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm

    return AgentChatShapes(
        AgentChatAPI(
            DiGraphBuilder,
            GraphFlow,
            BaseChatAgent,
            TextMessage,
            Response,
            RoundRobinGroupChat,
            Swarm,
            HandoffMessage,
        )
    )


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    import flowlib

    # the names the benchmark uses must exist, or the peer counts as not available
    _shapes()
    try:
        return dist_version("flowlib")
    except PackageNotFoundError:
        return str(getattr(flowlib, "__version__", "unknown (not installed, imported from source)"))


def make_chain(n: int) -> Runner:
    return _shapes().make_chain(n)


def make_loop(iterations: int) -> Runner:
    return _shapes().make_loop(iterations)


def make_branches(branches: list[list[float]]) -> Runner:
    return _shapes().make_branches(branches)


def make_map(items: int, delay: float, concurrency: int) -> Runner:
    """Map-reduce with a map edge: a planner, one worker instance per item (sleeping
    ``delay``, at most ``concurrency`` at once), a reduce. Returns how many instances
    ran."""
    import asyncio

    from flowlib.teams import DiGraphBuilder, GraphFlow

    def planner(messages: Any) -> str:
        return "plan"

    def split(message: Any) -> list[str]:
        return [f"item {i}" for i in range(items)]

    async def worker(messages: Any) -> str:
        await asyncio.sleep(delay)
        return "done " + messages[0].content

    def reduce(messages: Any) -> str:
        return "reduced"

    builder = DiGraphBuilder().add_node(planner).add_node(worker).add_node(reduce)
    builder.add_edge("planner", "worker", map=split, max_concurrency=concurrency)
    builder.add_edge("worker", "reduce")
    team = GraphFlow(builder.get_participants(), builder.build())

    async def run() -> int:
        result = await team.run(task="go")
        return sum(1 for m in result.messages if m.source.startswith("worker["))

    return run


def make_roundrobin(turns: int) -> Runner:
    return _shapes().make_roundrobin(turns)


def make_swarm(turns: int) -> Runner:
    return _shapes().make_swarm(turns)


def prepare_validation(spec: GraphSpec) -> Callable[[], Callable[[], Any]]:
    return _shapes().prepare_validation(spec)


@cache
def _agent_api() -> AgentAPI:
    from flowlib.agents import AssistantAgent
    from flowlib.messages import ModelClientStreamingChunkEvent, TextMessage
    from flowlib.models import OpenAIChatCompletionClient, ReplayChatCompletionClient
    from flowlib.teams import RoundRobinGroupChat

    return AgentAPI(
        AssistantAgent,
        RoundRobinGroupChat,
        ReplayChatCompletionClient,
        OpenAIChatCompletionClient,
        TextMessage,
        ModelClientStreamingChunkEvent,
    )


def make_assistant_loop(turns: int, clear_client_logs: bool = False) -> TimedRunner:
    return agent_runs.make_assistant_loop(_agent_api(), turns, clear_client_logs=clear_client_logs)


def make_durable_assistant_loop(turns: int, folder: str) -> TimedRunner:
    """The ``longrun`` team checkpointing every turn to a SQLite file in ``folder``."""
    from flowlib.checkpoint import SQLiteCheckpointStore

    store = SQLiteCheckpointStore(f"{folder}/runs.db")
    runner = agent_runs.make_assistant_loop(_agent_api(), turns, checkpoint_store=store)

    async def run() -> list[float]:
        try:
            return await runner()
        finally:
            await store.close()

    return run


def make_openai_loop(turns: int, base_url: str, stream: bool) -> TimedRunner:
    return agent_runs.make_openai_loop(_agent_api(), turns, base_url, stream)
