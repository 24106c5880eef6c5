"""LocalRunner: many runs on one event loop, results in order, failures in place."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import pickle
from pathlib import Path

import _batch_flows
import pytest
from _batch_flows import FAIL_ON, build, transcript

from flowlib.base import TaskResult
from flowlib.batch import LocalRunner, RunEvent, resolve_factory
from flowlib.errors import (
    ArgumentTypeError,
    FlowlibError,
    InvalidArgumentError,
    RunFailedError,
)

FLOWS = str(Path(__file__).parents[1] / "_batch_flows.py")


async def reference(tasks: list[str]) -> list[list[str]]:
    """Each task run alone, one after the other, on a fresh team."""
    return [transcript((await build(think=0).run(task=task)).messages) for task in tasks]


async def test_200_runs_share_one_loop_and_match_the_reference() -> None:
    tasks = [f"task-{i}" for i in range(200)]
    built: list[int] = []

    def factory() -> object:
        built.append(1)
        return build()

    runner = LocalRunner(factory, max_concurrency=50)
    results = await runner.run_many(tasks)
    assert all(isinstance(r, TaskResult) for r in results)
    assert [transcript(r.messages) for r in results] == await reference(tasks)
    assert len(built) == 50  # finished runs' teams were reset and reused
    # They share the loop: before the first run ends, all 50 of the first wave have
    # started streaming (told by events, not by the clock).
    started: set[int] = set()
    events = LocalRunner(build, max_concurrency=50).stream_many(tasks[:100])
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event.item, TaskResult):
                break
            started.add(event.index)
    assert len(started) == 50


async def test_teams_are_built_per_run_without_reuse() -> None:
    built: list[int] = []

    def factory() -> object:
        built.append(1)
        return build(think=0)

    tasks = [f"t{i}" for i in range(6)]
    results = await LocalRunner(factory, max_concurrency=2, reuse_teams=False).run_many(tasks)
    assert len(built) == 6
    assert [transcript(r.messages) for r in results] == await reference(tasks)  # type: ignore[union-attr]


async def test_an_agent_error_fails_its_run_only_with_the_partial_result() -> None:
    tasks = ["a", FAIL_ON, "b"]
    results = await LocalRunner(build).run_many(tasks, run_ids=["r-a", "r-fail", "r-b"])
    assert isinstance(results[0], TaskResult) and isinstance(results[2], TaskResult)
    failure = results[1]
    assert isinstance(failure, RunFailedError)
    assert isinstance(failure, FlowlibError)
    assert failure.run_id == "r-fail"
    assert failure.error_type == "RuntimeError"
    assert "middle cannot handle" in failure.error_message
    assert "middle cannot handle" in failure.traceback
    partial = transcript(failure.partial_result.messages)  # type: ignore[union-attr]
    assert partial[:2] == [f"user:{FAIL_ON}", f"src:src|{FAIL_ON}"]
    assert f"middle:middle|{FAIL_ON}" not in partial
    copy = pickle.loads(pickle.dumps(failure))  # crosses processes (Ray) intact
    assert (copy.run_id, copy.error_type, str(copy)) == (
        failure.run_id,
        failure.error_type,
        str(failure),
    )
    assert transcript(copy.partial_result.messages) == partial


async def test_stream_many_tags_every_item_with_its_run() -> None:
    events = [e async for e in LocalRunner(build).stream_many(["x", "y"], run_ids=["rx", "ry"])]
    assert all(isinstance(e, RunEvent) for e in events)
    for run_id, index, key in (("rx", 0, "x"), ("ry", 1, "y")):
        mine = [e for e in events if e.run_id == run_id]
        assert {e.index for e in mine} == {index}
        assert [e.done for e in mine] == [False] * (len(mine) - 1) + [True]
        final = mine[-1].item
        assert isinstance(final, TaskResult)
        chats = [e.item for e in mine[:-1]]
        assert transcript(chats) == transcript(final.messages)
        assert transcript(chats)[-1] == f"join:join|{key}"
    finals = [e async for e in LocalRunner(build).stream_many(["x"], events=False)]
    assert len(finals) == 1 and finals[0].done


def _most_runs_at_once(events: list[str]) -> int:
    """From the flow's turn log in order: a run is in flight from its ``src`` turn's start
    to its ``join`` turn's end."""
    at_once = most = 0
    for event in events:
        at_once += {"starts.txt src": 1, "ends.txt join": -1}.get(event, 0)
        most = max(most, at_once)
    return most


async def test_max_concurrency_bounds_the_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counted from the turns' own log, not timed: a busy machine cannot change it.
    events: list[str] = []
    monkeypatch.setattr(
        _batch_flows, "_append", lambda _, name, line: events.append(f"{name} {line.split()[-1]}")
    )
    factory = functools.partial(build, think=0.04)
    await LocalRunner(factory, max_concurrency=2).run_many(["a", "b", "c", "d"])
    assert events.count("ends.txt join") == 4
    assert _most_runs_at_once(events) == 2  # two waves of two
    events.clear()
    await LocalRunner(factory).run_many(["a", "b", "c", "d"])
    assert _most_runs_at_once(events) == 4  # unbounded: all four at once


async def test_factory_references() -> None:
    results = await LocalRunner(f"{FLOWS}:build").run_many(["ref"])
    assert isinstance(results[0], TaskResult)
    assert transcript(results[0].messages)[-1] == "join:join|ref"
    assert resolve_factory("_batch_flows:build") is build
    with pytest.raises(InvalidArgumentError, match="not `module:function`"):
        LocalRunner("no colon")
    with pytest.raises(InvalidArgumentError, match="cannot be imported"):
        LocalRunner("no_such_module_xyz:build")
    with pytest.raises(InvalidArgumentError, match="has no function `nope`"):
        LocalRunner("_batch_flows:nope")
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        LocalRunner("missing/flows.py:build")
    with pytest.raises(ArgumentTypeError, match="factory"):
        LocalRunner(42)  # type: ignore[arg-type]


async def test_a_factory_that_returns_no_team_fails_each_run_clearly() -> None:
    results = await LocalRunner(lambda: "not a team").run_many(["a"], run_ids=["r1"])
    assert isinstance(results[0], RunFailedError)
    assert "not a team" in results[0].error_message


async def test_bad_batches_are_refused_before_anything_runs() -> None:
    runner = LocalRunner(build)
    with pytest.raises(ArgumentTypeError, match="`tasks` must be a list"):
        await runner.run_many("one task")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="`tasks` must be a list of tasks, got int"):
        await runner.run_many(5)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="`tasks` must be a list of tasks, got int"):
        await anext(runner.stream_many(5))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="2 ids for 1 task;"):
        await runner.run_many(["a"], run_ids=["x", "y"])
    with pytest.raises(InvalidArgumentError, match="repeats `x`"):
        await runner.run_many(["a", "b"], run_ids=["x", "x"])
    with pytest.raises(InvalidArgumentError, match="non-empty strings"):
        await runner.run_many(["a"], run_ids=[""])
    with pytest.raises(InvalidArgumentError, match="max_concurrency"):
        LocalRunner(build, max_concurrency=0)
    assert await runner.run_many([]) == []


async def test_cancelling_the_batch_cancels_its_runs() -> None:
    runner = LocalRunner(functools.partial(build, think=10))
    batch = asyncio.ensure_future(runner.run_many(["a", "b"]))
    await asyncio.sleep(0.05)
    batch.cancel()
    with pytest.raises(asyncio.CancelledError):
        await batch
    assert len(asyncio.all_tasks()) == 1  # only this test's task: no orphan runs


async def test_leaving_stream_many_early_cancels_the_other_runs() -> None:
    runner = LocalRunner(functools.partial(build, think=10))
    async with contextlib.aclosing(runner.stream_many(["a", "b"])) as stream:
        async for _ in stream:
            break  # the first item (a task message): both runs still think
    assert len(asyncio.all_tasks()) == 1  # only this test's task: no orphan runs


def test_public_names_match_all() -> None:
    for name in ("flowlib.batch", "flowlib.distributed"):
        module = importlib.import_module(name)
        public = {
            attr
            for attr, value in vars(module).items()
            if not attr.startswith("_") and not inspect.ismodule(value)
        }
        assert public == set(module.__all__), name
