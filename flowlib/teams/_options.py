"""The keyword options every team takes, passed through a team's constructor as one
``**options`` (a team of your own forwards them to
[`BaseGroupChat`][flowlib.teams.BaseGroupChat] unchanged)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from ..base import TerminationCondition
from ..checkpoint import CheckpointStore
from ..graph.internal import Durability
from ..messages import BaseAgentEvent, BaseChatMessage

__all__ = ["TeamOptions"]


class TeamOptions(TypedDict, total=False):
    """The options every team accepts (all keyword-only, all optional).

    Write a team's constructor as ``def __init__(self, participants, *, my_option=...,
    **options: Unpack[TeamOptions])`` and pass ``**options`` on to
    ``BaseGroupChat.__init__``; type checkers then check each option's name and type.

    Attributes:
        name: The team's name (default: the class's ``DEFAULT_NAME``, else its name).
        description: What the team does (default: the class's ``DEFAULT_DESCRIPTION``).
        termination_condition: Checked after every turn; stops the run when it fires.
        max_turns: At most this many turns per run (router turns do not count).
        runtime: Only ``None``: accepted for AutoGen compatibility (flowlib has no
            separate runtime).
        custom_message_types: Message classes (beyond the built-ins) the participants
            produce, so saved states load back.
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each speaker's turn.
        checkpoint_store: Where runs are checkpointed (docs/state.md); None: in memory.
        durability: ``"sync"`` (a checkpoint after every turn) or ``"exit"`` (at stops).
        turn_timeout: Seconds each turn may take; past it the turn is cancelled and the
            run fails resumably. A node's own ``timeout`` wins.
    """

    name: str | None
    description: str | None
    termination_condition: TerminationCondition | None
    max_turns: int | None
    runtime: Any
    custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None
    emit_team_events: bool
    checkpoint_store: CheckpointStore | None
    durability: Durability
    turn_timeout: float | None
