"""The checkpoint records and the store protocol every checkpoint store implements.

A run is stored as a chain of small records, one per recorded step. A record holds what
the step *added* (the new thread entries, the changed participants' state as a patch)
and the executor's small bookkeeping, never the whole thread again, so the bytes
written per turn do not grow with the run. Folding the records of a run up to a
checkpoint (``flowlib.checkpoint.fold``) gives the state to resume from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

__all__ = [
    "CheckpointInfo",
    "CheckpointRecord",
    "CheckpointStore",
    "Lease",
    "PendingRequestInfo",
    "RunRecord",
    "RunStatus",
    "StepKind",
]

StepKind = Literal["base", "start", "turn", "stop", "wait"]
"""``base``: a full snapshot (the first record of a fork, or pruned records folded into
one); ``start``: a run began (the task messages; a new run's first record is a ``start``
holding the whole state too, so every stored run has its task); ``turn``: a node's turn
was recorded; ``stop``: the run stopped (termination, max_turns, external stop, error,
cancellation); ``wait``: a participant asked a person inside its turn (a
``UserProxyAgent``): the run's state at the last consistent point, with the pending
request in its run state."""

RunStatus = Literal["running", "stopped", "complete", "failed"]
"""``running``: started and not stopped (or its process died); ``stopped``: stopped with
state kept (termination, max_turns, external stop, cancellation), so it can resume;
``complete``: nothing left to run; ``failed``: a node raised."""


class CheckpointRecord(BaseModel):
    """One step of a run, as written to a store.

    Attributes:
        run_id: The run this record belongs to.
        checkpoint_id: 1, 2, 3, ... within the run, in the order written.
        kind: What the step was (see [`StepKind`][flowlib.checkpoint.StepKind]).
        turn: Agent turns run so far in the run when the record was written.
        node: The node whose turn this is (``turn`` records), else None.
        stop_reason: Why the run stopped (``stop`` records), else None.
        created_at: Unix time when the record was made.
        messages: The chat messages the step appended to the thread, dumped
            (``model_dump(mode="json")``), in thread order.
        message_nodes: For each of ``messages``, the node that published it (None: task).
        bookkeeping: The executor's small state after the step (cursors, ready set,
            fired join edges, absorbed edges, turn count, ...); replaces the previous one.
        participants: For each participant whose state changed in the step, a patch
            from its previous state (``flowlib.checkpoint.diff_state``).
    """

    run_id: str
    checkpoint_id: int = Field(ge=1)
    kind: StepKind
    turn: int = Field(ge=0)
    node: str | None = None
    stop_reason: str | None = None
    created_at: float
    messages: list[dict[str, Any]] = Field(default_factory=list)
    message_nodes: list[str | None] = Field(default_factory=list)
    bookkeeping: dict[str, Any] = Field(default_factory=dict)
    participants: dict[str, Any] = Field(default_factory=dict)


class CheckpointInfo(BaseModel):
    """One line of a run's history (no payload)."""

    checkpoint_id: int
    kind: StepKind
    turn: int
    node: str | None
    stop_reason: str | None
    created_at: float
    message_count: int


class RunRecord(BaseModel):
    """What a store knows about a run as a whole.

    Attributes:
        run_id: The run's id.
        team_type: The team's class name, for listings.
        graph_signature: A stable hash of the graph (nodes, edges, conditions, groups);
            resuming with a team whose signature differs is refused.
        graph: The graph's nodes and edges as the signature was made from, so a refusal
            can name the nodes and edges that differ.
        state_version: The executor state version the records were written with.
        status: See [`RunStatus`][flowlib.checkpoint.RunStatus].
        created_at: Unix time the run was first stored.
        updated_at: Unix time of the last record.
        last_checkpoint: The newest record's ``checkpoint_id`` (0: none yet).
        turns: Agent turns run so far.
        stop_reason: The last stop's reason, if any.
        forked_from: ``(run_id, checkpoint_id)`` this run was forked from, if any.
        metadata: Free-form JSON the caller attached (e.g. the task text of a batch).
        lease_owner: The executor holding the run's lease, if any (expired or not).
        lease_expires_at: Unix time that lease expires, if any.
    """

    run_id: str
    team_type: str
    graph_signature: str
    graph: dict[str, Any] = Field(default_factory=dict)
    state_version: int
    status: RunStatus = "running"
    created_at: float
    updated_at: float
    last_checkpoint: int = 0
    turns: int = 0
    stop_reason: str | None = None
    forked_from: tuple[str, int] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    lease_owner: str | None = None
    lease_expires_at: float | None = None

    @property
    def cursor(self) -> str:
        """Where a listing continues after this run: pass it as
        ``list_runs(cursor=...)`` to get the runs listed after it."""
        return f"{self.created_at!r}/{self.run_id}"


class Lease(BaseModel):
    """Who executes a run, until when: held in the store, renewed while the run executes.

    Attributes:
        run_id: The run.
        owner: The executor holding it; unique per executor (e.g.
            ``f"{hostname}:{pid}:{uuid4().hex[:8]}"``).
        expires_at: Unix time (``time.time()`` of the process that wrote it) after
            which another executor may take the run over.
    """

    run_id: str
    owner: str
    expires_at: float


class HumanRequest(BaseModel):
    """A question a run is waiting for a person to answer.

    Attributes:
        request_id: Names the request; the answer must give it.
        asked: Who is asked (a handoff target such as ``"user"``, or a participant).
        by: The participant that asked.
        kind: ``handoff`` (the answer goes back to ``by`` as a ``HandoffMessage``),
            ``reply`` (a ``TextMessage`` from ``asked``) or ``input`` (``by``, a
            ``UserProxyAgent``, asked inside its turn: the answer is that turn's input).
        question: What was asked (the asking message's text).
        created_at: Unix time the run stopped to wait.
    """

    request_id: str
    asked: str
    by: str | None = None
    kind: Literal["handoff", "reply", "input"] = "reply"
    question: str = ""
    created_at: float


class PendingRequestInfo(HumanRequest):
    """A human request (``flowlib.teams.HumanRequest``) a stored run waits for, with the
    run's id, as ``CheckpointStore.list_pending`` lists it (read from the run state in the
    stopped run's latest record, ``bookkeeping["run"]``; see docs/state.md, "Human
    requests").

    Attributes:
        run_id: The run waiting.
        request_id: The request's id (the answer names it).
        asked: Who is asked (e.g. ``"user"``).
        by: The participant that asked (None: not recorded).
        kind: ``handoff`` or ``reply`` (how the answer is delivered), or ``input``: a
            participant asked inside its turn, and the answer is that turn's input.
        question: What was asked.
        created_at: Unix time the run stopped to wait.
    """

    run_id: str


@runtime_checkable
class CheckpointStore(Protocol):
    """Where runs are checkpointed. Every method is a coroutine; stores are safe to share
    between concurrent runs (and, for SQLite and PostgreSQL, between processes).

    Errors are [`flowlib.errors.CheckpointError`][flowlib.errors.CheckpointError] (unknown run, a
    record out of order, a closed store); a failed call changes nothing. The shared
    checks and errors are in [`flowlib.checkpoint.rules`][flowlib.checkpoint.rules];
    [`flowlib.testing.check_checkpoint_store`][flowlib.testing.check_checkpoint_store]
    checks a store against the whole protocol.

    Optional: a ``url`` attribute, the URL that opens the same store in another process
    (through [`open_store`][flowlib.checkpoint.open_store] and the opener registered for
    its scheme), or None if the store lives in this process only. Batch and Ray workers
    reach a store object they were given through it.
    """

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run. Raises ``CheckpointError`` if ``run.run_id`` exists.

        With ``first`` (checkpoint 1 of the run, e.g. a fork's ``base`` record), the run
        and that record are stored in one transaction: both or neither. The run's
        ``turns``, ``stop_reason``, ``last_checkpoint`` and ``updated_at`` then come from
        ``first``; its status is ``run.status``."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        ...

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """Add ``record`` to its run and set the run's status, turns, stop reason and
        ``last_checkpoint``, atomically. ``record.checkpoint_id`` must be exactly
        ``last_checkpoint + 1``; anything else raises ``CheckpointConflictError`` (a
        second writer on one run). With ``lease_owner``, the append is refused with
        ``RunLeaseError`` unless that owner holds an unexpired lease on the run (checked
        in the same transaction)."""
        ...

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease for ``ttl`` seconds, in one conditional write: granted
        when nobody holds it, ``owner`` holds it already, or the holder's lease has
        expired (a take-over). The run need not exist yet. Raises ``RunLeaseError``
        naming the holder and its expiry otherwise."""
        ...

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease to ``ttl`` seconds from now. Raises ``RunLeaseError``
        if ``owner`` no longer holds it (it expired and another executor took it)."""
        ...

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        ...

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        ...

    async def records(self, run_id: str, *, upto: int | None = None) -> Sequence[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""
        ...

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """The run's state at checkpoint ``upto`` (default: its last), as
        ``fold(await records(run_id, upto=upto))`` gives it; the SQL stores read the
        newest snapshot at or before ``upto`` and only the records after it, so the time
        does not grow with the run's length. Raises ``CheckpointError`` like
        ``records``."""
        ...

    async def list_runs(
        self,
        *,
        status: RunStatus | Sequence[RunStatus] | None = None,
        updated_since: float | None = None,
        flow: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Sequence[RunRecord]:
        """The runs, newest first (by ``created_at``, then ``run_id``).

        Args:
            status: Only runs with this status (or one of these).
            updated_since: Only runs updated at or after this unix time.
            flow: Only runs of this team class (``team_type``) or graph signature.
            limit: At most this many runs.
            cursor: Only the runs listed after the run whose ``RunRecord.cursor`` this
                is (the next page: ``cursor=page[-1].cursor``).

        Raises:
            CheckpointArgumentError: A filter is malformed (an unknown status, a limit
                below 1, a cursor not made by ``RunRecord.cursor``).
        """
        ...

    async def history(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The run's checkpoints, oldest first. Raises ``CheckpointError`` if unknown."""
        ...

    async def list_pending(self) -> Sequence[PendingRequestInfo]:
        """Every human request the store's stopped runs wait for (newest run first, each
        run's requests in the order asked), read from each stopped run's latest run state.
        Raises ``CheckpointError`` naming the run if a stored request is unreadable."""
        ...

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record (the
        thread stays whole; the folded checkpoints can no longer be forked from).
        Returns how many records were folded away."""
        ...

    async def delete(self, run_id: str) -> None:
        """Remove the run and all its records (no error if unknown)."""
        ...

    async def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""
        ...


class FoldedRun(BaseModel):
    """A run's state at one checkpoint: what its records add up to.

    Attributes:
        run_id: The run the records belong to.
        messages: The whole thread (dumped messages), in order.
        message_nodes: For each message, the node that published it (None: task).
        bookkeeping: The executor's bookkeeping from the newest record that had one.
        participants: Every participant's full state (participants never recorded are
            absent).
        turn: Agent turns run so far.
        last_checkpoint: The newest folded record's ``checkpoint_id`` (0: no records).
        last_kind: The newest folded record's kind (None: no records).
        stop_reason: The newest record's stop reason (a ``stop`` record), else None.
    """

    run_id: str
    messages: list[dict[str, Any]] = Field(default_factory=list)
    message_nodes: list[str | None] = Field(default_factory=list)
    bookkeeping: dict[str, Any] = Field(default_factory=dict)
    participants: dict[str, Any] = Field(default_factory=dict)
    turn: int = 0
    last_checkpoint: int = 0
    last_kind: StepKind | None = None
    stop_reason: str | None = None
