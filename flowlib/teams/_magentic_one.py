"""MagenticOneGroupChat: an orchestrator with a task ledger and a progress ledger.

The team compiles to a hub graph: an orchestrator router (node kind ``router``) with a
``Selected`` edge to every participant and an edge back from each of them. The
orchestrator works in two loops, as in the Magentic-One paper:

- **Outer loop (task ledger).** On the first turn of a task it asks its model for a fact
  sheet (given facts, facts to look up, facts to derive, educated guesses) and then for a
  plan, and publishes both, with the task and the team, as one chat message. It resets
  the participants and forgets its own transcript, so the ledger starts the work afresh.
- **Inner loop (progress ledger).** After every participant turn it asks its model for a
  JSON progress ledger: is the request satisfied, are we looping, are we making progress,
  who speaks next and what they should do. A satisfied request gets a final answer
  (``final_answer_prompt``) and ends the run with the ledger's reason. Otherwise the
  instruction is published, addressed to the next speaker, and that participant is
  selected. Turns judged stalled or looping count as stalls (others take one off the
  count); at ``max_stalls`` the orchestrator updates its facts and plan, publishes the new
  task ledger and starts the inner loop again with the count at zero.

A ledger that is not a JSON object, lacks keys or names an unknown speaker is asked for
again (the model is told what was wrong); after ``LEDGER_ATTEMPTS`` attempts the run
fails with a ``ValueError`` that says why. A turn commits nothing until all of its model
calls succeed, so ``run()`` with no task retries a failed turn cleanly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError
from typing_extensions import Self

from .._english import clause
from ..base import CancellationToken, ChatAgent, TerminationCondition
from ..checkpoint import CheckpointStore
from ..component import dump_field, load_field
from ..component._registry import register_builtin
from ..errors import (
    FlowlibError,
    InvalidValueError,
    NodeExecutionError,
    StateError,
)
from ..graph import Router, Routing
from ..graph._shapes import hub_graph
from ..messages import BaseAgentEvent, BaseChatMessage, MessageFactory, TextMessage
from ..models import (
    AssistantMessage,
    ChatCompletionClient,
    LLMMessage,
    RequestUsage,
    UserMessage,
)
from ._arguments import check_team_arguments
from ._config import (
    AUTOGEN_TEAMS,
    MagenticOneGroupChatConfig,
    load_members,
    load_termination,
    team_fields,
)
from ._durable import Durability
from ._group_chat import BaseGroupChat, reject_runtime
from ._policy import TaskContext, TeamPolicy
from ._setup import check_agents_only, check_router_name

__all__ = [
    "LEDGER_ATTEMPTS",
    "ORCHESTRATOR_FINAL_ANSWER_PROMPT",
    "ORCHESTRATOR_NAME",
    "ORCHESTRATOR_PROGRESS_LEDGER_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT",
    "ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT",
    "PROGRESS_LEDGER_KEYS",
    "MagenticOneGroupChat",
    "MagenticOneOrchestrator",
    "MagenticOneOrchestratorState",
    "OrchestratorError",
    "ProgressLedger",
    "parse_progress_ledger",
]

ORCHESTRATOR_NAME = "MagenticOneOrchestrator"
"""The orchestrator's node name (and the ``source`` of its messages)."""

LEDGER_ATTEMPTS = 3
"""How many times the orchestrator asks for a usable progress ledger before failing."""

PROGRESS_LEDGER_KEYS = (
    "is_request_satisfied",
    "is_in_loop",
    "is_progress_being_made",
    "next_speaker",
    "instruction_or_question",
)
"""The keys of a progress ledger; each holds an object with a ``reason`` and an ``answer``."""

# --- prompts ----------------------------------------------------------------------------
# Placeholders in braces ({task}, {team}, {names}, {facts}, {plan}) are filled in one pass;
# any other brace (the JSON example below, a user's own prompt) is left as written.

ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT = """\
We have been handed the request below. Before any work starts, take stock of what we \
already know and what we still have to find out. Draw on everything you know: trivia, \
science, puzzles, common sense.

The request:

{task}

Answer under these four headings, each with a short bullet list (write "None" under a \
heading with nothing to list):

1. GIVEN FACTS: facts, figures and constraints stated in the request itself.
2. FACTS TO LOOK UP: information the request depends on that has to be found, and where \
it could be found (a website, a file, a database, ...).
3. FACTS TO DERIVE: what has to be worked out by reasoning, calculation or simulation.
4. EDUCATED GUESSES: what you recall from memory, hunches and well-founded guesses.

Write only the four headings and their bullets."""

ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT = """\
These are the members of the team that will work on the request:

{team}

Using the facts above, write a short plan as a bullet list. For each step say which team \
member should carry it out. Not every member has to take part: leave out the ones the \
request does not need."""

ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT = """\
We are working on this request:

{task}

The team working on it:

{team}

What we know so far:

{facts}

The plan we will follow:

{plan}"""

ORCHESTRATOR_PROGRESS_LEDGER_PROMPT = """\
As a reminder, the request we are working on is:

{task}

and the team is:

{team}

Review the conversation so far and decide the next step by answering these questions, \
each with a short reason:

- is_request_satisfied: has the request been addressed completely and successfully? \
(false while anything it asks for is still missing)
- is_in_loop: are we going round in circles, repeating the same requests or getting the \
same answers as before?
- is_progress_being_made: are the recent messages moving us forward? (true when we are \
just starting; false when we are stuck or blocked, e.g. a needed file cannot be read)
- next_speaker: which team member should act next? One of: {names}
- instruction_or_question: what should that member do? Address them directly and give \
them everything they need to do it.

Reply with one JSON object and nothing else (no prose, no code fences), in exactly this \
shape:

{
  "is_request_satisfied": {"reason": "...", "answer": true or false},
  "is_in_loop": {"reason": "...", "answer": true or false},
  "is_progress_being_made": {"reason": "...", "answer": true or false},
  "next_speaker": {"reason": "...", "answer": "one of the names above"},
  "instruction_or_question": {"reason": "...", "answer": "what they should do"}
}"""

ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT = """\
We have not been making enough progress on this request:

{task}

This is the fact sheet we started from:

{facts}

Rewrite it with what the conversation has taught us: add new facts, correct wrong ones, \
and confirm, replace or drop educated guesses as the evidence suggests. Add at least one \
new educated guess about why we got stuck. Keep the four headings (GIVEN FACTS, FACTS TO \
LOOK UP, FACTS TO DERIVE, EDUCATED GUESSES) and write only the updated fact sheet."""

ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT = """\
Now write a new plan for the same team:

{team}

First say in one or two sentences what went wrong in the attempt so far and why. Then \
give the new plan as a short bullet list, naming for each step the team member who \
should carry it out, with hints that keep us from repeating the same mistakes."""

ORCHESTRATOR_FINAL_ANSWER_PROMPT = """\
The work on this request is over:

{task}

Using the whole conversation above, write the final answer for the person who made the \
request. Give the answer itself and the facts or results it rests on, as briefly as the \
request allows, without describing how the team worked. If the request could not be \
fully met, say so and give the best answer the conversation supports."""

_PLACEHOLDER = re.compile(r"\{(task|team|names|facts|plan)\}")
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRUE = {"true", "yes", "y", "1"}
_FALSE = {"false", "no", "n", "0"}


def _fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders in one pass (inserted text is never re-scanned)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


# --- errors -----------------------------------------------------------------------------


class OrchestratorError(NodeExecutionError, ValueError):
    """The orchestrator could not go on: an unusable progress ledger, or no task.

    It is both a [`NodeExecutionError`][flowlib.errors.NodeExecutionError] (``node`` is the
    orchestrator; the team keeps its state and ``run()`` with no task retries the turn)
    and a ``ValueError``, as documented for ``MagenticOneGroupChat``.
    """

    def __init__(self, node: str, message: str) -> None:
        super().__init__(node, ValueError(message))
        self.detail = message


class _LedgerProblem(FlowlibError, ValueError):
    """One unusable progress ledger; ``missing`` lists absent keys."""

    def __init__(self, message: str, *, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)


# --- the progress ledger ----------------------------------------------------------------


@dataclass(frozen=True)
class ProgressLedger:
    """A parsed progress ledger: the orchestrator's answers for one inner-loop step.

    Attributes:
        is_request_satisfied: Whether the request is done.
        is_in_loop: Whether the team repeats itself.
        is_progress_being_made: Whether recent turns moved the work forward.
        next_speaker: The participant to act next ("" when the request is satisfied).
        instruction_or_question: What the next speaker should do.
        reasons: The model's reason for each answer, by key.
    """

    is_request_satisfied: bool
    is_in_loop: bool
    is_progress_being_made: bool
    next_speaker: str
    instruction_or_question: str
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_stalled(self) -> bool:
        """Whether this step counts as a stall (looping or no progress)."""
        return self.is_in_loop or not self.is_progress_being_made


def _json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model answer: bare, in a code fence, or amid prose."""
    stripped = text.strip()
    candidates = [stripped]
    fenced = _FENCE.search(stripped)
    if fenced:
        candidates.append(fenced.group(1).strip())
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    start = stripped.find("{")
    while start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped, start)
        except ValueError:
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = stripped.find("{", start + 1)
    shown = stripped if len(stripped) <= 200 else stripped[:200] + "..."
    raise _LedgerProblem(f"the answer is not a JSON object: {shown!r}")


def _flag(key: str, answer: Any) -> bool:
    if isinstance(answer, bool):
        return answer
    if isinstance(answer, str):
        word = answer.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise _LedgerProblem(f"`{key}.answer` must be true or false, not {answer!r}")


def _speaker(answer: Any, names: Sequence[str]) -> str:
    if isinstance(answer, str):
        cleaned = answer.strip().strip("`'\"").strip()
        if cleaned in names:
            return cleaned
        folded = [name for name in names if name.casefold() == cleaned.casefold()]
        if len(folded) == 1:
            return folded[0]
    raise _LedgerProblem(
        f"the next speaker {answer!r} is not a participant; valid speakers are {_names(names)}"
    )


def parse_progress_ledger(text: str, names: Sequence[str]) -> ProgressLedger:
    """Parse and check a model's progress ledger answer.

    Accepts the JSON object bare, in a code fence or surrounded by prose; booleans may be
    JSON booleans or the strings ``"true"``/``"false"`` (``yes``/``no``); a missing
    ``reason`` counts as empty. With one participant, ``next_speaker`` may be missing.

    Args:
        text: The model's answer.
        names: The participants' names (valid next speakers).

    Returns:
        The parsed ledger.

    Raises:
        ValueError: If the answer holds no JSON object, lacks keys (the message names
            them), has a non-boolean flag, or names an unknown next speaker while the
            request is not satisfied.

    Examples:
        >>> ledger = parse_progress_ledger(
        ...     '{"is_request_satisfied": {"reason": "done", "answer": true}, '
        ...     '"is_in_loop": {"reason": "", "answer": false}, '
        ...     '"is_progress_being_made": {"reason": "", "answer": true}, '
        ...     '"next_speaker": {"reason": "", "answer": "writer"}, '
        ...     '"instruction_or_question": {"reason": "", "answer": "-"}}',
        ...     ["writer"],
        ... )
        >>> ledger.is_request_satisfied, ledger.reasons["is_request_satisfied"]
        (True, 'done')
    """
    data = _json_object(text)
    if len(names) == 1 and not isinstance(data.get("next_speaker"), Mapping):
        data["next_speaker"] = {"reason": "The team has one member.", "answer": names[0]}
    missing = [
        key
        for key in PROGRESS_LEDGER_KEYS
        if not isinstance(data.get(key), Mapping) or "answer" not in data[key]
    ]
    if missing:
        raise _LedgerProblem(
            f"it is missing the keys {_names(missing)} (each must be an object with a "
            '"reason" and an "answer")',
            missing=missing,
        )
    answers = {key: data[key]["answer"] for key in PROGRESS_LEDGER_KEYS}
    reasons = {key: str(data[key].get("reason", "") or "") for key in PROGRESS_LEDGER_KEYS}
    satisfied = _flag("is_request_satisfied", answers["is_request_satisfied"])
    in_loop = _flag("is_in_loop", answers["is_in_loop"])
    progress = _flag("is_progress_being_made", answers["is_progress_being_made"])
    instruction = answers["instruction_or_question"]
    if not isinstance(instruction, str):
        instruction = json.dumps(instruction)
    if satisfied:
        speaker = ""
    elif len(names) == 1:
        speaker = names[0]
    else:
        speaker = _speaker(answers["next_speaker"], names)
    return ProgressLedger(
        is_request_satisfied=satisfied,
        is_in_loop=in_loop,
        is_progress_being_made=progress,
        next_speaker=speaker,
        instruction_or_question=instruction,
        reasons=reasons,
    )


# --- the orchestrator -------------------------------------------------------------------


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
class _Turn:
    """The working copy of one orchestrator turn, committed only if every call succeeds."""

    task: str
    facts: str
    plan: str
    stalls: int
    thread: list[BaseChatMessage]
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
        self._task = ""
        self._facts = ""
        self._plan = ""
        self._stalls = 0
        self._thread: list[BaseChatMessage] = []
        self._active = False
        self._pending: str | None = None

    # --- public view ------------------------------------------------------------------

    @property
    def task(self) -> str:
        """The current task's text ("" before the first task)."""
        return self._task

    @property
    def facts(self) -> str:
        """The current fact sheet of the task ledger."""
        return self._facts

    @property
    def plan(self) -> str:
        """The current plan of the task ledger."""
        return self._plan

    @property
    def n_stalls(self) -> int:
        """The current stall count."""
        return self._stalls

    @property
    def has_task(self) -> bool:
        """Whether there is a task to work on (given, or under way and unanswered)."""
        return self._active or self._pending is not None

    def start_task(self, messages: Sequence[BaseChatMessage]) -> None:
        """Make ``messages`` the task: the next turn builds a new task ledger for it."""
        self._pending = "\n".join(message.to_model_text() for message in messages)

    # --- a turn -----------------------------------------------------------------------

    async def route(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Routing:
        """Plan (first turn of a task), then judge progress and pick the next speaker."""
        replanned = False
        if self._pending is not None:
            # The new messages (the task and whatever preceded it) are replaced by the
            # ledger, which restates the task.
            turn = _Turn(task=self._pending, facts="", plan="", stalls=0, thread=[])
            usage = await self._make_plan(turn, cancellation_token)
            self._open_ledger(turn, usage)
            replanned = True
        elif self._active:
            turn = _Turn(
                task=self._task,
                facts=self._facts,
                plan=self._plan,
                stalls=self._stalls,
                thread=[*self._thread, *messages],
            )
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
                turn.stalls += 1
            else:
                turn.stalls = max(0, turn.stalls - 1)
            # One re-plan per turn: a fresh ledger that still looks stalled counts, but
            # does not re-plan again before anyone has acted on it.
            if turn.stalls >= self._max_stalls and not replanned:
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
        conversation: list[LLMMessage] = [
            UserMessage(
                content=_fill(ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT, task=turn.task),
                source=self.name,
            )
        ]
        turn.facts, facts_usage = await self._ask(conversation, token)
        conversation.append(AssistantMessage(content=turn.facts, source=self.name))
        conversation.append(
            UserMessage(
                content=_fill(ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT, team=self._team),
                source=self.name,
            )
        )
        turn.plan, plan_usage = await self._ask(conversation, token)
        return _add(facts_usage, plan_usage)

    async def _update_plan(self, turn: _Turn, token: CancellationToken) -> RequestUsage:
        context = self._context(turn.thread)
        context.append(
            UserMessage(
                content=_fill(
                    ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT, task=turn.task, facts=turn.facts
                ),
                source=self.name,
            )
        )
        turn.facts, facts_usage = await self._ask(context, token)
        context.append(AssistantMessage(content=turn.facts, source=self.name))
        context.append(
            UserMessage(
                content=_fill(ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT, team=self._team),
                source=self.name,
            )
        )
        turn.plan, plan_usage = await self._ask(context, token)
        return _add(facts_usage, plan_usage)

    def _open_ledger(self, turn: _Turn, usage: RequestUsage) -> None:
        """Start the inner loop afresh: the ledger becomes the whole transcript."""
        ledger = TextMessage(
            content=_fill(
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
        turn.stalls = 0
        turn.reset_participants = True

    async def _progress_ledger(
        self, turn: _Turn, token: CancellationToken
    ) -> tuple[ProgressLedger, RequestUsage]:
        context = self._context(turn.thread)
        context.append(
            UserMessage(
                content=_fill(
                    ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
                    task=turn.task,
                    team=self._team,
                    names=", ".join(self._speakers),
                ),
                source=self.name,
            )
        )
        usage: RequestUsage | None = None
        problem: _LedgerProblem | None = None
        for _ in range(self._max_attempts):
            text, call_usage = await self._ask(context, token, json_mode=True)
            usage = _add(usage, call_usage)
            try:
                return parse_progress_ledger(text, self._speakers), usage
            except _LedgerProblem as exc:
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
            UserMessage(content=_fill(self._final_answer_prompt, task=turn.task), source=self.name)
        )
        return await self._ask(context, token)

    async def _commit(self, turn: _Turn, *, active: bool) -> None:
        if turn.reset_participants:
            # As in Magentic-One, a new or revised task ledger starts the work afresh:
            # the participants forget their previous attempt.
            token = CancellationToken()
            for participant in self._participants:
                await participant.on_reset(token)
        self._task, self._facts, self._plan = turn.task, turn.facts, turn.plan
        self._stalls = turn.stalls
        self._thread = turn.thread
        self._active = active
        self._pending = None

    # --- lifecycle --------------------------------------------------------------------

    async def reset(self) -> None:
        """Forget the task, ledgers, stall count and transcript."""
        self._task = self._facts = self._plan = ""
        self._stalls = 0
        self._thread = []
        self._active = False
        self._pending = None

    async def save_state(self) -> Mapping[str, Any]:
        """The task ledger, stall count, pending task and transcript (JSON-serialisable)."""
        return MagenticOneOrchestratorState(
            task=self._task,
            facts=self._facts,
            plan=self._plan,
            n_stalls=self._stalls,
            active=self._active,
            pending_task=self._pending,
            message_thread=[dict(message.dump()) for message in self._thread],
        ).model_dump(mode="json")

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore [`save_state`][flowlib.graph.Router.save_state] output.

        Raises:
            StateError: If ``state`` is not an orchestrator state of this version.
        """
        try:
            loaded = MagenticOneOrchestratorState.model_validate(dict(state))
        except ValidationError as exc:
            raise StateError(
                f"`{self.name}` cannot load this state ({exc.error_count()} problem(s)); pass "
                "the dict its save_state() returned."
            ) from exc
        if loaded.version != 1:
            raise StateError(
                f"`{self.name}` state has version {loaded.version}; this flowlib reads "
                "version 1. Save it again with this version of flowlib."
            )
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
        self._task, self._facts, self._plan = loaded.task, loaded.facts, loaded.plan
        self._stalls = loaded.n_stalls
        self._active = loaded.active
        self._pending = loaded.pending_task
        self._thread = thread


# --- the team ---------------------------------------------------------------------------


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


class MagenticOneGroupChat(BaseGroupChat):
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
        name: Defaults to ``"MagenticOneGroupChat"``.
        description: Defaults to ``"A team of agents."``.
        termination_condition: Stops the run when it fires (the task stays under way).
        max_turns: At most this many participant turns per run (orchestrator turns do
            not count); defaults to 20.
        runtime: Only ``None`` (flowlib has no separate runtime).
        max_stalls: Stalled or looping steps tolerated before re-planning (at least 1).
        final_answer_prompt: The prompt that turns the transcript into the final answer;
            ``{task}`` in it is replaced by the task text.
        custom_message_types: Extra message classes the participants produce.
        turn_timeout: Seconds each turn may take; past it the turn is cancelled and
            the run fails resumably (``run()`` re-runs the turn). A node's own
            ``timeout`` wins. See docs/graph-semantics.md.
        emit_team_events: Stream a ``SelectSpeakerEvent`` before each participant's turn.

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
    DEFAULT_DESCRIPTION = "A team of agents."
    component_provider_override: ClassVar[str | None] = "flowlib.teams.MagenticOneGroupChat"

    # --- the component protocol (configs in teams/_config.py) ----------------------------

    component_config_schema: ClassVar[type[BaseModel]] = MagenticOneGroupChatConfig

    def _to_config(self) -> MagenticOneGroupChatConfig:
        fields = team_fields(self, self._message_factory.custom_types)
        return MagenticOneGroupChatConfig(
            **fields,
            emit_team_events=self._emit_team_events,
            model_client=dump_field(self._model_client, "model_client"),
            max_stalls=self._max_stalls,
            final_answer_prompt=self._final_answer_prompt,
        )

    @classmethod
    def _from_config(cls, config: MagenticOneGroupChatConfig) -> Self:
        members = load_members(config, ChatAgent)
        client = load_field(config.model_client, "model_client", ChatCompletionClient)
        prompt = config.final_answer_prompt
        return cls(
            members,
            client,
            name=config.name,
            description=config.description,
            termination_condition=load_termination(config),
            max_turns=config.max_turns,
            turn_timeout=config.turn_timeout,
            max_stalls=config.max_stalls,
            final_answer_prompt=ORCHESTRATOR_FINAL_ANSWER_PROMPT if prompt is None else prompt,
            emit_team_events=config.emit_team_events,
        )

    def __init__(
        self,
        participants: Sequence[ChatAgent],
        model_client: ChatCompletionClient,
        *,
        name: str | None = None,
        description: str | None = None,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = 20,
        runtime: Any = None,
        max_stalls: int = 3,
        final_answer_prompt: str = ORCHESTRATOR_FINAL_ANSWER_PROMPT,
        custom_message_types: Sequence[type[BaseAgentEvent | BaseChatMessage]] | None = None,
        emit_team_events: bool = False,
        checkpoint_store: CheckpointStore | None = None,
        durability: Durability = "sync",
        turn_timeout: float | None = None,
    ) -> None:
        reject_runtime(runtime)
        check_team_arguments(
            "MagenticOneGroupChat",
            participants,
            termination_condition=termination_condition,
            max_turns=max_turns,
            model_client=model_client,
        )
        participants = list(participants)
        if not participants:
            raise InvalidValueError(
                "MagenticOneGroupChat needs at least one participant; pass a list of agents."
            )
        check_agents_only("MagenticOneGroupChat", participants)
        check_router_name(
            participants, ORCHESTRATOR_NAME, role="orchestrator", fix="rename the participant."
        )
        if isinstance(max_stalls, bool) or not isinstance(max_stalls, int) or max_stalls < 1:
            raise InvalidValueError(f"max_stalls must be a positive integer, not {max_stalls!r}.")
        if not isinstance(final_answer_prompt, str) or not final_answer_prompt.strip():
            raise InvalidValueError("final_answer_prompt must be a non-empty string.")
        self._orchestrator = MagenticOneOrchestrator(
            ORCHESTRATOR_NAME,
            participants=participants,
            model_client=model_client,
            max_stalls=max_stalls,
            final_answer_prompt=final_answer_prompt,
        )
        super().__init__(
            name=name or self.DEFAULT_NAME,
            description=description or self.DEFAULT_DESCRIPTION,
            participants=[self._orchestrator, *participants],
            graph=hub_graph(ORCHESTRATOR_NAME, participants, pattern="magentic_one"),
            termination_condition=termination_condition,
            max_turns=max_turns,
            custom_message_types=custom_message_types,
            emit_team_events=emit_team_events,
            checkpoint_store=checkpoint_store,
            durability=durability,
            turn_timeout=turn_timeout,
            policy=MagenticOnePolicy(self._orchestrator),
        )
        # Saved transcripts may hold the participants' custom message types.
        self._orchestrator.message_factory = self._message_factory
        self._model_client = model_client
        self._max_stalls = max_stalls
        self._final_answer_prompt = final_answer_prompt

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


register_builtin(
    MagenticOneGroupChat,
    "flowlib.teams.MagenticOneGroupChat",
    aliases=(AUTOGEN_TEAMS + "MagenticOneGroupChat", "MagenticOneGroupChat"),
)
