"""Throughput of batches: 1,000 runs of a fan-out/join flow whose agents wait 50 ms.

``src -> [left | middle | right] -> join``, every agent ``asyncio.sleep(0.05)`` (a model
call's latency), so a run's critical path is 150 ms. Rows:

- flowlib, one process on asyncio (``flowlib.batch.LocalRunner``);
- flowlib on Ray (``flowlib.distributed.RayRunner``) with 1 and 2 workers, on a local
  Ray cluster started here (``num_cpus=2``);
- LangGraph's ``abatch`` on the same graph in one process, if langgraph is installed.

Every row runs at the same total concurrency ``C`` (runs in flight at once; on Ray
split evenly over the workers). The latency-bound ideal is ``runs x critical path / C``.
Scheduler overhead per run is the extra latency each run sees beyond its critical path:
``wall x C / runs - critical path``. "One run alone" is the wall time of one run of
instant agents, runs one after another: on Ray minus in one process, it is what Ray
adds to a run (the actor call, pickling the task and the result). "Driver cpu" is the
CPU time of this process per run (on Ray: submitting, awaiting and unpickling), a figure
that does not depend on what else the machine runs.

    python -m bench.throughput                  # 1,000 runs, C=100
    python -m bench.throughput --runs 200 --json out.json --skip-ray
    python -m bench.throughput --store sqlite   # durable runs (a checkpoint per turn)
    python -m bench.throughput --stream --cli   # also stream_many, and `flowlib batch`
    python -m bench.throughput --memory 10000   # driver memory with 10,000 tasks queued
    python -m bench.throughput --cli-together 4 # `flowlib batch --ray` and run_many at once
    python -m bench.throughput --cli-rounds 2   # ... one after the other, taking turns

``--stream`` adds a Ray row through ``stream_many`` (every message and event crosses to
the driver). ``--cli`` adds ``flowlib batch`` rows with a SQLite store, run in a child
process: in one process, and on this benchmark's Ray cluster with 2 workers (its CPU is
the child's own: it joins the cluster, so the cluster's processes are not its children).

A last row measures the design not taken: each run a plain Ray task (``--ray-tasks N``
runs); a task holds its worker process, so only as many runs as CPUs are in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import operator
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

THINK = 0.05
BRANCHES = ("left", "middle", "right")
CRITICAL_PATH = 3 * THINK
ROOT = Path(__file__).resolve().parents[1]


def build(*, checkpoint_store: Any = None, think: float = THINK) -> Any:
    """The flowlib team of one run (the batch factory; importable on Ray workers)."""
    from flowlib.agents import FunctionAgent
    from flowlib.messages import BaseChatMessage
    from flowlib.teams import DiGraphBuilder, GraphFlow

    def node(name: str) -> FunctionAgent:
        async def step(messages: Sequence[BaseChatMessage]) -> str:
            await asyncio.sleep(think)
            return name

        return FunctionAgent(step, name=name)

    agents = {name: node(name) for name in ("src", *BRANCHES, "join")}
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    for branch in BRANCHES:
        builder.add_edge(agents["src"], agents[branch]).add_edge(agents[branch], agents["join"])
    options = {} if checkpoint_store is None else {"checkpoint_store": checkpoint_store}
    return GraphFlow(builder.get_participants(), builder.build(), **options)


class State(TypedDict):
    """LangGraph's state for the same flow: the messages, appended by each node."""

    messages: Annotated[list[str], operator.add]


def build_instant(*, checkpoint_store: Any = None) -> Any:
    """The same team with agents that answer at once (for the dispatch latency)."""
    return build(checkpoint_store=checkpoint_store, think=0.0)


SEQUENTIAL = 100


async def _sequential_ms(runner: Any) -> float:
    """Mean wall time of one run of instant agents, runs one after another (ms)."""
    started = time.perf_counter()
    for i in range(SEQUENTIAL):
        await runner.run_many([f"seq {i}"])
    return (time.perf_counter() - started) / SEQUENTIAL * 1000


def _row(
    name: str, runs: int, concurrency: int, wall: float, failed: int, cpu: float
) -> dict[str, Any]:
    ideal = runs * CRITICAL_PATH / concurrency
    return {
        "row": name,
        "runs": runs,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "runs_per_s": round(runs / wall, 1),
        "ideal_s": round(ideal, 3),
        "x_ideal": round(wall / ideal, 3),
        "overhead_ms_per_run": round((wall * concurrency / runs - CRITICAL_PATH) * 1000, 2),
        "failed": failed,
        "driver_cpu_ms_per_run": round(cpu / runs * 1000, 3),
        "sequential_ms_per_run": None,
    }


def _failed(results: Sequence[Any]) -> int:
    from flowlib.base import TaskResult

    return sum(not isinstance(r, TaskResult) for r in results)


async def _local(runs: int, concurrency: int, store: str | None) -> dict[str, Any]:
    from flowlib.batch import LocalRunner

    runner = LocalRunner(build, checkpoint_store=store, max_concurrency=concurrency)
    tasks = [f"task {i}" for i in range(runs)]
    started, cpu = time.perf_counter(), time.process_time()
    results = await runner.run_many(tasks)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    label = "flowlib one process (asyncio)" + (" + store" if store else "")
    row = _row(label, runs, concurrency, wall, _failed(results), cpu)
    row["sequential_ms_per_run"] = round(await _sequential_ms(LocalRunner(build_instant)), 2)
    return row


async def _ray(
    runs: int, concurrency: int, workers: int, store: str | None, *, stream: bool = False
) -> dict[str, Any]:
    from flowlib.distributed import RayRunner

    runner = RayRunner(
        "bench.throughput:build",
        checkpoint_store=store,
        workers=workers,
        max_concurrency=max(1, concurrency // workers),
    )
    tasks = [f"task {i}" for i in range(runs)]
    async with runner:
        await runner.run_many(tasks[: 2 * workers])  # warm the workers up (imports)
        started, cpu = time.perf_counter(), time.process_time()
        first: float | None = None
        if stream:  # every message and event of every run crosses to the driver
            results = []
            async for event in runner.stream_many(tasks):
                if first is None:
                    first = time.perf_counter() - started
                if event.done:
                    results.append(event.item)
        else:
            results = await runner.run_many(tasks)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    label = f"flowlib on Ray, {workers} worker{'s' if workers > 1 else ''}"
    label += ", stream_many" if stream else ""
    label += " + store" if store else ""
    row = _row(label, runs, concurrency, wall, _failed(results), cpu)
    if stream:
        row["first_item_s"] = None if first is None else round(first, 3)
        return row
    instant = RayRunner("bench.throughput:build_instant", checkpoint_store=None, workers=workers)
    async with instant:
        await instant.run_many(["warm up"])
        row["sequential_ms_per_run"] = round(await _sequential_ms(instant), 2)
    return row


def _cli(
    runs: int, concurrency: int, folder: str, address: str | None, *, tag: str = ""
) -> dict[str, Any]:
    """``flowlib batch`` with a SQLite store, in a child process: in one process, or on
    the running cluster at ``address`` with 2 workers. The child's own CPU time (it
    joins the cluster, so it starts no Ray processes of its own) is the driver's."""
    import subprocess

    tasks = Path(folder) / f"cli-{address is not None}{tag}.jsonl"
    tasks.write_text("".join(json.dumps(f"task {i}") + "\n" for i in range(runs)), "utf-8")
    where = ("ray" if address else "local") + tag
    argv = [sys.executable, "-m", "flowlib", "batch", f"{ROOT}/bench/throughput.py:build"]
    argv += [str(tasks), "--store", f"sqlite:///{folder}/cli-{where}.db"]
    argv += ["--out", f"{folder}/cli-{where}.jsonl"]
    if address:
        argv += ["--ray", address, "--workers", "2", "--concurrency", str(concurrency // 2)]
    else:
        argv += ["--concurrency", str(concurrency)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    started = time.perf_counter()
    log = Path(folder) / f"cli-{where}.stderr"
    with log.open("wb") as stderr:
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    assert child.stdout is not None
    report = child.stdout.read().decode()
    failed = 0 if status == 0 else runs
    if status != 0:
        print(f"flowlib batch failed: {log.read_text()[-2000:]}", file=sys.stderr)
    label = "flowlib batch CLI, " + ("Ray 2 workers" if address else "one process") + " + store"
    row = _row(label, runs, concurrency, wall, failed, usage.ru_utime + usage.ru_stime)
    elapsed = [line.split()[1] for line in report.splitlines() if line.startswith("elapsed")]
    row["cli_elapsed_s"] = float(elapsed[0]) if elapsed else None
    # The command's CPU over its own clock (its summary's `cpu` row): no imports, no start-up.
    own_cpu = [line.split()[1] for line in report.splitlines() if line.startswith("cpu ")]
    row["cli_cpu_s"] = float(own_cpu[0]) if own_cpu else None
    return row


async def _ray_fresh(runs: int, concurrency: int, store: str) -> dict[str, Any]:
    """``run_many`` as the CLI runs it: fresh workers (2), a fresh store, the clock
    started once the workers are ready (as the CLI's own clock is). Also the workers'
    CPU per run (``worker_cpu_ms_per_run``, from their ``stats()``)."""
    from flowlib.distributed import RayRunner

    runner = RayRunner(
        "bench.throughput:build",
        checkpoint_store=store,
        workers=2,
        max_concurrency=max(1, concurrency // 2),
    )
    tasks = [f"task {i}" for i in range(runs)]
    async with runner:
        before = [await actor.stats.remote() for actor in runner.actors]
        started, cpu = time.perf_counter(), time.process_time()
        results = await runner.run_many(tasks)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        after = [await actor.stats.remote() for actor in runner.actors]
    label = "flowlib on Ray, 2 fresh workers + store"
    row = _row(label, runs, concurrency, wall, _failed(results), cpu)
    workers_ms = sum(a["cpu_ms"] - b["cpu_ms"] for a, b in zip(after, before, strict=True))
    row["worker_cpu_ms_per_run"] = round(workers_ms / runs, 3)
    return row


async def _cli_rounds(
    rounds: int, runs: int, concurrency: int, folder: str, address: str
) -> list[dict[str, Any]]:
    """``run_many`` and ``flowlib batch --ray`` taking turns on one cluster, each with
    fresh workers and a fresh SQLite store; every other round the CLI goes first (a load
    that rises or falls over a round does not favour one side). Each round: both times
    (the CLI's own clock: first worker ready to last result), their ratio, the load
    average around it, the driver's CPU per run on both sides and the workers' (the same
    code on both sides)."""
    pairs: list[dict[str, Any]] = []
    for number in range(rounds):
        load = os.getloadavg()[0]
        store = f"sqlite:///{folder}/pair{number}.db"
        if number % 2:
            cli = _cli(runs, concurrency, folder, address, tag=f"pair{number}")
            direct = await _ray_fresh(runs, concurrency, store)
        else:
            direct = await _ray_fresh(runs, concurrency, store)
            cli = _cli(runs, concurrency, folder, address, tag=f"pair{number}")
        cli_s, cli_cpu = cli["cli_elapsed_s"], cli["cli_cpu_s"]
        pair = {
            "round": number + 1,
            "first": "cli" if number % 2 else "run_many",
            "load_before": round(load, 1),
            "load_after": round(os.getloadavg()[0], 1),
            "run_many_s": direct["wall_s"],
            "cli_s": cli_s,
            "ratio": None if not cli_s else round(cli_s / direct["wall_s"], 3),
            "run_many_driver_cpu_ms_per_run": direct["driver_cpu_ms_per_run"],
            "cli_driver_cpu_ms_per_run": None
            if cli_cpu is None
            else round(cli_cpu / runs * 1000, 3),
            "cli_process_cpu_ms_per_run": cli["driver_cpu_ms_per_run"],
            "worker_cpu_ms_per_run": direct["worker_cpu_ms_per_run"],
            "failed": direct["failed"] + cli["failed"],
        }
        print(json.dumps(pair), file=sys.stderr, flush=True)
        pairs.append(pair)
    return pairs


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _complete_in(database: str) -> int:
    """Runs a SQLite store holds as complete (0 before the store has its tables)."""
    import sqlite3

    if not os.path.exists(database):
        return 0
    with contextlib.closing(sqlite3.connect(database, timeout=30)) as connection:
        try:
            row = connection.execute(
                "SELECT count(*) FROM flowlib_runs WHERE status = 'complete'"
            ).fetchone()
        except sqlite3.OperationalError:  # no table yet
            return 0
    return int(row[0])


async def _cli_together(
    number: int, runs: int, concurrency: int, folder: str, address: str
) -> dict[str, Any]:
    """``run_many`` and ``flowlib batch --ray`` at the same time on one cluster, each on
    2 workers of its own (``num_cpus=0``: both fit) with its own SQLite store, so both
    see the same load; every other round ``run_many`` starts first. The window opens
    when both have finished a run and closes when either side ends; the ratio is of
    their rates in it (runs finished in the window: lines of the command's results
    file, and complete runs in ``run_many``'s store), as a time ratio: above 1, the
    command was slower."""
    import subprocess

    from flowlib.distributed import RayRunner

    tag = f"together{number}"
    tasks = [f"task {i}" for i in range(runs)]
    task_file = Path(folder) / f"{tag}.jsonl"
    task_file.write_text("".join(json.dumps(t) + "\n" for t in tasks), "utf-8")
    results = Path(folder) / f"{tag}-out.jsonl"
    argv = [sys.executable, "-m", "flowlib", "batch", f"{ROOT}/bench/throughput.py:build"]
    argv += [str(task_file), "--store", f"sqlite:///{folder}/{tag}-cli.db"]
    argv += ["--out", str(results), "--ray", address, "--workers", "2", "--num-cpus", "0"]
    argv += ["--concurrency", str(max(1, concurrency // 2))]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    database = f"{folder}/{tag}-direct.db"
    runner = RayRunner(
        "bench.throughput:build",
        checkpoint_store=f"sqlite:///{database}",
        workers=2,
        num_cpus=0,
        max_concurrency=max(1, concurrency // 2),
    )
    load = os.getloadavg()[0]
    cli_first = number % 2 == 0  # every other round the command starts first
    if cli_first:
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    async with runner:
        cpu = time.process_time()
        batch = asyncio.ensure_future(runner.run_many(tasks))
        if not cli_first:
            while not _complete_in(database) and not batch.done():
                await asyncio.sleep(0.1)
            child = subprocess.Popen(
                argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        # Both sides past their first result (workers warm), then the window opens.
        while child.poll() is None and not batch.done():
            if _lines(results) and _complete_in(database):
                break
            await asyncio.sleep(0.1)
        opened = time.perf_counter()
        cli_before, direct_before = _lines(results), _complete_in(database)
        while not batch.done() and child.poll() is None:
            await asyncio.sleep(0.05)
        window = time.perf_counter() - opened
        cli_done = _lines(results) - cli_before
        first = "run_many" if batch.done() else "cli"
        direct_done = (runs if batch.done() else _complete_in(database)) - direct_before
        outcome = await batch
        cpu = time.process_time() - cpu
    stdout, _ = await asyncio.to_thread(child.communicate)
    report = stdout.decode().splitlines()
    elapsed = [line.split()[1] for line in report if line.startswith("elapsed")]
    own_cpu = [line.split()[1] for line in report if line.startswith("cpu ")]
    pair = {
        "round": number + 1,
        "together": True,
        "started_first": "cli" if cli_first else "run_many",
        "load_before": round(load, 1),
        "load_after": round(os.getloadavg()[0], 1),
        "window_s": round(window, 2),
        "ended_first": first,
        "run_many_in_window": direct_done,
        "cli_in_window": cli_done,
        "ratio": round(direct_done / cli_done, 3) if cli_done else None,
        "run_many_driver_cpu_ms_per_run": round(cpu / runs * 1000, 3),
        "cli_driver_cpu_ms_per_run": (
            round(float(own_cpu[0]) / runs * 1000, 3) if own_cpu else None
        ),
        "cli_s": float(elapsed[0]) if elapsed else None,
        "failed": _failed(outcome) + (child.returncode != 0) * runs,
    }
    print(json.dumps(pair), file=sys.stderr, flush=True)
    return pair


def build_waiting(*, checkpoint_store: Any = None) -> Any:
    """The same team with agents that wait 10 minutes (tasks stay queued)."""
    return build(checkpoint_store=checkpoint_store, think=600.0)


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


async def _memory(tasks: int, concurrency: int, workers: int) -> list[dict[str, Any]]:
    """Driver memory while ``tasks`` tasks are queued (their agents wait 10 minutes):
    RSS growth after 5 s of ``run_many`` / ``stream_many``, then the batch is cancelled."""
    import gc

    from flowlib.batch import LocalRunner
    from flowlib.distributed import RayRunner

    names = [f"task {i}" for i in range(tasks)]
    rows: list[dict[str, Any]] = []

    async def measure(label: str, start: Any) -> None:
        gc.collect()
        before = _rss_mb()
        batch = asyncio.ensure_future(start())
        await asyncio.sleep(5.0)
        grown = _rss_mb() - before
        batch.cancel()
        await asyncio.gather(batch, return_exceptions=True)
        rows.append({"row": label, "tasks": tasks, "driver_rss_growth_mb": round(grown, 1)})
        print(f"{label}: driver RSS +{grown:.1f} MB", file=sys.stderr)

    local = LocalRunner(build_waiting, max_concurrency=concurrency)
    await measure("LocalRunner run_many", lambda: local.run_many(names))

    async def drain(runner: Any) -> None:
        async for _ in runner.stream_many(names):
            pass

    ray_runner = RayRunner(
        "bench.throughput:build_waiting",
        checkpoint_store=None,
        workers=workers,
        max_concurrency=max(1, concurrency // workers),
    )
    async with ray_runner:
        await measure(f"RayRunner run_many, {workers} workers", lambda: ray_runner.run_many(names))
        await measure(f"RayRunner stream_many, {workers} workers", lambda: drain(ray_runner))
    return rows


def _one_run_blocking(task: str) -> int:
    """One run in its own event loop: the body of a plain Ray task (no shared loop)."""
    result = asyncio.run(build().run(task=task))
    return len(result.messages)


async def _ray_tasks(runs: int) -> dict[str, Any]:
    """The alternative design: one plain Ray task per run (a worker process each)."""
    import ray

    remote: Any = ray.remote(_one_run_blocking)
    await asyncio.gather(*(remote.remote("warm") for _ in range(2)))
    started, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(remote.remote(f"task {i}") for i in range(runs)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    concurrency = int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
    failed = sum(count != 6 for count in counts)
    return _row("Ray tasks, one run per task", runs, concurrency, wall, failed, cpu)


async def _langgraph(runs: int, concurrency: int) -> dict[str, Any] | None:
    try:
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    def node(name: str) -> Any:
        async def step(state: State) -> dict[str, list[str]]:
            await asyncio.sleep(THINK)
            return {"messages": [name]}

        return step

    graph = StateGraph(State)
    for name in ("src", *BRANCHES, "join"):
        graph.add_node(name, node(name))
    graph.add_edge(START, "src")
    for branch in BRANCHES:
        graph.add_edge("src", branch)
    graph.add_edge(list(BRANCHES), "join")
    graph.add_edge("join", END)
    app = graph.compile()
    inputs = [{"messages": [f"task {i}"]} for i in range(runs)]
    started, cpu = time.perf_counter(), time.process_time()
    outputs = await app.abatch(inputs, config={"max_concurrency": concurrency})
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    failed = sum(len(o["messages"]) != 6 for o in outputs)
    return _row("LangGraph abatch (one process)", runs, concurrency, wall, failed, cpu)


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        "row",
        "runs/s",
        "wall s",
        "ideal s",
        "x ideal",
        "overhead ms/run",
        "one run alone, ms",
        "driver cpu ms/run",
        "failed",
    )
    body = [
        (
            r["row"],
            f"{r['runs_per_s']:.1f}",
            f"{r['wall_s']:.2f}",
            f"{r['ideal_s']:.2f}",
            f"{r['x_ideal']:.2f}",
            f"{r['overhead_ms_per_run']:.2f}",
            "-" if r["sequential_ms_per_run"] is None else f"{r['sequential_ms_per_run']:.2f}",
            f"{r['driver_cpu_ms_per_run']:.3f}",
            str(r["failed"]),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]

    def fmt(line: Sequence[str]) -> str:
        first = line[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True))])

    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


def _start_ray(pythonpath: str) -> Any:
    """A local 2-CPU cluster; tried five times (Ray gives a node 30 s to start, which a
    loaded machine can miss)."""
    import ray

    for attempt in range(5):
        try:
            return ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": pythonpath}},
            )
        except Exception:
            ray.shutdown()
            if attempt == 4:
                raise
    return None  # pragma: no cover - the loop returns or raises


async def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--store", choices=["sqlite"], default=None, help="checkpoint runs")
    parser.add_argument("--json", metavar="OUT.json")
    parser.add_argument(
        "--stream", action="store_true", help="also Ray rows through stream_many (all events)"
    )
    parser.add_argument("--cli", action="store_true", help="also `flowlib batch` rows (store)")
    parser.add_argument(
        "--memory",
        type=int,
        default=0,
        metavar="N",
        help="only: driver memory with N tasks queued (LocalRunner vs RayRunner)",
    )
    parser.add_argument(
        "--ray-tasks",
        type=int,
        default=40,
        metavar="N",
        help="also N runs as plain Ray tasks, one run per task (0: skip)",
    )
    parser.add_argument(
        "--cli-rounds",
        type=int,
        default=0,
        metavar="N",
        help="only: N rounds of run_many then `flowlib batch --ray` on one cluster (store)",
    )
    parser.add_argument(
        "--cli-together",
        type=int,
        default=0,
        metavar="N",
        help="only (after --cli-rounds): N rounds of both at the same time on one cluster",
    )
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="flowlib-throughput-")
    if args.cli_rounds or args.cli_together:
        import ray

        pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        context = _start_ray(pythonpath)
        try:
            address = context.address_info["gcs_address"]
            pairs = await _cli_rounds(args.cli_rounds, args.runs, args.concurrency, folder, address)
            for number in range(args.cli_together):
                pairs.append(
                    await _cli_together(number, args.runs, args.concurrency, folder, address)
                )
        finally:
            ray.shutdown()
        if args.json:
            Path(args.json).write_text(json.dumps(pairs, indent=2) + "\n", encoding="utf-8")
        return pairs
    if args.memory:
        import ray

        pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        _start_ray(pythonpath)
        try:
            memory = await _memory(args.memory, args.concurrency, 2)
        finally:
            ray.shutdown()
        if args.json:
            Path(args.json).write_text(json.dumps(memory, indent=2) + "\n", encoding="utf-8")
        return memory
    store = f"sqlite:///{folder}/runs.db" if args.store else None
    rows = [await _local(args.runs, args.concurrency, store)]
    if args.cli:
        rows.append(_cli(args.runs, args.concurrency, folder, None))
    print(_table(rows), file=sys.stderr)
    if not args.skip_ray:
        import ray

        pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        context = _start_ray(pythonpath)
        try:
            for workers in (1, 2):
                # A fresh store per row: the same run ids would be skipped as finished.
                row_store = f"sqlite:///{folder}/ray{workers}.db" if args.store else None
                rows.append(await _ray(args.runs, args.concurrency, workers, row_store))
            if args.stream:
                row_store = f"sqlite:///{folder}/stream.db" if args.store else None
                rows.append(await _ray(args.runs, args.concurrency, 2, row_store, stream=True))
            if args.cli:
                address = context.address_info["gcs_address"]
                rows.append(_cli(args.runs, args.concurrency, folder, address))
            if args.ray_tasks:
                rows.append(await _ray_tasks(args.ray_tasks))
        finally:
            ray.shutdown()
    peer = await _langgraph(args.runs, args.concurrency)
    if peer is not None:
        rows.append(peer)
    print(_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    asyncio.run(main())
