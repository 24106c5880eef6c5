"""``python -m bench.checkpointing``: what a checkpoint per turn costs, in time and bytes.

The shape is a two-agent loop (``A -> B -> A ...``, bounded by ``max_turns``): flowlib's
``RoundRobinGroupChat`` and LangGraph's ``StateGraph`` with two nodes and conditional
edges (as ``bench/peers/langgraph_impl.py`` builds its round robin). Every turn appends
one message of the same text (about 200 characters). The flowlib agents keep the texts
they have seen as their state (a growing list, like an assistant's model context); the
LangGraph state is a ``list[str]`` with an ``operator.add`` reducer (its lightest state).

Figures:

- **per-turn time** of a run of ``--turns`` turns, with no store and with each store;
  the *overhead* is the difference to the run without a store, per turn (best of
  ``--repeat`` runs: the machine may be shared). flowlib runs with ``durability="sync"``
  (a checkpoint written before the turn's message is streamed); LangGraph with
  ``durability="sync"`` too (the same promise; its default ``"async"`` writes while the
  next step runs, shown for information). SQLite is compared at equal durability:
  ``sqlite`` is WAL with ``synchronous=NORMAL`` (flowlib's default; LangGraph's
  connection is given the same pragma), ``sqlite-full`` is WAL with
  ``synchronous=FULL``, an fsync per commit (LangGraph's default; flowlib's
  ``synchronous="FULL"``).
- **bytes written per turn** at turn 10 and at turn 10,000: the payload bytes the
  store's tables gain over ten turns (flowlib: records and messages; LangGraph SQLite:
  ``checkpoints`` and ``writes``; LangGraph PostgreSQL: ``checkpoints``,
  ``checkpoint_blobs``, ``checkpoint_writes``), divided by ten. flowlib runs all 10,000
  turns; LangGraph starts from a thread that already holds 9,990 messages (running
  10,000 steps would write gigabytes: each of its checkpoints holds the whole list).

PostgreSQL: ``--postgres DSN``, or ``--postgres auto`` to start a throw-away server with
the test suite's helper (``tests/_postgres.py``: Debian's ``initdb``/``pg_ctl``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

TEXT = "x" * 180  # a short model reply
STATELESS = False  # --stateless: agents save a counter, not the texts they have seen
BIG_TURN = 10_000


def _reply(name: str, turn: int) -> str:
    return f"{name} turn {turn}: {TEXT}"


# --- flowlib -----------------------------------------------------------------------------


def _flowlib_team(turns: int, store: Any) -> Any:
    from flowlib.agents import BaseChatAgent
    from flowlib.base import CancellationToken, Response
    from flowlib.messages import BaseChatMessage, TextMessage
    from flowlib.teams import RoundRobinGroupChat

    class Agent(BaseChatAgent):
        """Replies at once; keeps the texts it has seen (a model context) as its state."""

        def __init__(self, name: str) -> None:
            super().__init__(name, "bench agent")
            self.context: list[str] = []

        @property
        def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
            return (TextMessage,)

        async def on_messages(
            self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
        ) -> Response:
            self.context.extend(m.to_text() for m in messages)
            text = _reply(self.name, len(self.context))
            self.context.append(text)
            return Response(chat_message=TextMessage(content=text, source=self.name))

        async def on_reset(self, cancellation_token: CancellationToken) -> None:
            self.context.clear()

        async def save_state(self) -> Mapping[str, Any]:
            if STATELESS:
                return {"seen": len(self.context)}
            return {"context": list(self.context)}

        async def load_state(self, state: Mapping[str, Any]) -> None:
            if STATELESS:
                self.context = [""] * state["seen"]
            else:
                self.context = list(state["context"])

    kwargs: dict[str, Any] = {"max_turns": turns}
    if store is not None:
        kwargs["checkpoint_store"] = store
    return RoundRobinGroupChat([Agent("A"), Agent("B")], **kwargs)


async def _flowlib_run(turns: int, store: Any) -> float:
    team = _flowlib_team(turns, store)
    started = time.perf_counter()
    if store is None:
        result = await team.run(task="go")
    else:
        result = await team.run(task="go", run_id=uuid.uuid4().hex)
    elapsed = time.perf_counter() - started
    assert len(result.messages) == turns + 1, (len(result.messages), result.stop_reason)
    return elapsed


def _flowlib_store(kind: str, folder: Path, dsn: str | None) -> Any:
    from flowlib.checkpoint import (
        InMemoryCheckpointStore,
        PostgresCheckpointStore,
        SQLiteCheckpointStore,
    )

    if kind == "memory":
        return InMemoryCheckpointStore()
    if kind in ("sqlite", "sqlite-full"):
        return SQLiteCheckpointStore(
            folder / f"flowlib-{uuid.uuid4().hex[:6]}.db",
            synchronous="FULL" if kind == "sqlite-full" else "NORMAL",
        )
    assert dsn is not None
    return PostgresCheckpointStore(dsn)


class _Counting:
    """Wraps a flowlib store; remembers each run's table payload after each append."""

    def __init__(self, inner: Any, measure: Callable[[], Awaitable[int]]) -> None:
        self.inner = inner
        self.measure = measure
        self.sizes: dict[int, int] = {}
        self.turn = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def append(self, record: Any, *, status: Any) -> None:
        await self.inner.append(record, status=status)
        if record.kind == "turn" and (
            record.turn in (1, 11) or record.turn in (BIG_TURN - 10, BIG_TURN)
        ):
            self.sizes[record.turn] = await self.measure()


async def _flowlib_bytes(kind: str, folder: Path, dsn: str | None) -> dict[str, float]:
    """Payload bytes the store gains per turn over turns 1-11 and 9,990-10,000."""
    store = _flowlib_store(kind, folder, dsn)
    try:
        measure = _flowlib_measure(kind, store)
        counting = _Counting(store, measure)
        team = _flowlib_team(BIG_TURN, counting)
        await team.run(task="go", run_id=uuid.uuid4().hex)
        sizes = counting.sizes
        return {
            "at_10": (sizes[11] - sizes[1]) / 10,
            "at_10000": (sizes[BIG_TURN] - sizes[BIG_TURN - 10]) / 10,
        }
    finally:
        await store.close()


def _flowlib_measure(kind: str, store: Any) -> Callable[[], Awaitable[int]]:
    if kind == "sqlite":
        import sqlite3

        path: str = store.path

        async def sqlite_size() -> int:
            with sqlite3.connect(path) as conn:
                return int(
                    conn.execute(
                        "SELECT (SELECT coalesce(sum(length(bookkeeping) + length(participants)"
                        "), 0) FROM flowlib_records) + (SELECT "
                        "coalesce(sum(length(body)), 0) FROM flowlib_messages)"
                    ).fetchone()[0]
                )

        return sqlite_size
    if kind == "postgres":
        import psycopg

        dsn = store.dsn

        async def pg_size() -> int:
            async with await psycopg.AsyncConnection.connect(dsn) as conn:
                cur = await conn.execute(
                    "SELECT (SELECT coalesce(sum(octet_length(bookkeeping::text) + "
                    "octet_length(participants::text)), 0) FROM flowlib_records) + "
                    "(SELECT coalesce(sum(octet_length(body::text)), 0) "
                    "FROM flowlib_messages)"
                )
                row = await cur.fetchone()
                assert row is not None
                return int(row[0])

        return pg_size

    async def memory_size() -> int:
        records = [r for rs in store._records.values() for r in rs]
        return sum(len(r.model_dump_json()) for r in records)

    return memory_size


# --- LangGraph ---------------------------------------------------------------------------


class _State(TypedDict):
    messages: Annotated[list[str], operator.add]


def _langgraph_app(turns: int, checkpointer: Any, prefilled: int = 0) -> Any:
    from langgraph.graph import END, START, StateGraph

    def node(name: str) -> Callable[[_State], Awaitable[dict[str, list[str]]]]:
        async def step(state: _State) -> dict[str, list[str]]:
            return {"messages": [_reply(name, len(state["messages"]))]}

        return step

    def bounded(target: str) -> Callable[[_State], str]:
        def route(state: _State) -> str:
            return END if len(state["messages"]) - prefilled > turns else target

        return route

    graph = StateGraph(_State)
    graph.add_node("A", node("A"))
    graph.add_node("B", node("B"))
    graph.add_edge(START, "A")
    graph.add_conditional_edges("A", bounded("B"), ["B", END])
    graph.add_conditional_edges("B", bounded("A"), ["A", END])
    return graph.compile(checkpointer=checkpointer)


async def _langgraph_run(
    turns: int, checkpointer: Any, durability: str = "sync", prefilled: int = 0
) -> float:
    app = _langgraph_app(turns, checkpointer, prefilled)
    config: dict[str, Any] = {
        "configurable": {"thread_id": uuid.uuid4().hex},
        "recursion_limit": turns + 10,
    }
    start = [f"old {i}: {TEXT}" for i in range(prefilled)] + ["go"]
    started = time.perf_counter()
    if checkpointer is None:
        out = await app.ainvoke({"messages": start}, config)
    else:
        out = await app.ainvoke({"messages": start}, config, durability=durability)
    elapsed = time.perf_counter() - started
    assert len(out["messages"]) == prefilled + turns + 1, len(out["messages"])
    return elapsed


async def _with_langgraph_saver(
    kind: str, folder: Path, dsn: str | None, work: Callable[[Any], Awaitable[Any]]
) -> Any:
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return await work(InMemorySaver())
    if kind in ("sqlite", "sqlite-full"):
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = folder / f"langgraph-{uuid.uuid4().hex[:6]}.db"
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            await saver.setup()  # WAL; SQLite's default synchronous=FULL
            if kind == "sqlite":  # flowlib's default: no fsync per commit
                await saver.conn.execute("PRAGMA synchronous=NORMAL")
            saver.bench_path = path  # type: ignore[attr-defined]
            return await work(saver)
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    assert dsn is not None
    async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
        await saver.setup()
        return await work(saver)


async def _langgraph_size(kind: str, saver: Any, dsn: str | None) -> int:
    if kind == "sqlite":
        import sqlite3

        with sqlite3.connect(str(saver.bench_path)) as conn:
            return int(
                conn.execute(
                    "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) "
                    "FROM checkpoints) + (SELECT coalesce(sum(length(value)), 0) FROM writes)"
                ).fetchone()[0]
            )
    import psycopg

    assert dsn is not None
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        cur = await conn.execute(
            "SELECT (SELECT coalesce(sum(octet_length(checkpoint::text) + "
            "octet_length(metadata::text)), 0) FROM checkpoints) + "
            "(SELECT coalesce(sum(coalesce(octet_length(blob), 0)), 0) "
            "FROM checkpoint_blobs) + "
            "(SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes)"
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def _langgraph_bytes(kind: str, folder: Path, dsn: str | None) -> dict[str, float]:
    async def work(saver: Any) -> dict[str, float]:
        figures: dict[str, float] = {}
        for label, prefilled in (("at_10", 0), ("at_10000", BIG_TURN - 10)):
            before = await _langgraph_size(kind, saver, dsn)
            await _langgraph_run(10, saver, prefilled=prefilled)
            after = await _langgraph_size(kind, saver, dsn)
            figures[label] = (after - before) / 10
        return figures

    return await _with_langgraph_saver(kind, folder, dsn, work)


# --- driver ------------------------------------------------------------------------------


async def _best(repeat: int, once: Callable[[], Awaitable[float]]) -> float:
    """The fastest of ``repeat`` runs after a warm-up (imports, tables, pools): on a
    shared machine the minimum is the figure least disturbed by other processes."""
    await once()
    return min([await once() for _ in range(repeat)])


async def _timings(
    turns: int,
    repeat: int,
    folder: Path,
    dsn: str | None,
    kinds: Sequence[str],
    *,
    peers: bool = True,
) -> dict[str, dict[str, float]]:
    """Best time per turn of each framework and store. flowlib's and LangGraph's runs
    alternate, so both see the same load on a shared machine and disk."""
    per_turn: dict[str, dict[str, float]] = {"flowlib": {}, "langgraph": {}}

    async def pair(
        label: str,
        flowlib_once: Callable[[], Awaitable[float]],
        langgraph_once: Callable[[], Awaitable[float]],
    ) -> None:
        await flowlib_once()  # warm-up: imports, tables, connection pools
        if peers:
            await langgraph_once()
        mine, theirs = [], []
        for _ in range(repeat):
            mine.append(await flowlib_once())
            if peers:
                theirs.append(await langgraph_once())
        per_turn["flowlib"][label] = min(mine) / turns
        per_turn["langgraph"][label] = min(theirs) / turns if theirs else float("nan")
        print(
            f"  {label}: flowlib {min(mine) / turns * 1e6:.0f} us/turn, "
            f"LangGraph {per_turn['langgraph'][label] * 1e6:.0f} us/turn",
            file=sys.stderr,
        )

    await pair("none", lambda: _flowlib_run(turns, None), lambda: _langgraph_run(turns, None))
    for kind in kinds:
        store = _flowlib_store(kind, folder, dsn)
        try:

            async def work(saver: Any, kind: str = kind, store: Any = store) -> None:
                await pair(
                    kind,
                    lambda: _flowlib_run(turns, store),
                    lambda: _langgraph_run(turns, saver, "sync"),
                )
                if kind == "sqlite-full":  # LangGraph's default durability, for information
                    best = await _best(repeat, lambda: _langgraph_run(turns, saver, "async"))
                    per_turn["langgraph"][f"{kind} (async)"] = best / turns

            if peers:
                await _with_langgraph_saver(kind, folder, dsn, work)
            else:
                await pair(kind, lambda store=store: _flowlib_run(turns, store), _nothing)
        finally:
            await store.close()
    return per_turn


async def _nothing() -> float:
    return float("nan")


# --- resume time -------------------------------------------------------------------------

RESUME_TURNS = (200, 2_000, 10_000)


async def _resume_times(
    kind: str, folder: Path, dsn: str | None, repeat: int, sizes: Sequence[int]
) -> dict[int, dict[str, float]]:
    """Per run length: the best time to load the stored run (``store.load``, or folding
    all its records where the store has no ``load``), and to resume it in a fresh team
    and store and run one more turn (``team.run(run_id=...)``)."""
    from flowlib.checkpoint import PostgresCheckpointStore, SQLiteCheckpointStore, fold

    def open_store() -> Any:
        if kind == "sqlite":
            return SQLiteCheckpointStore(folder / "resume.db")
        assert dsn is not None
        return PostgresCheckpointStore(dsn)

    figures: dict[int, dict[str, float]] = {}
    for turns in sizes:
        run_id = f"resume-{turns}-{uuid.uuid4().hex[:6]}"
        store = open_store()
        started = time.perf_counter()
        await _flowlib_team(turns, store).run(task="go", run_id=run_id)
        built = time.perf_counter() - started
        await store.close()
        loads, resumes, load_cpus, resume_cpus = [], [], [], []
        for attempt in range(repeat + 1):  # the first is a warm-up
            store = open_store()
            await store.list_runs()  # connect and open the file outside the timing
            started = time.perf_counter()
            cpu = time.process_time()
            if hasattr(store, "load"):
                folded = await store.load(run_id)
            else:  # the store before snapshots: every record
                folded = fold(await store.records(run_id))
            load = time.perf_counter() - started
            load_cpu = time.process_time() - cpu
            assert folded.turn >= turns, (folded.turn, turns)
            await store.close()
            store = open_store()
            await store.list_runs()
            team = _flowlib_team(1, store)
            started = time.perf_counter()
            cpu = time.process_time()
            result = await team.run(run_id=run_id)
            resume = time.perf_counter() - started
            resume_cpu = time.process_time() - cpu
            assert len(result.messages) == 1, result
            await store.close()
            if attempt:
                loads.append(load)
                resumes.append(resume)
                load_cpus.append(load_cpu)
                resume_cpus.append(resume_cpu)
        figures[turns] = {
            "load_s": min(loads),
            "resume_s": min(resumes),
            "load_cpu_s": min(load_cpus),
            "resume_cpu_s": min(resume_cpus),
            "resume_cpu_median_s": statistics.median(resume_cpus),
        }
        print(
            f"  resume {kind} {turns} turns (built in {built:.1f} s): load "
            f"{min(loads) * 1e3:.1f} ms ({min(load_cpus) * 1e3:.1f} ms CPU), resume + 1 turn "
            f"{min(resumes) * 1e3:.1f} ms ({min(resume_cpus) * 1e3:.1f} ms CPU, median "
            f"{statistics.median(resume_cpus) * 1e3:.1f})",
            file=sys.stderr,
        )
    return figures


def _resume_report(times: dict[str, dict[int, dict[str, float]]]) -> list[str]:
    lines = ["## Resume time (ms): load the stored run; resume it and run one turn", ""]
    lines.append(
        "| store | turns | load | load CPU | resume + 1 turn | resume CPU | resume CPU median |"
    )
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind, figures in times.items():
        for turns, figure in figures.items():
            lines.append(
                f"| {kind} | {turns:,} | {figure['load_s'] * 1e3:.1f} | "
                f"{figure.get('load_cpu_s', float('nan')) * 1e3:.1f} | "
                f"{figure['resume_s'] * 1e3:.1f} | "
                f"{figure.get('resume_cpu_s', float('nan')) * 1e3:.1f} | "
                f"{figure.get('resume_cpu_median_s', float('nan')) * 1e3:.1f} |"
            )
    return lines


def _report(
    per_turn: dict[str, dict[str, float]], sizes: dict[str, dict[str, dict[str, float]]]
) -> list[str]:
    lines = ["## Checkpointing: time per turn (us), overhead over no store", ""]
    lines.append("| store | flowlib | overhead | LangGraph (sync) | overhead | overhead ratio |")
    lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    fl, lg = per_turn["flowlib"], per_turn["langgraph"]
    lines.append(f"| none | {fl['none'] * 1e6:.0f} | - | {lg['none'] * 1e6:.0f} | - | - |")
    for kind in [k for k in fl if k != "none"]:
        f_over = fl[kind] - fl["none"]
        l_over = lg[kind] - lg["none"]
        ratio = f_over / l_over if l_over > 0 else float("nan")
        lines.append(
            f"| {kind} | {fl[kind] * 1e6:.0f} | {f_over * 1e6:.0f} | {lg[kind] * 1e6:.0f} | "
            f"{l_over * 1e6:.0f} | {ratio:.2f} |"
        )
    extra = [k for k in lg if k.endswith("(async)")]
    if extra:
        lines.append("")
        lines.append(
            "LangGraph with `durability='async'`: "
            + ", ".join(f"{k}: {lg[k] * 1e6:.0f} us/turn" for k in extra)
        )
    lines += ["", "## Checkpointing: bytes written per turn", ""]
    lines.append("| store | flowlib @10 | flowlib @10,000 | LangGraph @10 | LangGraph @10,000 |")
    lines.append("| --- | ---: | ---: | ---: | ---: |")
    for kind, figures in sizes["flowlib"].items():
        peer = sizes["langgraph"].get(kind, {})
        lines.append(
            f"| {kind} | {figures['at_10']:.0f} | {figures['at_10000']:.0f} | "
            f"{peer.get('at_10', float('nan')):.0f} | {peer.get('at_10000', float('nan')):.0f} |"
        )
    return lines


def _targets(
    per_turn: dict[str, dict[str, float]], sizes: dict[str, dict[str, dict[str, float]]]
) -> list[str]:
    fl, lg = per_turn["flowlib"], per_turn["langgraph"]
    lines = ["", "## Targets", ""]
    for kind in ("sqlite", "sqlite-full"):
        if kind not in fl:
            continue
        f_over, l_over = fl[kind] - fl["none"], lg[kind] - lg["none"]
        ok = f_over <= 0.5 * l_over
        lines.append(
            f"- {kind}: checkpoint cost per turn <= half of SqliteSaver's: flowlib "
            f"{f_over * 1e6:.0f} us vs {l_over * 1e6:.0f} us ({f_over / l_over:.2f}x): "
            f"{'MET' if ok else 'NOT MET'}"
        )
    for kind, figures in sizes["flowlib"].items():
        growth = figures["at_10000"] / figures["at_10"]
        ok = growth <= 1.1
        lines.append(
            f"- bytes per turn flat ({kind}): {figures['at_10']:.0f} B at turn 10, "
            f"{figures['at_10000']:.0f} B at turn 10,000 ({growth:.2f}x): "
            f"{'MET' if ok else 'NOT MET'}"
        )
    return lines


async def _main(args: argparse.Namespace) -> int:
    server = None
    dsn = args.postgres
    if dsn == "auto":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from _postgres import PostgresServer

        server = PostgresServer.start()
        dsn = server.dsn
    try:
        kinds = ["memory", "sqlite", "sqlite-full"] + (["postgres"] if dsn else [])
        with tempfile.TemporaryDirectory(prefix="flowlib-bench-") as tmp:
            folder = Path(tmp)
            if args.resume:
                sizes_ = [int(n) for n in args.resume.split(",")]
                times = {}
                for kind in ["sqlite"] + (["postgres"] if dsn else []):
                    fresh = _fresh_dsn(server, dsn) if kind == "postgres" else None
                    times[kind] = await _resume_times(kind, folder, fresh, args.repeat, sizes_)
                print("\n".join(_resume_report(times)))
                if args.json:
                    Path(args.json).write_text(json.dumps({"resume": times}, indent=2))
                return 0
            print(f"timing {args.turns}-turn runs, {args.repeat} repeats", file=sys.stderr)
            per_turn = await _timings(
                args.turns, args.repeat, folder, dsn, kinds, peers=not args.no_peers
            )
            sizes: dict[str, dict[str, dict[str, float]]] = {"flowlib": {}, "langgraph": {}}
            if not args.no_bytes:
                for kind in [k for k in kinds if k not in ("memory", "sqlite-full")]:
                    # a fresh database per figure, so other runs' rows are not counted
                    fresh = _fresh_dsn(server, dsn) if kind == "postgres" else None
                    print(f"bytes per turn: flowlib {kind} (10,000 turns)", file=sys.stderr)
                    sizes["flowlib"][kind] = await _flowlib_bytes(kind, folder, fresh)
                    if args.no_peers:
                        continue
                    fresh = _fresh_dsn(server, dsn) if kind == "postgres" else None
                    print(f"bytes per turn: LangGraph {kind}", file=sys.stderr)
                    sizes["langgraph"][kind] = await _langgraph_bytes(kind, folder, fresh)
        lines = _report(per_turn, sizes) + ([] if args.no_peers else _targets(per_turn, sizes))
        print("\n".join(lines))
        if args.json:
            Path(args.json).write_text(
                json.dumps({"per_turn_s": per_turn, "bytes_per_turn": sizes}, indent=2)
            )
        return 0
    finally:
        if server is not None:
            server.stop()


def _fresh_dsn(server: Any, dsn: str | None) -> str | None:
    """A DSN on an empty schema (the test helper's) so table sizes count one run."""
    if server is not None:
        return str(server.new_dsn())
    return dsn


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpointing", description=__doc__)
    parser.add_argument("--turns", type=int, default=200, help="turns per timed run")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure")
    parser.add_argument("--postgres", metavar="DSN|auto", help="also time PostgreSQL stores")
    parser.add_argument("--no-bytes", action="store_true", help="skip the bytes-per-turn runs")
    parser.add_argument("--json", metavar="OUT.json", help="also write the figures as JSON")
    parser.add_argument(
        "--no-peers", action="store_true", help="time flowlib only (no LangGraph runs)"
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=",".join(map(str, RESUME_TURNS)),
        metavar="N,N,...",
        help="only time resuming runs of these lengths (default 200,2000,10000) on "
        "SQLite (and PostgreSQL with --postgres)",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="flowlib agents save a counter instead of their context (isolates the store)",
    )
    args = parser.parse_args(argv)
    global STATELESS
    STATELESS = args.stateless
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
