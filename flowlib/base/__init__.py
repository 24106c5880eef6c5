"""Base types: agents, teams, task results, termination, handoffs and cancellation."""

from .._cancellation import CancellationToken
from ._chat_agent import ChatAgent, Response
from ._handoff import Handoff
from ._task import TaskResult, TaskRunner
from ._team import Team
from ._termination import (
    AndTerminationCondition,
    OrTerminationCondition,
    TerminatedException,
    TerminationCondition,
    saves_state,
)

__all__ = [
    "AndTerminationCondition",
    "CancellationToken",
    "ChatAgent",
    "Handoff",
    "OrTerminationCondition",
    "Response",
    "TaskResult",
    "TaskRunner",
    "Team",
    "TerminatedException",
    "TerminationCondition",
    "saves_state",
]
