"""The Magentic-One orchestrator: the router that plans the task, judges progress with
its ledgers, picks each next speaker and writes the final answer."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..._english import clause
from ...base import CancellationToken, ChatAgent
from ...base.internal import parsed_state
from ...errors import NodeExecutionError, StateError
from ...graph import Router, Routing
from ...messages import BaseChatMessage, MessageFactory, TextMessage
from ...models import (
    AssistantMessage,
    ChatCompletionClient,
    LLMMessage,
    RequestUsage,
    UserMessage,
)
from ._ledger import LedgerProblem, ProgressLedger, parse_progress_ledger
from ._prompts import (
    ORCHESTRATOR_FINAL_ANSWER_PROMPT,
    ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT,
    ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT,
    fill,
)

__all__ = [
    "LEDGER_ATTEMPTS",
    "ORCHESTRATOR_NAME",
    "MagenticOneOrchestrator",
    "MagenticOneOrchestratorState",
    "OrchestratorError",
]

ORCHESTRATOR_NAME = "MagenticOneOrchestrator"
"""The orchestrator's node name (and the ``source`` of its messages)."""

LEDGER_ATTEMPTS = 3
"""How many times the orchestrator asks for a usable progress ledger before failing."""


class OrchestratorError(NodeExecutionError, ValueError):
    """The orchestrator could not go on: an unusable progress ledger, or no task.

    It is both a [`NodeExecutionError`][flowlib.errors.NodeExecutionError] (``node`` is the
    orchestrator; the team keeps its state and ``run()`` with no task retries the turn)
    and a ``ValueError``, as documented for ``MagenticOneGroupChat``.
    """

    def __init__(self, node: str, message: str) -> None:
        super().__init__(node, ValueError(message))
        self.detail = message


class MagenticOneOrchestratorState(BaseModel):
    """The orchestrator's saved state: the task ledger, stall count and its transcript."""

    type: Literal["MagenticOneOrchestratorState"] = "MagenticOneOrchestratorState"
    version: int = 1
    task: str = ""
    facts: str = ""
    plan: str = ""
    n_stalls: int = 0
    active: bool = False
    """Whether a task is under way (planned and not yet answered)."""
    pending_task: str | None = None
    """A task given to a run whose planning turn has not completed yet."""
    message_thread: list[dict[str, Any]] = Field(default_factory=list)


@dataclass
class _Ledger:
    """What the orchestrator keeps between turns, and saves: the task ledger (task, facts,
    plan), the stall count, the transcript since the ledger was made, whether a task is
    under way, and a task given whose planning turn has not completed yet."""

    task: str = ""
    facts: str = ""
    plan: str = ""
    n_stalls: int = 0
    thread: list[BaseChatMessage] = field(default_factory=list)
    active: bool = False
    pending_task: str | None = None


_LEDGER_FIELDS = tuple(kept.name for kept in fields(_Ledger))


@dataclass
class _Turn(_Ledger):
    """The working copy of one orchestrator turn, committed only if every call succeeds."""

    published: list[BaseChatMessage] = field(default_factory=list)
    reset_participants: bool = False


def _add(total: RequestUsage | None, usage: RequestUsage) -> RequestUsage:
    if total is None:
        return usage
    return RequestUsage(
        prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
        completion_tokens=total.completion_tokens + usage.completion_tokens,
    )


class MagenticOneOrchestrator(Router):
    """The router at the hub of a [`MagenticOneGroupChat`][flowlib.teams.MagenticOneGroupChat]:
    plans, tracks progress, chooses the next speaker and writes the final answer.

    Args:
        name: The node name (and the ``source`` of its messages).
        participants: The agents it directs.
        model_client: The model it plans and judges progress with.
        max_stalls: Stalls tolerated before re-planning (at least 1).
        final_answer_prompt: The prompt that turns the transcript into the final answer;
            ``{task}`` in it is replaced by the task.
        message_factory: Rebuilds saved messages on [`load_state`][flowlib.graph.Router.load_state].
        max_attempts: Requests per progress ledger before failing.
    """

    def __init__(
        self,
        name: str,
        *,
        participants: Sequence[ChatAgent],
        model_client: ChatCompletionClient,
        max_stalls: int = 3,
        final_answer_prompt: str = ORCHESTRATOR_FINAL_ANSWER_PROMPT,
        message_factory: MessageFactory | None = None,
        max_attempts: int = LEDGER_ATTEMPTS,
    ) -> None:
        super().__init__(name, "Plans the task and directs the team with its ledgers.")
        self._participants = list(participants)
        self._speakers = [p.name for p in participants]
        self._model_client = model_client
        self._max_stalls = max_stalls
        self._final_answer_prompt = final_answer_prompt
        self.message_factory = message_factory or MessageFactory()
        self._max_attempts = max_attempts
        self._team = "\n".join(
            re.sub(r"\s+", " ", f"{p.name}: {p.description}").strip() for p in participants
        )
        self._ledger = _Ledger()

    # --- public view ------------------------------------------------------------------

    @property
    def task(self) -> str:
        """The current task's text ("" before the first task)."""
        return self._ledger.task

    @property
    def facts(self) -> str:
        """The current fact sheet of the task ledger."""
        return self._ledger.facts

    @property
    def plan(self) -> str:
        """The current plan of the task ledger."""
        return self._ledger.plan

    @property
    def n_stalls(self) -> int:
        """The current stall count."""
        return self._ledger.n_stalls

    @property
    def has_task(self) -> bool:
        """Whether there is a task to work on (given, or under way and unanswered)."""
        return self._ledger.active or self._ledger.pending_task is not None

    def start_task(self, messages: Sequence[BaseChatMessage]) -> None:
        """Make ``messages`` the task: the next turn builds a new task ledger for it."""
        self._ledger.pending_task = "\n".join(message.to_model_text() for message in messages)

    # --- a turn -----------------------------------------------------------------------

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Plan (first turn of a task), then judge progress and pick the next speaker."""
        replanned = False
        kept = self._ledger
        if kept.pending_task is not None:
            # The new messages (the task and whatever preceded it) are replaced by the
            # ledger, which restates the task.
            turn = _Turn(task=kept.pending_task)
            usage = await self._make_plan(turn, cancellation_token)
            self._open_ledger(turn, usage)
            replanned = True
        elif kept.active:
            turn = _Turn(**vars(kept))
            turn.thread = [*kept.thread, *messages]
        else:
            raise OrchestratorError(
                self.name,
                "There is no task to work on (the last one was answered, or none was given); "
                "run the team with a task, e.g. `team.run(task=...)`.",
            )
        while True:
            ledger, usage = await self._progress_ledger(turn, cancellation_token)
            if ledger.is_request_satisfied:
                answer, answer_usage = await self._final_answer(turn, cancellation_token)
                final = TextMessage(content=answer, source=self.name, models_usage=answer_usage)
                turn.thread.append(final)
                turn.published.append(final)
                await self._commit(turn, active=False)
                reason = ledger.reasons.get("is_request_satisfied", "").strip()
                return Routing(
                    messages=turn.published,
                    stop_reason=reason or "The orchestrator judged the request satisfied.",
                )
            if ledger.is_stalled:
                turn.n_stalls += 1
            else:
                turn.n_stalls = max(0, turn.n_stalls - 1)
            # One re-plan per turn: a fresh ledger that still looks stalled counts, but
            # does not re-plan again before anyone has acted on it.
            if turn.n_stalls >= self._max_stalls and not replanned:
                usage = await self._update_plan(turn, cancellation_token)
                self._open_ledger(turn, usage)
                replanned = True
                continue
            instruction = TextMessage(
                content=ledger.instruction_or_question,
                source=self.name,
                models_usage=usage,
                metadata={"next_speaker": ledger.next_speaker},
            )
            turn.thread.append(instruction)
            turn.published.append(instruction)
            await self._commit(turn, active=True)
            return Routing(targets=[ledger.next_speaker], messages=turn.published)

    async def _ask(
        self,
        messages: Sequence[LLMMessage],
        token: CancellationToken,
        *,
        json_mode: bool = False,
    ) -> tuple[str, RequestUsage]:
        json_output = True if json_mode and self._model_client.model_info["json_output"] else None
        result = await self._model_client.create(
            list(messages), json_output=json_output, cancellation_token=token
        )
        if not isinstance(result.content, str):
            raise OrchestratorError(
                self.name,
                "The orchestrator's model answered with tool calls instead of text; give "
                "MagenticOneGroupChat a model client without tools.",
            )
        return result.content, result.usage

    def _context(self, thread: Sequence[BaseChatMessage]) -> list[LLMMessage]:
        """The transcript as model messages: its own as the assistant's, others' as users'."""
        vision = self._model_client.model_info["vision"]
        context: list[LLMMessage] = []
        for message in thread:
            if message.source == self.name:
                context.append(AssistantMessage(content=message.to_model_text(), source=self.name))
            elif vision:
                context.append(message.to_model_message())
            else:
                context.append(UserMessage(content=message.to_model_text(), source=message.source))
        return context

    async def _make_plan(self, turn: _Turn, token: CancellationToken) -> RequestUsage:
        facts_prompt = fill(ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT, task=turn.task)
        plan_prompt = fill(ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT, team=self._team)
        return await self._facts_then_plan(turn, [], facts_prompt, plan_prompt, token)

    async def _update_plan(self, turn: _Turn, token: CancellationToken) -> RequestUsage:
        facts_prompt = fill(
            ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT, task=turn.task, facts=turn.facts
        )
        plan_prompt = fill(ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT, team=self._team)
        context = self._context(turn.thread)
        return await self._facts_then_plan(turn, context, facts_prompt, plan_prompt, token)

    async def _facts_then_plan(
        self,
        turn: _Turn,
        conversation: list[LLMMessage],
        facts_prompt: str,
        plan_prompt: str,
        token: CancellationToken,
    ) -> RequestUsage:
        """Ask for the facts, then (with the facts answer in the conversation) the plan;
        both go into ``turn``. The usage is both calls'."""
        conversation.append(UserMessage(content=facts_prompt, source=self.name))
        turn.facts, facts_usage = await self._ask(conversation, token)
        conversation.append(AssistantMessage(content=turn.facts, source=self.name))
        conversation.append(UserMessage(content=plan_prompt, source=self.name))
        turn.plan, plan_usage = await self._ask(conversation, token)
        return _add(facts_usage, plan_usage)

    def _open_ledger(self, turn: _Turn, usage: RequestUsage) -> None:
        """Start the inner loop afresh: the ledger becomes the whole transcript."""
        ledger = TextMessage(
            content=fill(
                ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT,
                task=turn.task,
                team=self._team,
                facts=turn.facts,
                plan=turn.plan,
            ),
            source=self.name,
            models_usage=usage,
        )
        turn.thread = [ledger]
        turn.published.append(ledger)
        turn.n_stalls = 0
        turn.reset_participants = True

    async def _progress_ledger(
        self, turn: _Turn, token: CancellationToken
    ) -> tuple[ProgressLedger, RequestUsage]:
        context = self._context(turn.thread)
        context.append(
            UserMessage(
                content=fill(
                    ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
                    task=turn.task,
                    team=self._team,
                    names=", ".join(self._speakers),
                ),
                source=self.name,
            )
        )
        usage: RequestUsage | None = None
        problem: LedgerProblem | None = None
        for _ in range(self._max_attempts):
            text, call_usage = await self._ask(context, token, json_mode=True)
            usage = _add(usage, call_usage)
            try:
                return parse_progress_ledger(text, self._speakers), usage
            except LedgerProblem as exc:
                problem = exc
            # Show the model its answer and what was wrong, rather than asking blind.
            context.append(AssistantMessage(content=text, source=self.name))
            context.append(
                UserMessage(
                    content=f"That answer cannot be used: {problem}. Reply again with only "
                    "the JSON object described above.",
                    source=self.name,
                )
            )
        assert problem is not None
        raise OrchestratorError(
            self.name,
            f"The progress ledger was unusable after {self._max_attempts} attempts: the "
            f"last one failed because {problem}. Use a model that follows JSON "
            "instructions (JSON mode helps), or check the participants' names.",
        )

    async def _final_answer(
        self, turn: _Turn, token: CancellationToken
    ) -> tuple[str, RequestUsage]:
        context = self._context(turn.thread)
        context.append(
            UserMessage(content=fill(self._final_answer_prompt, task=turn.task), source=self.name)
        )
        return await self._ask(context, token)

    async def _commit(self, turn: _Turn, *, active: bool) -> None:
        if turn.reset_participants:
            # As in Magentic-One, a new or revised task ledger starts the work afresh:
            # the participants forget their previous attempt.
            token = CancellationToken()
            for participant in self._participants:
                await participant.on_reset(token)
        ledger = _Ledger(**{name: getattr(turn, name) for name in _LEDGER_FIELDS})
        ledger.active = active
        ledger.pending_task = None
        self._ledger = ledger

    # --- lifecycle --------------------------------------------------------------------

    async def reset(self) -> None:
        """Forget the task, ledgers, stall count and transcript."""
        self._ledger = _Ledger()

    async def save_state(self) -> Mapping[str, Any]:
        """The task ledger, stall count, pending task and transcript (JSON-serialisable)."""
        kept = dict(vars(self._ledger))  # the state's fields, under the same names
        thread: list[BaseChatMessage] = kept.pop("thread")
        return MagenticOneOrchestratorState(
            **kept, message_thread=[dict(message.dump()) for message in thread]
        ).model_dump(mode="json")

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore [`save_state`][flowlib.graph.Router.save_state] output.

        Raises:
            StateError: If ``state`` is not an orchestrator state of this version.
        """
        loaded = parsed_state(MagenticOneOrchestratorState, state, f"`{self.name}`", version=1)
        thread: list[BaseChatMessage] = []
        for data in loaded.message_thread:
            try:
                message = self.message_factory.create(data)
            except ValueError as exc:
                raise StateError(
                    f"`{self.name}` cannot rebuild its transcript: {clause(exc)}. Pass the message "
                    "classes the participants produce as `custom_message_types`."
                ) from exc
            if not isinstance(message, BaseChatMessage):
                raise StateError(
                    f"`{self.name}` state holds an event in its transcript; pass the dict its "
                    "save_state() returned."
                )
            thread.append(message)
        kept = loaded.model_dump(exclude={"type", "version", "message_thread"})
        self._ledger = _Ledger(**kept, thread=thread)
