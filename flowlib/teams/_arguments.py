"""The argument checks every team constructor runs first (issue 11.5), so a wrong
argument is a named flowlib error before anything is built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import ChatAgent, Team, TerminationCondition
from ..base.internal import check_count, kind_of
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..graph import DiGraph
from ..models import ChatCompletionClient

__all__ = ["check_team_arguments"]

_UNSET: Any = object()


def check_team_arguments(
    team: str,
    participants: object,
    *,
    termination_condition: object = None,
    max_turns: object = None,
    functions: bool = False,
    minimum: int = 1,
    graph: object = _UNSET,
    model_client: object = _UNSET,
) -> None:
    """Check the arguments every team constructor shares, before anything is built.

    Args:
        team: The team class's name, for the messages.
        participants: Must be a list (or tuple) of agents or teams (or, with
            ``functions``, plain functions).
        termination_condition: None or a ``TerminationCondition``.
        max_turns: None or an int >= 1.
        functions: Whether plain callables are participants (GraphFlow).
        minimum: How many participants the team needs at least.
        graph: If given, must be a ``DiGraph``.
        model_client: If given, must be a ``ChatCompletionClient``.
    """
    if isinstance(participants, (str, bytes, Mapping)) or not isinstance(participants, Sequence):
        raise ArgumentTypeError(
            f"{team}: `participants` must be a list of agents, not {kind_of(participants)}.",
            argument="participants",
        )
    if len(participants) < minimum:
        wanted = "one participant" if minimum == 1 else f"{minimum} participants"
        wanted = wanted.replace("2 ", "two ")
        hint = "; for a single agent use RoundRobinGroupChat" if minimum > 1 else ""
        raise InvalidArgumentError(
            f"{team} needs at least {wanted}, got {len(participants)}{hint}; pass a list "
            "of agents as `participants`.",
            argument="participants",
        )
    for position, participant in enumerate(participants):
        if isinstance(participant, (ChatAgent, Team)):
            continue
        if functions and callable(participant):
            continue
        hint = " (a name: pass the agent itself)" if isinstance(participant, str) else ""
        accepted = "an agent, a team or a function" if functions else "an agent or a team"
        raise ArgumentTypeError(
            f"{team}: `participants[{position}]` is {kind_of(participant)}{hint}; each "
            f"participant must be {accepted}.",
            argument=f"participants[{position}]",
        )
    if termination_condition is not None and not isinstance(
        termination_condition, TerminationCondition
    ):
        raise ArgumentTypeError(
            f"{team}: `termination_condition` must be a TerminationCondition (e.g. "
            f"MaxMessageTermination(10)) or None, not {kind_of(termination_condition)}.",
            argument="termination_condition",
        )
    check_count(max_turns, "max_turns", optional=True)
    if graph is not _UNSET and not isinstance(graph, DiGraph):
        raise ArgumentTypeError(
            f"{team}: `graph` must be a DiGraph (e.g. `DiGraphBuilder(...).build()`), not "
            f"{kind_of(graph)}.",
            argument="graph",
        )
    if model_client is not _UNSET and not isinstance(model_client, ChatCompletionClient):
        raise ArgumentTypeError(
            f"{team}: `model_client` must be a ChatCompletionClient (e.g. "
            f"OpenAIChatCompletionClient(...)), not {kind_of(model_client)}.",
            argument="model_client",
        )
