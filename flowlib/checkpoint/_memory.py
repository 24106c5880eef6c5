"""A checkpoint store in process memory: for tests, and runs that need fork or resume
within one process."""

from __future__ import annotations

import time
from typing import TypeVar

from ..errors import CheckpointArgumentError
from ._fold import FoldedRun, fold
from ._types import (
    CheckpointInfo,
    CheckpointRecord,
    Lease,
    RunRecord,
    RunStatus,
)
from ._url import register_store_scheme
from .rules import (
    RunFilter,
    RunListing,
    check_acquire,
    check_first,
    check_lease_args,
    check_lease_held,
    check_next,
    check_owner,
    closed_error,
    first_run,
    info_of,
    lease_lost,
    pruned,
    records_upto,
    run_exists,
    unknown_run,
    updated_run,
)

__all__ = ["InMemoryCheckpointStore"]

_Model = TypeVar("_Model", CheckpointRecord, RunRecord, FoldedRun)


def _copy(model: _Model) -> _Model:
    """A deep copy through JSON in pydantic-core (several times faster than deepcopy)."""
    return type(model).model_validate_json(model.model_dump_json())


class InMemoryCheckpointStore(RunListing):
    """Keeps runs in a dict; gone when the process ends.

    Records are copied in and out, so neither the writer nor a reader can change what is
    stored. Safe for concurrent runs on one event loop (no call awaits halfway).

    Examples:
        >>> import asyncio
        >>> store = InMemoryCheckpointStore()
        >>> asyncio.run(store.list_runs())
        []
    """

    url: str | None = None
    """None: the store lives in this process only; no other process can open it."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._records: dict[str, list[CheckpointRecord]] = {}
        self._leases: dict[str, Lease] = {}
        self._closed = False

    def __repr__(self) -> str:
        return "InMemoryCheckpointStore()"

    def _check_open(self) -> None:
        if self._closed:
            raise closed_error(self)

    def _run(self, run_id: str) -> RunRecord:
        self._check_open()
        run = self._runs.get(run_id)
        if run is None:
            raise unknown_run(run_id)
        return run

    def _with_lease(self, run: RunRecord) -> RunRecord:
        lease = self._leases.get(run.run_id)
        return run.model_copy(
            update={
                "lease_owner": None if lease is None else lease.owner,
                "lease_expires_at": None if lease is None else lease.expires_at,
            }
        )

    async def create_run(self, run: RunRecord, *, first: CheckpointRecord | None = None) -> None:
        """Store a new run (with its first record, when given). Raises
        ``CheckpointError`` if ``run.run_id`` exists."""
        self._check_open()
        check_first(run, first)
        if run.run_id in self._runs:
            raise run_exists(run.run_id)
        self._runs[run.run_id] = _copy(first_run(run, first))
        self._records[run.run_id] = [] if first is None else [_copy(first)]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        self._check_open()
        run = self._runs.get(run_id)
        return None if run is None else self._with_lease(_copy(run))

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        """Add ``record`` as the run's next checkpoint and update the run."""
        run = self._run(record.run_id)
        if lease_owner is not None:
            check_owner(lease_owner)
            check_lease_held(
                record.run_id, lease_owner, self._leases.get(record.run_id), now=time.time()
            )
        check_next(run, record)
        self._records[record.run_id].append(_copy(record))
        self._runs[record.run_id] = updated_run(run, record, status)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Take the run's lease (see the protocol)."""
        self._check_open()
        expires_at = check_lease_args(run_id, owner, ttl)
        check_acquire(run_id, owner, self._leases.get(run_id), now=time.time())
        lease = Lease(run_id=run_id, owner=owner, expires_at=expires_at)
        self._leases[run_id] = lease
        return lease.model_copy()

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        """Extend ``owner``'s lease (see the protocol)."""
        self._check_open()
        expires_at = check_lease_args(run_id, owner, ttl)
        held = self._leases.get(run_id)
        if held is None or held.owner != owner:
            raise lease_lost(run_id, owner, held, now=time.time())
        lease = Lease(run_id=run_id, owner=owner, expires_at=expires_at)
        self._leases[run_id] = lease
        return lease.model_copy()

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op unless ``owner`` holds it)."""
        self._check_open()
        check_owner(owner)
        held = self._leases.get(run_id)
        if held is not None and held.owner == owner:
            del self._leases[run_id]

    async def get_lease(self, run_id: str) -> Lease | None:
        """The run's lease (expired or not), or None."""
        self._check_open()
        held = self._leases.get(run_id)
        return None if held is None else held.model_copy()

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        """The run's records in order, up to and including ``upto`` (default: all)."""
        self._run(run_id)
        return [_copy(r) for r in records_upto(run_id, self._records[run_id], upto)]

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        """The run's state at checkpoint ``upto`` (default: its last)."""
        self._run(run_id)
        records = records_upto(run_id, self._records[run_id], upto)
        # Folding shares parts with the stored records; the copy keeps them apart.
        return _copy(fold(records, run_id=run_id))

    async def select_runs(self, filters: RunFilter) -> list[RunRecord]:
        """The runs ``filters`` keeps (see ``RunListing``)."""
        self._check_open()
        return [self._with_lease(_copy(r)) for r in filters.select(list(self._runs.values()))]

    async def history(self, run_id: str) -> list[CheckpointInfo]:
        """The run's checkpoints, oldest first."""
        self._run(run_id)
        return [info_of(r) for r in self._records[run_id]]

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Fold all but the newest ``keep_last`` records into one ``base`` record; returns
        how many records were removed."""
        self._run(run_id)
        records = self._records[run_id]
        left = pruned(records, keep_last)
        if left is None:
            return 0
        self._records[run_id] = left
        return len(records) - len(left)

    async def delete(self, run_id: str) -> None:
        """Remove the run and its records (no error if unknown)."""
        self._check_open()
        self._runs.pop(run_id, None)
        self._records.pop(run_id, None)
        self._leases.pop(run_id, None)

    async def close(self) -> None:
        """Drop everything; the store cannot be used afterwards."""
        self._closed = True
        self._runs.clear()
        self._records.clear()
        self._leases.clear()


def _open_memory(url: str, *, create: bool) -> InMemoryCheckpointStore:
    """``memory://``: a new, empty store (``create`` does not matter)."""
    if url.partition("://")[2].strip("/"):
        raise CheckpointArgumentError(
            f"Store URL {url!r}: `memory://` takes no path (each one is a new, empty "
            "store in this process)."
        )
    return InMemoryCheckpointStore()


register_store_scheme("memory", _open_memory, example="memory://")
