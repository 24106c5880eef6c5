"""MagenticOneGroupChat: participants directed by a Magentic-One orchestrator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import Unpack

from ...base import ChatAgent
from ...component import ComponentModel, dump_field
from ...errors import InvalidValueError
from ...graph import GraphPattern
from ...graph.internal import hub_graph
from ...models import ChatCompletionClient
from .._arguments import check_team_arguments
from .._config import AUTOGEN_TEAMS, GroupChatConfig
from .._group_chat import BaseGroupChat
from .._options import TeamOptions
from .._setup import check_agents_only, check_router_name
from ._orchestrator import ORCHESTRATOR_NAME, MagenticOneOrchestrator
from ._policy import MagenticOnePolicy
from ._prompts import ORCHESTRATOR_FINAL_ANSWER_PROMPT

__all__ = ["MAGENTIC_ONE", "MagenticOneGroupChat", "MagenticOneGroupChatConfig"]


class MagenticOneGroupChatConfig(GroupChatConfig):
    """The config of [`MagenticOneGroupChat`][flowlib.teams.MagenticOneGroupChat]; the final
    answer prompt's default is the team's."""

    model_client: ComponentModel
    max_stalls: int = 3
    final_answer_prompt: str | None = None


MAGENTIC_ONE = GraphPattern(
    "magentic_one",
    title="Magentic-One orchestrator",
    note="the orchestrator plans, tracks progress and picks each next speaker",
)
"""The Magentic-One pattern: an orchestrator hub with its ledgers."""


class MagenticOneGroupChat(
    BaseGroupChat,
    pattern=MAGENTIC_ONE,
    provider="flowlib.teams.MagenticOneGroupChat",
    aliases=(AUTOGEN_TEAMS + "MagenticOneGroupChat", "MagenticOneGroupChat"),
):
    """A team directed by a Magentic-One orchestrator that plans, tracks progress with a
    ledger and re-plans when the work stalls.

    It compiles to a hub graph (``pattern="magentic_one"``): the orchestrator router
    ``MagenticOneOrchestrator`` is the entry, with a ``Selected`` edge to each participant
    and an edge back. Each run with a task starts that task afresh: the orchestrator builds
    a task ledger (facts, then a plan), resets the participants and publishes the ledger;
    then, after each participant's turn, it judges progress and either gives the next
    instruction to the participant it selects, re-plans after ``max_stalls`` stalls, or
    writes the final answer and ends the run with its reason. ``run()`` with no task
    resumes a task that a termination condition or ``max_turns`` interrupted.

    Args:
        participants: The agents (not teams), at least one, with unique names.
        model_client: The orchestrator's model (participants bring their own).
        max_stalls: Stalled or looping steps tolerated before re-planning (at least 1).
        final_answer_prompt: The prompt that turns the transcript into the final answer;
            ``{task}`` in it is replaced by the task text.
        **options: The [`TeamOptions`][flowlib.teams.TeamOptions]; ``max_turns`` (participant
            turns; orchestrator turns do not count) defaults to 20, ``name`` to
            ``"MagenticOneGroupChat"``, ``description`` to ``"A team of agents."``.

    Raises:
        ValueError: No participants, a nested team, duplicate names, a participant named
            ``MagenticOneOrchestrator``, ``max_stalls`` below 1, a ``runtime``, or neither
            a termination condition nor ``max_turns``. At run time (as
            ``OrchestratorError``, also a ``ValueError``): the progress ledger lacks
            keys or names an invalid next speaker after the retries, or ``run()`` was
            called with no task and none is under way.

    Examples:
        >>> import asyncio, json
        >>> from flowlib.models import ReplayChatCompletionClient
        >>> from flowlib.testing import ScriptedAgent
        >>> def ledger(done, speaker="writer", say="Write it."):
        ...     entry = lambda answer: {"reason": "because", "answer": answer}
        ...     return json.dumps({
        ...         "is_request_satisfied": entry(done), "is_in_loop": entry(False),
        ...         "is_progress_being_made": entry(True), "next_speaker": entry(speaker),
        ...         "instruction_or_question": entry(say)})
        >>> model = ReplayChatCompletionClient(
        ...     ["Facts: none.", "Plan: writer writes.", ledger(False), ledger(True), "A haiku."]
        ... )
        >>> team = MagenticOneGroupChat([ScriptedAgent("writer", ["draft"])], model)
        >>> result = asyncio.run(team.run(task="Write a haiku."))
        >>> [m.source for m in result.messages][2:]  # after the task and the ledger
        ['MagenticOneOrchestrator', 'writer', 'MagenticOneOrchestrator']
        >>> result.messages[-1].to_text(), result.stop_reason
        ('A haiku.', 'because')
    """

    DEFAULT_NAME = "MagenticOneGroupChat"
    component_config_schema = MagenticOneGroupChatConfig

    def __init__(
        self,
        participants: Sequence[ChatAgent],
        model_client: ChatCompletionClient,
        *,
        max_stalls: int = 3,
        final_answer_prompt: str = ORCHESTRATOR_FINAL_ANSWER_PROMPT,
        **options: Unpack[TeamOptions],
    ) -> None:
        check_team_arguments("MagenticOneGroupChat", participants, model_client=model_client)
        check_agents_only("MagenticOneGroupChat", participants)
        check_router_name(
            participants, ORCHESTRATOR_NAME, role="orchestrator", fix="rename the participant."
        )
        if isinstance(max_stalls, bool) or not isinstance(max_stalls, int) or max_stalls < 1:
            raise InvalidValueError(f"max_stalls must be a positive integer, not {max_stalls!r}.")
        if not isinstance(final_answer_prompt, str) or not final_answer_prompt.strip():
            raise InvalidValueError("final_answer_prompt must be a non-empty string.")
        options.setdefault("max_turns", 20)
        self._orchestrator = MagenticOneOrchestrator(
            ORCHESTRATOR_NAME,
            participants=participants,
            model_client=model_client,
            max_stalls=max_stalls,
            final_answer_prompt=final_answer_prompt,
        )
        super().__init__(
            participants,
            hub_graph(ORCHESTRATOR_NAME, participants, pattern=MAGENTIC_ONE.name),
            routers=[self._orchestrator],
            policy=MagenticOnePolicy(self._orchestrator),
            **options,
        )
        # Saved transcripts may hold the participants' custom message types.
        self._orchestrator.message_factory = self._message_factory
        self._model_client = model_client
        self._max_stalls = max_stalls
        self._final_answer_prompt = final_answer_prompt

    def config_fields(self) -> dict[str, Any]:
        """The orchestrator's model, stall limit and final answer prompt."""
        return {
            "model_client": dump_field(self._model_client, "model_client"),
            "max_stalls": self._max_stalls,
            "final_answer_prompt": self._final_answer_prompt,
        }

    @property
    def orchestrator(self) -> MagenticOneOrchestrator:
        """The orchestrator router: its task, facts, plan and stall count."""
        return self._orchestrator

    @property
    def max_stalls(self) -> int:
        """Stalls tolerated before re-planning."""
        return self._max_stalls

    @property
    def final_answer_prompt(self) -> str:
        """The prompt of the final answer."""
        return self._final_answer_prompt
