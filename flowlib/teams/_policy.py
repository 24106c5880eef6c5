"""A team's policy: how it checks a task, routes it, and explains a dead end.

Every [`BaseGroupChat`][flowlib.teams.BaseGroupChat] has one
([`team.policy`][flowlib.teams.BaseGroupChat.policy]). The team asks it before a run
starts ([`check_task`][flowlib.teams.TeamPolicy.check_task], then
[`start_task`][flowlib.teams.TeamPolicy.start_task] for a new task), the executor asks it
which nodes take a new task ([`route_task`][flowlib.teams.TeamPolicy.route_task], with no
side effects, so tools such as `flowlib.testing.explore` can ask it too) and why a node
that matched none of its edges ended the run
([`describe_dead_end`][flowlib.teams.TeamPolicy.describe_dead_end]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import BaseChatMessage

__all__ = ["TaskContext", "TeamPolicy"]


@dataclass(frozen=True)
class TaskContext:
    """What a policy may read of its team when it checks a task.

    Attributes:
        participants: The participants' names, in plan order.
        thread: The team's messages so far (read-only; the team's own list).
        running: Whether a run of the team is in progress.
    """

    participants: Sequence[str]
    thread: Sequence[BaseChatMessage]
    running: bool


class TeamPolicy:
    """The default policy: any task is accepted and continues where the team stopped
    (or starts at the entry nodes), and dead ends get the generic explanation.

    Subclass it for a team of your own and pass it as ``policy=`` to
    [`BaseGroupChat`][flowlib.teams.BaseGroupChat].

    Examples:
        ```python
        from flowlib.teams import TeamPolicy

        class FirstAlways(TeamPolicy):
            def route_task(self, task):
                return ["first"]  # every new task goes to `first`
        ```
    """

    def check_task(self, task: Sequence[BaseChatMessage], context: TaskContext) -> None:
        """Refuse a ``task`` the team cannot run from its current state, with a named
        [`FlowlibError`][flowlib.errors.FlowlibError]; must change nothing.

        Called before the run starts (after a stored run was loaded); ``task`` may be
        empty (resume).
        """

    def route_task(self, task: Sequence[BaseChatMessage]) -> Sequence[str] | None:
        """The nodes that take the non-empty ``task`` next, or None to keep the ready set
        (the entry nodes for a fresh team). Must have no side effects."""
        return None

    def start_task(self, task: Sequence[BaseChatMessage]) -> None:
        """The run starts with the non-empty ``task`` (it passed `check_task`): the one
        step that may prepare state for it (e.g. Magentic-One's orchestrator plans it)."""

    def describe_dead_end(self, node: str, final: BaseChatMessage | None) -> str | None:
        """Why ``node`` matched none of its edges (its final message is ``final``), or
        None for the generic explanation."""
        return None
