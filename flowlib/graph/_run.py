"""The run object: one home for a run's identity, status, budget and pending requests.

A team holds one `Run` per run it executes. The run's *budget*
(agent turns counted toward ``max_turns``, the termination condition's progress, a stop
decided while turns were still running) and its pending human requests are written into
every checkpoint (the ``run`` entry of a record's bookkeeping, [`RunState`]), so a run
resumed in another process continues exactly where the interrupted one was: a crash
never changes the outcome (docs/state.md, "A run's budget").
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..base import TerminationCondition, saves_state
from ..checkpoint.internal import HumanRequest
from ..errors import HumanRequestError, RequestAlreadyAnsweredError, StateError
from ..messages import BaseChatMessage, HandoffMessage
from ._executor import Budget, GraphExecutor
from ._model import DiGraph, DiGraphEdge, DiGraphNode

__all__ = [
    "RUN_STATE_VERSION",
    "TRANSITIONS",
    "HumanRequest",
    "Run",
    "RunPhase",
    "RunState",
    "state_machine",
]

RUN_STATE_VERSION = 1

RunPhase = Literal["new", "running", "interrupted", "waiting", "stopped", "complete", "failed"]
"""Where a run is in its state machine (docs/state.md, drawn in docs/state.svg):
``new`` (no record yet), ``running``, ``interrupted`` (cancelled, or its process died:
resume it), ``waiting`` (stopped with a pending human request: answer it), ``stopped``
(termination or ``max_turns``: continue it with new input), ``complete`` (nothing left to
run), ``failed`` (a node raised: resume retries the turn)."""


TRANSITIONS: tuple[tuple[RunPhase, RunPhase, str], ...] = (
    ("new", "running", "start_run(task, run_id=)"),
    ("running", "complete", "nothing left to run"),
    ("running", "stopped", "termination / max_turns"),
    ("running", "waiting", "stopped asking a person"),
    ("running", "interrupted", "cancelled / process died"),
    ("running", "failed", "a node raised"),
    ("interrupted", "running", "resume_run (same budget)"),
    ("interrupted", "running", "answer(request_id, reply): asked inside a turn"),
    ("failed", "running", "resume_run (retries the turn)"),
    ("waiting", "running", "answer(request_id, reply)"),
    ("stopped", "running", "continue_run(task) (new budget)"),
    ("complete", "running", "continue_run(task) (new budget)"),
)
"""A run's state machine: ``(from, to, what moves it)``. ``resume_run`` of a stopped,
waiting or complete run returns its stored result and moves nothing; ``fork_run`` makes a
new run at the phase of the checkpoint it forks. Drawn in docs/state.md."""


def state_machine() -> DiGraph:
    """The run state machine as a flowlib graph, for ``flowlib.render`` to draw."""
    phases: list[RunPhase] = [
        "new",
        "running",
        "interrupted",
        "failed",
        "waiting",
        "stopped",
        "complete",
    ]
    nodes = {
        phase: DiGraphNode(
            name=phase,
            edges=[
                DiGraphEdge(target=target, condition=label, label=label)
                for source, target, label in TRANSITIONS
                if source == phase
            ],
            kind="team" if phase == "running" else "function",
        )
        for phase in phases
    }
    return DiGraph(nodes=nodes, pattern="run states")


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
        given: Answers to ``input`` requests whose turn has not been recorded yet, by
            request id: the turn's re-run takes its answer from here.
        given_by: The participant each ``given`` answer is for.
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
    given: dict[str, str] = Field(default_factory=dict)
    given_by: dict[str, str] = Field(default_factory=dict)


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
        self.given: dict[str, str] = {}
        self.given_by: dict[str, str] = {}

    @property
    def budget(self) -> Budget:
        """The budget spent so far (turns, a pending stop) at the last consistent point."""
        return self._executor.budget()

    def waiting_for(
        self, thread: Sequence[BaseChatMessage], participants: Sequence[str], max_turns: int | None
    ) -> HumanRequest | None:
        """The person the run stopped for, if it did (docs/state.md, "Human requests"):
        the last message hands off to someone who is not a participant (a Swarm or a
        ``HandoffTermination`` handing off to ``user``), or a ``max_turns=1`` team
        stopped after its turn (its next input is a person's)."""
        if not thread:
            return None
        last = thread[-1]
        kind: Literal["handoff", "reply"]
        if isinstance(last, HandoffMessage) and last.target not in participants:
            asked, question, kind = last.target, last.to_text(), "handoff"
        elif max_turns == 1 and last.source in participants:
            asked, question, kind = "user", last.to_text(), "reply"
        else:
            return None
        return HumanRequest(
            request_id=uuid.uuid4().hex[:12],
            asked=asked,
            by=last.source,
            kind=kind,
            question=question,
            created_at=time.time(),
        )

    def take_answer(self, request_id: str) -> HumanRequest:
        """Mark ``request_id`` answered (before the answer's turn runs).

        Raises:
            RequestAlreadyAnsweredError: It was answered already (nothing runs).
            HumanRequestError: The run is not waiting for it.
        """
        if request_id in self.answered:
            raise RequestAlreadyAnsweredError(
                f"Request `{request_id}` of run `{self.run_id}` was answered already; the "
                "second answer was refused and nothing ran.",
                run_id=self.run_id,
                request_id=request_id,
            )
        for request in self.requests:
            if request.request_id == request_id:
                self.requests.remove(request)
                self.answered.append(request_id)
                return request
        waiting = ", ".join(f"`{r.request_id}`" for r in self.requests) or "none"
        raise HumanRequestError(
            f"Run `{self.run_id}` is not waiting for request `{request_id}` (pending: "
            f"{waiting}); see `flowlib runs pending` or `pending_requests(store)`.",
            run_id=self.run_id,
            request_id=request_id,
        )

    def asking(self, request_id: str, by: str, question: str) -> HumanRequest | None:
        """Participant ``by`` asks a person inside its turn (a ``UserProxyAgent``): the
        new pending request, or None when the request was answered already (its answer is
        given to the turn) or is pending already (a re-run asking again)."""
        if request_id in self.given or any(r.request_id == request_id for r in self.requests):
            return None
        request = HumanRequest(
            request_id=request_id,
            asked=by,
            by=by,
            kind="input",
            question=question,
            created_at=time.time(),
        )
        self.requests.append(request)
        return request

    def give(self, request: HumanRequest, reply: str) -> None:
        """Keep the answer to an ``input`` request for the turn that asks it."""
        self.given[request.request_id] = reply
        self.given_by[request.request_id] = request.by or request.asked

    def recorded(self, name: str) -> None:
        """A turn of participant ``name`` was recorded: its questions were answered."""
        self.requests = [r for r in self.requests if r.kind != "input" or r.by != name]
        for request_id in [i for i, by in self.given_by.items() if by == name]:
            del self.given[request_id]
            del self.given_by[request_id]

    def stopping(self, open_: bool) -> None:
        """The run stops: an open run keeps the questions asked inside its turns (they
        are asked again, with the same ids, when it resumes); others drop them."""
        if not open_:
            self.requests = []
            self.given, self.given_by = {}, {}
        else:
            self.requests = [r for r in self.requests if r.kind == "input"]

    def begin(self) -> None:
        """A ``run()`` call starts: a run that is not open starts a new budget here."""
        if not self._executor.budget().open:
            self.thread_from = len(self._executor.scheduler.thread)
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
            given=dict(self.given),
            given_by=dict(self.given_by),
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
        self.given = dict(state.given)
        self.given_by = dict(state.given_by)
