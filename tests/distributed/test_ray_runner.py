"""RayRunner on a local two-CPU Ray cluster: 200 runs, agent errors, a worker SIGKILLed
mid-batch (SQLite and PostgreSQL stores), cancellation, backpressure, and `flowlib batch
--ray` (Ctrl-C included) joining the same cluster.

One cluster for the module, and one pair of workers for the tests that need nothing of
their own (each worker is a process that imports Ray and flowlib: seconds of CPU)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from _batch_flows import (  # noqa: E402
    BRANCHES,
    FAIL_ON,
    NODES,
    build,
    build_hanging,
    lines,
    transcript,
)

from flowlib.base import TaskResult  # noqa: E402
from flowlib.batch import LocalRunner, open_store  # noqa: E402
from flowlib.distributed import RayRunner  # noqa: E402
from flowlib.errors import (  # noqa: E402
    CheckpointArgumentError,
    InvalidArgumentError,
    RayWorkersError,
    RunFailedError,
)

# The module's Ray cluster starts in its first test's setup (25-45 s on a busy machine):
# 600 s keeps that test within a quarter of its timeout at a 4x slowdown (issue 21.9).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

TESTS = Path(__file__).parents[1]
ROOT = TESTS.parent


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster whose workers import this worktree's flowlib and the tests;
    yields its address (for commands that join it)."""
    # The workers find flowlib and the tests through the environment the cluster's
    # processes inherit from this one, not a job `runtime_env`: Ray starts two idle
    # workers with the node, and only workers of a job without a runtime_env can take
    # them (with one, both were started for nothing and two more after them).
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(TESTS), before]))
    try:
        for attempt in range(3):
            try:
                context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                break
            except Exception:  # Ray gives a node 30 s to start: too few on a loaded machine
                ray.shutdown()
                if attempt == 2:
                    raise
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    try:
        yield str(context.address_info["gcs_address"])
    finally:
        ray.shutdown()


SHARED_CONCURRENCY = 5


@pytest.fixture(scope="module")
def shared(cluster: str) -> Iterator[RayRunner]:
    """Two workers of the plain flow (no store, 5 runs at once each), started once for
    the tests that only run batches on them."""
    # A module:function factory; no CPU reserved, so the other tests' workers still
    # find the cluster's two CPUs free.
    runner = RayRunner(
        "_batch_flows:build",
        checkpoint_store=None,
        workers=2,
        num_cpus=0,
        max_concurrency=SHARED_CONCURRENCY,
    )
    asyncio.run(runner.start())
    try:
        yield runner
    finally:
        asyncio.run(runner.close())


async def reference(tasks: list[str]) -> list[list[str]]:
    """Each task run alone in this process on a fresh team: the one-process reference."""
    return [transcript((await build(think=0).run(task=task)).messages) for task in tasks]


async def test_200_runs_on_two_workers_match_the_one_process_reference(
    shared: RayRunner,
) -> None:
    tasks = [f"task-{i}" for i in range(200)]
    pids = {await actor.pid.remote() for actor in shared.actors}
    assert len(pids) == 2 and os.getpid() not in pids  # two worker processes
    results = await shared.run_many(tasks)
    assert all(isinstance(r, TaskResult) for r in results)
    assert [transcript(r.messages) for r in results] == await reference(tasks)


async def test_an_agent_error_is_reported_not_retried(cluster: str, tmp_path: Path) -> None:
    factory = functools.partial(build, log_dir=str(tmp_path))
    async with RayRunner(factory, checkpoint_store=None, workers=1) as runner:
        results = await runner.run_many(["ok", FAIL_ON], run_ids=["ok", "bad"])
    assert isinstance(results[0], TaskResult)
    failure = results[1]
    assert isinstance(failure, RunFailedError) and failure.run_id == "bad"
    assert failure.error_type == "RuntimeError"
    assert transcript(failure.partial_result.messages)[:2] == [  # type: ignore[union-attr]
        f"user:{FAIL_ON}",
        f"src:src|{FAIL_ON}",
    ]
    assert lines(tmp_path, "starts.txt").count(f"{FAIL_ON} middle") == 1  # ran once


async def test_stream_many_tags_items_with_their_run(shared: RayRunner) -> None:
    events = [e async for e in shared.stream_many(["x", "y"], run_ids=["rx", "ry"])]
    for run_id, key in (("rx", "x"), ("ry", "y")):
        mine = [e for e in events if e.run_id == run_id]
        assert [e.done for e in mine] == [False] * (len(mine) - 1) + [True]
        assert transcript([e.item for e in mine[:-1]])[-1] == f"join:join|{key}"


async def test_bad_factories_and_stores_are_refused_up_front(cluster: str) -> None:
    runner = RayRunner("_batch_flows:no_such_function", checkpoint_store=None, workers=1)
    with pytest.raises(InvalidArgumentError, match="no function `no_such_function`"):
        await runner.start()
    with pytest.raises(CheckpointArgumentError, match="lives in one process"):
        RayRunner(build, checkpoint_store="memory://")
    with pytest.raises(InvalidArgumentError, match="max_retries"):
        RayRunner(build, checkpoint_store=None, max_retries=-1)


async def _recorded_turns(store_url: str, run_ids: list[str]) -> set[str]:
    """``"<run> <node>"`` for every turn the store holds as recorded."""
    store = open_store(store_url)
    try:
        recorded: set[str] = set()
        for run_id in run_ids:
            if await store.get_run(run_id) is None:
                continue
            for record in await store.records(run_id):
                if record.kind == "turn" and record.node is not None:
                    recorded.add(f"{run_id} {record.node}")
        return recorded
    finally:
        await store.close()


def _mid_run(recorded: set[str], log_dir: Path, pid: int) -> bool:
    """Whether some run begun by process ``pid`` has recorded some of its turns but not
    all (a run of the other worker in that state would leave the victim nothing to
    resume: CI once killed it between two of its waves)."""
    held = {
        line.split(" ", 1)[1] for line in lines(log_dir, "pids.txt") if line.startswith(f"{pid} ")
    }
    per_run = collections.Counter(turn.split(" ", 1)[0] for turn in recorded)
    return any(0 < count < len(NODES) for run, count in per_run.items() if run in held)


async def _pid_when_back(actor: Any) -> int:
    """The worker's process id once it answers (the batch may end, its runs finished by
    the other worker, while Ray is still restarting this one)."""
    from ray.exceptions import ActorUnavailableError

    deadline = time.monotonic() + 240
    while True:
        try:
            # A call sent while Ray restarts the actor may never be answered (a whole run
            # hung here once, both workers idle): each try is bounded, and asked again.
            return int(await asyncio.wait_for(_awaited(actor.pid.remote()), 15))
        except (ActorUnavailableError, asyncio.TimeoutError):
            assert time.monotonic() < deadline, "the killed worker never came back"
            await asyncio.sleep(0.5)


async def _awaited(ref: Any) -> Any:
    return await ref


async def _batch_with_a_kill(
    store: str, log_dir: Path, tasks: list[str]
) -> tuple[list[Any], set[str]]:
    """Run ``tasks`` on two workers; SIGKILL one of them once a fifth of the turns ran.

    Returns the results and the turns recorded before the worker died (read just before
    the kill: the other worker takes the dead one's runs up at once, so turns recorded
    after the kill may be turns that were in flight and rightly ran again).
    """
    factory = functools.partial(build, log_dir=str(log_dir))
    runner = RayRunner(factory, checkpoint_store=store, workers=2, max_concurrency=10)
    async with runner:
        victim = await runner.actors[0].pid.remote()
        batch = asyncio.ensure_future(runner.run_many(tasks, run_ids=tasks))
        # A fifth of 5 turns per run, and then a moment when some run of the victim has
        # recorded some of its turns but not all: runs go in waves of max_concurrency,
        # and a kill between two waves would leave nothing to resume.
        while True:
            assert not batch.done(), "the batch ended before the worker could be killed"
            if len(lines(log_dir, "ends.txt")) >= len(tasks):
                recorded = await _recorded_turns(store, tasks)
                if _mid_run(recorded, log_dir, victim):
                    break
            await asyncio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        results = await batch
        assert await _pid_when_back(runner.actors[0]) != victim  # Ray restarted the worker
        # The dead worker's runs were taken up from their checkpoints (by whichever worker
        # had room): the unfinished ones resumed, the finished ones came from the store.
        stats = [await actor.stats.remote() for actor in runner.actors]
        assert sum(s["resumed"] + s["finished_before"] for s in stats) > 0, stats
    return results, recorded


async def _check_no_finished_turn_ran_twice(
    results: list[Any], recorded: set[str], tasks: list[str], log_dir: Path
) -> None:
    failures = [r.traceback for r in results if not isinstance(r, TaskResult)]
    assert not failures, "\n".join(failures)
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(log_dir, "ends.txt"))
    every_turn = sorted(f"{t} {n}" for t in tasks for n in NODES)
    assert sorted(ends) == every_turn  # every turn of every run finished
    assert recorded, "no turn of the killed worker's runs was recorded before the kill"
    # A turn recorded before the kill never ran again ...
    assert [turn for turn in recorded if ends[turn] != 1] == []
    # ... only turns in flight (done but not yet recorded) may have run a second time.
    assert max(ends.values()) <= 2


async def test_a_killed_worker_resumes_its_runs_from_sqlite(cluster: str, tmp_path: Path) -> None:
    tasks = [f"k{i}" for i in range(200)]
    store = f"sqlite:///{tmp_path}/runs.db"
    results, recorded = await _batch_with_a_kill(store, tmp_path, tasks)
    await _check_no_finished_turn_ran_twice(results, recorded, tasks, tmp_path)


async def test_a_killed_worker_resumes_its_runs_from_postgres(
    cluster: str, tmp_path: Path, postgres_dsn: str
) -> None:
    tasks = [f"p{i}" for i in range(200)]
    results, recorded = await _batch_with_a_kill(postgres_dsn, tmp_path, tasks)
    await _check_no_finished_turn_ran_twice(results, recorded, tasks, tmp_path)


def test_cli_batch_on_ray_then_rerun(cluster: str, tmp_path: Path) -> None:
    import io
    import json

    from flowlib.cli import main

    tasks = tmp_path / "evals.jsonl"
    tasks.write_text("".join(json.dumps(f"q{i}") + "\n" for i in range(30)), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    argv = [
        "batch",
        f"{TESTS}/_batch_flows.py:build",
        str(tasks),
        "--store",
        f"sqlite:///{tmp_path}/runs.db",
        "--ray",
        "local",
        "--workers",
        "1",
        "--concurrency",
        "10",
        "--out",
        str(out),
    ]
    report = io.StringIO()
    assert main(argv, out=report) == 0
    assert "done     30 (0 already finished in the store)" in report.getvalue()
    rows = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["index"]
    )
    assert [r["turns"] for r in rows] == [5] * 30
    assert [r["messages"][-1]["content"] for r in rows] == [f"join|q{i}" for i in range(30)]
    report = io.StringIO()
    assert main(argv, out=report) == 0
    assert "done     30 (30 already finished in the store)" in report.getvalue()


async def test_stream_many_survives_a_killed_worker(cluster: str, tmp_path: Path) -> None:
    tasks = [f"s{i}" for i in range(60)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    store = f"sqlite:///{tmp_path}/runs.db"
    runner = RayRunner(factory, checkpoint_store=store, workers=2, max_concurrency=5)
    finals: dict[str, Any] = {}
    killed = False
    async with runner:
        victim = await runner.actors[0].pid.remote()
        async for event in runner.stream_many(tasks, run_ids=tasks):
            if event.done:
                assert event.run_id not in finals  # one result per run
                finals[event.run_id] = event.item
            if not killed and len(lines(tmp_path, "ends.txt")) >= 60:
                os.kill(victim, signal.SIGKILL)
                killed = True
        assert killed and await _pid_when_back(runner.actors[0]) != victim
    assert sorted(finals) == sorted(tasks)
    results = [finals[t] for t in tasks]
    assert all(isinstance(r, TaskResult) for r in results)
    assert [transcript(r.messages) for r in results] == await reference(tasks)


async def test_runs_whose_worker_died_too_often_fail_then_resume(
    cluster: str, tmp_path: Path
) -> None:
    tasks = [f"d{i}" for i in range(30)]
    factory = functools.partial(build, log_dir=str(tmp_path))
    store = f"sqlite:///{tmp_path}/runs.db"
    runner = RayRunner(factory, checkpoint_store=store, workers=1, max_concurrency=5, max_retries=0)
    async with runner:
        victim = await runner.actors[0].pid.remote()
        batch = asyncio.ensure_future(runner.run_many(tasks, run_ids=tasks))
        while len(lines(tmp_path, "ends.txt")) < 20:
            await asyncio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        first = await batch
        died = [r for r in first if isinstance(r, RunFailedError)]
        assert died and all(r.error_type == "WorkerDied" for r in died)
        assert any(r.partial_result.messages for r in died)  # type: ignore[union-attr]
        # The batch again, on the same runner (its worker restarted by Ray; a runner of
        # its own would start one more worker process): the failed runs resume.
        assert await _pid_when_back(runner.actors[0]) != victim
        results = await runner.run_many(tasks, run_ids=tasks)
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert max(ends.values()) <= 2 and len(ends) == len(tasks) * len(NODES)


async def _statuses(store_url: str, run_ids: list[str]) -> collections.Counter[str]:
    """How many of the runs the store holds in each status (``absent``: not stored)."""
    store = open_store(store_url)
    try:
        counts: collections.Counter[str] = collections.Counter()
        for run_id in run_ids:
            record = await store.get_run(run_id)
            counts["absent" if record is None else str(record.status)] += 1
        return counts
    finally:
        await store.close()


@pytest.mark.timeout(1500)
async def test_a_cancelled_batch_stops_on_the_workers_then_resumes(
    cluster: str, tmp_path: Path
) -> None:
    tasks = [f"x{i}" for i in range(60)]
    store = f"sqlite:///{tmp_path}/runs.db"
    factory = functools.partial(build, log_dir=str(tmp_path))
    concurrency, workers = 4, 2
    # Three branches run at once, so a worker has at most 3 turns per run in flight.
    in_flight = workers * concurrency * len(BRANCHES)
    async with RayRunner(
        factory, checkpoint_store=store, workers=workers, max_concurrency=concurrency
    ) as runner:
        batch = asyncio.ensure_future(runner.run_many(tasks, run_ids=tasks))
        while len(lines(tmp_path, "ends.txt")) < 40:
            assert not batch.done(), "the batch ended before it could be cancelled"
            await asyncio.sleep(0.01)
        at_cancel = len(lines(tmp_path, "ends.txt"))
        batch.cancel()
        await asyncio.gather(batch, return_exceptions=True)
        assert batch.cancelled()
        after_cancel = len(lines(tmp_path, "ends.txt"))
        starts = len(lines(tmp_path, "starts.txt"))
        # The workers stopped: at most the turns in flight ended after the cancel ...
        assert after_cancel - at_cancel <= in_flight
        assert [(await a.stats.remote())["holding"] for a in runner.actors] == [0, 0]
        await asyncio.sleep(1.0)
        # ... and no turn started or ended once the cancel returned.
        assert len(lines(tmp_path, "starts.txt")) == starts
        assert len(lines(tmp_path, "ends.txt")) == after_cancel
        statuses = await _statuses(store, tasks)
        # Each run recorded its stop (one cut before its first record is not stored).
        assert statuses["running"] == 0, statuses
        assert statuses["stopped"] + statuses["complete"] > 0, statuses
        assert after_cancel < len(tasks) * len(NODES)  # the batch was really cut short
        # The same runner goes on: the batch again resumes every run to its end.
        results = await runner.run_many(tasks, run_ids=tasks)
        # Every run resumes at once (a run cancelled while its lease was being written
        # once failed here, held by its own cancelled attempt: tests/batch covers it).
    failed = [getattr(r, "traceback", r) for r in results if not isinstance(r, TaskResult)]
    assert not failed, failed
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert sorted(ends) == sorted(f"{t} {n}" for t in tasks for n in NODES)
    assert max(ends.values()) <= 2  # only a turn cut between its work and its record ran twice


@pytest.mark.timeout(1500)
async def test_stream_many_yields_early_holds_a_window_and_stops_when_left(
    shared: RayRunner,
) -> None:
    tasks = [f"w{i}" for i in range(2000)]
    concurrency, workers = SHARED_CONCURRENCY, 2
    runner = shared
    before = sum([(await a.stats.remote())["started"] for a in runner.actors])
    async with contextlib.aclosing(runner.stream_many(tasks)) as stream:
        async for event in stream:
            if event.done:
                break
    held = [await a.stats.remote() for a in runner.actors]
    # The first result came while nearly every task still waited in the driver:
    # a worker gets a few runs beyond its concurrency, not the batch.
    assert sum(s["started"] for s in held) - before <= 2 * workers * (concurrency + 1)
    # Leaving the loop cancelled the runs on the workers; the runner goes on.
    assert [s["holding"] for s in held] == [0, 0]
    again = await runner.run_many(tasks[:3])
    assert [transcript(r.messages) for r in again] == await reference(tasks[:3])  # type: ignore[union-attr]


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")  # pragma: no cover


async def _queued_growth(runner: Any, tasks: list[str], ready: Any) -> tuple[int, float]:
    """Driver memory growth (Python's allocated blocks; RSS, MB) while ``runner`` holds
    ``tasks`` (their agents think far longer than the test), then cancel the batch.

    Not tracemalloc: its ``stop()`` races with Ray's threads, which allocate while they
    hand replies to Python, and on CPython before 3.12.9 that race is a segfault in
    tracemalloc's ``traceback_new`` (python/cpython#128679). It killed this test's
    pytest worker once, in a whole run of the suite (Ray's driver log:
    ``SIGSEGV ... traceback_new``). ``sys.getallocatedblocks()`` reads a counter.
    """
    import gc

    gc.collect()
    rss, blocks = _rss_mb(), sys.getallocatedblocks()
    batch = asyncio.ensure_future(runner.run_many(tasks))
    try:
        await ready()
        gc.collect()
        python = sys.getallocatedblocks() - blocks
        grown = _rss_mb() - rss
    finally:
        batch.cancel()
        await asyncio.gather(batch, return_exceptions=True)
    return python, grown


@pytest.mark.timeout(1500)
async def test_10000_queued_tasks_keep_driver_memory_near_the_local_runners(
    cluster: str,
) -> None:
    from flowlib.batch import LocalRunner

    tasks = [f"m{i}" for i in range(10_000)]
    slow = functools.partial(build, think=600.0)
    concurrency = 20

    local = LocalRunner(slow, max_concurrency=concurrency)

    async def local_ready() -> None:
        await asyncio.sleep(1.0)

    local_python, local_rss = await _queued_growth(local, tasks, local_ready)
    runner = RayRunner(slow, checkpoint_store=None, workers=2, max_concurrency=concurrency // 2)
    async with runner:

        async def ray_ready() -> None:
            window = concurrency // 2 + 2
            while True:
                held = [await a.stats.remote() for a in runner.actors]
                if all(s["holding"] == window for s in held):
                    return
                await asyncio.sleep(0.1)

        ray_python, ray_rss = await _queued_growth(runner, tasks, ray_ready)
        held = [await a.stats.remote() for a in runner.actors]
    assert [s["holding"] for s in held] == [0, 0]  # cancelled on the workers
    # Python objects: a queued task costs the driver no more than in one process
    # (blocks, not bytes; 20,000 blocks of slack: Ray's own bookkeeping of a batch).
    assert ray_python <= 2 * local_python + 20_000, (ray_python, local_python)
    # RSS moves with allocator pages, not only objects: a floor of 64 MB (submitting
    # every task up front grew it by hundreds of MB).
    assert ray_rss <= max(2 * local_rss, 64), (ray_rss, local_rss)


async def test_workers_beyond_the_cluster_are_refused_at_once(cluster: str) -> None:
    started = time.monotonic()
    with pytest.raises(RayWorkersError, match=r"3 workers need 3 `CPU` .* the cluster has 2"):
        await RayRunner(build, checkpoint_store=None, workers=3).start()
    with pytest.raises(RayWorkersError, match="`big_node`"):
        await RayRunner(build, checkpoint_store=None, workers=1, resources={"big_node": 1}).start()
    assert time.monotonic() - started < 30  # no waiting: the cluster has too little in all


@pytest.mark.timeout(900)
async def test_workers_that_never_become_ready_raise_within_ready_timeout(cluster: str) -> None:
    hanging = functools.partial(build_hanging, seconds=300)
    started = time.monotonic()
    with pytest.raises(RayWorkersError, match=r"1 of 1 Ray workers were not ready after 3 s"):
        await RayRunner(hanging, checkpoint_store=None, workers=1, ready_timeout=3).start()
    assert time.monotonic() - started < 3 + 30
    # Room on the cluster, but taken: both CPUs reserved by another job (a placement
    # group holds them as another runner's workers would, without two worker processes
    # to start: seconds of CPU each).
    from ray.util.placement_group import placement_group, remove_placement_group

    taken = placement_group([{"CPU": 1}, {"CPU": 1}])
    try:
        await asyncio.wait_for(asyncio.wrap_future(taken.ready().future()), 120)
        started = time.monotonic()
        with pytest.raises(RayWorkersError, match="the cluster has 0 CPU free"):
            await RayRunner(build, checkpoint_store=None, workers=1, ready_timeout=3).start()
        assert time.monotonic() - started < 3 + 30
    finally:
        remove_placement_group(taken)
    # The refused runners left nothing behind: a full-size runner starts.
    async with RayRunner(build, checkpoint_store=None, workers=2) as runner:
        [result] = await runner.run_many(["after"])
    assert transcript(result.messages)[-1] == "join:join|after"  # type: ignore[union-attr]


async def test_a_local_working_dir_needs_the_runner_to_join_ray(
    cluster: str, tmp_path: Path
) -> None:
    # This process joined Ray in the fixture: Ray uploads folders only for a job.
    runner = RayRunner(build, checkpoint_store=None, runtime_env={"working_dir": str(tmp_path)})
    with pytest.raises(InvalidArgumentError, match="joined Ray before the runner did"):
        await runner.start()
    assert runner.actors == []


MARK = "flowlib-worker-says-hello-from"


@pytest.mark.timeout(1800)
async def test_ctrl_c_stops_the_runs_on_the_workers_and_a_rerun_completes_them(
    cluster: str, tmp_path: Path
) -> None:
    # The command joins this module's cluster (`--ray ADDRESS`): what Ctrl-C does to the
    # workers' runs does not depend on who started the cluster, and a cluster of its own
    # would cost seconds of CPU. (`--ray local` is shown in test_ray_cli.py.)
    flows = tmp_path / "flows.py"
    # The factory prints a line on each worker: Ray's log_to_driver brings it to the
    # command's output, as Ray users expect.
    flows.write_text(
        "import os\nfrom _batch_flows import build as _build\n\n\n"
        "def build(**options):\n"
        f"    print({MARK!r}, os.getpid(), flush=True)\n"
        f"    return _build(log_dir={str(tmp_path)!r}, **options)\n",
        encoding="utf-8",
    )
    ids = [f"q{i}" for i in range(60)]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"task": t, "run_id": t}) + "\n" for t in ids), "utf-8")
    url = f"sqlite:///{tmp_path}/runs.db"
    argv = [sys.executable, "-m", "flowlib", "batch", f"{flows}:build", str(tasks)]
    path = os.pathsep.join([str(ROOT), str(TESTS), str(tmp_path)])
    argv += ["--store", url, "--out", str(tmp_path / "out.jsonl"), "--ray", cluster]
    argv += ["--workers", "1", "--concurrency", "4"]
    # The command's job gets its own environment: its workers import the flows from here.
    argv += ["--runtime-env", json.dumps({"env_vars": {"PYTHONPATH": path}})]
    env = {**os.environ, "PYTHONPATH": path}
    # The command inherits how this process takes SIGINT: ignored (pytest started in the
    # background by a script: `cmd &` ignores it), Python installs no handler and the
    # batch runs to its end (seen as "exit 0" here, twice).
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN, "pytest ignores SIGINT"
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while len(lines(tmp_path, "ends.txt")) < 40:
            if child.poll() is not None:
                raise AssertionError(child.communicate())
            assert time.monotonic() < deadline, "the batch did not get going"
            await asyncio.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=240)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode != 0 and b"interrupted" in err, (out, err)
    statuses = await _statuses(url, ids)
    # The runs that began recorded their stop before the workers went away.
    assert statuses["running"] == 0, statuses
    # The worker's print reached the command's output, prefixed with the worker's pid.
    printed = [line for line in (out + err).decode().splitlines() if MARK in line]
    printed = [line for line in printed if "pid=" in line]  # not the driver's own
    assert printed, (out, err)
    worker_pid = printed[0].split()[-1]
    assert f"pid={worker_pid}" in printed[0] and worker_pid != str(child.pid), printed
    assert statuses["stopped"] + statuses["complete"] > 0, statuses
    ends_before = len(lines(tmp_path, "ends.txt"))
    assert ends_before < len(ids) * len(NODES)
    results = await LocalRunner(
        f"{flows}:build", checkpoint_store=url, max_concurrency=20
    ).run_many(ids, run_ids=ids)
    reference = [transcript((await build(think=0).run(task=t)).messages) for t in ids]
    assert [transcript(r.messages) for r in results] == reference  # type: ignore[union-attr]
    ends = collections.Counter(lines(tmp_path, "ends.txt"))
    assert sorted(ends) == sorted(f"{t} {n}" for t in ids for n in NODES)
    assert max(ends.values()) <= 2
