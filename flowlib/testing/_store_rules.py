"""The checkpoint store conformance suite: every rule of the store protocol, checked
through the protocol only, against stores a caller makes.

The built-in stores' tests run it, and so can the tests of a store of your own (see
"Writing a checkpoint store" in docs/extending.md).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, NoReturn, get_args

from .._english import a
from ..checkpoint import (
    CheckpointRecord,
    CheckpointStore,
    Lease,
    RunRecord,
    base_record,
    fold,
    open_store,
)
from ..errors import (
    CheckpointArgumentError,
    CheckpointConflictError,
    CheckpointError,
    FlowlibError,
    RunLeaseError,
)

__all__ = [
    "STORE_RULES",
    "CheckpointStoreRuleError",
    "StoreRule",
    "check_checkpoint_store",
]

StoreRule = Literal[
    "round_trip",
    "newest_first",
    "exact_json",
    "refusals_change_nothing",
    "prune",
    "delete",
    "closed_store",
    "one_writer_per_checkpoint",
    "concurrent_runs",
    "reopened_store",
    "create_with_first_record",
    "load_equals_fold",
    "list_filters_and_pages",
    "pending_requests",
    "lease_one_owner",
    "lease_take_over",
    "lease_renew_expired",
    "lease_race",
    "lease_dies_with_run",
    "lease_arguments",
]
"""The name of one rule of the store protocol."""

STORE_RULES: tuple[StoreRule, ...] = get_args(StoreRule)
"""Every rule [`check_checkpoint_store`][flowlib.testing.check_checkpoint_store] checks, in
the order it checks them."""

_SAYS: dict[StoreRule, str] = {
    "round_trip": "a run and its records read back as written (get_run, records, history)",
    "newest_first": "list_runs lists runs newest first (by created_at, then run_id)",
    "exact_json": "a record reads back equal to the written one as JSON (floats, text, nesting)",
    "refusals_change_nothing": "a refused call raises the error the protocol names and "
    "changes nothing",
    "prune": "prune folds all but the newest records into one base record; the state stays whole",
    "delete": "delete removes a run, its records and its lease; the id can be used again",
    "closed_store": "a closed store refuses every call with CheckpointError; closing twice is fine",
    "one_writer_per_checkpoint": "of several writers racing for one checkpoint id, exactly "
    "one wins and the others get CheckpointError",
    "concurrent_runs": "fifty runs written at once on one store keep their own records",
    "reopened_store": "another handle on the store (its url reopened) sees everything and "
    "writes on",
    "create_with_first_record": "create_run(run, first=...) stores the run and its first "
    "record together, or neither",
    "load_equals_fold": "load(run, upto=n) equals folding records(run, upto=n), before and "
    "after a prune",
    "list_filters_and_pages": "list_runs filters by status, time and flow, pages by cursor, "
    "and refuses bad filters",
    "pending_requests": "list_pending lists the requests of stopped, not open runs",
    "lease_one_owner": "a lease is granted to one owner until it expires",
    "lease_take_over": "an expired lease is taken over, and its old owner is refused",
    "lease_renew_expired": "an owner may renew its expired lease until it is taken over",
    "lease_race": "of several executors racing for a free or expired lease, one wins",
    "lease_dies_with_run": "deleting a run deletes its lease",
    "lease_arguments": "bad lease arguments are refused with CheckpointArgumentError "
    "naming the argument",
}


class CheckpointStoreRuleError(FlowlibError, AssertionError):
    """A checkpoint store broke rules of the store protocol
    ([`check_checkpoint_store`][flowlib.testing.check_checkpoint_store]). The message names
    each broken rule and what the store did; ``except AssertionError`` catches it, so a
    test fails with it as with ``assert``.

    Attributes:
        rule: The first broken rule (one of
            [`STORE_RULES`][flowlib.testing.STORE_RULES]).
        broken: Every broken rule, each with what went wrong.
    """

    def __init__(self, broken: Sequence[tuple[StoreRule, str]]) -> None:
        self.rule: StoreRule = broken[0][0]
        self.broken: list[tuple[StoreRule, str]] = list(broken)
        lines = [
            f"The checkpoint store breaks {len(broken)} rule"
            f"{'' if len(broken) == 1 else 's'} of the store protocol:"
        ]
        lines += [f"- rule `{rule}` ({_SAYS[rule]}): {what}" for rule, what in broken]
        super().__init__("\n".join(lines))


class _Broken(FlowlibError, AssertionError):
    """What a rule found wrong (internal: becomes a line of the rule error)."""


MakeStore = Callable[[], CheckpointStore | Awaitable[CheckpointStore]]


async def check_checkpoint_store(
    make_store: MakeStore,
    *,
    rules: Iterable[StoreRule] | None = None,
    timeout: float = 60.0,
) -> None:
    """Check a checkpoint store against every rule of the store protocol.

    Each rule makes fresh stores with ``make_store()``, writes and reads runs through the
    [`CheckpointStore`][flowlib.checkpoint.CheckpointStore] methods only, and closes the
    stores it made. Rules about several handles on one store (racing writers, another
    process reading) open a second handle with
    [`open_store(store.url)`][flowlib.checkpoint.open_store] when the store has a ``url``
    (so its URL scheme is checked too), and share the store object otherwise.

    Args:
        make_store: Makes a new, empty store; called with no arguments, it may return
            the store or an awaitable of it. Stores it makes must not share runs.
        rules: Only these rules (default: every rule of
            [`STORE_RULES`][flowlib.testing.STORE_RULES], in that order).
        timeout: Seconds each rule may take; a rule that takes longer is broken (a
            store call that never returns).

    Raises:
        CheckpointStoreRuleError: The store broke rules; an ``AssertionError`` whose
            message names each broken rule, what it requires and what the store did.
        CheckpointArgumentError: ``rules`` names an unknown rule.

    Examples:
        ```python
        from flowlib.checkpoint import SQLiteCheckpointStore
        from flowlib.testing import check_checkpoint_store

        async def test_my_store(tmp_path):
            paths = iter(range(10_000))
            await check_checkpoint_store(
                lambda: SQLiteCheckpointStore(tmp_path / f"{next(paths)}.db")
            )
        ```
    """
    chosen: list[StoreRule] = list(STORE_RULES if rules is None else rules)
    unknown = [rule for rule in chosen if rule not in STORE_RULES]
    if unknown:
        raise CheckpointArgumentError(
            f"Unknown store rule(s) {', '.join(map(repr, unknown))}; the rules are "
            f"{', '.join(STORE_RULES)}."
        )
    broken: list[tuple[StoreRule, str]] = []
    for rule in chosen:
        what = await _run_rule(rule, make_store, timeout)
        if what is not None:
            broken.append((rule, what))
    if broken:
        raise CheckpointStoreRuleError(broken)


async def _run_rule(rule: StoreRule, make_store: MakeStore, timeout: float) -> str | None:
    """What broke ``rule`` (None: it holds)."""
    stores = _Stores(make_store)
    what: str | None = None
    try:
        await asyncio.wait_for(_RULES[rule](stores), timeout)
    except _Broken as exc:
        what = str(exc)
    except asyncio.TimeoutError:
        what = f"the rule did not finish within {timeout:g} s (a store call never returned)"
    except Exception as exc:  # the store raised where the rule did not expect it
        what = f"the store raised {type(exc).__name__}: {exc}"
    try:
        await stores.close_all()
    except Exception as exc:
        what = what or f"close() raised {type(exc).__name__}: {exc}"
    return what


class _Stores:
    """The stores one rule made (closed when it ends)."""

    def __init__(self, make_store: MakeStore) -> None:
        self._make = make_store
        self.opened: list[CheckpointStore] = []

    async def new(self) -> CheckpointStore:
        made = self._make()
        store = await made if inspect.isawaitable(made) else made
        self.opened.append(store)  # before the check: a wrong object is still closed
        if not isinstance(store, CheckpointStore):
            _fail(
                f"make_store() returned {a(type(store).__name__)}, which lacks methods of "
                "the CheckpointStore protocol"
            )
        return store

    def another(self, store: CheckpointStore) -> CheckpointStore:
        """Another handle on ``store``'s data: its url reopened, else the same object."""
        url = getattr(store, "url", None)
        if not isinstance(url, str):
            return store
        again = open_store(url)
        self.opened.append(again)
        return again

    async def close_all(self) -> None:
        for store in reversed(self.opened):
            await store.close()


# --- checking --------------------------------------------------------------------------


def _fail(what: str) -> NoReturn:
    raise _Broken(what)


def _check(holds: bool, what: str) -> None:
    if not holds:
        _fail(what)


def _same(actual: object, expected: object, what: str) -> None:
    if actual != expected:
        _fail(f"{what}: got {_show(actual)}, expected {_show(expected)}")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


async def _refused(
    call: Awaitable[object], error: type[BaseException], match: str, what: str
) -> BaseException:
    """Await ``call``, which must raise ``error`` with a message matching ``match``."""
    try:
        result = await call
    except error as exc:
        if not re.search(match, str(exc)):
            _fail(
                f"{what}: the {type(exc).__name__} says {str(exc)!r}, which does not match "
                f"{match!r}"
            )
        return exc
    except Exception as exc:
        _fail(f"{what}: raised {type(exc).__name__} ({exc}), expected {error.__name__}")
    _fail(f"{what}: returned {_show(result)} instead of raising {error.__name__}")


def _ids(records: Sequence[CheckpointRecord]) -> list[int]:
    return [r.checkpoint_id for r in records]


# --- the records the rules write -------------------------------------------------------


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


async def _until_expired(lease: Lease) -> None:
    while time.time() <= lease.expires_at:
        await asyncio.sleep(0.01)


# --- the rules -------------------------------------------------------------------------


async def _round_trip(stores: _Stores) -> None:
    store = await stores.new()
    _same(await store.get_run("r1"), None, "get_run of a run never created")
    await store.create_run(_run())
    await _write(store, "r1", 3)
    stop = CheckpointRecord(
        run_id="r1", checkpoint_id=4, kind="stop", turn=2, created_at=9.0, stop_reason="done"
    )
    await store.append(stop, status="stopped")

    run = await store.get_run("r1")
    if run is None:
        _fail("get_run returned None for a run created and appended to")
    _same(
        (run.status, run.turns, run.last_checkpoint, run.stop_reason, run.updated_at),
        ("stopped", 2, 4, "done", 9.0),
        "the run's (status, turns, last_checkpoint, stop_reason, updated_at) after "
        "appending checkpoints 1-4, the last a stop",
    )
    _same(
        (run.forked_from, run.metadata, run.graph, run.team_type, run.graph_signature),
        (("parent", 3), {"task": "hello"}, _run().graph, "RoundRobinGroupChat", "sig"),
        "the run's forked_from, metadata, graph, team_type and graph_signature",
    )

    records = await store.records("r1")
    _same(_ids(records), [1, 2, 3, 4], "the checkpoint ids records() returns after four appends")
    _same(list(records), [*(_record("r1", i) for i in (1, 2, 3)), stop], "the records read back")
    _same(_ids(await store.records("r1", upto=2)), [1, 2], "records(upto=2)")

    folded = fold(records)
    _same([m["content"] for m in folded.messages], ["m1", "m2", "m3"], "the folded thread")
    history = await store.history("r1")
    _same(
        [
            (h.checkpoint_id, h.kind, h.turn, h.node, h.message_count, h.stop_reason)
            for h in history
        ],
        [
            (1, "start", 0, None, 1, None),
            (2, "turn", 1, "a", 1, None),
            (3, "turn", 2, "a", 1, None),
            (4, "stop", 2, None, 0, "done"),
        ],
        "history()",
    )
    loaded = await store.load("r1")
    _same(loaded, fold(records), "load() of the run (the fold of its records)")


async def _newest_first(stores: _Stores) -> None:
    store = await stores.new()
    for i, created in enumerate([3.0, 1.0, 2.0, 2.0]):
        await store.create_run(_run(f"r{i}", created_at=created))
    _same(
        [r.run_id for r in await store.list_runs()],
        ["r0", "r2", "r3", "r1"],
        "list_runs() of runs created at 3.0, 1.0, 2.0, 2.0 (ties by run_id)",
    )


async def _exact_json(stores: _Stores) -> None:
    store = await stores.new()
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
    back = await store.records("r1")
    _same(
        [r.model_dump(mode="json") for r in back],
        [record.model_dump(mode="json")],
        "the record read back, as JSON",
    )


async def _refusals_change_nothing(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await _write(store, "r1", 2)
    before = (await store.get_run("r1"), await store.records("r1"))

    await _refused(
        store.create_run(_run()), CheckpointError, "already exists", "create_run of an existing id"
    )
    for bad in (1, 2, 4, 7):  # a repeat, the last one again, a gap
        await _refused(
            store.append(_record("r1", bad), status="complete"),
            CheckpointConflictError,
            r"expected 3",
            f"append of checkpoint {bad} after 2",
        )
    unknown = await _refused(
        store.append(_record("nope", 1), status="running"),
        CheckpointError,
        "Unknown run `nope`",
        "append to an unknown run",
    )
    _check(
        not isinstance(unknown, CheckpointConflictError),
        "append to an unknown run raised CheckpointConflictError (a record out of order); "
        "an unknown run is a plain CheckpointError",
    )
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "history": lambda: store.history("nope"),
        "records": lambda: store.records("nope"),
        "load": lambda: store.load("nope"),
        "prune": lambda: store.prune("nope", keep_last=1),
    }
    for name, call in calls.items():
        await _refused(call(), CheckpointError, "Unknown run", f"{name} of an unknown run")
    for upto in (0, 3, -1):
        await _refused(
            store.records("r1", upto=upto),
            CheckpointArgumentError,
            "no checkpoint",
            f"records(upto={upto}) of a run with checkpoints 1..2",
        )
    await _refused(
        store.prune("r1", keep_last=-1), CheckpointArgumentError, "keep_last", "prune(keep_last=-1)"
    )
    _same(
        (await store.get_run("r1"), await store.records("r1")),
        before,
        "the run and its records after refused calls",
    )
    await store.append(_record("r1", 3), status="running")  # the right next id still works
    _same(_ids(await store.records("r1")), [1, 2, 3], "records after appending the next id")


async def _prune(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await _write(store, "r1", 6)
    whole = fold(await store.records("r1"))

    _same(await store.prune("r1", keep_last=2), 3, "prune(keep_last=2) of 6 records (folded away)")
    history = await store.history("r1")
    _same(
        [(h.checkpoint_id, h.kind) for h in history],
        [(4, "base"), (5, "turn"), (6, "turn")],
        "history() after prune(keep_last=2) of 6 records",
    )
    _same(fold(await store.records("r1")), whole, "the folded state after a prune")
    _same(
        fold(await store.records("r1", upto=4)),
        fold((await store.records("r1"))[:1]),
        "records(upto=4) after the prune (the base record)",
    )
    await _refused(
        store.records("r1", upto=3), CheckpointError, "pruned", "records(upto=3) after the prune"
    )
    _same(await store.prune("r1", keep_last=2), 0, "a second prune(keep_last=2)")
    await store.append(_record("r1", 7), status="running")  # appends continue after a prune
    _same(await store.prune("r1", keep_last=0), 3, "prune(keep_last=0) of 4 records")
    _same([h.kind for h in await store.history("r1")], ["base"], "history after prune(keep_last=0)")
    _same(
        fold(await store.records("r1")).messages,
        [*whole.messages, _msg("m7")],
        "the thread after pruning everything",
    )


async def _delete(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run("r1"))
    await store.create_run(_run("r2"))
    await _write(store, "r1", 3)
    await _write(store, "r2", 1)
    await store.delete("r1")
    await store.delete("never")  # unknown: no error
    _same(await store.get_run("r1"), None, "get_run of a deleted run")
    _same([r.run_id for r in await store.list_runs()], ["r2"], "list_runs after deleting r1")
    await store.create_run(_run("r1"))  # the id can be used again
    _same(await store.records("r1"), [], "records of a run created again after delete")
    _same(len(await store.records("r2")), 1, "records of the run not deleted")


async def _closed_store(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await store.close()
    await store.close()  # twice is fine
    await _refused(store.get_run("r1"), CheckpointError, "closed", "get_run on a closed store")
    await _refused(
        store.append(_record("r1", 1), status="running"),
        CheckpointError,
        "closed",
        "append on a closed store",
    )
    await _refused(store.list_runs(), CheckpointError, "closed", "list_runs on a closed store")


async def _one_writer_per_checkpoint(stores: _Stores) -> None:
    first = await stores.new()
    writers = [first, *(stores.another(first) for _ in range(3))]
    await first.create_run(_run())
    for checkpoint_id in range(1, 6):
        outcomes = await asyncio.gather(
            *(
                s.append(_record("r1", checkpoint_id, text=f"w{i}"), status="running")
                for i, s in enumerate(writers)
            ),
            return_exceptions=True,
        )
        _same(
            sum(o is None for o in outcomes),
            1,
            f"writers that appended checkpoint {checkpoint_id} (outcomes {outcomes!r})",
        )
        _check(
            all(o is None or isinstance(o, CheckpointError) for o in outcomes),
            f"a losing writer of checkpoint {checkpoint_id} raised something other than "
            f"CheckpointError: {outcomes!r}",
        )
    records = await first.records("r1")
    _same(_ids(records), [1, 2, 3, 4, 5], "the records after the races")
    _check(
        all(len(r.messages) == 1 for r in records),
        "a record holds the messages of several writers",
    )


async def _concurrent_runs(stores: _Stores) -> None:
    store = await stores.new()

    async def one_run(n: int) -> None:
        await store.create_run(_run(f"run{n}", created_at=float(n)))
        for checkpoint_id in range(1, 11):
            record = _record(f"run{n}", checkpoint_id, text=f"{n}-{checkpoint_id}")
            await store.append(record, status="running")

    await asyncio.gather(*(one_run(n) for n in range(50)))
    runs = await store.list_runs()
    _same(
        sorted((r.run_id, r.last_checkpoint) for r in runs),
        sorted((f"run{n}", 10) for n in range(50)),
        "the runs listed after fifty concurrent runs of ten checkpoints",
    )
    for n in range(50):
        folded = fold(await store.records(f"run{n}"))
        _same(
            [m["content"] for m in folded.messages],
            [f"{n}-{i}" for i in range(1, 11)],
            f"the thread of run{n}",
        )


async def _reopened_store(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await _write(store, "r1", 5)
    expected = (await store.get_run("r1"), await store.records("r1"))
    again = stores.another(store)
    if again is not store:
        await store.close()
    _same((await again.get_run("r1"), await again.records("r1")), expected, "what a reopen sees")
    await _write(again, "r1", 1, start=6)
    _same(len(await again.history("r1")), 6, "history after writing on through the reopen")


async def _create_with_first_record(stores: _Stores) -> None:
    store = await stores.new()
    base = base_record(fold([_record("src", 1), _record("src", 2)]), run_id="fork", checkpoint_id=1)
    await store.create_run(_run("fork").model_copy(update={"status": "stopped"}), first=base)
    run = await store.get_run("fork")
    if run is None:
        _fail("get_run returned None for a run created with its first record")
    _same(
        (run.status, run.last_checkpoint, run.turns, run.updated_at),
        ("stopped", 1, base.turn, base.created_at),
        "the run's (status, last_checkpoint, turns, updated_at) after create_run(first=...)",
    )
    _same(list(await store.records("fork")), [base], "the records of a run created with first")
    await store.append(_record("fork", 2), status="running")

    before = await store.list_runs()
    await _refused(
        store.create_run(_run("fork"), first=base),
        CheckpointError,
        "already exists",
        "create_run(first=...) of an existing id",
    )
    for wrong in (base.model_copy(update={"checkpoint_id": 2}), _record("other", 1)):
        await _refused(
            store.create_run(_run("new"), first=wrong),
            CheckpointArgumentError,
            "checkpoint 1 of run `new`",
            f"create_run(first=checkpoint {wrong.checkpoint_id} of run `{wrong.run_id}`)",
        )
    _same(await store.list_runs(), before, "the runs after refused create_run calls")
    _same(await store.get_run("new"), None, "get_run of a run whose create_run was refused")


async def _load_equals_fold(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await _write(store, "r1", 10)
    for upto in (None, *range(1, 11)):
        _same(
            await store.load("r1", upto=upto),
            fold(await store.records("r1", upto=upto)),
            f"load(upto={upto})",
        )
    folded = await store.load("r1")
    folded.messages.clear()  # the caller's copy: the store is not changed
    _same(len((await store.load("r1")).messages), 10, "the thread after a caller changed a load")

    _same(await store.prune("r1", keep_last=4), 5, "prune(keep_last=4) of 10 records")
    for upto in (None, 6, 8, 9, 10):
        _same(
            await store.load("r1", upto=upto),
            fold(await store.records("r1", upto=upto)),
            f"load(upto={upto}) after a prune",
        )
    await _write(store, "r1", 3, start=11)
    _same(await store.load("r1"), fold(await store.records("r1")), "load() after more appends")
    await _refused(store.load("r1", upto=5), CheckpointError, "pruned", "load of a pruned one")
    await _refused(
        store.load("r1", upto=14), CheckpointArgumentError, "no checkpoint", "load(upto=14)"
    )
    await store.delete("r1")
    await _refused(store.load("r1"), CheckpointError, "Unknown run", "load of a deleted run")


async def _list_filters_and_pages(stores: _Stores) -> None:
    store = await stores.new()
    for i in range(7):
        run = _run(f"r{i}", created_at=float(10 + i % 3))  # ties on created_at: by run_id
        run = run.model_copy(update={"team_type": "GraphFlow" if i % 2 else "RoundRobinGroupChat"})
        await store.create_run(run)
    await store.append(_record("r1", 1).model_copy(update={"created_at": 40.0}), status="complete")
    await store.append(_record("r4", 1).model_copy(update={"created_at": 50.0}), status="failed")
    everything = [r.run_id for r in await store.list_runs()]
    _same(everything, ["r2", "r5", "r1", "r4", "r0", "r3", "r6"], "list_runs()")

    async def ids(**filters: Any) -> list[str]:
        return [r.run_id for r in await store.list_runs(**filters)]

    for filters, expected in (
        ({"status": "complete"}, ["r1"]),
        ({"status": ["complete", "failed"]}, ["r1", "r4"]),
        ({"status": "running"}, ["r2", "r5", "r0", "r3", "r6"]),
        ({"updated_since": 12.0}, ["r2", "r5", "r1", "r4"]),
        ({"flow": "GraphFlow"}, ["r5", "r1", "r3"]),
        ({"flow": "sig"}, everything),  # the graph signature
        ({"limit": 2}, ["r2", "r5"]),
        ({"status": "running", "limit": 2, "flow": "RoundRobinGroupChat"}, ["r2", "r0"]),
    ):
        _same(await ids(**filters), expected, f"list_runs({filters})")

    pages: list[list[str]] = []
    cursor = None
    while len(pages) < 10:
        page = await store.list_runs(limit=3, cursor=cursor)
        if not page:
            break
        pages.append([r.run_id for r in page])
        cursor = page[-1].cursor
    _same(pages, [everything[:3], everything[3:6], everything[6:]], "pages of list_runs(limit=3)")
    r4 = await store.get_run("r4")
    if r4 is None:
        _fail("get_run returned None for a run created and appended to")
    _same(
        await ids(cursor=r4.cursor, status="running"),
        ["r0", "r3", "r6"],
        "list_runs(cursor=<r4's>, status='running')",
    )

    bad_filters: list[dict[str, Any]] = [
        {"status": "done"},
        {"status": []},
        {"limit": 0},
        {"limit": 1.5},
    ]
    for bad in bad_filters:
        await _refused(
            store.list_runs(**bad),
            CheckpointArgumentError,
            next(iter(bad)),
            f"list_runs({bad})",
        )
    await _refused(
        store.list_runs(cursor="not a cursor"),
        CheckpointArgumentError,
        "cursor",
        "list_runs(cursor='not a cursor')",
    )
    await _refused(
        store.list_runs(updated_since="yesterday"),  # type: ignore[arg-type]
        CheckpointArgumentError,
        "updated_since",
        "list_runs(updated_since='yesterday')",
    )


def _asking(run_id: str, *, open_: bool, requests: list[dict[str, Any]]) -> CheckpointRecord:
    record = _record(run_id, 2)
    record.kind = "stop"
    record.bookkeeping = {**record.bookkeeping, "run": {"open": open_, "requests": requests}}
    return record


async def _pending_requests(stores: _Stores) -> None:
    store = await stores.new()
    asked = {
        "request_id": "q1",
        "asked": "user",
        "by": "Alice",
        "kind": "handoff",
        "question": "Which train?",
        "created_at": 5.0,
    }
    # Asked inside a turn (a UserProxyAgent): pending while the run is open.
    in_turn = {**asked, "request_id": "q2", "asked": "Bob", "by": "Bob", "kind": "input"}
    cases: list[tuple[str, Any, bool, list[dict[str, Any]]]] = [
        ("waits", "stopped", False, [asked]),
        ("interrupted", "stopped", True, [asked]),  # open: resumed, not answered
        ("running", "running", False, [asked]),
        ("answered", "stopped", False, []),
        ("asks", "running", True, [in_turn]),
        ("asked", "stopped", True, [in_turn]),  # interrupted while asking
    ]
    for index, (run_id, status, open_, requests) in enumerate(cases):
        await store.create_run(_run(run_id, created_at=float(index)))
        await _write(store, run_id, 1)
        await store.append(_asking(run_id, open_=open_, requests=requests), status=status)
    listed = await stores.another(store).list_pending()  # another handle (process) reads it
    _same(
        sorted(
            (p.run_id, p.request_id, p.asked, p.by, p.kind, p.question, p.created_at)
            for p in listed
        ),
        [
            ("asked", "q2", "Bob", "Bob", "input", "Which train?", 5.0),
            ("asks", "q2", "Bob", "Bob", "input", "Which train?", 5.0),
            ("waits", "q1", "user", "Alice", "handoff", "Which train?", 5.0),
        ],
        "list_pending() of a waiting, an interrupted, a running and an answered run, and "
        "of a run asking inside a turn (running, and interrupted)",
    )
    await store.create_run(_run("bad", created_at=9.0))
    await _write(store, "bad", 1)
    await store.append(_asking("bad", open_=False, requests=[{"asked": 3}]), status="stopped")
    await _refused(
        store.list_pending(),
        CheckpointError,
        r"`bad`.*requests",
        "list_pending() with an unreadable request",
    )


async def _lease_one_owner(stores: _Stores) -> None:
    store = await stores.new()
    _same(await store.get_lease("new"), None, "get_lease of a run nobody leased")
    held = await store.acquire_lease("new", "w1", ttl=60)  # no run yet: a new run
    _same((held.run_id, held.owner), ("new", "w1"), "the lease acquire_lease returned")
    _check(
        time.time() + 50 < held.expires_at <= time.time() + 60,
        f"a lease taken for 60 s expires at {held.expires_at} (now {time.time()})",
    )
    _same(await store.get_lease("new"), held, "get_lease after acquire_lease")

    refused = await _refused(
        store.acquire_lease("new", "w2", ttl=60), RunLeaseError, "`w1`", "acquire by a 2nd owner"
    )
    _check(
        isinstance(refused, RunLeaseError)
        and (refused.run_id, refused.holder) == ("new", "w1")
        and refused.expires_at is not None
        and abs(refused.expires_at - held.expires_at) < 1e-3,
        "the RunLeaseError of a refused acquire names the run, the holder and its expiry",
    )
    _same(await store.get_lease("new"), held, "the lease after a refused acquire")

    again = await store.acquire_lease("new", "w1", ttl=120)  # the holder itself: extended
    _check(
        again.owner == "w1" and again.expires_at > held.expires_at,
        "acquire_lease by the holder itself extends its lease",
    )
    await store.create_run(_run("new"))
    run = await store.get_run("new")
    if run is None:
        _fail("get_run returned None for a created run")
    _check(
        run.lease_owner == "w1"
        and run.lease_expires_at is not None
        and abs(run.lease_expires_at - again.expires_at) < 1e-3,
        f"get_run's lease_owner/lease_expires_at are {run.lease_owner!r}/"
        f"{run.lease_expires_at!r}, expected the lease 'w1'/{again.expires_at!r}",
    )
    listed = await store.list_runs()
    _same(
        [(r.lease_owner, r.lease_expires_at) for r in listed],
        [(run.lease_owner, run.lease_expires_at)],
        "list_runs's lease fields",
    )


def _append_as(store: CheckpointStore, checkpoint: int, owner: str) -> Awaitable[None]:
    """``append`` of run ``r1``'s checkpoint ``checkpoint`` under ``owner``'s lease."""
    return store.append(_record("r1", checkpoint), status="running", lease_owner=owner)


async def _lease_take_over(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await store.acquire_lease("r1", "dead", ttl=60)
    await _append_as(store, 1, "dead")
    # Shortened only after the append: a busy machine can take longer than a short
    # lease between two calls, and the append under a valid lease must succeed.
    old = await store.renew_lease("r1", "dead", ttl=0.05)
    await _until_expired(old)
    # An expired lease still names its owner until someone takes it over ...
    _same(await store.get_lease("r1"), old, "get_lease of an expired lease")
    await _refused(
        _append_as(store, 2, "dead"),
        RunLeaseError,
        "expired",
        "append under an expired lease",
    )
    new = await store.acquire_lease("r1", "alive", ttl=60)
    _same(await store.get_lease("r1"), new, "get_lease after a take-over")
    lost = await _refused(
        store.renew_lease("r1", "dead", ttl=60),
        RunLeaseError,
        "held by `alive`",
        "renew by the owner whose lease was taken over",
    )
    _check(
        isinstance(lost, RunLeaseError) and lost.holder == "alive",
        "the RunLeaseError of a lost lease names its new holder",
    )
    await _refused(
        _append_as(store, 2, "dead"),
        RunLeaseError,
        "held by `alive`",
        "append by the owner whose lease was taken over",
    )
    await store.release_lease("r1", "dead")  # not the holder: a no-op
    _same(await store.get_lease("r1"), new, "the lease after a release by a non-holder")
    _same(_ids(await store.records("r1")), [1], "the records after refused appends")

    await _append_as(store, 2, "alive")
    renewed = await store.renew_lease("r1", "alive", ttl=90)
    _check(
        renewed.owner == "alive" and renewed.expires_at > new.expires_at,
        "renew_lease by the holder extends its lease",
    )
    await store.release_lease("r1", "alive")
    _same(await store.get_lease("r1"), None, "get_lease after the holder released it")
    run = await store.get_run("r1")
    _same(
        None if run is None else (run.lease_owner, run.lease_expires_at),
        (None, None),
        "get_run's lease fields after a release",
    )
    await _refused(
        store.renew_lease("r1", "alive", ttl=60),
        RunLeaseError,
        "nobody holds",
        "renew of a released lease",
    )
    await _refused(
        _append_as(store, 3, "alive"),
        RunLeaseError,
        "nobody holds",
        "append under a released lease",
    )
    await store.append(_record("r1", 3), status="running")  # no owner given: unchecked
    _same(_ids(await store.records("r1")), [1, 2, 3], "the records at the end")


async def _lease_renew_expired(stores: _Stores) -> None:
    store = await stores.new()
    lease = await store.acquire_lease("r1", "slow", ttl=0.05)
    await _until_expired(lease)
    renewed = await store.renew_lease("r1", "slow", ttl=60)
    _check(
        renewed.expires_at > time.time() + 50,
        "renew_lease of the owner's own expired lease extends it",
    )
    await _refused(
        store.acquire_lease("r1", "other", ttl=60),
        RunLeaseError,
        "slow",
        "acquire of a renewed lease by another owner",
    )


async def _lease_race(stores: _Stores) -> None:
    first = await stores.new()
    racers = [first, *(stores.another(first) for _ in range(3))]
    await first.create_run(_run())
    for round_, run_id in enumerate(["r1", "r1", "fresh"]):
        if round_ == 1:  # the winner's process died: its lease expires
            held = await first.get_lease(run_id)
            if held is None:
                _fail("get_lease returned None after a lease was won")
            await first.release_lease(run_id, held.owner)
            await _until_expired(await first.acquire_lease(run_id, "dead", ttl=0.05))
        outcomes = await asyncio.gather(
            *(s.acquire_lease(run_id, f"w{round_}-{i}", ttl=60) for i, s in enumerate(racers)),
            return_exceptions=True,
        )
        won = [o for o in outcomes if isinstance(o, Lease)]
        what = ("a free", "an expired", "a new run's")[round_]
        _same(len(won), 1, f"executors granted {what} lease in a race (outcomes {outcomes!r})")
        _check(
            all(isinstance(o, (Lease, RunLeaseError)) for o in outcomes),
            f"a loser of the race for {what} lease raised something other than "
            f"RunLeaseError: {outcomes!r}",
        )
        _same(await first.get_lease(run_id), won[0], f"get_lease after the race for {what} lease")


async def _lease_dies_with_run(stores: _Stores) -> None:
    store = await stores.new()
    await store.create_run(_run())
    await store.acquire_lease("r1", "w1", ttl=60)
    await store.delete("r1")
    _same(await store.get_lease("r1"), None, "get_lease of a deleted run")
    await store.acquire_lease("r1", "w2", ttl=60)


async def _lease_arguments(stores: _Stores) -> None:
    store = await stores.new()
    for ttl in (0, -1, float("nan"), float("inf"), True, "10"):
        await _refused(
            store.acquire_lease("r1", "w1", ttl=ttl),  # type: ignore[arg-type]
            CheckpointArgumentError,
            "ttl",
            f"acquire_lease(ttl={ttl!r})",
        )
    for owner in ("", None, 3):
        await _refused(
            store.acquire_lease("r1", owner, ttl=1),  # type: ignore[arg-type]
            CheckpointArgumentError,
            "owner",
            f"acquire_lease(owner={owner!r})",
        )
        await _refused(
            store.release_lease("r1", owner),  # type: ignore[arg-type]
            CheckpointArgumentError,
            "owner",
            f"release_lease(owner={owner!r})",
        )
    await _refused(
        store.acquire_lease("", "w1", ttl=1), CheckpointArgumentError, "run_id", "acquire('')"
    )
    _same(await store.get_lease("r1"), None, "the lease after refused calls")


_RULES: dict[StoreRule, Callable[[_Stores], Awaitable[None]]] = {
    "round_trip": _round_trip,
    "newest_first": _newest_first,
    "exact_json": _exact_json,
    "refusals_change_nothing": _refusals_change_nothing,
    "prune": _prune,
    "delete": _delete,
    "closed_store": _closed_store,
    "one_writer_per_checkpoint": _one_writer_per_checkpoint,
    "concurrent_runs": _concurrent_runs,
    "reopened_store": _reopened_store,
    "create_with_first_record": _create_with_first_record,
    "load_equals_fold": _load_equals_fold,
    "list_filters_and_pages": _list_filters_and_pages,
    "pending_requests": _pending_requests,
    "lease_one_owner": _lease_one_owner,
    "lease_take_over": _lease_take_over,
    "lease_renew_expired": _lease_renew_expired,
    "lease_race": _lease_race,
    "lease_dies_with_run": _lease_dies_with_run,
    "lease_arguments": _lease_arguments,
}
