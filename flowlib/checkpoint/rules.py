"""The rules every checkpoint store shares, as functions a store calls, so all stores
refuse the same calls with the same errors.

A store of your own (see "Writing a checkpoint store" in docs/extending.md) calls these
where the built-in stores do: they check arguments, build the errors the protocol names
([`CheckpointError`][flowlib.errors.CheckpointError],
[`CheckpointConflictError`][flowlib.errors.CheckpointConflictError],
[`RunLeaseError`][flowlib.errors.RunLeaseError],
[`CheckpointArgumentError`][flowlib.errors.CheckpointArgumentError]) and compute what an
append, a prune or a listing leaves. What is left to the store is where it keeps things
and how it makes each call atomic.
[`flowlib.testing.check_checkpoint_store`][flowlib.testing.check_checkpoint_store]
checks a store against these rules.

Examples:
    >>> from flowlib.checkpoint.rules import unknown_run
    >>> str(unknown_run("r9"))
    'Unknown run `r9`: no such run in this store (see `store.list_runs()`).'
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast, get_args

from ..errors import (
    CheckpointArgumentError,
    CheckpointConflictError,
    CheckpointError,
    RunLeaseError,
)
from ._fold import base_record, fold
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    Lease,
    PendingRequestInfo,
    RunRecord,
    RunStatus,
)

__all__ = [
    "RunFilter",
    "RunListing",
    "check_acquire",
    "check_first",
    "check_keep_last",
    "check_lease_args",
    "check_lease_held",
    "check_next",
    "check_owner",
    "check_upto",
    "closed_error",
    "conflict_error",
    "first_run",
    "info_of",
    "lease_lost",
    "lease_refused",
    "pending_of",
    "pruned",
    "records_upto",
    "run_exists",
    "run_filter",
    "unknown_run",
    "updated_run",
]


# --- runs and records ----------------------------------------------------------------


def closed_error(store: object) -> CheckpointError:
    """The error every call of a closed store raises."""
    return CheckpointError(
        f"{type(store).__name__} is closed; open a new store to read or write runs."
    )


def unknown_run(run_id: str) -> CheckpointError:
    """The error of a call naming a run the store does not have (``append``,
    ``records``, ``load``, ``history``, ``prune``)."""
    return CheckpointError(
        f"Unknown run `{run_id}`: no such run in this store (see `store.list_runs()`)."
    )


def run_exists(run_id: str) -> CheckpointError:
    """The error of ``create_run`` for an id the store has already."""
    return CheckpointError(f"Run `{run_id}` already exists; pick a new `run_id` or resume it.")


def check_next(run: RunRecord, record: CheckpointRecord) -> None:
    """Refuse a record that is not exactly the run's next checkpoint
    (``last_checkpoint + 1``), with ``CheckpointConflictError``."""
    if record.checkpoint_id != run.last_checkpoint + 1:
        raise conflict_error(run, record)


def conflict_error(run: RunRecord, record: CheckpointRecord) -> CheckpointConflictError:
    """The refusal of ``record``, which does not follow ``run``'s last checkpoint (for a
    store that finds out after a failed conditional write)."""
    expected = run.last_checkpoint + 1
    return CheckpointConflictError(
        f"Run `{run.run_id}`: checkpoint {record.checkpoint_id} cannot follow "
        f"{run.last_checkpoint} (expected {expected}). Another writer has advanced the "
        "run, or a record was skipped; resume from the store instead of writing on."
    )


def updated_run(run: RunRecord, record: CheckpointRecord, status: RunStatus) -> RunRecord:
    """The run after ``append(record, status=status)``: its status, turns, stop reason,
    ``last_checkpoint`` and ``updated_at`` come from the call."""
    return run.model_copy(
        update={
            "status": status,
            "turns": record.turn,
            "stop_reason": record.stop_reason,
            "last_checkpoint": record.checkpoint_id,
            "updated_at": record.created_at,
        }
    )


def check_first(run: RunRecord, first: CheckpointRecord | None) -> None:
    """Refuse a ``create_run(run, first=...)`` record that is not checkpoint 1 of
    ``run`` (``CheckpointArgumentError``)."""
    if first is not None and (first.run_id != run.run_id or first.checkpoint_id != 1):
        raise CheckpointArgumentError(
            f"`first` must be checkpoint 1 of run `{run.run_id}`, got checkpoint "
            f"{first.checkpoint_id} of run `{first.run_id}`."
        )


def first_run(run: RunRecord, first: CheckpointRecord | None) -> RunRecord:
    """The run as ``create_run(run, first=first)`` stores it: without lease fields, and
    with ``first``'s turns, stop reason, checkpoint id and time when given."""
    run = run.model_copy(update={"lease_owner": None, "lease_expires_at": None})
    if first is None:
        return run
    return updated_run(run.model_copy(update={"last_checkpoint": 0}), first, run.status)


def check_keep_last(keep_last: object) -> int:
    """``prune``'s ``keep_last``, checked (an int >= 0)."""
    if type(keep_last) is not int or keep_last < 0:
        raise CheckpointArgumentError(
            f"`keep_last` must be an int >= 0 (the newest records to keep), got {keep_last!r}."
        )
    return keep_last


def pruned(records: Sequence[CheckpointRecord], keep_last: int) -> list[CheckpointRecord] | None:
    """What ``prune(run_id, keep_last=keep_last)`` leaves of a run's ``records`` (all
    of them, in order): one ``base`` record folding all but the newest ``keep_last``,
    then those; None when there is nothing to fold (fewer than two records to fold).

    The number of records folded away is ``len(records) - len(result)``.
    """
    cut = len(records) - check_keep_last(keep_last)
    if cut <= 1:
        return None
    base = base_record(fold(records[:cut]), created_at=records[cut - 1].created_at)
    return [base, *records[cut:]]


_INFO_FROM_RECORD = tuple(name for name in CheckpointInfo.model_fields if name != "message_count")


def info_of(record: CheckpointRecord) -> CheckpointInfo:
    """The ``history`` line of a record: the record's fields that the line has, and how
    many messages it holds."""
    fields = {name: getattr(record, name) for name in _INFO_FROM_RECORD}
    return CheckpointInfo(**fields, message_count=len(record.messages))


def check_upto(run_id: str, first: int, last: int, upto: int) -> None:
    """Refuse a checkpoint that does not exist (``CheckpointArgumentError``) or was
    pruned into a ``base`` record (``CheckpointError``); ``first``/``last``: the oldest
    and newest ids the run still has (0 if none)."""
    if type(upto) is not int or upto < 1 or upto > last:
        raise CheckpointArgumentError(
            f"Run `{run_id}` has no checkpoint {upto!r} (its checkpoints are 1..{last})."
        )
    if upto < first:
        raise CheckpointError(
            f"Run `{run_id}`: checkpoint {upto} was pruned; the oldest left is {first}."
        )


def records_upto(
    run_id: str, records: Sequence[CheckpointRecord], upto: int | None
) -> list[CheckpointRecord]:
    """``records(run_id, upto=upto)`` of a store that has all the run's ``records`` in
    hand, in order: ``upto`` checked as ``check_upto`` does."""
    if upto is None:
        return list(records)
    first = records[0].checkpoint_id if records else 0
    check_upto(run_id, first, records[-1].checkpoint_id if records else 0, upto)
    return [r for r in records if r.checkpoint_id <= upto]


# --- leases --------------------------------------------------------------------------


def check_owner(owner: object) -> str:
    """A lease owner, checked (a non-empty string)."""
    if not isinstance(owner, str) or not owner:
        raise CheckpointArgumentError(
            f"A lease owner must be a non-empty string naming the executor, got {owner!r}."
        )
    return owner


def check_lease_args(run_id: object, owner: object, ttl: object) -> float:
    """Check ``acquire_lease``'s or ``renew_lease``'s arguments; returns the lease's
    expiry (now + ``ttl``)."""
    if not isinstance(run_id, str) or not run_id:
        raise CheckpointArgumentError(f"`run_id` must be a non-empty string, got {run_id!r}.")
    check_owner(owner)
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float))
        or not math.isfinite(ttl)
        or ttl <= 0
    ):
        raise CheckpointArgumentError(
            f"A lease's `ttl` must be a number of seconds > 0, got {ttl!r}."
        )
    return time.time() + float(ttl)


def check_acquire(run_id: str, owner: str, held: Lease | None, *, now: float) -> None:
    """Refuse ``acquire_lease`` when another owner holds an unexpired lease (``held``:
    the run's lease as it is now)."""
    if held is not None and held.owner != owner and held.expires_at > now:
        raise lease_refused(run_id, owner, held)


def check_lease_held(run_id: str, owner: str, held: Lease | None, *, now: float) -> None:
    """Refuse an ``append(..., lease_owner=owner)`` unless ``owner`` holds ``held``
    and it has not expired."""
    if held is None or held.owner != owner or held.expires_at <= now:
        raise lease_lost(run_id, owner, held, now=now)


def _when(expires_at: float) -> str:
    left = expires_at - time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires_at))
    if left > 0:
        return f"until {stamp} ({left:.1f} s from now)"
    return f"until {stamp} ({-left:.1f} s ago)"


def lease_refused(run_id: str, owner: str, held: Lease) -> RunLeaseError:
    """The error of ``owner`` asking for the lease ``held`` holds, not expired."""
    return RunLeaseError(
        f"Run `{run_id}` is being executed by `{held.owner}` (its lease runs "
        f"{_when(held.expires_at)}); `{owner}` may not execute it. Wait for that executor "
        "to stop, or for its lease to expire (a dead process) and take the run over then.",
        run_id=run_id,
        holder=held.owner,
        expires_at=held.expires_at,
    )


def lease_lost(run_id: str, owner: str, held: Lease | None, *, now: float) -> RunLeaseError:
    """The error of ``owner`` renewing or writing under a lease it no longer holds
    (``held``: the lease as it is now)."""
    if held is None:
        why = "nobody holds its lease (it was released or never taken)"
    elif held.owner != owner:
        why = f"its lease is held by `{held.owner}` {_when(held.expires_at)}"
    else:
        why = f"`{owner}`'s lease expired {now - held.expires_at:.1f} s ago"
    return RunLeaseError(
        f"Run `{run_id}`: `{owner}` no longer holds the run's lease: {why}. Stop executing "
        "it; the executor that holds the lease now owns the run.",
        run_id=run_id,
        holder=None if held is None else held.owner,
        expires_at=None if held is None else held.expires_at,
    )


# --- listing -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFilter:
    """``list_runs``'s filters, checked (see
    [`run_filter`][flowlib.checkpoint.rules.run_filter]).

    Attributes:
        statuses: Only runs with one of these statuses (None: any).
        updated_since: Only runs updated at or after this unix time.
        flow: Only runs of this team class or graph signature.
        limit: At most this many runs.
        after: The cursor: ``(created_at, run_id)`` of the last run of the previous page.
    """

    statuses: tuple[str, ...] | None
    updated_since: float | None
    flow: str | None
    limit: int | None
    after: tuple[float, str] | None

    def keeps(self, run: RunRecord) -> bool:
        """Whether ``run`` passes the filters and follows the cursor (not the limit)."""
        if self.statuses is not None and run.status not in self.statuses:
            return False
        if self.updated_since is not None and run.updated_at < self.updated_since:
            return False
        if self.flow is not None and self.flow not in (run.team_type, run.graph_signature):
            return False
        if self.after is not None:
            created, run_id = self.after
            return run.created_at < created or (run.created_at == created and run.run_id > run_id)
        return True

    def select(self, runs: Sequence[RunRecord]) -> list[RunRecord]:
        """The listing of ``runs`` (in any order): newest first (by ``created_at``, then
        ``run_id``), filtered, cut at the limit."""
        ordered = sorted(runs, key=lambda r: (-r.created_at, r.run_id))
        return [run for run in ordered if self.keeps(run)][: self.limit]


def run_filter(
    status: object, updated_since: object, flow: object, limit: object, cursor: object
) -> RunFilter:
    """``list_runs``'s arguments, checked (``CheckpointArgumentError`` naming the bad one)."""
    known = get_args(RunStatus)
    statuses: tuple[str, ...] | None = None
    if status is not None:
        given = (status,) if isinstance(status, str) else status
        if not isinstance(given, Sequence) or not given or any(s not in known for s in given):
            raise CheckpointArgumentError(
                f"`status` must be one of {', '.join(known)} (or a list of them), got {status!r}."
            )
        statuses = tuple(str(s) for s in given)
    if updated_since is not None and (
        isinstance(updated_since, bool) or not isinstance(updated_since, (int, float))
    ):
        raise CheckpointArgumentError(
            f"`updated_since` must be a unix time (seconds), got {updated_since!r}."
        )
    if flow is not None and not isinstance(flow, str):
        raise CheckpointArgumentError(
            f"`flow` must be a team class name or graph signature, got {flow!r}."
        )
    if limit is not None and (type(limit) is not int or limit < 1):
        raise CheckpointArgumentError(f"`limit` must be an int >= 1, got {limit!r}.")
    after = None
    if cursor is not None:
        created, sep, run_id = (
            str(cursor).partition("/") if isinstance(cursor, str) else ("", "", "")
        )
        try:
            after = (float(created), run_id)
        except ValueError:
            sep = ""
        if not sep:
            raise CheckpointArgumentError(
                f"`cursor` {cursor!r} is not a run's cursor; pass `runs[-1].cursor` of the "
                "previous page."
            )
    return RunFilter(
        statuses=statuses,
        updated_since=None if updated_since is None else float(updated_since),
        flow=flow,
        limit=limit,
        after=after,
    )


class RunListing(ABC):
    """``list_runs`` and ``list_pending`` written once, for a store to inherit: the store
    gives [`select_runs`][flowlib.checkpoint.rules.RunListing.select_runs], the listing
    of already checked filters, and ``list_runs`` checks its arguments with
    [`run_filter`][flowlib.checkpoint.rules.run_filter] before asking it;
    ``list_pending`` is [`pending_of`][flowlib.checkpoint.rules.pending_of].

    Examples:
        >>> class Runs(RunListing):
        ...     def __init__(self, runs):
        ...         self.runs = runs
        ...     async def select_runs(self, filters):
        ...         return filters.select(self.runs)
    """

    @abstractmethod
    async def select_runs(self, filters: RunFilter) -> list[RunRecord]:
        """The runs ``filters`` keeps, newest first (by ``created_at``, then ``run_id``),
        after its cursor, cut at its limit (``filters.select(runs)`` of all the runs)."""

    async def list_runs(
        self,
        *,
        status: RunStatus | Sequence[RunStatus] | None = None,
        updated_since: float | None = None,
        flow: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> list[RunRecord]:
        """The runs, newest first, filtered (see the protocol)."""
        return await self.select_runs(run_filter(status, updated_since, flow, limit, cursor))

    async def list_pending(self) -> list[PendingRequestInfo]:
        """See ``CheckpointStore.list_pending``."""
        return await pending_of(cast("CheckpointStore", self))


# --- pending human requests ----------------------------------------------------------


def _unreadable_requests(run: RunRecord, reason: object) -> CheckpointError:
    return CheckpointError(
        f"Run `{run.run_id}` checkpoint {run.last_checkpoint}: its pending human "
        f"requests (bookkeeping `run.requests`) are unreadable: {reason}"
    )


async def pending_of(store: CheckpointStore) -> list[PendingRequestInfo]:
    """``list_pending`` for any store, through its ``list_runs`` and ``load``: the
    requests in the run state (``bookkeeping["run"]``) of each stopped run whose run is
    not open, and the ``input`` requests of open runs (a participant was asking a person
    inside its turn when the run was interrupted, or its process is still waiting)."""
    found: list[PendingRequestInfo] = []
    for run in await store.list_runs(status=("stopped", "running")):
        if run.last_checkpoint == 0:
            continue
        state = (await store.load(run.run_id)).bookkeeping.get("run")
        if state is None:
            continue

        if not isinstance(state, dict):
            raise _unreadable_requests(run, "the run state is not a mapping")
        requests = state.get("requests", [])
        if not isinstance(requests, list):
            raise _unreadable_requests(run, "its `requests` is not a list")
        if state.get("open", False) or run.status == "running":
            requests = [r for r in requests if isinstance(r, dict) and r.get("kind") == "input"]
        try:
            found.extend(
                PendingRequestInfo.model_validate({**request, "run_id": run.run_id})
                for request in requests
            )
        except (TypeError, ValueError) as exc:
            raise _unreadable_requests(run, exc) from exc
    return found
