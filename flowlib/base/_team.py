"""The team interface."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, ClassVar

from .._cancellation import CancellationToken
from ..messages import BaseAgentEvent, BaseChatMessage
from ._task import Member, TaskResult

__all__ = ["Team"]


class Team(Member):
    """A group of participants that runs tasks together and keeps state between runs.

    Teams are task runners ([`TaskRunner`][flowlib.base.TaskRunner]).
    """

    component_type: ClassVar[str] = "team"

    @abstractmethod
    async def run(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        run_id: str | None = None,
        fork_from: tuple[str, str | int] | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run the team on ``task`` and return the result.

        ``run_id`` names the run (generated when not given; with a checkpoint store, an
        existing run is continued) and ``fork_from=(run_id, checkpoint_id)`` starts a new
        run from a stored checkpoint; see docs/state.md.
        """

    @abstractmethod
    def run_stream(
        self,
        *,
        task: str | BaseChatMessage | Sequence[BaseChatMessage] | None = None,
        cancellation_token: CancellationToken | None = None,
        run_id: str | None = None,
        fork_from: tuple[str, str | int] | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Run the team, yielding messages and events, then the TaskResult."""

    @abstractmethod
    async def reset(self) -> None:
        """Clear the team and every participant back to their initial state."""

    @abstractmethod
    async def pause(self) -> None:
        """Call ``on_pause`` on the participants."""

    @abstractmethod
    async def resume(self) -> None:
        """Call ``on_resume`` on the participants."""

    @abstractmethod
    async def save_state(self) -> Mapping[str, Any]:
        """Return the team's and its participants' state as JSON-serialisable data."""

    @abstractmethod
    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore state returned by [`save_state`][flowlib.base.Team.save_state]."""
