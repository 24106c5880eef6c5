"""LangGraph peer: ``StateGraph`` with async node callables.

State is one list of strings with an ``operator.add`` reducer: each node appends one
message. This is the lightest state a LangGraph multi-agent graph can carry (no
``add_messages`` reducer, no langchain message objects, no checkpointer), i.e. the choice
most favourable to LangGraph. Nothing is imported from LangGraph until :func:`version` /
the ``make_*`` functions are called.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from functools import cache
from itertools import pairwise
from typing import Annotated, Any, TypedDict

from bench.shapes import GraphSpec, Runner

NAME = "langgraph"
LABEL = "LangGraph"
NOTES: list[str] = [
    "langgraph: state is a list[str] with an operator.add reducer, async node callables, no "
    "checkpointer (the lightest setup); joins are add_edge([branch ends], 'join'), which waits "
    "for every branch and runs the join once; the loop is a conditional edge B -> A | X.",
    "langgraph: the map shape is Send: a conditional edge returns one Send('worker', ...) per "
    "item, the reduce is the worker's plain edge (it runs once, after every Send), and the run "
    "config's max_concurrency bounds the workers running at once.",
    "langgraph: execution is in supersteps (Pregel/BSP): a node's successors start at the next "
    "superstep, after every node of the current one has finished.",
    "langgraph: LangGraph has no team classes; roundrobin is two nodes A -> B -> A whose "
    "conditional edges go to END once the state holds the wanted number of turns (the "
    "max_turns bound), and swarm is the same with the next node read from the handoff target "
    "in the last message (what AutoGen's Swarm does with the last HandoffMessage).",
    "langgraph: the longrun and msgmem shapes are two nodes calling langchain's "
    "FakeListChatModel on the system prompt and the whole history (state: a list of langchain "
    "messages, operator.add); LangGraph has no OpenAI client of its own (langchain-openai is "
    "not installed), so it has no realclient rows.",
]


class _State(TypedDict):
    messages: Annotated[list[str], operator.add]


_HANDOFF = " >> "


class FakeNode:
    """The fake agent: an async node that answers at once (after ``delay`` seconds if
    given), appending "DONE" on its ``done_on``-th turn, otherwise "<name> turn <k>".
    With ``handoff_to``, every message ends with ``" >> <handoff_to>"``: a handoff."""

    def __init__(
        self,
        name: str,
        delay: float = 0.0,
        done_on: int | None = None,
        handoff_to: str | None = None,
    ) -> None:
        self.name = name
        self._delay = delay
        self._done_on = done_on
        self._handoff_to = handoff_to
        self._turns = 0

    async def __call__(self, state: _State) -> dict[str, list[str]]:
        self._turns += 1
        if self._delay:
            await asyncio.sleep(self._delay)
        if self._done_on is not None and self._turns == self._done_on:
            text = "DONE"
        else:
            text = f"{self.name} turn {self._turns}"
        if self._handoff_to:
            text += _HANDOFF + self._handoff_to
        return {"messages": [text]}


def _after_b(state: _State) -> str:
    return "X" if "DONE" in state["messages"][-1] else "A"


def _bounded(turns: int, route: Callable[[_State], str]) -> Callable[[_State], str]:
    """A router that ends the run after ``turns`` agent turns (the first message is the
    task), else follows ``route``: the max_turns bound of a team."""
    end = _lg().END

    def router(state: _State) -> str:
        return end if len(state["messages"]) > turns else route(state)

    return router


def _handoff_target(state: _State) -> str:
    return state["messages"][-1].rpartition(_HANDOFF)[2]


def _never_called_router(state: _State) -> str:  # validation graphs are never run
    raise AssertionError("validation graphs are not run")


@cache
def _lg() -> Any:
    import langgraph.graph as lg

    return lg


def _runner(graph: Any, max_steps: int, count: Callable[[list[str]], int] | None = None) -> Runner:
    app = graph.compile()
    config = {"recursion_limit": max_steps + 10}

    async def run() -> int:
        out = await app.ainvoke({"messages": ["go"]}, config)
        return count(out["messages"]) if count else len(out["messages"]) - 1

    return run


def _followed_handoffs(messages: list[str]) -> int:
    """The turns taken by the node the previous handoff named (the first by "A")."""
    turns, expected = 0, "A"
    for text in messages[1:]:
        if text.startswith(expected + " "):
            turns += 1
            expected = text.rpartition(_HANDOFF)[2]
    return turns


def version() -> str:
    from importlib.metadata import version as dist_version

    import langgraph  # noqa: F401  (ImportError here means "not installed")

    return dist_version("langgraph")


def make_chain(n: int) -> Runner:
    lg = _lg()
    g = lg.StateGraph(_State)
    names = [f"A{i}" for i in range(1, n + 1)]
    for name in names:
        g.add_node(name, FakeNode(name))
    g.add_edge(lg.START, names[0])
    for x, y in pairwise(names):
        g.add_edge(x, y)
    g.add_edge(names[-1], lg.END)
    return _runner(g, n)


def make_loop(iterations: int) -> Runner:
    lg = _lg()
    g = lg.StateGraph(_State)
    g.add_node("A", FakeNode("A"))
    g.add_node("B", FakeNode("B", done_on=iterations))
    g.add_node("X", FakeNode("X"))
    g.add_edge(lg.START, "A")
    g.add_edge("A", "B")
    g.add_conditional_edges("B", _after_b, ["A", "X"])
    g.add_edge("X", lg.END)
    return _runner(g, 2 * iterations + 1)


def make_branches(branches: list[list[float]]) -> Runner:
    lg = _lg()
    g = lg.StateGraph(_State)
    g.add_node("src", FakeNode("src"))
    g.add_edge(lg.START, "src")
    lasts = []
    for i, delays in enumerate(branches):
        prev = "src"
        for j, d in enumerate(delays):
            name = f"b{i}_{j}"
            g.add_node(name, FakeNode(name, delay=d))
            g.add_edge(prev, name)
            prev = name
        lasts.append(prev)
    g.add_node("join", FakeNode("join"))
    g.add_edge(lasts, "join")  # waits for ALL branch ends: the join runs once
    g.add_edge("join", lg.END)
    return _runner(g, max(len(b) for b in branches) + 2)


def make_map(items: int, delay: float, concurrency: int) -> Runner:
    """Map-reduce with ``Send``: a planner, one worker per item (sleeping ``delay``), a
    reduce; ``max_concurrency`` in the run config bounds the workers running at once.
    Returns how many workers ran."""
    lg = _lg()
    from langgraph.types import Send

    async def plan(state: _State) -> dict[str, list[str]]:
        return {"messages": ["plan"]}

    def fan_out(state: _State) -> list[Any]:
        return [Send("worker", {"messages": [f"item {i}"]}) for i in range(items)]

    async def worker(state: _State) -> dict[str, list[str]]:
        await asyncio.sleep(delay)
        return {"messages": ["done " + state["messages"][-1]]}

    async def reduce(state: _State) -> dict[str, list[str]]:
        return {"messages": ["reduced"]}

    g = lg.StateGraph(_State)
    g.add_node("plan", plan)
    g.add_node("worker", worker)
    g.add_node("reduce", reduce)
    g.add_edge(lg.START, "plan")
    g.add_conditional_edges("plan", fan_out, ["worker"])
    g.add_edge("worker", "reduce")
    g.add_edge("reduce", lg.END)
    app = g.compile()
    config = {"recursion_limit": 20, "max_concurrency": concurrency}

    async def run() -> int:
        out = await app.ainvoke({"messages": ["go"]}, config)
        return sum(1 for text in out["messages"] if text.startswith("done "))

    return run


def make_roundrobin(turns: int) -> Runner:
    lg = _lg()
    g = lg.StateGraph(_State)
    g.add_node("A", FakeNode("A"))
    g.add_node("B", FakeNode("B"))
    g.add_edge(lg.START, "A")
    g.add_conditional_edges("A", _bounded(turns, lambda _: "B"), ["B", lg.END])
    g.add_conditional_edges("B", _bounded(turns, lambda _: "A"), ["A", lg.END])
    return _runner(g, turns)


def make_swarm(turns: int) -> Runner:
    lg = _lg()
    g = lg.StateGraph(_State)
    g.add_node("A", FakeNode("A", handoff_to="B"))
    g.add_node("B", FakeNode("B", handoff_to="A"))
    g.add_edge(lg.START, "A")
    router = _bounded(turns, _handoff_target)
    g.add_conditional_edges("A", router, ["B", lg.END])
    g.add_conditional_edges("B", router, ["A", lg.END])
    return _runner(g, turns, _followed_handoffs)


def prepare_validation(spec: GraphSpec) -> Callable[[], Callable[[], Any]]:
    lg = _lg()
    nodes = {n: FakeNode(n) for n in spec.nodes}
    out_edges: dict[str, list[tuple[str, str | None]]] = {}
    for s, t, cond in spec.edges:
        out_edges.setdefault(s, []).append((t, cond))

    def populate() -> Callable[[], Any]:
        g = lg.StateGraph(_State)
        for name, node in nodes.items():
            g.add_node(name, node)
        g.add_edge(lg.START, spec.entry)
        for s, targets in out_edges.items():
            if any(cond is not None for _, cond in targets):
                g.add_conditional_edges(s, _never_called_router, [t for t, _ in targets])
            else:
                for t, _ in targets:
                    g.add_edge(s, t)
        return g.compile  # type: ignore[no-any-return]

    return populate


# --------------------------------------------------- model-backed agents (issue 15)


class _ChatState(TypedDict):
    messages: Annotated[list[Any], operator.add]


class ChatNode:
    """An agent node: calls its chat model on the system prompt and the whole history,
    appends the answer (the usual LangGraph multi-agent shape)."""

    def __init__(self, name: str, replies: int) -> None:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.messages import SystemMessage

        from bench.peers.agent_runs import REPLY, SYSTEM

        self.name = name
        self._system = SystemMessage(content=SYSTEM)
        self._model = FakeListChatModel(
            responses=[f"{name}: {REPLY} ({i})" for i in range(replies)]
        )

    async def __call__(self, state: _ChatState) -> dict[str, list[Any]]:
        answer = await self._model.ainvoke([self._system, *state["messages"]])
        answer.name = self.name
        return {"messages": [answer]}


def make_assistant_loop(turns: int, clear_client_logs: bool = False) -> Any:
    """Two chat-model nodes A -> B -> A on langchain's ``FakeListChatModel``, ended after
    ``turns`` agent turns (the max_turns bound). ``FakeListChatModel`` keeps no log of its
    calls, so ``clear_client_logs`` has nothing to clear."""
    from langchain_core.messages import HumanMessage

    lg = _lg()
    g = lg.StateGraph(_ChatState)
    per_agent = turns // 2 + 1
    g.add_node("A", ChatNode("A", per_agent))
    g.add_node("B", ChatNode("B", per_agent))
    g.add_edge(lg.START, "A")

    def bounded(other: str) -> Callable[[_ChatState], str]:
        def route(state: _ChatState) -> str:
            return lg.END if len(state["messages"]) > turns else other

        return route

    g.add_conditional_edges("A", bounded("B"), ["B", lg.END])
    g.add_conditional_edges("B", bounded("A"), ["A", lg.END])
    app = g.compile()
    config = {"recursion_limit": turns + 10}
    kept: list[Any] = []

    async def run() -> list[float]:
        import time

        stamps: list[float] = []
        task = {"messages": [HumanMessage(content="go", name="user")]}
        async for update in app.astream(task, config, stream_mode="updates"):
            stamps.append(time.perf_counter())
            kept.append(update)  # the run's messages, held as a team holds its thread
        return stamps

    return run
