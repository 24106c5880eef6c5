"""A map's instances survive SIGKILL (issue 23): a process running a map-reduce graph
against a SQLite store dies right after a drawn checkpoint; a new process resumes the
run. The stored transcript equals the uninterrupted run's, and no instance whose output
a checkpoint held before the kill runs again."""

from __future__ import annotations

import asyncio
import signal
import tempfile
from pathlib import Path

import pytest
from _forked import run_script
from _map_child import team
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from flowlib.checkpoint import SQLiteCheckpointStore, fold

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHILD = HERE / "_map_child.py"


def _child(folder: Path, items: int, concurrency: int, kill_after: int) -> int:
    # A fork of a process that has flowlib imported (tests/_forked.py), not a new
    # interpreter: the same script, SIGKILLed for real, without paying the import.
    done = run_script(
        CHILD,
        str(folder / "runs.db"),
        str(folder / "ledger.txt"),
        str(items),
        str(concurrency),
        str(kill_after),
        paths=[ROOT, HERE],
        timeout=60,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    return done.returncode


def _ledger(folder: Path) -> list[str]:
    path = folder / "ledger.txt"
    return path.read_text().split() if path.exists() else []


async def _stored(db: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The stored transcript and the instances the last checkpoint holds as finished."""
    store = SQLiteCheckpointStore(db)
    try:
        folded = fold(await store.records("r"))
    finally:
        await store.close()
    transcript = [(m["source"], str(m["content"])) for m in folded.messages]
    # Finished instances: recorded ones (their outputs are in the thread) and the ones
    # waiting for an earlier item to be recorded.
    done = list(folded.bookkeeping.get("map_done", {}).get("researcher", {}))
    done += [str(i) for i in range(folded.bookkeeping.get("map_next", {}).get("researcher", 0))]
    return transcript, [f"q{index}" for index in done]


async def _reference(folder: Path, items: int, concurrency: int) -> list[tuple[str, str]]:
    store = SQLiteCheckpointStore(folder / "runs.db")
    await team(store, str(folder / "ledger.txt"), items, concurrency).run(
        task="question", run_id="r"
    )
    await store.close()
    return (await _stored(folder / "runs.db"))[0]


@pytest.mark.timeout(400)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    # Each example is two subprocesses: no shrinking (the failing example is printed as
    # drawn), so a failure reports within the test's timeout on a busy machine.
    phases=[Phase.explicit, Phase.generate],
)
@given(items=st.integers(0, 5), concurrency=st.integers(1, 3), kill=st.integers(1, 11))
@example(items=4, concurrency=2, kill=4)  # dies mid-map, two instances checkpointed
def test_sigkill_during_a_map_then_resume_in_a_new_process(
    items: int, concurrency: int, kill: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference"
        reference.mkdir()
        want = asyncio.run(_reference(reference, items, concurrency))
        assert sorted(_ledger(reference)) == sorted(f"q{i}" for i in range(items))
        assert [source for source, _ in want] == [
            "user",
            "planner",
            *(f"researcher[{i}]" for i in range(items)),
            "writer",
        ]

        folder = Path(tmp) / "killed"
        folder.mkdir()
        # Checkpoints: start, the planner's turn, one per finished instance, the map's
        # turn, the writer's turn, the stop.
        appends = 1 + (kill - 1) % (items + 5)
        if _child(folder, items, concurrency, appends) == 0:
            return  # the run finished before the drawn checkpoint
        before = _ledger(folder)
        _, held = asyncio.run(_stored(folder / "runs.db"))
        assert _child(folder, items, concurrency, 0) == 0
        got, _ = asyncio.run(_stored(folder / "runs.db"))
        assert got == want
        after = _ledger(folder)[len(before) :]
        assert sorted(set(before + after)) == sorted(f"q{i}" for i in range(items))
        # No instance a checkpoint held before the kill ran again; only instances that
        # were running (finished but not yet checkpointed) may have.
        assert not [q for q in held if q in after]
        assert len([q for q in set(before) if q in after]) <= concurrency
