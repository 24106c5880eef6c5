"""Swarm: the next speaker is chosen only by handoffs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ChatAgent, Handoff, Team, TerminationCondition
from ..graph import DiGraph, DiGraphEdge, DiGraphNode, HandoffTo, IsHandoff, Not
from ..messages import BaseAgentEvent, BaseChatMessage, HandoffMessage
from ._group_chat import BaseGroupChat, reject_runtime

__all__ = ["Swarm"]


def _handoff_targets(agent: ChatAgent) -> list[str]:
    """The targets of an agent's handoffs (agents without handoffs have none)."""
    declared: Any = getattr(agent, "handoffs", None) or ()
    handoffs = list(declared.values()) if isinstance(declared, Mapping) else list(declared)
    targets: list[str] = []
    for handoff in handoffs:
        target = handoff.target if isinstance(handoff, Handoff) else str(handoff)
        if target not in targets:
            targets.append(target)
    return targets


class Swarm(BaseGroupChat):
    """A team where the speaker changes only by handoff.

    The first participant speaks first. An agent that answers with a ``HandoffMessage``
    to another participant passes the turn to it; an agent that does not hand off keeps
    the turn. It compiles to a graph with an edge ``a -> b`` (condition
    ``HandoffTo("b")``) for each handoff target ``b`` of ``a`` that is a participant,
    and a self-edge ``a -> a`` taken when ``a``'s message is not a handoff.

    A handoff to someone who is not a participant (typically ``"user"``) ends the run with
    a reason that says so, unless a ``HandoffTermination`` stopped it first. Resume by
    running with a ``HandoffMessage`` task addressed to the participant who should speak.

    Args:
        participants: Chat agents (not teams), the first one speaks first.
        name: Defaults to ``"Swarm"``.
        description: Defaults to ``"A team of agents."``.
        termination_condition: Stops the run when it fires.
        max_turns: At most this many turns per run.
        runtime: Only ``None``.
        custom_message_types: Extra message classes the participants produce.
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each turn.

    Raises:
        ValueError: No participants, a nested team, duplicate names, or neither a
            termination condition nor ``max_turns``.
    """

    DEFAULT_NAME = "Swarm"
    DEFAULT_DESCRIPTION = "A team of agents."
    component_provider_override = "flowlib.teams.Swarm"

    def __init__(
        self,
        participants: Sequence[ChatAgent],
        *,
        name: str | None = None,
        description: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        runtime: Any = None,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        emit_team_events: bool = False,
    ) -> None:
        reject_runtime(runtime)
        for participant in participants:
            if isinstance(participant, Team):
                raise ValueError(
                    f"Swarm participants must be agents; `{participant.name}` is a team. Wrap "
                    "it in a SocietyOfMindAgent, or use RoundRobinGroupChat or GraphFlow."
                )
        names = [p.name for p in participants]
        nodes: dict[str, DiGraphNode] = {}
        for agent in participants:
            edges = [
                DiGraphEdge(target=target, condition=HandoffTo(target=target))
                for target in _handoff_targets(agent)
                if target in names and target != agent.name
            ]
            edges.append(DiGraphEdge(target=agent.name, condition=Not(condition=IsHandoff())))
            nodes[agent.name] = DiGraphNode(name=agent.name, edges=edges, activation="any")
        graph = DiGraph(
            nodes=nodes,
            default_start_node=names[0] if names else None,
            pattern="swarm",
        )
        super().__init__(
            name=name or self.DEFAULT_NAME,
            description=description or self.DEFAULT_DESCRIPTION,
            participants=participants,
            graph=graph,
            termination_condition=termination_condition,
            max_turns=max_turns,
            custom_message_types=custom_message_types,
            emit_team_events=emit_team_events,
            allow_unreachable=True,  # any participant can be resumed with a handoff task
        )

    def _route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """A ``HandoffMessage`` in the task gives the turn to its target.

        Raises:
            ValueError: If the handoff's target is not a participant.
        """
        handoffs = [m for m in task if isinstance(m, HandoffMessage)]
        if not handoffs:
            return None
        target = handoffs[-1].target
        names = [p.name for p in self.participants]
        if target not in names:
            raise ValueError(
                f"The task hands off to `{target}`, which is not a participant of this Swarm; "
                f"address the HandoffMessage to one of {', '.join(f'`{n}`' for n in names)}."
            )
        return [target]

    def _describe_dead_end(self, node: str, final: BaseChatMessage | None) -> str | None:
        if isinstance(final, HandoffMessage):
            return (
                f"`{node}` handed off to `{final.target}`, which is not a participant of the "
                "swarm; resume with run(task=HandoffMessage(source=..., "
                f"target=<a participant>, content=...))"
            )
        return None
