"""AutoGen AgentChat 0.7.5 peer: GraphFlow, plus RoundRobinGroupChat and Swarm.

The code that builds the shapes is written against the AgentChat API (``DiGraphBuilder``,
``GraphFlow``, ``RoundRobinGroupChat``, ``Swarm``, ``BaseChatAgent``, ``TextMessage``,
``HandoffMessage``, ``Response``) and takes that API as
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

from bench.peers import agent_runs
from bench.peers.agent_runs import AgentAPI, TimedRunner
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
    "autogen: the roundrobin and swarm shapes run autogen_agentchat.teams.RoundRobinGroupChat "
    "and Swarm (max_turns bound). AutoGen's Swarm never reads an agent's handoffs: it only "
    "requires HandoffMessage in the first participant's produced_message_types and routes on "
    "the last HandoffMessage's target at run time; flowlib's Swarm builds its edges from each "
    "agent's `handoffs`, so the fake agent declares both.",
]


@dataclass(frozen=True)
class AgentChatAPI:
    """The AgentChat names the shapes need, taken from one framework."""

    DiGraphBuilder: Any
    GraphFlow: Any
    BaseChatAgent: Any
    TextMessage: Any
    Response: Any
    RoundRobinGroupChat: Any
    Swarm: Any
    HandoffMessage: Any


@cache
def fake_agent_class(api: AgentChatAPI) -> type:
    """The instant (or sleeping) fake agent, defined once for any AgentChat-API framework."""

    class FakeAgent(api.BaseChatAgent):  # type: ignore[misc, name-defined]
        """Answers at once (after ``delay`` seconds if given). Says "DONE" on its
        ``done_on``-th turn, otherwise "<name> turn <k>". With ``handoff_to`` it answers
        every turn with a ``HandoffMessage`` to that agent instead, and declares the
        handoff (``handoffs``, read by flowlib's Swarm; ``HandoffMessage`` among its
        ``produced_message_types``, checked by AutoGen's Swarm)."""

        def __init__(
            self,
            name: str,
            delay: float = 0.0,
            done_on: int | None = None,
            handoff_to: str | None = None,
        ) -> None:
            super().__init__(name, description=f"fake agent {name}")
            self._delay = delay
            self._done_on = done_on
            self._turns = 0
            self._handoff_to = handoff_to
            self.handoffs = [handoff_to] if handoff_to else []

        @property
        def produced_message_types(self) -> Sequence[type]:
            if self._handoff_to:
                return (api.HandoffMessage,)
            return (api.TextMessage,)

        async def on_messages(self, messages: Sequence[Any], cancellation_token: Any) -> Any:
            self._turns += 1
            if self._delay:
                await asyncio.sleep(self._delay)
            if self._done_on is not None and self._turns == self._done_on:
                text = "DONE"
            else:
                text = f"{self.name} turn {self._turns}"
            if self._handoff_to:
                return api.Response(
                    chat_message=api.HandoffMessage(
                        content=text, source=self.name, target=self._handoff_to
                    )
                )
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
        return self._team_runner(team, agents)

    def _team_runner(self, team: Any, agents: list[Any]) -> Runner:
        names = {a.name for a in agents}
        kinds = (self.api.TextMessage, self.api.HandoffMessage)

        async def run() -> int:
            result = await team.run(task="go")
            return sum(
                1
                for m in result.messages
                if getattr(m, "source", None) in names and isinstance(m, kinds)
            )

        return run

    def _swarm_runner(self, team: Any, first: str) -> Runner:
        """Counts only the turns taken by the agent the previous handoff named (the first
        by ``first``), so a swarm that ignored handoffs would fail the turn check."""
        handoff = self.api.HandoffMessage

        async def run() -> int:
            result = await team.run(task="go")
            turns, expected = 0, first
            for m in result.messages:
                if isinstance(m, handoff) and m.source == expected:
                    turns += 1
                    expected = m.target
            return turns

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

    def make_roundrobin(self, turns: int) -> Runner:
        agents = [self.Agent("A"), self.Agent("B")]
        team = self.api.RoundRobinGroupChat(agents, max_turns=turns)
        return self._team_runner(team, agents)

    def make_swarm(self, turns: int) -> Runner:
        agents = [self.Agent("A", handoff_to="B"), self.Agent("B", handoff_to="A")]
        team = self.api.Swarm(agents, max_turns=turns)
        return self._swarm_runner(team, "A")

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
    from autogen_agentchat.messages import HandoffMessage, TextMessage
    from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat, Swarm

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
    from importlib.metadata import version as dist_version

    import autogen_agentchat  # noqa: F401  (ImportError here means "not installed")

    return dist_version("autogen-agentchat")


def make_chain(n: int) -> Runner:
    return _shapes().make_chain(n)


def make_loop(iterations: int) -> Runner:
    return _shapes().make_loop(iterations)


def make_branches(branches: list[list[float]]) -> Runner:
    return _shapes().make_branches(branches)


def make_roundrobin(turns: int) -> Runner:
    return _shapes().make_roundrobin(turns)


def make_swarm(turns: int) -> Runner:
    return _shapes().make_swarm(turns)


def prepare_validation(spec: GraphSpec) -> Callable[[], Callable[[], Any]]:
    return _shapes().prepare_validation(spec)


@cache
def _agent_api() -> AgentAPI:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import ModelClientStreamingChunkEvent, TextMessage
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient
    from autogen_ext.models.replay import ReplayChatCompletionClient

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


def make_openai_loop(turns: int, base_url: str, stream: bool) -> TimedRunner:
    return agent_runs.make_openai_loop(_agent_api(), turns, base_url, stream)
