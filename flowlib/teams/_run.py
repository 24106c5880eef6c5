"""The run object: one home for a run's identity, status, budget and pending requests.

A team holds one `Run` per run it executes. The run's *budget*
(agent turns counted toward ``max_turns``, the termination condition's progress, a stop
decided while turns were still running) and its pending human requests are written into
every checkpoint (the ``run`` entry of a record's bookkeeping, [`RunState`]), so a run
resumed in another process continues exactly where the interrupted one was: a crash
never changes the outcome (docs/state.md, "A run's budget").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..base import TerminationCondition, saves_state
from ..errors import StateError
from ..graph import GraphExecutor
from ..graph._executor import Budget
from ..messages import BaseChatMessage

__all__ = ["RUN_STATE_VERSION", "HumanRequest", "Run", "RunPhase", "RunState"]

RUN_STATE_VERSION = 1

RunPhase = Literal["new", "running", "interrupted", "waiting", "stopped", "complete", "failed"]
"""Where a run is in its state machine (docs/state.md, drawn in docs/state.svg):
``new`` (no record yet), ``running``, ``interrupted`` (cancelled, or its process died:
resume it), ``waiting`` (stopped with a pending human request: answer it), ``stopped``
(termination or ``max_turns``: continue it with new input), ``complete`` (nothing left to
run), ``failed`` (a node raised: resume retries the turn)."""


class HumanRequest(BaseModel):
    """A question a run is waiting for a person to answer.

    Attributes:
        request_id: Names the request; the answer must give it.
        asked: Who is asked (a handoff target such as ``"user"``, or a participant).
        by: The participant that asked.
        question: What was asked (the asking message's text).
        created_at: Unix time the run stopped to wait.
    """

    request_id: str
    asked: str
    by: str | None = None
    question: str = ""
    created_at: float


class RunState(BaseModel):
    """What a checkpoint stores of the run object (``bookkeeping["run"]``).

    Attributes:
        version: Format version.
        open: A run started and has not stopped or completed (it was interrupted,
            failed, or its process died): resuming it continues its budget.
        turns: Agent turns counted toward ``max_turns`` in the open run.
        stop_reason: A stop the run decided while turns were still running.
        drain: How many of those running turns run again before the stop.
        termination: The termination condition's saved progress (None: no condition,
            or one that falls back to the replay rule).
        thread_from: The thread index where the open run's task starts (the replay rule
            replays the chat messages from there).
        requests: Pending human requests.
        answered: Ids of requests already answered (a second answer is refused).
    """

    version: int = RUN_STATE_VERSION
    open: bool = False
    turns: int = Field(default=0, ge=0)
    stop_reason: str | None = None
    drain: int = Field(default=0, ge=0)
    termination: dict[str, Any] | None = None
    thread_from: int = Field(default=0, ge=0)
    requests: list[HumanRequest] = Field(default_factory=list)
    answered: list[str] = Field(default_factory=list)


class Run:
    """One run of a team: its id, phase, budget and pending human requests.

    The turn counter is the executor's (``GraphExecutor.budget``); the run reads it and
    writes it into checkpoints with the termination condition's progress, and restores
    both when a stored run is resumed.

    Args:
        run_id: The run's id.
        executor: The team's executor (its budget is the run's).
        termination: The team's termination condition, if any.
    """

    def __init__(
        self,
        run_id: str,
        *,
        executor: GraphExecutor,
        termination: TerminationCondition | None,
    ) -> None:
        self.run_id = run_id
        self._executor = executor
        self._termination = termination
        self.phase: RunPhase = "new"
        self.thread_from = 0
        self.requests: list[HumanRequest] = []
        self.answered: list[str] = []

    @property
    def budget(self) -> Budget:
        """The budget spent so far (turns, a pending stop) at the last consistent point."""
        return self._executor.budget()

    def begin(self) -> None:
        """A ``run()`` call starts: a run that is not open starts a new budget here."""
        if not self._executor.budget().open:
            self.thread_from = len(self._executor.thread)
        self.phase = "running"

    async def snapshot(self) -> dict[str, Any]:
        """The run's state for a checkpoint, JSON-ready."""
        budget = self._executor.budget()
        condition = self._termination
        termination = None
        if condition is not None and saves_state(condition):
            termination = dict(await condition.save_state())
        return RunState(
            open=budget.open,
            turns=budget.turns,
            stop_reason=budget.stop_reason,
            drain=budget.drain,
            termination=termination,
            thread_from=self.thread_from,
            requests=list(self.requests),
            answered=list(self.answered),
        ).model_dump(mode="json")

    async def restore(
        self, stored: Mapping[str, Any] | None, thread: Sequence[BaseChatMessage]
    ) -> None:
        """Install the run state of a checkpoint (after the team's state was loaded).

        A run stored before run states existed (no ``run`` entry) is taken as not open.
        An open run's termination condition gets its saved progress back or, for a
        condition that saves none, is rebuilt by the replay rule: reset, then called once
        with the open run's chat messages.

        Raises:
            StateError: If the entry is malformed or the condition refuses its state.
        """
        try:
            state = RunState.model_validate(stored or {})
        except ValidationError as exc:
            raise StateError(
                f"Stored run `{self.run_id}` has an unreadable run state: {exc}"
            ) from exc
        if state.version != RUN_STATE_VERSION:
            raise StateError(
                f"Stored run `{self.run_id}` has run state version {state.version}; this "
                f"flowlib reads version {RUN_STATE_VERSION}."
            )
        stop_reason = state.stop_reason
        condition = self._termination
        if condition is not None:
            await condition.reset()
            if state.open and state.termination is not None:
                await condition.load_state(state.termination)
            elif state.open and not saves_state(condition):
                replayed = list(thread[state.thread_from :])
                if replayed:
                    stop = await condition(replayed)
                    if stop is not None and stop_reason is None:
                        stop_reason = stop.content
        self._executor.restore_budget(
            Budget(open=state.open, turns=state.turns, stop_reason=stop_reason, drain=state.drain)
        )
        self.thread_from = state.thread_from
        self.requests = list(state.requests)
        self.answered = list(state.answered)
