"""Magentic-One's team policy: every new task goes to the orchestrator, which plans it."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InvalidValueError
from ...messages import BaseChatMessage
from .._policy import TaskContext, TeamPolicy
from ._orchestrator import ORCHESTRATOR_NAME, MagenticOneOrchestrator

__all__ = ["MagenticOnePolicy"]


class MagenticOnePolicy(TeamPolicy):
    """Magentic-One's policy: a new task goes to the orchestrator, which plans it from
    scratch; a run needs a task given or under way."""

    def __init__(self, orchestrator: MagenticOneOrchestrator) -> None:
        self._orchestrator = orchestrator

    def check_task(self, task: Sequence[BaseChatMessage], context: TaskContext) -> None:
        """Refuse to run with no task when none is under way.

        Raises:
            InvalidValueError: If there is no task and none is under way.
        """
        if not task and not self._orchestrator.has_task and not context.running:
            raise InvalidValueError(
                "MagenticOneGroupChat has no task under way (the last one was answered, or "
                "none was given); run it with a task, e.g. `team.run(task=...)`."
            )

    def route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """The orchestrator (routing changes nothing: `start_task` gives it the task)."""
        return [ORCHESTRATOR_NAME]

    def start_task(self, task: Sequence[BaseChatMessage]) -> None:
        """The orchestrator's next turn builds a new task ledger for ``task``."""
        self._orchestrator.start_task(task)
