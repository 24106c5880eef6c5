"""One conformance suite for every checkpoint store: in memory, SQLite and PostgreSQL.

The PostgreSQL store runs against a real server started by the ``postgres_server``
fixture (tests/_postgres.py); SQLite against files in ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flowlib.checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    InMemoryCheckpointStore,
    Lease,
    PostgresCheckpointStore,
    RunRecord,
    SQLiteCheckpointStore,
    base_record,
    diff_state,
    fold,
)
from flowlib.checkpoint._sql import RECORD_COLUMNS, message_rows, record_row
from flowlib.errors import (
    CheckpointArgumentError,
    CheckpointConflictError,
    CheckpointError,
    RunLeaseError,
)


@dataclass
class Backend:
    kind: str
    where: str  # the file or DSN ("" for memory)
    opened: list[CheckpointStore] = field(default_factory=list)
    _memory: InMemoryCheckpointStore | None = None

    def open(self, **options: Any) -> CheckpointStore:
        """A store on the backend: a new one each time (memory: the same one)."""
        store: CheckpointStore
        if self.kind == "memory":
            if self._memory is None:
                self._memory = InMemoryCheckpointStore()
            store = self._memory
        elif self.kind == "sqlite":
            store = SQLiteCheckpointStore(self.where, **options)
        else:
            store = PostgresCheckpointStore(self.where, **options)
        self.opened.append(store)
        return store

    async def fill(self, store: CheckpointStore, run_id: str, start: int, stop: int) -> None:
        """Write checkpoints ``start..stop-1`` quickly: SQL stores get them in one bulk
        transaction (the same rows ``append`` writes), so a long run is cheap to set up."""
        if self.kind == "memory" or stop - start < 100:
            await _write(store, run_id, stop - start, start=start)
            return
        records = [_record(run_id, i) for i in range(start, stop)]
        rows = [record_row(r) for r in records]
        messages = [m for r in records for m in message_rows(r)]
        params = "?" if self.kind == "sqlite" else "%s"
        insert_record = (
            f"INSERT INTO flowlib_records ({RECORD_COLUMNS}) VALUES ({', '.join([params] * 11)})"
        )
        insert_message = f"INSERT INTO flowlib_messages VALUES ({', '.join([params] * 5)})"
        advance = f"UPDATE flowlib_runs SET last_checkpoint = {params} WHERE run_id = {params}"
        if self.kind == "sqlite":
            with sqlite3.connect(self.where) as conn:
                conn.executemany(insert_record, rows)
                conn.executemany(insert_message, messages)
                conn.execute(advance, (stop - 1, run_id))
        else:
            import psycopg

            with psycopg.connect(self.where) as conn, conn.cursor() as cur:
                cur.executemany(insert_record, rows)
                cur.executemany(insert_message, messages)
                cur.execute(advance, (stop - 1, run_id))

    def footprint(self, run_id: str) -> tuple[int, int]:
        """(rows, payload bytes) the backend holds for the run's records."""
        if self.kind == "memory":
            assert self._memory is not None
            records = self._memory._records[run_id]
            rows = sum(1 + len(r.messages) for r in records)
            size = sum(
                len(json.dumps([r.messages, r.bookkeeping, r.participants])) for r in records
            )
            return rows, size
        queries = [
            "SELECT count(*), coalesce(sum(length(bookkeeping) + length(participants)), 0) "
            "FROM flowlib_records WHERE run_id = {p}",
            "SELECT count(*), coalesce(sum(length(body)), 0) FROM flowlib_messages "
            "WHERE run_id = {p}",
        ]
        totals = [0, 0]
        if self.kind == "sqlite":
            with sqlite3.connect(self.where) as conn:
                for query in queries:
                    rows, size = conn.execute(query.format(p="?"), (run_id,)).fetchone()
                    totals[0] += rows
                    totals[1] += size
        else:
            import psycopg

            with psycopg.connect(self.where) as conn:
                for query in queries:
                    row = conn.execute(query.format(p="%s"), (run_id,)).fetchone()
                    assert row is not None
                    totals[0] += row[0]
                    totals[1] += row[1]
        return totals[0], totals[1]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "memory":
        where = ""
    elif request.param == "sqlite":
        where = str(tmp_path / "runs.db")
    else:
        where = request.getfixturevalue("postgres_dsn")
    backend = Backend(request.param, where)
    try:
        yield backend
    finally:
        for store in backend.opened:
            await store.close()


def _run(run_id: str = "r1", created_at: float = 1.0) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        team_type="RoundRobinGroupChat",
        graph_signature="sig",
        graph={"nodes": ["a", "b"], "edges": [["a", "b"]]},
        state_version=1,
        created_at=created_at,
        updated_at=created_at,
        forked_from=("parent", 3),
        metadata={"task": "hello"},
    )


def _msg(text: str, source: str = "a") -> dict[str, Any]:
    return {"type": "TextMessage", "source": source, "content": text}


def _record(run_id: str, checkpoint_id: int, *, text: str | None = None) -> CheckpointRecord:
    """A record; with ``text``, its payload does not depend on ``checkpoint_id``."""
    cursor = len(text) if text else checkpoint_id
    text = text or f"m{checkpoint_id}"
    return CheckpointRecord(
        run_id=run_id,
        checkpoint_id=checkpoint_id,
        kind="start" if checkpoint_id == 1 else "turn",
        turn=checkpoint_id - 1,
        node=None if checkpoint_id == 1 else "a",
        created_at=float(checkpoint_id),
        messages=[_msg(text)],
        message_nodes=[None if checkpoint_id == 1 else "a"],
        bookkeeping={"ready": ["a"], "cursor": {"a": cursor}},
        participants={"a": {"update": {"ctx": {"append": [_msg(text)]}}}}
        if checkpoint_id > 1
        else {"a": {"set": {"ctx": [_msg(text)]}}},
    )


async def _write(store: CheckpointStore, run_id: str, count: int, start: int = 1) -> None:
    for checkpoint_id in range(start, start + count):
        await store.append(_record(run_id, checkpoint_id), status="running")


async def test_a_run_round_trips(backend: Backend) -> None:
    store = backend.open()
    assert isinstance(store, CheckpointStore)
    assert await store.get_run("r1") is None
    await store.create_run(_run())
    await _write(store, "r1", 3)
    stop = CheckpointRecord(
        run_id="r1", checkpoint_id=4, kind="stop", turn=2, created_at=9.0, stop_reason="done"
    )
    await store.append(stop, status="stopped")

    run = await store.get_run("r1")
    assert run is not None
    assert (run.status, run.turns, run.last_checkpoint, run.stop_reason) == (
        "stopped",
        2,
        4,
        "done",
    )
    assert run.updated_at == 9.0
    assert run.forked_from == ("parent", 3) and run.metadata == {"task": "hello"}
    assert run.graph == {"nodes": ["a", "b"], "edges": [["a", "b"]]}

    records = await store.records("r1")
    assert [r.checkpoint_id for r in records] == [1, 2, 3, 4]
    assert records[:3] == [_record("r1", i) for i in (1, 2, 3)]
    assert records[3] == stop
    assert [r.checkpoint_id for r in await store.records("r1", upto=2)] == [1, 2]

    folded = fold(records)
    assert [m["content"] for m in folded.messages] == ["m1", "m2", "m3"]
    assert folded.participants["a"] == {"ctx": [_msg("m1"), _msg("m2"), _msg("m3")]}

    history = await store.history("r1")
    assert [(h.checkpoint_id, h.kind, h.turn, h.node, h.message_count) for h in history] == [
        (1, "start", 0, None, 1),
        (2, "turn", 1, "a", 1),
        (3, "turn", 2, "a", 1),
        (4, "stop", 2, None, 0),
    ]
    assert history[3].stop_reason == "done"


async def test_list_runs_newest_first(backend: Backend) -> None:
    store = backend.open()
    for i, created in enumerate([3.0, 1.0, 2.0]):
        await store.create_run(_run(f"r{i}", created_at=created))
    assert [r.run_id for r in await store.list_runs()] == ["r0", "r2", "r1"]


async def test_a_record_reads_back_equal_as_json(backend: Backend) -> None:
    """What a team compares to settle an interrupted write: the stored record, read
    back, equals the written one as JSON (floats, text and nesting exactly)."""
    store = backend.open()
    await store.create_run(_run())
    record = _record("r1", 1).model_copy(
        update={
            "created_at": 1764069337.1234567,
            "messages": [{"content": 'é\u2028"x" 🙂', "n": 0.1 + 0.2, "big": 2**60, "no": None}],
            "message_nodes": [None],
            "bookkeeping": {"f": [1e-300, -0.5, 1.7976931348623157e308], "nested": {"a": [[]]}},
        }
    )
    await store.append(record, status="running")
    (back,) = await store.records("r1")
    assert back.model_dump(mode="json") == record.model_dump(mode="json")


async def test_refusals_change_nothing(backend: Backend) -> None:
    store = backend.open()
    await store.create_run(_run())
    await _write(store, "r1", 2)
    before = (await store.get_run("r1"), await store.records("r1"))

    with pytest.raises(CheckpointError, match="already exists"):
        await store.create_run(_run())
    for bad in (1, 2, 4, 7):  # a repeat, the last one again, a gap
        with pytest.raises(CheckpointConflictError, match=r"expected 3"):
            await store.append(_record("r1", bad), status="complete")
    with pytest.raises(CheckpointError, match="Unknown run `nope`") as unknown:
        await store.append(_record("nope", 1), status="running")
    assert not isinstance(unknown.value, CheckpointConflictError)
    with pytest.raises(CheckpointError, match="Unknown run"):
        await store.history("nope")
    with pytest.raises(CheckpointError, match="Unknown run"):
        await store.records("nope")
    with pytest.raises(CheckpointError, match="Unknown run"):
        await store.prune("nope", keep_last=1)
    for upto in (0, 3, -1):
        with pytest.raises(CheckpointArgumentError, match="no checkpoint"):
            await store.records("r1", upto=upto)
    with pytest.raises(CheckpointArgumentError, match="keep_last"):
        await store.prune("r1", keep_last=-1)

    assert (await store.get_run("r1"), await store.records("r1")) == before
    await store.append(_record("r1", 3), status="running")  # the right next id still works


async def test_prune_folds_old_records_into_a_base(backend: Backend) -> None:
    store = backend.open()
    await store.create_run(_run())
    await _write(store, "r1", 6)
    whole = fold(await store.records("r1"))

    assert await store.prune("r1", keep_last=2) == 3  # 1..4 became one base record
    history = await store.history("r1")
    assert [(h.checkpoint_id, h.kind) for h in history] == [(4, "base"), (5, "turn"), (6, "turn")]
    assert fold(await store.records("r1")) == whole
    assert fold(await store.records("r1", upto=4)) == fold((await store.records("r1"))[:1])
    with pytest.raises(CheckpointError, match="pruned"):
        await store.records("r1", upto=3)

    assert await store.prune("r1", keep_last=2) == 0  # nothing more to fold
    await store.append(_record("r1", 7), status="running")  # appends continue after a prune
    assert await store.prune("r1", keep_last=0) == 3
    assert [h.kind for h in await store.history("r1")] == ["base"]
    assert fold(await store.records("r1")).messages == [*whole.messages, _msg("m7")]


async def test_delete(backend: Backend) -> None:
    store = backend.open()
    await store.create_run(_run("r1"))
    await store.create_run(_run("r2"))
    await _write(store, "r1", 3)
    await _write(store, "r2", 1)
    await store.delete("r1")
    await store.delete("never")  # unknown: no error
    assert await store.get_run("r1") is None
    assert [r.run_id for r in await store.list_runs()] == ["r2"]
    if backend.kind != "memory":
        assert backend.footprint("r1") == (0, 0)
    await store.create_run(_run("r1"))  # the id can be reused
    assert await store.records("r1") == []
    assert len(await store.records("r2")) == 1


async def test_a_closed_store_refuses_calls(backend: Backend) -> None:
    store = backend.open()
    await store.create_run(_run())
    await store.close()
    await store.close()  # twice is fine
    with pytest.raises(CheckpointError, match="closed"):
        await store.get_run("r1")
    with pytest.raises(CheckpointError, match="closed"):
        await store.append(_record("r1", 1), status="running")


async def test_concurrent_appenders_one_wins_per_id(backend: Backend) -> None:
    """Several writers (separate stores, so separate connections) race for each id."""
    stores = [backend.open() for _ in range(4)]
    await stores[0].create_run(_run())
    for checkpoint_id in range(1, 6):
        outcomes = await asyncio.gather(
            *(
                s.append(_record("r1", checkpoint_id, text=f"w{i}"), status="running")
                for i, s in enumerate(stores)
            ),
            return_exceptions=True,
        )
        assert sum(o is None for o in outcomes) == 1, outcomes
        assert all(o is None or isinstance(o, CheckpointError) for o in outcomes)
    records = await stores[0].records("r1")
    assert [r.checkpoint_id for r in records] == [1, 2, 3, 4, 5]
    assert all(len(r.messages) == 1 for r in records)


async def test_fifty_concurrent_runs_on_one_store(backend: Backend) -> None:
    store = backend.open()

    async def one_run(n: int) -> None:
        await store.create_run(_run(f"run{n}", created_at=float(n)))
        for checkpoint_id in range(1, 11):
            record = _record(f"run{n}", checkpoint_id, text=f"{n}-{checkpoint_id}")
            await store.append(record, status="running")

    await asyncio.gather(*(one_run(n) for n in range(50)))
    runs = await store.list_runs()
    assert len(runs) == 50 and all(r.last_checkpoint == 10 for r in runs)
    for n in range(50):
        folded = fold(await store.records(f"run{n}"))
        assert [m["content"] for m in folded.messages] == [f"{n}-{i}" for i in range(1, 11)]


async def test_bytes_per_record_do_not_grow_with_the_run(backend: Backend) -> None:
    """The same record costs the same rows and bytes at checkpoint 10 and 10,000."""
    store = backend.open()
    await store.create_run(_run())
    deltas = []
    checkpoint_id = 1
    for target in (10, 10_000):
        await backend.fill(store, "r1", checkpoint_id, target)
        before = backend.footprint("r1")
        await store.append(_record("r1", target, text="same payload"), status="running")
        after = backend.footprint("r1")
        deltas.append((after[0] - before[0], after[1] - before[1]))
        checkpoint_id = target + 1
    assert deltas[0] == deltas[1]
    assert deltas[0][0] == 2  # one record row, one message row
    assert 0 < deltas[0][1] < 400


async def test_a_reopened_store_sees_everything(backend: Backend) -> None:
    if backend.kind == "memory":
        pytest.skip("an in-memory store is gone with its process")
    store = backend.open()
    await store.create_run(_run())
    await _write(store, "r1", 5)
    expected = (await store.get_run("r1"), await store.records("r1"))
    await store.close()
    again = backend.open()
    assert (await again.get_run("r1"), await again.records("r1")) == expected
    await _write(again, "r1", 1, start=6)
    assert len(await again.history("r1")) == 6


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from flowlib.checkpoint import CheckpointRecord, SQLiteCheckpointStore
    from flowlib.errors import CheckpointError

    async def main(path, name):
        store = SQLiteCheckpointStore(path)
        won = []
        for checkpoint_id in range(1, 41):
            while True:  # wait until the previous id is written, then race for this one
                run = await store.get_run("shared")
                if run.last_checkpoint >= checkpoint_id - 1:
                    break
                await asyncio.sleep(0.001)
            record = CheckpointRecord(
                run_id="shared", checkpoint_id=checkpoint_id, kind="turn", turn=checkpoint_id,
                created_at=0.0, messages=[{"from": name}], message_nodes=[name],
            )
            try:
                await store.append(record, status="running")
                won.append(checkpoint_id)
            except CheckpointError:
                pass
        await store.close()
        print(" ".join(map(str, won)))

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_sqlite_is_safe_for_several_processes(tmp_path: Path) -> None:
    """Four processes race to append the same ids to one run: one wins each id."""
    path = str(tmp_path / "shared.db")
    store = SQLiteCheckpointStore(path)
    await store.create_run(_run("shared"))
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _WRITER,
            path,
            f"p{i}",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    outputs = [await p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outputs]
    won = [int(x) for out, _ in outputs for x in out.split()]
    assert sorted(won) == list(range(1, 41))  # every id written exactly once
    records = await store.records("shared")
    assert [r.checkpoint_id for r in records] == list(range(1, 41))
    winners = {int(x): f"p{i}" for i, (out, _) in enumerate(outputs) for x in out.split()}
    assert all(r.message_nodes == [winners[r.checkpoint_id]] for r in records)
    await store.close()


async def test_sqlite_path_errors_are_checkpoint_errors(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "missing-dir" / "runs.db")
    with pytest.raises(CheckpointError, match="missing-dir"):
        await store.list_runs()
    await store.close()
    with pytest.raises(CheckpointArgumentError, match="path"):
        SQLiteCheckpointStore(42)  # type: ignore[arg-type]


async def test_postgres_connection_errors_are_checkpoint_errors() -> None:
    store = PostgresCheckpointStore(
        "postgresql://nobody:secret@127.0.0.1:1/none", connect_timeout=1.0
    )
    with pytest.raises(CheckpointError) as caught:
        await store.list_runs()
    assert "secret" not in str(caught.value)
    await store.close()


def test_diff_state_is_what_records_carry() -> None:
    """The helper records above use the patch format diff_state makes."""
    assert (
        diff_state({"ctx": [_msg("m1")]}, {"ctx": [_msg("m1"), _msg("m2")]})
        == (_record("r", 2).participants["a"])
    )


# --- leases ------------------------------------------------------------------------------


async def _until_expired(lease: Lease) -> None:
    while time.time() <= lease.expires_at:
        await asyncio.sleep(0.01)


async def test_a_lease_is_granted_to_one_owner_until_it_expires(backend: Backend) -> None:
    store = backend.open()
    assert await store.get_lease("new") is None
    held = await store.acquire_lease("new", "w1", ttl=60)  # no run row yet: a new run
    assert (held.run_id, held.owner) == ("new", "w1")
    assert time.time() + 50 < held.expires_at <= time.time() + 60
    assert await store.get_lease("new") == held

    with pytest.raises(RunLeaseError, match=r"`w1`") as refused:
        await store.acquire_lease("new", "w2", ttl=60)
    assert isinstance(refused.value, CheckpointConflictError)
    assert (refused.value.run_id, refused.value.holder) == ("new", "w1")
    assert refused.value.expires_at == pytest.approx(held.expires_at)
    assert await store.get_lease("new") == held  # the refusal changed nothing

    again = await store.acquire_lease("new", "w1", ttl=120)  # the holder itself: extended
    assert again.owner == "w1" and again.expires_at > held.expires_at

    await store.create_run(_run("new"))
    run = await store.get_run("new")
    assert run is not None
    assert (run.lease_owner, run.lease_expires_at) == ("w1", pytest.approx(again.expires_at))
    (listed,) = await store.list_runs()
    assert (listed.lease_owner, listed.lease_expires_at) == (run.lease_owner, run.lease_expires_at)


async def test_an_expired_lease_is_taken_over_and_its_old_owner_is_refused(
    backend: Backend,
) -> None:
    store = backend.open()
    await store.create_run(_run())
    old = await store.acquire_lease("r1", "dead", ttl=0.05)
    await store.append(_record("r1", 1), status="running", lease_owner="dead")
    await _until_expired(old)
    # An expired lease still names its owner until someone takes it over ...
    assert await store.get_lease("r1") == old
    with pytest.raises(RunLeaseError, match="expired"):
        await store.append(_record("r1", 2), status="running", lease_owner="dead")

    new = await store.acquire_lease("r1", "alive", ttl=60)
    assert (await store.get_lease("r1")) == new
    with pytest.raises(RunLeaseError, match=r"held by `alive`") as lost:
        await store.renew_lease("r1", "dead", ttl=60)
    assert lost.value.holder == "alive"
    with pytest.raises(RunLeaseError, match=r"held by `alive`"):
        await store.append(_record("r1", 2), status="running", lease_owner="dead")
    await store.release_lease("r1", "dead")  # not the holder: a no-op
    assert await store.get_lease("r1") == new
    assert [r.checkpoint_id for r in await store.records("r1")] == [1]

    await store.append(_record("r1", 2), status="running", lease_owner="alive")
    renewed = await store.renew_lease("r1", "alive", ttl=90)
    assert renewed.owner == "alive" and renewed.expires_at > new.expires_at
    await store.release_lease("r1", "alive")
    assert await store.get_lease("r1") is None
    run = await store.get_run("r1")
    assert run is not None and (run.lease_owner, run.lease_expires_at) == (None, None)
    with pytest.raises(RunLeaseError, match="nobody holds"):
        await store.renew_lease("r1", "alive", ttl=60)
    with pytest.raises(RunLeaseError, match="nobody holds"):
        await store.append(_record("r1", 3), status="running", lease_owner="alive")
    await store.append(_record("r1", 3), status="running")  # no owner given: unchecked
    assert [r.checkpoint_id for r in await store.records("r1")] == [1, 2, 3]


async def test_an_owner_may_renew_its_expired_lease_until_taken_over(backend: Backend) -> None:
    store = backend.open()
    lease = await store.acquire_lease("r1", "slow", ttl=0.05)
    await _until_expired(lease)
    renewed = await store.renew_lease("r1", "slow", ttl=60)
    assert renewed.expires_at > time.time() + 50
    with pytest.raises(RunLeaseError):
        await store.acquire_lease("r1", "other", ttl=60)


async def test_concurrent_acquirers_one_wins(backend: Backend) -> None:
    """Several executors (separate stores, so separate connections) race for a free
    lease, then for an expired one: one wins each time. (The leases raced for last a
    minute, so a slow machine cannot expire a winner's lease during the race.)"""
    stores = [backend.open() for _ in range(4)]
    await stores[0].create_run(_run())
    for round_, run_id in enumerate(["r1", "r1", "fresh"]):
        if round_ == 1:  # the winner's process died: its lease expires
            held = await stores[0].get_lease(run_id)
            assert held is not None
            await stores[0].release_lease(run_id, held.owner)
            await _until_expired(await stores[0].acquire_lease(run_id, "dead", ttl=0.05))
        outcomes = await asyncio.gather(
            *(s.acquire_lease(run_id, f"w{round_}-{i}", ttl=60) for i, s in enumerate(stores)),
            return_exceptions=True,
        )
        won = [o for o in outcomes if isinstance(o, Lease)]
        assert len(won) == 1, outcomes
        assert all(isinstance(o, (Lease, RunLeaseError)) for o in outcomes)
        assert await stores[0].get_lease(run_id) == won[0]


async def test_a_deleted_run_loses_its_lease(backend: Backend) -> None:
    store = backend.open()
    await store.create_run(_run())
    await store.acquire_lease("r1", "w1", ttl=60)
    await store.delete("r1")
    assert await store.get_lease("r1") is None
    await store.acquire_lease("r1", "w2", ttl=60)


async def test_bad_lease_arguments_are_named(backend: Backend) -> None:
    store = backend.open()
    for ttl in (0, -1, float("nan"), float("inf"), True, "10"):
        with pytest.raises(CheckpointArgumentError, match="ttl"):
            await store.acquire_lease("r1", "w1", ttl=ttl)  # type: ignore[arg-type]
    for owner in ("", None, 3):
        with pytest.raises(CheckpointArgumentError, match="owner"):
            await store.acquire_lease("r1", owner, ttl=1)  # type: ignore[arg-type]
        with pytest.raises(CheckpointArgumentError, match="owner"):
            await store.release_lease("r1", owner)  # type: ignore[arg-type]
    with pytest.raises(CheckpointArgumentError, match="run_id"):
        await store.acquire_lease("", "w1", ttl=1)
    assert await store.get_lease("r1") is None


# --- a run created with its first record (atomic fork) -----------------------------------


async def test_a_run_and_its_first_record_are_stored_together(backend: Backend) -> None:
    store = backend.open()
    base = base_record(fold([_record("src", 1), _record("src", 2)]), run_id="fork", checkpoint_id=1)
    await store.create_run(_run("fork").model_copy(update={"status": "stopped"}), first=base)
    run = await store.get_run("fork")
    assert run is not None
    assert (run.status, run.last_checkpoint, run.turns, run.updated_at) == (
        "stopped",
        1,
        base.turn,
        base.created_at,
    )
    assert await store.records("fork") == [base]
    await store.append(_record("fork", 2), status="running")

    before = await store.list_runs()
    with pytest.raises(CheckpointError, match="already exists"):
        await store.create_run(_run("fork"), first=base)
    for wrong in (base.model_copy(update={"checkpoint_id": 2}), _record("other", 1)):
        with pytest.raises(CheckpointArgumentError, match="checkpoint 1 of run `new`"):
            await store.create_run(_run("new"), first=wrong)
    assert await store.list_runs() == before
    assert await store.get_run("new") is None


# --- load: snapshots ---------------------------------------------------------------------


def _snapshot_ids(backend: Backend, run_id: str) -> list[int]:
    query = "SELECT checkpoint_id FROM flowlib_snapshots WHERE run_id = {p} ORDER BY 1"
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.where) as conn:
            return [r[0] for r in conn.execute(query.format(p="?"), (run_id,))]
    import psycopg

    with psycopg.connect(backend.where) as conn:
        return [r[0] for r in conn.execute(query.format(p="%s"), (run_id,))]


async def test_load_equals_folding_every_record(backend: Backend) -> None:
    """``load`` (a snapshot every 3 checkpoints, and the records after it) gives what
    folding all records gives, at every checkpoint, before and after a prune."""
    store = backend.open(snapshot_every=3)
    await store.create_run(_run())
    await _write(store, "r1", 10)
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [9]  # the newest only
    for upto in (None, *range(1, 11)):
        expected = fold(await store.records("r1", upto=upto))
        assert await store.load("r1", upto=upto) == expected, upto
    folded = await store.load("r1")
    folded.messages.clear()  # the caller's copy: the store is not changed
    assert len((await store.load("r1")).messages) == 10

    assert await store.prune("r1", keep_last=4) == 5  # 1..6 folded into a base at 6
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [9]
    for upto in (None, 6, 8, 9, 10):
        assert await store.load("r1", upto=upto) == fold(await store.records("r1", upto=upto))
    await _write(store, "r1", 3, start=11)  # a snapshot at 12 replaces the one at 9
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == [12]
    assert await store.load("r1") == fold(await store.records("r1"))
    with pytest.raises(CheckpointError, match="pruned"):
        await store.load("r1", upto=5)
    with pytest.raises(CheckpointArgumentError, match="no checkpoint"):
        await store.load("r1", upto=14)
    with pytest.raises(CheckpointError, match="Unknown run"):
        await store.load("nope")
    await store.delete("r1")
    if backend.kind != "memory":
        assert _snapshot_ids(backend, "r1") == []


async def test_load_reads_only_what_follows_the_snapshot(backend: Backend) -> None:
    """A record before the newest snapshot is not read by ``load``: once it is gone
    from the table, ``load`` still gives the whole state."""
    if backend.kind == "memory":
        pytest.skip("the in-memory store folds its records in place")
    store = backend.open(snapshot_every=5)
    await store.create_run(_run())
    await _write(store, "r1", 7)
    whole = await store.load("r1")
    query = "DELETE FROM flowlib_records WHERE run_id = 'r1' AND checkpoint_id <= 5"
    if backend.kind == "sqlite":
        with sqlite3.connect(backend.where) as conn:
            conn.execute(query)
    else:
        import psycopg

        with psycopg.connect(backend.where) as conn:
            conn.execute(query)
    assert await store.load("r1") == whole


# --- listing -----------------------------------------------------------------------------


async def test_list_runs_filters_and_pages(backend: Backend) -> None:
    store = backend.open()
    for i in range(7):
        run = _run(f"r{i}", created_at=float(10 + i % 3))  # ties on created_at: by run_id
        run = run.model_copy(update={"team_type": "GraphFlow" if i % 2 else "RoundRobinGroupChat"})
        await store.create_run(run)
    await store.append(_record("r1", 1).model_copy(update={"created_at": 40.0}), status="complete")
    await store.append(_record("r4", 1).model_copy(update={"created_at": 50.0}), status="failed")
    everything = [r.run_id for r in await store.list_runs()]
    assert everything == ["r2", "r5", "r1", "r4", "r0", "r3", "r6"]

    async def ids(**filters: Any) -> list[str]:
        return [r.run_id for r in await store.list_runs(**filters)]

    assert await ids(status="complete") == ["r1"]
    assert await ids(status=["complete", "failed"]) == ["r1", "r4"]
    assert await ids(status="running") == ["r2", "r5", "r0", "r3", "r6"]
    assert await ids(updated_since=12.0) == ["r2", "r5", "r1", "r4"]
    assert await ids(flow="GraphFlow") == ["r5", "r1", "r3"]
    assert await ids(flow="sig") == everything  # the graph signature
    assert await ids(limit=2) == ["r2", "r5"]
    assert await ids(status="running", limit=2, flow="RoundRobinGroupChat") == ["r2", "r0"]

    pages, cursor = [], None
    while True:
        page = await store.list_runs(limit=3, cursor=cursor)
        if not page:
            break
        pages.append([r.run_id for r in page])
        cursor = page[-1].cursor
    assert pages == [everything[:3], everything[3:6], everything[6:]]
    assert await ids(cursor=(await store.get_run("r4")).cursor, status="running") == [
        "r0",
        "r3",
        "r6",
    ]  # type: ignore[union-attr]

    for bad in ({"status": "done"}, {"status": []}, {"limit": 0}, {"limit": 1.5}):
        with pytest.raises(CheckpointArgumentError, match=next(iter(bad))):
            await store.list_runs(**bad)  # type: ignore[arg-type]
    with pytest.raises(CheckpointArgumentError, match="cursor"):
        await store.list_runs(cursor="not a cursor")
    with pytest.raises(CheckpointArgumentError, match="updated_since"):
        await store.list_runs(updated_since="yesterday")  # type: ignore[arg-type]


# --- pending human requests ------------------------------------------------------------


def _asking(run_id: str, *, open_: bool, requests: list[dict[str, Any]]) -> CheckpointRecord:
    record = _record(run_id, 2)
    record.kind = "stop"
    record.bookkeeping = {**record.bookkeeping, "run": {"open": open_, "requests": requests}}
    return record


async def test_pending_requests_are_listed_by_the_store(backend: Backend) -> None:
    store = backend.open()
    asked = {
        "request_id": "q1",
        "asked": "user",
        "by": "Alice",
        "kind": "handoff",
        "question": "Which train?",
        "created_at": 5.0,
    }
    cases = [
        ("waits", "stopped", False, [asked]),
        ("interrupted", "stopped", True, [asked]),  # open: resumed, not answered
        ("running", "running", False, [asked]),
        ("answered", "stopped", False, []),
    ]
    for index, (run_id, status, open_, requests) in enumerate(cases):
        await store.create_run(_run(run_id, created_at=float(index)))
        await _write(store, run_id, 1)
        await store.append(_asking(run_id, open_=open_, requests=requests), status=status)  # type: ignore[arg-type]
    listed = await backend.open().list_pending()  # another store object (process) reads it
    assert [
        (p.run_id, p.request_id, p.asked, p.by, p.kind, p.question, p.created_at) for p in listed
    ] == [("waits", "q1", "user", "Alice", "handoff", "Which train?", 5.0)]
    await store.create_run(_run("bad", created_at=9.0))
    await _write(store, "bad", 1)
    await store.append(_asking("bad", open_=False, requests=[{"asked": 3}]), status="stopped")
    with pytest.raises(CheckpointError, match=r"`bad`.*requests"):
        await store.list_pending()
