"""One run of a batch: start it, resume it, or return it from the store if it finished.

This is the part every runner shares (the one-process runner and each Ray worker), so a
run behaves the same wherever it runs.
"""

from __future__ import annotations

import dataclasses
import inspect
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import TaskResult
from ..checkpoint import CheckpointStore, RunRecord, fold
from ..errors import InvalidArgumentError, RunFailedError
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    MessageFactory,
    ModelClientStreamingChunkEvent,
)

__all__ = [
    "BatchTask",
    "RunEvent",
    "RunItem",
    "TeamPool",
    "is_finished",
    "run_items",
    "stored_result",
    "stream_run",
]

BatchTask = str | BaseChatMessage | Sequence[BaseChatMessage]
"""One task of a batch: what ``team.run(task=...)`` accepts (a string, a chat message or a
list of chat messages)."""

RunItem = BaseAgentEvent | BaseChatMessage | TaskResult | RunFailedError
"""What a run yields: its messages and events, then a ``TaskResult`` or a
[`RunFailedError`][flowlib.errors.RunFailedError]."""

_FINISHED = frozenset({"complete", "completed"})
_CANCELLED = ("cancel", "closed the stream")


@dataclass(frozen=True)
class RunEvent:
    """One item of one run in a batch stream.

    Attributes:
        run_id: The run the item belongs to.
        index: The run's position in the batch (its task's index).
        item: A message or event of the run; the run's last item is its ``TaskResult``
            or a [`RunFailedError`][flowlib.errors.RunFailedError].
        skipped: True on the last item of a run the store already held as finished
            (nothing ran; the item is its stored result).
    """

    run_id: str
    index: int
    item: RunItem
    skipped: bool = False

    @property
    def done(self) -> bool:
        """Whether this is the run's last item (its result or its failure)."""
        return isinstance(self.item, (TaskResult, RunFailedError))


class Results:
    """A batch's results in task order, filled in as each run's last item comes."""

    def __init__(self, count: int) -> None:
        self._slots: list[TaskResult | RunFailedError | None] = [None] * count

    def take(self, index: int, item: RunItem) -> None:
        """Keep ``item`` if it is the run's result (or its failure)."""
        if isinstance(item, (TaskResult, RunFailedError)):
            self._slots[index] = item

    def in_order(self) -> list[TaskResult | RunFailedError]:
        """The results taken, in task order."""
        return [result for result in self._slots if result is not None]


def is_finished(record: RunRecord) -> bool:
    """Whether a stored run needs no more work: it completed, or a termination condition
    (or ``max_turns``) stopped it. A cancelled or failed run, or one whose process died,
    is unfinished and is resumed."""
    if record.status in _FINISHED:
        return True
    if record.status != "stopped":
        return False
    reason = (record.stop_reason or "").lower()
    return not any(word in reason for word in _CANCELLED)


def _result(messages: Sequence[Any], stop_reason: str | None, run_id: str) -> TaskResult:
    names = {field.name for field in dataclasses.fields(TaskResult)}
    extra: dict[str, Any] = {"run_id": run_id} if "run_id" in names else {}
    return TaskResult(messages=list(messages), stop_reason=stop_reason, **extra)


async def stored_result(
    store: CheckpointStore, run_id: str, *, factory: MessageFactory | None = None
) -> TaskResult:
    """A stored run's result, rebuilt from its checkpoints without running anything.

    The messages are the run's thread (chat messages; events are not checkpointed), task
    messages first.

    Args:
        store: The store holding the run.
        run_id: The run.
        factory: Rebuilds custom message types (default: the built-in types).

    Raises:
        CheckpointError: If the store does not know the run.
    """
    record = await store.get_run(run_id)
    folded = fold(await store.records(run_id), run_id=run_id)
    messages = factory or MessageFactory()
    stop_reason = folded.stop_reason or (record.stop_reason if record else None)
    return _result([messages.create(m) for m in folded.messages], stop_reason, run_id)


class TeamPool:
    """Teams built by a factory, reset and reused by later runs of a batch.

    Building a team (agents, graph validation) costs more CPU than running a short one,
    so a batch of thousands of runs keeps the teams of finished runs: a run takes an idle
    team (``team.reset()`` was called when it was given back) or builds a new one. A team
    whose run failed or was cancelled is dropped, never reused.

    Args:
        factory: Builds a team: ``factory(checkpoint_store=store)``.
        store: The store the teams checkpoint to, or None.
        reuse: False builds a fresh team for every run.

    Attributes:
        built: Teams built so far.
        counts: Runs by how they began: ``started`` (new), ``resumed`` (from a
            checkpoint), ``finished_before`` (found finished in the store, not run).
    """

    def __init__(
        self, factory: Callable[..., Any], store: CheckpointStore | None, *, reuse: bool = True
    ) -> None:
        self.factory = factory
        self.store = store
        self.reuse = reuse
        self.built = 0
        self.counts = {"started": 0, "resumed": 0, "finished_before": 0}
        self._idle: list[Any] = []

    def acquire(self) -> Any:
        """An idle team, or a new one from the factory."""
        from ._factory import build_team

        if self._idle:
            return self._idle.pop()
        team = build_team(self.factory, self.store)
        self.built += 1
        return team

    async def release(self, team: Any) -> None:
        """Give back the team of a run that ended normally (reset here, for the next)."""
        if self.reuse:
            await team.reset()
            self._idle.append(team)


_TAKES_RUN_ID: dict[type[Any], bool] = {}


def _takes_run_id(team: Any) -> bool:
    # Cached per class: inspecting a signature costs more than a short run's turns.
    kind = type(team)
    if kind not in _TAKES_RUN_ID:
        try:
            found = "run_id" in inspect.signature(kind.run_stream).parameters
        except (TypeError, ValueError):  # pragma: no cover - teams' run_stream has one
            found = False
        _TAKES_RUN_ID[kind] = found
    return _TAKES_RUN_ID[kind]


def _failure(run_id: str, exc: BaseException, seen: list[Any]) -> RunFailedError:
    partial = getattr(exc, "partial_result", None)
    if not isinstance(partial, TaskResult):
        partial = _result(seen, None, run_id)
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return RunFailedError(
        run_id,
        type(cause).__name__,
        str(cause),
        partial_result=partial,
        traceback="".join(traceback.format_exception(exc)),
    )


async def stream_run(
    teams: TeamPool, run_id: str, task: BatchTask, *, events: bool = True
) -> AsyncIterator[RunItem]:
    """Run one task of a batch, yielding its messages and events, then its result.

    With a store: a run the store holds as finished yields its stored result and runs
    nothing; a run the store holds unfinished (its worker died, it was cancelled or it
    failed) resumes from its last checkpoint without the task; otherwise the task starts
    run ``run_id``. A resumed run's result is rebuilt from the store, so it holds the
    whole transcript, including the turns run before the resume.

    An exception of the run itself (an agent error, or its store failing) becomes the
    last item, a [`RunFailedError`][flowlib.errors.RunFailedError] carrying the partial
    result; it is not raised. Cancellation is raised.

    Args:
        teams: Where the run's team comes from (and goes back to), and the store the
            run checkpoints to.
        run_id: The run's id (the key in the store).
        task: The task.
        events: False yields only the result (the run goes through ``team.run``).
    """
    async for item, _ in run_items(teams, run_id, task, events=events):
        yield item


async def run_items(
    teams: TeamPool, run_id: str, task: BatchTask, *, events: bool = True
) -> AsyncIterator[tuple[RunItem, bool]]:
    """[`stream_run`][flowlib.batch.stream_run]'s items, each with whether the run was
    found finished in the store (True on its stored result: nothing ran)."""
    store = teams.store
    resume = False
    seen: list[Any] = []
    try:
        if store is not None:
            record = await store.get_run(run_id)
            if record is not None and is_finished(record):
                teams.counts["finished_before"] += 1
                finished = await stored_result(store, run_id)
            else:
                finished = None
                # A run's first record holds its task; a run stored with no record yet
                # (its worker died before the first write) is started with the task.
                resume = record is not None and record.last_checkpoint > 0
            if finished is not None:
                yield finished, True
                return
        teams.counts["resumed" if resume else "started"] += 1
        team = teams.acquire()
        arguments: dict[str, Any] = {}
        if _takes_run_id(team):
            arguments["run_id"] = run_id
        elif store is not None:
            raise InvalidArgumentError(
                f"{type(team).__name__}.run_stream takes no `run_id`, so it cannot "
                "checkpoint; run the batch without `checkpoint_store`.",
                argument="checkpoint_store",
            )
        if not resume:
            arguments["task"] = task
        result: TaskResult | None = None
        if not events:
            result = await team.run(**arguments)
        else:
            async for item in team.run_stream(**arguments):
                if isinstance(item, TaskResult):
                    result = item
                    continue
                if not isinstance(item, ModelClientStreamingChunkEvent):
                    seen.append(item)
                yield item, False
        await teams.release(team)
        if resume and store is not None:
            result = await stored_result(store, run_id)
    except Exception as exc:  # the run's own error, or its store's: reported in its place
        yield _failure(run_id, exc, seen), False
        return
    if result is None:  # pragma: no cover - teams end their stream with a TaskResult
        result = _result(seen, None, run_id)
    yield result, False
