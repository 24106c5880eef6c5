"""The conformance suite can fail: stores each broken in one way fail
``check_checkpoint_store`` with an ``AssertionError`` naming the rule they break."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from flowlib.checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    FoldedRun,
    InMemoryCheckpointStore,
    Lease,
    RunRecord,
    RunStatus,
)
from flowlib.checkpoint.rules import RunFilter, RunListing
from flowlib.errors import CheckpointArgumentError
from flowlib.testing import (
    STORE_RULES,
    CheckpointStoreRuleError,
    StoreRule,
    check_checkpoint_store,
)


class LosesTheNewestRecord(InMemoryCheckpointStore):
    """Reads a run's records without its newest one (a lost last write)."""

    async def records(self, run_id: str, *, upto: int | None = None) -> list[CheckpointRecord]:
        return (await super().records(run_id, upto=upto))[:-1]


class AcceptsAnyCheckpoint(InMemoryCheckpointStore):
    """Stores a record whatever its checkpoint id (no second-writer check)."""

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        run = await self.get_run(record.run_id)
        if run is not None and record.checkpoint_id != run.last_checkpoint + 1:
            record = record.model_copy(update={"checkpoint_id": run.last_checkpoint + 1})
        await super().append(record, status=status, lease_owner=lease_owner)


class ListsOldestFirst(InMemoryCheckpointStore):
    async def list_runs(self, **filters: object) -> list[RunRecord]:  # type: ignore[override]
        return list(reversed(await super().list_runs(**filters)))  # type: ignore[arg-type]


class GrantsEveryLease(InMemoryCheckpointStore):
    """Grants a lease to whoever asks (no one-owner rule)."""

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        held = await self.get_lease(run_id)
        if held is not None:
            await self.release_lease(run_id, held.owner)
        return await super().acquire_lease(run_id, owner, ttl=ttl)


class SharesItsState(InMemoryCheckpointStore):
    """Hands out its own folded state, which a caller can then change."""

    def __init__(self) -> None:
        super().__init__()
        self._loaded: dict[str, FoldedRun] = {}

    async def load(self, run_id: str, *, upto: int | None = None) -> FoldedRun:
        if upto is None and run_id in self._loaded:
            return self._loaded[run_id]
        folded = await super().load(run_id, upto=upto)
        if upto is None:
            self._loaded[run_id] = folded
        return folded


class StaysOpen(InMemoryCheckpointStore):
    async def close(self) -> None:
        pass


class NeverAnswersHistory(InMemoryCheckpointStore):
    async def history(self, run_id: str) -> Sequence[object]:  # type: ignore[override]
        await asyncio.Event().wait()
        return []


class Slow(InMemoryCheckpointStore):
    """A correct store on a busy machine: every write and lease call takes 0.1 s."""

    async def append(
        self, record: CheckpointRecord, *, status: RunStatus, lease_owner: str | None = None
    ) -> None:
        await asyncio.sleep(0.1)
        await super().append(record, status=status, lease_owner=lease_owner)

    async def acquire_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        await asyncio.sleep(0.1)
        return await super().acquire_lease(run_id, owner, ttl=ttl)

    async def renew_lease(self, run_id: str, owner: str, *, ttl: float) -> Lease:
        await asyncio.sleep(0.1)
        return await super().renew_lease(run_id, owner, ttl=ttl)


async def _rule_error(
    store_class: type[CheckpointStore], **options: object
) -> CheckpointStoreRuleError:
    with pytest.raises(AssertionError) as caught:
        await check_checkpoint_store(store_class, **options)  # type: ignore[arg-type]
    assert isinstance(caught.value, CheckpointStoreRuleError)
    return caught.value


async def test_a_store_that_loses_the_newest_record_fails_naming_the_rule() -> None:
    error = await _rule_error(LosesTheNewestRecord)
    assert error.rule == "round_trip"
    message = str(error)
    assert "rule `round_trip`" in message
    assert "the checkpoint ids records() returns after four appends: got [1, 2, 3], " in message
    assert "expected [1, 2, 3, 4]" in message


@pytest.mark.parametrize(
    ("store_class", "rule", "says"),
    [
        (AcceptsAnyCheckpoint, "refusals_change_nothing", "append of checkpoint 1 after 2"),
        (AcceptsAnyCheckpoint, "one_writer_per_checkpoint", "writers that appended checkpoint 1"),
        (ListsOldestFirst, "newest_first", "list_runs() of runs created at"),
        (GrantsEveryLease, "lease_one_owner", "acquire by a 2nd owner: returned Lease"),
        (GrantsEveryLease, "lease_race", "executors granted a free lease in a race"),
        (SharesItsState, "load_equals_fold", "the thread after a caller changed a load"),
        (StaysOpen, "closed_store", "get_run on a closed store: returned"),
    ],
)
async def test_each_broken_store_fails_the_rule_it_breaks(
    store_class: type[CheckpointStore], rule: StoreRule, says: str
) -> None:
    error = await _rule_error(store_class)
    assert rule in [broken for broken, _ in error.broken]
    assert f"- rule `{rule}` " in str(error)
    assert says in dict(error.broken)[rule]


async def test_a_slow_but_correct_store_keeps_the_lease_rules() -> None:
    # The rules expire leases on purpose with short ttls; none may depend on two calls
    # coming within such a ttl (a whole CI run once failed lease_take_over that way).
    await check_checkpoint_store(Slow, rules=[r for r in STORE_RULES if r.startswith("lease")])


async def test_a_store_call_that_never_returns_breaks_its_rule_within_the_timeout() -> None:
    error = await _rule_error(NeverAnswersHistory, rules=["round_trip"], timeout=0.5)
    assert error.broken == [
        ("round_trip", "the rule did not finish within 0.5 s (a store call never returned)")
    ]


async def test_make_store_may_be_async_and_must_make_stores() -> None:
    async def make() -> CheckpointStore:
        return InMemoryCheckpointStore()

    await check_checkpoint_store(make, rules=["round_trip", "delete"])
    error = await _rule_error(object, rules=["delete"])  # type: ignore[arg-type]
    assert "make_store() returned an object" in str(error)
    with pytest.raises(CheckpointArgumentError, match="'nope'"):
        await check_checkpoint_store(InMemoryCheckpointStore, rules=["nope"])  # type: ignore[list-item]


def test_every_rule_has_a_sentence() -> None:
    error = CheckpointStoreRuleError([(rule, "x") for rule in STORE_RULES])
    assert len(str(error).splitlines()) == len(STORE_RULES) + 1


async def test_run_listing_checks_the_arguments_before_the_store_selects() -> None:
    """A store that inherits ``RunListing`` writes only ``select_runs``: ``list_runs``
    refuses bad filters before asking it, and hands it the checked filters."""

    def run(run_id: str, created_at: float, status: RunStatus) -> RunRecord:
        return RunRecord(
            run_id=run_id,
            team_type="T",
            graph_signature="sig",
            graph={},
            state_version=1,
            status=status,
            created_at=created_at,
            updated_at=created_at,
        )

    asked: list[RunFilter] = []
    runs = [run("a", 1.0, "complete"), run("b", 2.0, "failed"), run("c", 3.0, "complete")]

    class Listing(RunListing):
        async def select_runs(self, filters: RunFilter) -> list[RunRecord]:
            asked.append(filters)
            return filters.select(runs)

    listing = Listing()
    with pytest.raises(CheckpointArgumentError, match="`limit` must be an int >= 1"):
        await listing.list_runs(limit=0)
    with pytest.raises(CheckpointArgumentError, match="`status` must be one of"):
        await listing.list_runs(status="lost")  # type: ignore[arg-type]
    assert asked == []
    page = await listing.list_runs(status="complete", limit=1)
    assert [r.run_id for r in page] == ["c"]
    assert asked[0].statuses == ("complete",) and asked[0].limit == 1
    assert [r.run_id for r in await listing.list_runs(cursor=page[0].cursor)] == ["b", "a"]
    assert await listing.list_pending() == []  # no stopped or running run
