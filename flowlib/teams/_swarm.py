"""Swarm: the next speaker is chosen only by handoffs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import Unpack

from ..base import ChatAgent, Handoff, Team
from ..errors import InvalidArgumentError
from ..graph import (
    AnyOf,
    DiGraph,
    DiGraphEdge,
    DiGraphNode,
    EdgeCondition,
    GraphPattern,
    HandoffTo,
    IsHandoff,
    Not,
)
from ..messages import BaseChatMessage, HandoffMessage
from ._arguments import check_team_arguments
from ._config import AUTOGEN_TEAMS, GroupChatConfig
from ._group_chat import BaseGroupChat
from ._options import TeamOptions
from ._policy import TaskContext, TeamPolicy
from ._setup import check_agents_only

__all__ = ["Swarm"]


def _handoff_targets(agent: ChatAgent, names: Sequence[str]) -> list[str]:
    """The participants ``agent`` can hand off to.

    An agent that declares ``handoffs`` (an ``AssistantAgent``) reaches exactly those.
    One that does not (a ``UserProxyAgent`` answering a handoff, a custom agent) may
    address a ``HandoffMessage`` to anyone, so it gets an edge to every participant.
    """
    if not hasattr(agent, "handoffs"):
        return list(names)
    return declared_handoff_targets(agent)


def declared_handoff_targets(agent: object) -> list[str]:
    """The handoff targets ``agent`` declares (participants or not), in order, each once.

    ``handoffs`` may be a list or a mapping of ``Handoff`` objects or target names; an
    agent without it declares none.
    """
    declared: Any = getattr(agent, "handoffs", None) or ()
    handoffs = list(declared.values()) if isinstance(declared, Mapping) else list(declared)
    targets: list[str] = []
    for handoff in handoffs:
        target = handoff.target if isinstance(handoff, Handoff) else str(handoff)
        if target not in targets:
            targets.append(target)
    return targets


def _task_handoffs(task: Sequence[BaseChatMessage]) -> list[HandoffMessage]:
    """The handoffs of a task that choose a speaker.

    A ``HandoffMessage`` with an empty target only carries context (a
    ``SocietyOfMindAgent`` passes earlier messages to its inner team that way).
    """
    return [m for m in task if isinstance(m, HandoffMessage) and m.target]


class SwarmPolicy(TeamPolicy):
    """Swarm's policy: a ``HandoffMessage`` in the task gives the turn to its target; a
    task without one continues with whoever the last handoff named."""

    def __init__(self, participants: Sequence[str]) -> None:
        self._participants = frozenset(participants)

    def check_task(self, task: Sequence[BaseChatMessage], context: TaskContext) -> None:
        """Reject a task that leaves the next speaker undefined (changes nothing).

        Raises:
            InvalidArgumentError: If the task hands off to someone who is not a
                participant, or if the last handoff went to a non-participant (e.g.
                ``"user"``) and the task does not say who continues.
        """
        names = list(context.participants)
        shown = ", ".join(f"`{n}`" for n in names)
        handoffs = _task_handoffs(task)
        if handoffs:
            target = handoffs[-1].target
            if target not in names:
                raise InvalidArgumentError(
                    f"The task hands off to `{target}`, which is not a participant of this "
                    f"Swarm; address the HandoffMessage to one of {shown}.",
                    argument="task",
                )
            return
        if context.running:
            return  # the team reports the concurrent run
        for message in reversed(context.thread):
            if isinstance(message, HandoffMessage) and message.target:
                if message.target not in names:
                    raise InvalidArgumentError(
                        f"`{message.source}` handed off to `{message.target}`, who is not a "
                        "participant, so this Swarm does not know who continues. Resume with "
                        "run(task=HandoffMessage(source=..., target=<one of "
                        f"{shown}>, content=...)), or reset() the team for a new task.",
                        argument="task",
                    )
                return

    def route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """The target of the task's last ``HandoffMessage`` (checked by `check_task`)."""
        handoffs = _task_handoffs(task)
        if not handoffs:
            return None
        return [handoffs[-1].target]

    def describe_dead_end(self, node: str, final: BaseChatMessage | None) -> str | None:
        """A handoff to an undeclared participant, or to someone outside the swarm."""
        if not isinstance(final, HandoffMessage):
            return None
        if final.target in self._participants:
            return (
                f"`{node}` handed off to `{final.target}`, which is not one of `{node}`'s "
                "declared handoffs; add it to the agent's `handoffs`"
            )
        return (
            f"`{node}` handed off to `{final.target}`, which is not a participant of the "
            "swarm; resume with run(task=HandoffMessage(source=..., "
            f"target=<a participant>, content=...))"
        )


SWARM = GraphPattern(
    "swarm",
    title="swarm handoffs",
    note="an edge is taken on a HandoffMessage to its target; no handoff keeps the turn",
    start_anywhere=True,  # a handoff task resumes the run at any participant
    ends_on_no_match=True,  # a handoff outside the declared ones; the policy says so
)
"""The swarm pattern: handoff edges, any participant can take a new task."""


class Swarm(
    BaseGroupChat,
    pattern=SWARM,
    provider="flowlib.teams.Swarm",
    aliases=(AUTOGEN_TEAMS + "Swarm", "Swarm"),
):
    """A team where the speaker changes only by handoff.

    The first participant speaks first. An agent that answers with a ``HandoffMessage``
    to another participant passes the turn to it; an agent that does not hand off keeps
    the turn. It compiles to a graph with an edge ``a -> b`` (condition
    ``HandoffTo("b")``) for each handoff target ``b`` of ``a`` that is a participant,
    and a self-edge ``a -> a`` taken when ``a``'s message is not a handoff. An agent that
    declares no ``handoffs`` (a ``UserProxyAgent`` answering a handoff, a custom agent)
    gets an edge to every participant, since its ``HandoffMessage`` may name anyone.

    A handoff to someone who is not a participant (typically ``"user"``) ends the run with
    a reason that says so, unless a ``HandoffTermination`` stopped it first. Resume by
    running with a ``HandoffMessage`` task addressed to the participant who should speak;
    as in AutoGen, a task without one is then a ``ValueError`` (nobody knows who
    continues), and so is a handoff task to a non-participant. Both are checked before
    the run starts, so the team's state is unchanged. A ``HandoffMessage`` with an empty
    target only carries context (a ``SocietyOfMindAgent`` sends its inner team one) and
    chooses no speaker.

    Args:
        participants: Chat agents (not teams), the first one speaks first.
        **options: The [`TeamOptions`][flowlib.teams.TeamOptions]; ``name`` defaults to
            ``"Swarm"``, ``description`` to ``"A team of agents."``.

    Raises:
        ValueError: No participants, a nested team, duplicate names, or neither a
            termination condition nor ``max_turns``.

    Examples:
        >>> import asyncio
        >>> from flowlib.messages import HandoffMessage
        >>> from flowlib.testing import ScriptedAgent
        >>> alice, bob = ScriptedAgent("alice", ["hi"]), ScriptedAgent("bob", ["yo"])
        >>> team = Swarm([alice, bob], max_turns=1)
        >>> result = asyncio.run(team.run(task="start"))
        >>> [m.source for m in result.messages], result.stop_reason
        (['user', 'alice'], 'Maximum number of turns 1 reached.')
        >>> task = HandoffMessage(source="user", target="bob", content="bob, please")
        >>> [m.source for m in asyncio.run(team.run(task=task)).messages]
        ['user', 'bob']
    """

    DEFAULT_NAME = "Swarm"
    component_config_schema = GroupChatConfig

    def __init__(self, participants: Sequence[ChatAgent], **options: Unpack[TeamOptions]) -> None:
        check_team_arguments("Swarm", participants)  # before reading their names
        check_agents_only("Swarm", participants)
        super().__init__(
            participants, policy=SwarmPolicy([p.name for p in participants]), **options
        )

    def build_graph(self, participants: Sequence[ChatAgent | Team]) -> DiGraph:
        """An edge to each handoff target, and the turn kept when there is no handoff."""
        names = [p.name for p in participants]
        nodes: dict[str, DiGraphNode] = {}
        for agent in participants:
            assert isinstance(agent, ChatAgent)  # checked by the constructor
            targets = [t for t in _handoff_targets(agent, names) if t in names]
            edges = [
                DiGraphEdge(target=target, condition=HandoffTo(target=target))
                for target in targets
                if target != agent.name
            ]
            # The turn stays with an agent that does not hand off (or hands off to itself).
            keep: EdgeCondition = Not(condition=IsHandoff())
            if agent.name in targets:
                keep = AnyOf(conditions=[keep, HandoffTo(target=agent.name)])
            edges.append(DiGraphEdge(target=agent.name, condition=keep))
            nodes[agent.name] = DiGraphNode(name=agent.name, edges=edges, activation="any")
        return DiGraph(nodes=nodes, default_start_node=names[0], pattern=SWARM.name)
