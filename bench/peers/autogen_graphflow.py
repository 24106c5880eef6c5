"""AutoGen AgentChat 0.7.5 GraphFlow peer.

The code that builds the shapes is written against the AgentChat API (``DiGraphBuilder``,
``GraphFlow``, ``BaseChatAgent``, ``TextMessage``, ``Response``) and takes that API as
an :class:`AgentChatAPI` bundle, so ``flowlib_impl`` runs exactly the same shapes by
handing in flowlib's classes instead of AutoGen's. Nothing is imported from AutoGen
until :func:`version` / the ``make_*`` functions are called.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import Any

from bench.shapes import GraphSpec, Runner

NAME = "autogen"
LABEL = "AutoGen GraphFlow"
NOTES: list[str] = [
    "autogen: GraphFlow runs the ready set in batches (a node's successors start only when "
    "every node of the batch has answered), and every published message is buffered by every "
    "participant until its next turn.",
    "autogen: DiGraph validation (has_cycles_with_exit) is a recursive DFS: graphs deeper than "
    "the interpreter's recursion limit (default 1000) fail with RecursionError; the benchmark "
    "keeps the default limit, as a user would have it.",
]


@dataclass(frozen=True)
class AgentChatAPI:
    """The AgentChat names the shapes need, taken from one framework."""

    DiGraphBuilder: Any
    GraphFlow: Any
    BaseChatAgent: Any
    TextMessage: Any
    Response: Any


@cache
def fake_agent_class(api: AgentChatAPI) -> type:
    """The instant (or sleeping) fake agent, defined once for any AgentChat-API framework."""

    class FakeAgent(api.BaseChatAgent):  # type: ignore[misc, name-defined]
        """Answers at once (after ``delay`` seconds if given). Says "DONE" on its
        ``done_on``-th turn, otherwise "<name> turn <k>"."""

        def __init__(self, name: str, delay: float = 0.0, done_on: int | None = None) -> None:
            super().__init__(name, description=f"fake agent {name}")
            self._delay = delay
            self._done_on = done_on
            self._turns = 0

        @property
        def produced_message_types(self) -> Sequence[type]:
            return (api.TextMessage,)

        async def on_messages(self, messages: Sequence[Any], cancellation_token: Any) -> Any:
            self._turns += 1
            if self._delay:
                await asyncio.sleep(self._delay)
            if self._done_on is not None and self._turns == self._done_on:
                text = "DONE"
            else:
                text = f"{self.name} turn {self._turns}"
            return api.Response(chat_message=api.TextMessage(content=text, source=self.name))

        async def on_reset(self, cancellation_token: Any) -> None:
            self._turns = 0

    return FakeAgent


def _not_done(message: Any) -> bool:
    return "DONE" not in message.to_model_text()


class AgentChatShapes:
    """Builds every benchmark shape with an AgentChat-API framework."""

    def __init__(self, api: AgentChatAPI) -> None:
        self.api = api
        self.Agent = fake_agent_class(api)

    def _runner(self, agents: list[Any], builder: Any, max_turns: int | None = None) -> Runner:
        graph = builder.build()
        team = self.api.GraphFlow(agents, graph=graph, max_turns=max_turns)
        names = {a.name for a in agents}

        async def run() -> int:
            result = await team.run(task="go")
            return sum(
                1
                for m in result.messages
                if getattr(m, "source", None) in names and isinstance(m, self.api.TextMessage)
            )

        return run

    def make_chain(self, n: int) -> Runner:
        agents = [self.Agent(f"A{i}") for i in range(1, n + 1)]
        b = self.api.DiGraphBuilder()
        for a in agents:
            b.add_node(a)
        for x, y in pairwise(agents):
            b.add_edge(x, y)
        b.set_entry_point(agents[0])
        return self._runner(agents, b)

    def make_loop(self, iterations: int) -> Runner:
        a = self.Agent("A")
        bb = self.Agent("B", done_on=iterations)
        x = self.Agent("X")
        b = self.api.DiGraphBuilder()
        b.add_node(a).add_node(bb).add_node(x)
        b.add_edge(a, bb)
        b.add_edge(bb, a, condition=_not_done)
        b.add_edge(bb, x, condition="DONE")
        b.set_entry_point(a)
        # cyclic graphs need a bound; the loop exits on its own well before it
        return self._runner([a, bb, x], b, max_turns=2 * iterations + 10)

    def make_branches(self, branches: list[list[float]]) -> Runner:
        src = self.Agent("src")
        join = self.Agent("join")
        agents = [src]
        b = self.api.DiGraphBuilder()
        b.add_node(src)
        lasts = []
        for i, delays in enumerate(branches):
            prev = src
            for j, d in enumerate(delays):
                ag = self.Agent(f"b{i}_{j}", delay=d)
                agents.append(ag)
                b.add_node(ag)
                b.add_edge(prev, ag)
                prev = ag
            lasts.append(prev)
        agents.append(join)
        b.add_node(join)
        for last in lasts:
            b.add_edge(last, join)
        b.set_entry_point(src)
        return self._runner(agents, b)

    def prepare_validation(self, spec: GraphSpec) -> Callable[[], Callable[[], Any]]:
        agents = {n: self.Agent(n) for n in spec.nodes}
        api = self.api

        def populate() -> Callable[[], Any]:
            b = api.DiGraphBuilder()
            for ag in agents.values():
                b.add_node(ag)
            for s, t, cond in spec.edges:
                b.add_edge(agents[s], agents[t], condition=cond)
            b.set_entry_point(agents[spec.entry])
            return b.build  # type: ignore[no-any-return]

        return populate


# ------------------------------------------------------------- module interface


@cache
def _shapes() -> AgentChatShapes:
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage
    from autogen_agentchat.teams import DiGraphBuilder, GraphFlow

    return AgentChatShapes(
        AgentChatAPI(DiGraphBuilder, GraphFlow, BaseChatAgent, TextMessage, Response)
    )


def version() -> str:
    from importlib.metadata import version as dist_version

    import autogen_agentchat  # noqa: F401  (ImportError here means "not installed")

    return dist_version("autogen-agentchat")


def make_chain(n: int) -> Runner:
    return _shapes().make_chain(n)


def make_loop(iterations: int) -> Runner:
    return _shapes().make_loop(iterations)


def make_branches(branches: list[list[float]]) -> Runner:
    return _shapes().make_branches(branches)


def prepare_validation(spec: GraphSpec) -> Callable[[], Callable[[], Any]]:
    return _shapes().prepare_validation(spec)
