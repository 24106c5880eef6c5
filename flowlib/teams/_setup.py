"""Checks the built-in teams' constructors share (before they build their graph)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..base import ChatAgent, Team
from ..errors import DuplicateNodeError, InvalidArgumentTypeError
from ..graph import Router

__all__ = ["by_unique_name", "check_agents_only", "check_router_name"]


def check_agents_only(team: str, participants: Sequence[ChatAgent | Team]) -> None:
    """Refuse nested teams, for the teams whose participants must be agents.

    Raises:
        InvalidArgumentTypeError: A participant is a team (a ``TypeError`` and a
            ``ValueError``: AutoGen raises ``TypeError`` for a Swarm, ``ValueError``
            elsewhere).
    """
    for index, participant in enumerate(participants):
        if isinstance(participant, Team):
            raise InvalidArgumentTypeError(
                f"{team} participants must be agents; `{participant.name}` is a team. Wrap "
                "it in a SocietyOfMindAgent, or use RoundRobinGroupChat or GraphFlow to nest "
                "teams.",
                argument=f"participants[{index}]",
            )


_Named = TypeVar("_Named", bound=ChatAgent | Team | Router)


def by_unique_name(participants: Sequence[_Named]) -> dict[str, _Named]:
    """The participants by name.

    Raises:
        DuplicateNodeError: Two have one name (the message names it).
    """
    found: dict[str, _Named] = {}
    for participant in participants:
        if participant.name in found:
            raise DuplicateNodeError(
                f"Two participants are named `{participant.name}`; participant names must "
                "be unique within a team. Rename one of them.",
                nodes=[participant.name],
            )
        found[participant.name] = participant
    return found


def check_router_name(
    participants: Sequence[ChatAgent | Team], router: str, *, role: str, fix: str
) -> None:
    """Refuse two participants with one name, and a participant named like the team's
    router node (its ``role``: selector, orchestrator).

    Raises:
        DuplicateNodeError: Names collide; the message says which and ``fix``.
    """
    if router in by_unique_name(participants):
        raise DuplicateNodeError(
            f"A participant is named `{router}`, the name of the team's {role} node; {fix}",
            nodes=[router],
        )
