"""Stored-run resolution: what an entry point does with what the store holds of a run.

A team's explicit entry points (docs/state.md, "Entry points") each say what they want:
``start`` a new run under an id, ``resume`` an interrupted one, ``continue_run`` a stopped
one with new input, ``fork`` from a checkpoint; ``run(run_id=...)`` is ``auto``. This
module looks the run up, refuses by name what does not fit (nothing is created and no
model is called), loads the stored state into the team, and hands back the checkpointer
for the execution or, for a finished run, its stored result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from ..base import TaskResult
from ..checkpoint import CheckpointStore, FoldedRun, RunRecord
from ..checkpoint.internal import base_record, fork_run, load_to_resume
from ..errors import (
    InvalidArgumentError,
    RunExistsError,
    RunNotFoundError,
    RunStatusError,
    StateError,
)
from ..graph import GraphExecutor, graph_difference
from ..graph.internal import (
    GRAPH_STATE_VERSION,
    Budget,
    Checkpointer,
    Durability,
    HumanRequest,
    Run,
    RunPhase,
    RunState,
    StoredRun,
)
from ..messages import BaseChatMessage
from ._lifecycle import new_owner

__all__ = [
    "EntryMode",
    "PendingRequest",
    "StoredRuns",
    "pending_requests",
    "runs_to_recover",
    "stored_phase",
]

EntryMode = Literal["auto", "start", "resume", "continue", "fork", "answer"]


def stored_phase(run: RunRecord, state: RunState | None, *, now: float | None = None) -> RunPhase:
    """A stored run's phase from its run record and its latest run state.

    ``running`` means another executor holds an unexpired lease; a ``running`` run whose
    lease expired (or that has none) was interrupted: its process died.
    """
    if run.last_checkpoint == 0:
        return "new"
    if run.status == "complete":
        return "complete"
    if run.status == "failed":
        return "failed"
    if run.status == "running":
        moment = time.time() if now is None else now
        held = run.lease_expires_at is not None and run.lease_expires_at > moment
        return "running" if held else "interrupted"
    if state is not None and state.open:
        return "interrupted"
    if state is not None and state.requests:
        return "waiting"
    return "stopped"


def run_state_of(folded: FoldedRun) -> RunState | None:
    """The run state of a folded run's latest record (None: stored by an older flowlib)."""
    raw = folded.bookkeeping.get("run")
    if raw is None:
        return None
    try:
        return RunState.model_validate(raw)
    except Exception as exc:
        raise StateError(
            f"Stored run `{folded.run_id}` has an unreadable run state: {exc}"
        ) from exc


@dataclass
class Prepared:
    """What an entry point resolved to: run (with ``checkpointer``), or ``result``."""

    checkpointer: Checkpointer | None = None
    result: TaskResult | None = None


@dataclass(eq=False)
class StoredRuns:
    """Resolves a team's entry points against its checkpoint store.

    Args:
        store: The team's store.
        team_type: The team's class name (stored with new runs).
        graph_signature: The team's graph hash (a resumed run must match it).
        graph_description: The graph as the signature was made from (named in refusals).
        executor: The team's executor.
        run: The team's run object.
        install: Loads a folded stored run into the team.
        durability: When the checkpointer writes.
        max_turns: The team's ``max_turns`` (a ``max_turns=1`` team waits for a person).
    """

    store: CheckpointStore
    _: KW_ONLY
    team_type: str
    graph_signature: str
    graph_description: dict[str, Any]
    executor: GraphExecutor
    run: Run
    install: Callable[[FoldedRun], Awaitable[None]]
    durability: Durability
    max_turns: int | None = None
    current: StoredRun | None = field(default=None, init=False)  # where the team's state is
    _created: str | None = field(default=None, init=False)  # a run this call is creating

    # --- checks ---------------------------------------------------------------------

    def check_graph(self, run: RunRecord) -> None:
        """Refuse a stored run made with another graph or state version."""
        if run.state_version != GRAPH_STATE_VERSION:
            raise StateError(
                f"Run `{run.run_id}` was stored with state version {run.state_version}; this "
                f"flowlib reads version {GRAPH_STATE_VERSION}. Resume it with the flowlib "
                "version that wrote it."
            )
        if run.graph_signature != self.graph_signature:
            difference = graph_difference(run.graph, self.graph_description)
            raise StateError(
                f"Run `{run.run_id}` was stored by a team with a different graph "
                f"({difference or 'the graphs differ'}). Resume it with a team built with "
                "the same participants and graph, or start a new run.",
            )

    def record(self, run_id: str, forked_from: tuple[str, int] | None) -> RunRecord:
        """A new run's record."""
        now = time.time()
        return RunRecord(
            run_id=run_id,
            team_type=self.team_type,
            graph_signature=self.graph_signature,
            graph=self.graph_description,
            state_version=GRAPH_STATE_VERSION,
            status="running",
            created_at=now,
            updated_at=now,
            forked_from=forked_from,
        )

    async def check_entry(self, mode: EntryMode, run_id: str, has_task: bool) -> None:
        """Refuse an entry point that cannot apply, before any lease or write.

        Raises:
            RunNotFoundError: ``resume``/``continue`` of an unknown id, or ``auto`` with
                no task on an unknown id.
            RunExistsError: ``start`` of an id with records.
        """
        if mode == "fork":
            return
        run = await self.store.get_run(run_id)
        if run is None:
            if mode in ("resume", "continue", "answer") or (mode == "auto" and not has_task):
                raise RunNotFoundError(
                    f"This store has no run `{run_id}`; nothing was created. Check the id "
                    "(`flowlib runs list`), or start it with `team.start(task, run_id=...)`.",
                    run_id=run_id,
                )
            return
        if mode == "start" and run.last_checkpoint > 0:
            raise RunExistsError(
                f"Run `{run_id}` already exists (status {run.status}, {run.last_checkpoint} "
                "checkpoints); resume it with `team.resume(run_id)`, continue it with "
                "`team.continue_run(run_id, task)`, or start a new id.",
                run_id=run_id,
            )

    # --- resolution ---------------------------------------------------------------------

    @asynccontextmanager
    async def unstarted(self, run_id: str) -> AsyncIterator[None]:
        """Around a run (inside its lease): if it is cancelled (or its stream closed)
        before its first record, a run record this call created is removed, rather than
        left ``running`` with nothing to resume from (the run had not started: starting
        it again is the way on, as before). An error keeps the record, as a killed
        process does."""
        self._created = None
        try:
            yield
        except (asyncio.CancelledError, GeneratorExit):
            if self._created == run_id:
                # The lease is still held: no other executor can have written meanwhile.
                with suppress(Exception):
                    run = await self.store.get_run(run_id)
                    if run is not None and run.last_checkpoint == 0:
                        await self.store.delete(run_id)
            raise
        finally:
            self._created = None

    async def prepare(
        self,
        mode: EntryMode,
        run_id: str,
        task: Sequence[BaseChatMessage],
        fork: tuple[str, int] | None,
    ) -> Prepared:
        """Load (or create) the stored run ``run_id`` for ``mode`` (the caller holds the
        run's lease); a finished run asked for nothing new gives its stored result.

        Raises:
            RunNotFoundError, RunExistsError, RunStatusError: See the entry points.
            StateError: The stored run was made with another graph.
        """
        store = self.store
        if fork is not None:
            folded = await fork_run(
                store,
                self.record(run_id, fork),
                check=self.check_graph,
                install=self._install,
            )
            self.run.run_id = run_id
            stored = StoredRun(
                run_id,
                1,
                dict(folded.participants),
                folded.turn,
                int(folded.bookkeeping.get("result_from", 0)),
                saved_upto=len(folded.messages),
            )
            self.current = stored
            state = run_state_of(folded)
            if not task and not (state is not None and state.open):
                return Prepared(result=self._stored_result(stored, folded.stop_reason))
            return Prepared(checkpointer=self._checkpointer(stored))
        run = await store.get_run(run_id)
        if run is None or run.last_checkpoint == 0:
            await self.check_entry(mode, run_id, bool(task))
            if run is not None and (mode in ("resume", "continue", "answer") or not task):
                raise RunStatusError(
                    f"Run `{run_id}` has no records (its process died before its first "
                    "checkpoint), so it has no task to resume; start it again with "
                    "`team.start(task, run_id=...)`.",
                    run_id=run_id,
                    status="new",
                )
            # A new run starts from whatever state the team is in, with a new budget. Its
            # first record is the `start` record, written by the checkpointer once the
            # task is in the thread: it holds the whole state and the task in one append.
            if run is not None:
                self.check_graph(run)
            else:
                self._created = run_id  # set first: the create may be cut mid-write
                await store.create_run(self.record(run_id, None))
            self.executor.restore_budget(Budget(turns=self.executor.budget().turns))
            self.run.requests = []
            self.run.answered = []
            stored = StoredRun(run_id, 0)
            self.current = stored
            self.run.run_id = run_id
            self.run.phase = "new"
            return Prepared(checkpointer=self._checkpointer(stored))
        if mode == "start":
            await self.check_entry(mode, run_id, bool(task))
        self.check_graph(run)
        current = self.current
        if (
            current is None
            or current.run_id != run_id
            or current.last_checkpoint != run.last_checkpoint
        ):
            folded = await load_to_resume(store, run_id)
            await self._install(folded)
            current = StoredRun(
                run_id,
                folded.last_checkpoint,
                dict(folded.participants),
                folded.turn,
                int(folded.bookkeeping.get("result_from", 0)),
                len(folded.messages),
            )
            self.current = current
        self.run.run_id = run_id
        # The caller holds the lease: a run stored as `running` lost its process.
        phase: RunPhase
        if run.status in ("complete", "failed"):
            phase = run.status
        elif run.status == "running" or self.executor.budget().open:
            phase = "interrupted"
        else:
            phase = "waiting" if self.run.requests else "stopped"
        self.run.phase = phase
        if mode == "resume" and phase in ("complete", "stopped", "waiting"):
            return Prepared(result=self._stored_result(current, run.stop_reason))
        if mode == "continue" and phase in ("interrupted", "failed"):
            raise RunStatusError(
                f"Run `{run_id}` was interrupted ({run.stop_reason or 'its process died'}); "
                "resume it with `team.resume(run_id)` first, then continue it.",
                run_id=run_id,
                status=phase,
            )
        if mode == "auto" and phase == "complete" and not task:
            return Prepared(result=self._stored_result(current, run.stop_reason))
        return Prepared(checkpointer=self._checkpointer(current))

    # --- edit, then continue ----------------------------------------------------------

    async def edit(
        self,
        run_id: str,
        *,
        append: Sequence[BaseChatMessage],
        replace: Mapping[int, BaseChatMessage],
        author: str,
        reason: str,
        lease_ttl: float,
    ) -> int:
        """Write an edit of run ``run_id``'s thread as its next checkpoint (a ``base``
        record: the whole state with the thread edited, ``bookkeeping["edit"]`` saying
        who, why, when and what); returns the new checkpoint's id.

        The edit holds the run's lease while it writes, so it is refused while an
        executor runs the run, and the write is one conditional append: a failed edit
        changes nothing.

        Raises:
            RunNotFoundError: The store has no run ``run_id``.
            RunStatusError: The run has no records (nothing to edit).
            InvalidArgumentError: A ``replace`` index is not a thread entry.
            RunLeaseError: Another executor holds the run's lease.
            StateError: The run was made with another graph.
        """
        store = self.store
        run = await store.get_run(run_id)
        if run is None:
            raise RunNotFoundError(
                f"This store has no run `{run_id}` to edit; nothing was changed.",
                run_id=run_id,
            )
        if run.last_checkpoint == 0:
            raise RunStatusError(
                f"Run `{run_id}` has no records (its process died before its first "
                "checkpoint): there is no thread to edit.",
                run_id=run_id,
                status="new",
            )
        self.check_graph(run)
        owner = new_owner()
        await store.acquire_lease(run_id, owner, ttl=lease_ttl)
        try:
            run = await store.get_run(run_id)
            if run is None:  # pragma: no cover - deleted while we took the lease
                raise RunNotFoundError(f"Run `{run_id}` was deleted.", run_id=run_id)
            folded = await store.load(run_id)
            messages = list(folded.messages)
            for index in sorted(replace):
                if not 0 <= index < len(messages):
                    raise InvalidArgumentError(
                        f"replace: run `{run_id}` has {len(messages)} messages (indexes "
                        f"0..{len(messages) - 1}), so there is no message {index} to "
                        "replace; nothing was changed.",
                        argument="replace",
                    )
                messages[index] = replace[index].dump()
            messages.extend(message.dump() for message in append)
            nodes = [*folded.message_nodes, *([None] * len(append))]
            edit = {
                "author": author,
                "reason": reason,
                "at": time.time(),
                "edited_checkpoint": folded.last_checkpoint,
                "appended": len(append),
                "replaced": sorted(replace),
            }
            edited = folded.model_copy(
                update={
                    "messages": messages,
                    "message_nodes": nodes,
                    "bookkeeping": {**folded.bookkeeping, "edit": edit},
                }
            )
            record = base_record(edited, checkpoint_id=folded.last_checkpoint + 1)
            await store.append(record, status=run.status, lease_owner=owner)
        finally:
            await store.release_lease(run_id, owner)
        return record.checkpoint_id

    def _stored_result(self, current: StoredRun, stop_reason: str | None) -> TaskResult:
        return TaskResult(
            messages=list(self.executor.scheduler.thread[current.result_from :]),
            stop_reason=stop_reason,
            run_id=current.run_id,
        )

    async def _install(self, folded: FoldedRun) -> None:
        await self.install(folded)

    def _checkpointer(self, stored: StoredRun) -> Checkpointer:
        stored.result_from = len(self.executor.scheduler.thread)
        return Checkpointer(
            self.store,
            stored,
            durability=self.durability,
            executor=self.executor,
            run=self.run,
            max_turns=self.max_turns,
        )


@dataclass(frozen=True)
class PendingRequest:
    """A human request a stored run is waiting for (``pending_requests``).

    Attributes:
        run_id: The run waiting.
        request: The request (answer it with ``team.answer(run_id, request_id, reply)``).
    """

    run_id: str
    request: HumanRequest


async def pending_requests(store: CheckpointStore) -> list[PendingRequest]:
    """Every human request the store's runs are waiting for, newest run first.

    Delegates to the store's ``list_pending`` (docs/state.md, "Human requests"); a
    store written before ``list_pending`` existed is read by folding its stopped runs.
    """
    listing = getattr(store, "list_pending", None)
    if listing is not None:
        return [
            PendingRequest(
                item.run_id,
                HumanRequest.model_validate(item.model_dump(exclude={"run_id"})),
            )
            for item in await listing()
        ]
    found: list[PendingRequest] = []
    for run in await store.list_runs():
        if run.status != "stopped" or run.last_checkpoint == 0:
            continue
        state = run_state_of(await store.load(run.run_id))
        if state is None or state.open:
            continue
        found.extend(PendingRequest(run.run_id, request) for request in state.requests)
    return found


async def runs_to_recover(store: CheckpointStore, *, now: float | None = None) -> list[RunRecord]:
    """The runs whose executor died: stored as ``running`` with no unexpired lease.

    ``flowlib runs recover`` resumes these; a run whose lease is still held is being
    executed (or its executor died less than a lease ago) and is left alone.
    """
    moment = time.time() if now is None else now
    return [
        run
        for run in await store.list_runs()
        if run.status == "running"
        and run.last_checkpoint > 0
        and not (run.lease_expires_at is not None and run.lease_expires_at > moment)
    ]
