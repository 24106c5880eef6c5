"""Checkpointing a team's run into a [`CheckpointStore`][flowlib.checkpoint.CheckpointStore].

The executor tells a [`Checkpointer`] when a run starts, when each turn is recorded and
when the run stops. Each checkpoint holds only what changed since the previous one: the
thread's new messages, the executor's small bookkeeping, and a patch of each participant
whose turn was recorded. A write the store refused (``CheckpointConflictError``) was not
written; a write that was interrupted is settled by asking the store before the next
one whether it holds this very record, so a record is either in the store and counted
here, or neither, and another writer's record is never counted as this one's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ..checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    RunStatus,
    StepKind,
    diff_state,
)
from ..checkpoint.internal import Patch
from ..errors import CheckpointConflictError, CheckpointError, RunLeaseError
from ._executor import GraphExecutor, RunOutcome
from ._node import Node
from ._run import Run

__all__ = ["Checkpointer", "Durability", "StoredRun"]

Durability = Literal["sync", "exit"]
"""``sync``: a checkpoint after every recorded turn, written before the turn's messages
reach the consumer. ``exit``: only when the run stops (and at a new run's start, whose
first record holds the task)."""


@dataclass
class StoredRun:
    """What the store holds of the run the team's in-memory state belongs to.

    Attributes:
        run_id: The run.
        last_checkpoint: The newest checkpoint written (the team's state is exactly it).
        states: Each participant's state as stored (patches are made against these).
        turns: Agent turns run in the run so far.
        result_from: Thread index where the latest ``run()`` call's messages start.
        saved_upto: How many thread entries the store holds (the next record starts
            there, even after a write failed).
    """

    run_id: str
    last_checkpoint: int
    states: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    result_from: int = 0
    saved_upto: int = 0


class Checkpointer:
    """The executor's [`RunRecorder`][flowlib.graph.RunRecorder] for one run of a team.

    Args:
        store: Where the records go.
        stored: The stored run, updated as records are written.
        durability: When to write (see [`Durability`]).
        executor: The team's executor (thread, bookkeeping and the participants' nodes
            are read from it).
        run: The run object; its state (budget, termination progress, pending requests)
            goes into every record's bookkeeping under ``run``.
    """

    def __init__(
        self,
        store: CheckpointStore,
        stored: StoredRun,
        *,
        durability: Durability,
        executor: GraphExecutor,
        run: Run,
        max_turns: int | None = None,
    ) -> None:
        self._max_turns = max_turns
        self._store = store
        self._run = run
        # Appends carry the owner (refused unless it holds the lease); the ttl is what a
        # renewal of an expired lease asks for. None: appends unchecked.
        self._lease: tuple[str, float] | None = None
        self._stored = stored
        self._sync = durability == "sync"
        self._executor = executor
        self._nodes: list[Node] = executor.nodes
        self._names = [node.name for node in self._nodes]
        self._counts_turn = executor.counts_turn
        self._latest: dict[str, Any] = {}
        # Per participant, the patch from a state to ``_latest``: written as is when that
        # state is the stored one (the usual case), so a turn's checkpoint costs what the
        # turn changed, not a comparison of the whole state.
        self._since: dict[str, tuple[Any, Patch]] = {}
        self._dirty: set[str] = set()
        self._unsnapped: set[str] = set()
        self._unsure: tuple[CheckpointRecord, int, dict[str, Any], int] | None = None
        self._fired_upto = 0  # entries of the run's trace.fired already written

    def settled_state(self, name: str) -> Any | None:
        """The participant's state after its last recorded turn, if known."""
        if name in self._latest:
            return self._latest[name]
        return self._stored.states.get(name)

    async def _snapshot(self, node: int) -> None:
        name = self._names[node]
        base = self.settled_state(name)
        change = await self._nodes[node].save_state_since(base)
        self._latest[name] = change.state
        self._since[name] = (base, change.patch)
        self._unsnapped.discard(name)

    async def started(self) -> None:
        """Snapshot every participant (a new task may change a router) and write a
        ``start`` record holding the task messages.

        A new run's ``start`` record is its first and holds everything (the thread so
        far, the task, every participant's state, the bookkeeping) in one append, so a
        run with any record always has its task; it is written whatever the durability.
        """
        for node, name in enumerate(self._names):
            self._dirty.add(name)
            self._unsnapped.add(name)
            await self._snapshot(node)
        if self._sync or self._stored.last_checkpoint == 0:
            await self._write("start", status="running")

    async def recorded(self, node: int) -> None:
        """A turn of ``node`` was recorded: snapshot its participant, checkpoint (sync)."""
        name = self._names[node]
        self._dirty.add(name)
        self._unsnapped.add(name)
        if self._counts_turn[node]:
            self._stored.turns += 1
        self._run.recorded(name)
        await self._snapshot(node)
        if self._sync:
            await self._write("turn", node=name, status="running")

    async def progressed(self, node: int, instance: str) -> None:
        """Instance ``instance`` (``target[i]``) of map target ``node`` finished (its
        output is in the executor's bookkeeping): checkpoint it (sync), so a resumed run
        does not run it again. Not a turn: the run's turn count does not change."""
        del node
        if self._sync:
            await self._write("turn", node=instance, status="running")

    async def stopped(self, outcome: RunOutcome, reason: str | None) -> None:
        """The run stopped: write a ``stop`` record with the final bookkeeping."""
        if self._stored.last_checkpoint == 0:  # nothing stored yet: the record is whole
            self._dirty.update(self._names)
            self._unsnapped.update(self._names)
        for node, name in enumerate(self._names):
            if name in self._unsnapped:
                await self._snapshot(node)
        status: RunStatus = "stopped" if outcome == "interrupted" else outcome
        run = self._run
        run.stopping(outcome in ("interrupted", "failed"))
        if outcome == "stopped":
            request = run.waiting_for(self._executor.scheduler.thread, self._names, self._max_turns)
            if request is not None:
                run.requests.append(request)
        await self._write("stop", stop_reason=reason, status=status)

    async def waiting(self, request_id: str, by: str) -> None:
        """Participant ``by`` asks a person inside its turn: record the request as
        pending in a ``wait`` checkpoint (the run's state at the last consistent point,
        with the turn to run again), whatever the durability, so another process can
        answer it by id if this one dies while it waits."""
        thread = self._executor.scheduler.thread
        question = thread[-1].to_text() if len(thread) else ""
        if self._run.asking(request_id, by, question) is not None:
            await self._write("wait", node=by, status="running")

    async def _write(
        self,
        kind: StepKind,
        *,
        status: RunStatus,
        node: str | None = None,
        stop_reason: str | None = None,
    ) -> None:
        if self._unsure is not None:
            await self._reconcile()
        executor = self._executor
        thread = executor.scheduler.thread
        upto = len(thread)
        origins = executor.scheduler.thread_node
        names = self._names
        states = {name: self._latest[name] for name in self._dirty if name in self._latest}
        patches: dict[str, Any] = {}
        for name, state in states.items():
            stored = self._stored.states.get(name)
            since = self._since.get(name)
            if since is not None and since[0] is stored:
                patch = since[1]
            else:  # snapshots since the stored state were not written (durability="exit")
                patch = diff_state(stored, state)
            if patch:
                patches[name] = patch
        bookkeeping = executor.scheduler.bookkeeping(settled=True)
        bookkeeping["result_from"] = self._stored.result_from
        bookkeeping["run"] = await self._run.snapshot()
        # The edges the record's turns fired, so a stored run's path can be drawn exactly.
        trace = executor.trace
        fired = trace.fired[self._fired_upto :]
        bookkeeping["edges_fired"] = [list(trace.edge_ends[edge]) for _, edge in fired]
        fired_upto = len(trace.fired)
        record = CheckpointRecord(
            run_id=self._stored.run_id,
            checkpoint_id=self._stored.last_checkpoint + 1,
            kind=kind,
            turn=self._stored.turns,
            node=node,
            stop_reason=stop_reason,
            created_at=time.time(),
            messages=thread.dumps(self._stored.saved_upto, upto),
            message_nodes=[
                names[origin] if origin >= 0 else None
                for origin in origins[self._stored.saved_upto : upto]
            ],
            bookkeeping=bookkeeping,
            participants=patches,
        )
        # If the write is interrupted (cancelled mid-await, or it raises), whether the
        # store has the record is unknown: the next write asks the store first.
        self._unsure = (record, upto, states, fired_upto)
        try:
            if self._lease is None:
                await self._store.append(record, status=status)
            else:
                await self._append_leased(record, status, *self._lease)
        except CheckpointConflictError:
            self._unsure = None  # refused: certainly not written, so nothing to settle
            raise
        self._unsure = None
        self._advance(record, upto, states, fired_upto)

    def hold_lease(self, owner: str, ttl: float) -> None:
        """Write every checkpoint under ``owner``'s lease, of ``ttl`` seconds."""
        self._lease = (owner, ttl)

    async def _append_leased(
        self, record: CheckpointRecord, status: RunStatus, owner: str, ttl: float
    ) -> None:
        """Append under ``owner``'s lease. A lease that expired while this process was
        too slow to renew it (a loaded machine or store), and that nobody took over, is
        renewed and the write made once more: the store allows its owner that
        (``renew_lease``), and both calls are conditional writes, so a run another
        executor took over meanwhile is still refused."""
        try:
            await self._store.append(record, status=status, lease_owner=owner)
        except RunLeaseError as exc:
            if exc.holder != owner:
                raise
            await self._store.renew_lease(record.run_id, owner, ttl=ttl)
            await self._store.append(record, status=status, lease_owner=owner)

    async def _reconcile(self) -> None:
        """Settle an interrupted write: count it if the store holds this very record.

        Another writer may have written a record with the same number meanwhile, so the
        number alone proves nothing: the stored record must equal the one written here
        (its ``created_at``, thread entries, bookkeeping and patches). A record the
        store has since pruned into a ``base`` cannot be told apart and is not counted;
        the next write is then refused rather than written on top of another's record.
        """
        assert self._unsure is not None
        record, upto, states, fired_upto = self._unsure
        run = await self._store.get_run(record.run_id)
        self._unsure = None
        if run is None or run.last_checkpoint < record.checkpoint_id:
            return
        try:
            stored = await self._store.records(record.run_id, upto=record.checkpoint_id)
        except CheckpointError:  # pruned meanwhile, or the run was deleted
            return
        if stored and _same_record(stored[-1], record):
            self._advance(record, upto, states, fired_upto)

    def _advance(
        self, record: CheckpointRecord, upto: int, states: dict[str, Any], fired_upto: int
    ) -> None:
        self._fired_upto = fired_upto
        self._stored.last_checkpoint = record.checkpoint_id
        self._stored.saved_upto = upto
        self._stored.states.update(states)
        for name, state in states.items():
            if self._latest.get(name) is state:
                self._dirty.discard(name)


def _same_record(stored: CheckpointRecord, written: CheckpointRecord) -> bool:
    """Whether ``stored`` is ``written`` as a store gives it back (compared as JSON)."""
    return stored.model_dump(mode="json") == written.model_dump(mode="json")
