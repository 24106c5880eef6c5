"""Checks and updates every store shares, so the stores agree on what they refuse."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from ..errors import (
    CheckpointArgumentError,
    CheckpointConflictError,
    CheckpointError,
    RunLeaseError,
)
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    CheckpointStore,
    FoldedRun,
    Lease,
    PendingRequestInfo,
    RunRecord,
    RunStatus,
)

__all__ = [
    "SNAPSHOT_EVERY",
    "RunFilter",
    "check_consistent",
    "check_first",
    "check_keep_last",
    "check_last",
    "check_lease_args",
    "check_next",
    "check_owner",
    "check_snapshot_every",
    "check_upto",
    "closed_error",
    "conflict_error",
    "filter_sql",
    "first_run",
    "info_of",
    "lease_lost",
    "lease_refused",
    "pending_of",
    "run_filter",
    "unknown_run",
    "updated_run",
]


def closed_error(store: object) -> CheckpointError:
    return CheckpointError(
        f"{type(store).__name__} is closed; open a new store to read or write runs."
    )


def unknown_run(run_id: str) -> CheckpointError:
    return CheckpointError(
        f"Unknown run `{run_id}`: no such run in this store (see `store.list_runs()`)."
    )


def check_next(run: RunRecord, record: CheckpointRecord) -> None:
    """Refuse a record that is not exactly the run's next checkpoint."""
    if record.checkpoint_id != run.last_checkpoint + 1:
        raise conflict_error(run, record)


def conflict_error(run: RunRecord, record: CheckpointRecord) -> CheckpointConflictError:
    """The refusal of ``record``, which does not follow ``run``'s last checkpoint."""
    expected = run.last_checkpoint + 1
    return CheckpointConflictError(
        f"Run `{run.run_id}`: checkpoint {record.checkpoint_id} cannot follow "
        f"{run.last_checkpoint} (expected {expected}). Another writer has advanced the "
        "run, or a record was skipped; resume from the store instead of writing on."
    )


def updated_run(run: RunRecord, record: CheckpointRecord, status: RunStatus) -> RunRecord:
    """The run after ``record`` was appended with ``status``."""
    return run.model_copy(
        update={
            "status": status,
            "turns": record.turn,
            "stop_reason": record.stop_reason,
            "last_checkpoint": record.checkpoint_id,
            "updated_at": record.created_at,
        }
    )


def check_keep_last(keep_last: object) -> int:
    if type(keep_last) is not int or keep_last < 0:
        raise CheckpointArgumentError(
            f"`keep_last` must be an int >= 0 (the newest records to keep), got {keep_last!r}."
        )
    return keep_last


def info_of(record: CheckpointRecord) -> CheckpointInfo:
    return CheckpointInfo(
        checkpoint_id=record.checkpoint_id,
        kind=record.kind,
        turn=record.turn,
        node=record.node,
        stop_reason=record.stop_reason,
        created_at=record.created_at,
        message_count=len(record.messages),
    )


def check_upto(run_id: str, first: int, last: int, upto: int) -> None:
    """Refuse a checkpoint that does not exist or was pruned into a ``base`` record
    (``first``/``last``: the oldest and newest ids the run still has; 0 if none)."""
    if type(upto) is not int or upto < 1 or upto > last:
        raise CheckpointArgumentError(
            f"Run `{run_id}` has no checkpoint {upto!r} (its checkpoints are 1..{last})."
        )
    if upto < first:
        raise CheckpointError(
            f"Run `{run_id}`: checkpoint {upto} was pruned; the oldest left is {first}."
        )


def check_first(run: RunRecord, first: CheckpointRecord | None) -> None:
    """Refuse a ``first`` record that is not checkpoint 1 of ``run``."""
    if first is not None and (first.run_id != run.run_id or first.checkpoint_id != 1):
        raise CheckpointArgumentError(
            f"`first` must be checkpoint 1 of run `{run.run_id}`, got checkpoint "
            f"{first.checkpoint_id} of run `{first.run_id}`."
        )


def first_run(run: RunRecord, first: CheckpointRecord | None) -> RunRecord:
    """The run as stored by ``create_run(run, first=first)`` (without lease fields)."""
    run = run.model_copy(update={"lease_owner": None, "lease_expires_at": None})
    if first is None:
        return run
    return updated_run(run.model_copy(update={"last_checkpoint": 0}), first, run.status)


def check_owner(owner: object) -> str:
    if not isinstance(owner, str) or not owner:
        raise CheckpointArgumentError(
            f"A lease owner must be a non-empty string naming the executor, got {owner!r}."
        )
    return owner


def check_lease_args(run_id: object, owner: object, ttl: object) -> float:
    """Check a lease call's arguments; returns the lease's expiry (now + ``ttl``)."""
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


def _when(expires_at: float) -> str:
    left = expires_at - time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires_at))
    if left > 0:
        return f"until {stamp} ({left:.1f} s from now)"
    return f"until {stamp} ({-left:.1f} s ago)"


def lease_refused(run_id: str, owner: str, held: Lease) -> RunLeaseError:
    """``owner`` asked for the lease ``held`` holds, and it has not expired."""
    return RunLeaseError(
        f"Run `{run_id}` is being executed by `{held.owner}` (its lease runs "
        f"{_when(held.expires_at)}); `{owner}` may not execute it. Wait for that executor "
        "to stop, or for its lease to expire (a dead process) and take the run over then.",
        run_id=run_id,
        holder=held.owner,
        expires_at=held.expires_at,
    )


def lease_lost(run_id: str, owner: str, held: Lease | None, *, now: float) -> RunLeaseError:
    """``owner`` renewed or wrote under a lease it no longer holds (``held``: the
    lease as it is now)."""
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


SNAPSHOT_EVERY = 200
"""Records between two automatic snapshots of a run's state (see ``load``)."""


def check_snapshot_every(every: object) -> int:
    if type(every) is not int or every < 0:
        raise CheckpointArgumentError(
            f"`snapshot_every` must be an int >= 0 (records between two snapshots of a "
            f"run's state; 0: none), got {every!r}."
        )
    return every


@dataclass(frozen=True)
class RunFilter:
    """``list_runs``'s filters, checked."""

    statuses: tuple[str, ...] | None
    updated_since: float | None
    flow: str | None
    limit: int | None
    after: tuple[float, str] | None  # the cursor: (created_at, run_id) of the last run seen

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


def run_filter(
    status: object, updated_since: object, flow: object, limit: object, cursor: object
) -> RunFilter:
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


def filter_sql(filters: RunFilter, param: str) -> tuple[str, list[object]]:
    """The ``WHERE ... ORDER BY ... LIMIT`` of a filtered listing (``param``: the
    dialect's placeholder) and its parameters."""
    where: list[str] = []
    params: list[object] = []
    if filters.statuses is not None:
        where.append(f"r.status IN ({', '.join([param] * len(filters.statuses))})")
        params.extend(filters.statuses)
    if filters.updated_since is not None:
        where.append(f"r.updated_at >= {param}")
        params.append(filters.updated_since)
    if filters.flow is not None:
        where.append(f"(r.team_type = {param} OR r.graph_signature = {param})")
        params.extend([filters.flow, filters.flow])
    if filters.after is not None:
        where.append(f"(r.created_at < {param} OR (r.created_at = {param} AND r.run_id > {param}))")
        params.extend([filters.after[0], filters.after[0], filters.after[1]])
    sql = (
        " WHERE " + " AND ".join(where) if where else ""
    ) + " ORDER BY r.created_at DESC, r.run_id"
    if filters.limit is not None:
        sql += f" LIMIT {param}"
        params.append(filters.limit)
    return sql, params


_FIX = (
    "The row was edited or the store is damaged (a running writer never leaves it so); "
    "restore the store from a backup, or set the column back to match the records."
)


def check_last(run: RunRecord, newest: int) -> None:
    """Refuse a run row whose ``last_checkpoint`` is not its newest record's (``newest``:
    the highest stored checkpoint id): an edit, not another writer."""
    if newest != run.last_checkpoint:
        raise CheckpointError(
            f"Table `flowlib_runs`, run `{run.run_id}`: column `last_checkpoint` holds "
            f"{run.last_checkpoint}, but the run's newest record in `flowlib_records` is "
            f"checkpoint {newest}. {_FIX}"
        )


def check_consistent(run: RunRecord, folded: FoldedRun, upto: int, newest: int) -> None:
    """Refuse a run row that disagrees with its newest record (an edited ``turns`` or
    ``stop_reason``)."""
    where = f"Table `flowlib_runs`, run `{run.run_id}`"
    fix = _FIX
    check_last(run, newest)
    if upto != run.last_checkpoint or newest == 0:
        return
    # Each append sets these from the record it appends.
    for column, stored, recorded in (
        ("turns", run.turns, folded.turn),
        ("stop_reason", run.stop_reason, folded.stop_reason),
    ):
        if stored != recorded:
            raise CheckpointError(
                f"{where}: column `{column}` holds {stored!r}, but the run's newest record "
                f"(checkpoint {folded.last_checkpoint}) says {recorded!r}. {fix}"
            )


def _unreadable_requests(run: RunRecord, reason: object) -> CheckpointError:
    return CheckpointError(
        f"Run `{run.run_id}` checkpoint {run.last_checkpoint}: its pending human "
        f"requests (bookkeeping `run.requests`) are unreadable: {reason}"
    )


async def pending_of(store: CheckpointStore) -> list[PendingRequestInfo]:
    """``list_pending`` for every store: the requests in the run state
    (``bookkeeping["run"]``) of each stopped run whose run is not open (an open run was
    interrupted and is resumed, not answered)."""
    found: list[PendingRequestInfo] = []
    for run in await store.list_runs(status="stopped"):
        if run.last_checkpoint == 0:
            continue
        state = (await store.load(run.run_id)).bookkeeping.get("run")
        if state is None:
            continue

        if not isinstance(state, dict):
            raise _unreadable_requests(run, "the run state is not a mapping")
        if state.get("open", False):
            continue
        requests = state.get("requests", [])
        if not isinstance(requests, list):
            raise _unreadable_requests(run, "its `requests` is not a list")
        try:
            found.extend(
                PendingRequestInfo.model_validate({**request, "run_id": run.run_id})
                for request in requests
            )
        except (TypeError, ValueError) as exc:
            raise _unreadable_requests(run, exc) from exc
    return found
