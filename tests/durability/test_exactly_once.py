"""Exactly-once tool side effects with ``CallResults`` and ``call_key()``, under SIGKILL.

A tool appends a line to a file through ``CallResults.once(call_key(), ...)`` (with a
``lookup`` that finds its key in the file). The process kills itself at a point of one of
the turn's two calls: before the side effect, after it (before the result is recorded),
or after the result is recorded (before the tool returns). A second process resumes the
run from the store. The file then holds exactly one line per call, and the interrupted
call had the same key in both processes, on SQLite and on a real PostgreSQL.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _forked import run_script

from flowlib.checkpoint import CallResults, InMemoryCheckpointStore, SQLiteCheckpointStore
from flowlib.errors import CheckpointArgumentError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHILD = HERE / "_once_child.py"
POINTS = ["before", "after_effect", "after_record"]


def _child(folder: Path, plan: dict[str, Any]) -> int:
    path = folder / "plan.json"
    path.write_text(json.dumps(plan))
    # A fork of a process that has flowlib imported (tests/_forked.py), not a new
    # interpreter: the same script, SIGKILLed for real, without paying the import.
    done = run_script(CHILD, str(path), paths=[ROOT, HERE], timeout=100)
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    return done.returncode


def _case(folder: Path, store: str, call: int, at: str) -> None:
    plan: dict[str, Any] = {
        "store": store,
        "effects": str(folder / "effects.txt"),
        "attempts": str(folder / "attempts.txt"),
        "run_id": "r",
        "start": True,
        "kill": {"call": call, "at": at},
    }
    (folder / "effects.txt").touch()
    assert _child(folder, plan) == -signal.SIGKILL
    assert _child(folder, {**plan, "start": False, "kill": None}) == 0

    lines = (folder / "effects.txt").read_text().splitlines()
    keys = Counter(line.split()[0] for line in lines)
    assert len(lines) == 2 and set(keys.values()) == {1}, lines  # one line per call
    attempts = [line.split() for line in (folder / "attempts.txt").read_text().splitlines()]
    pids = list(dict.fromkeys(pid for pid, _, _ in attempts))
    assert len(pids) == 2
    first = {int(index): key for pid, index, key in attempts if pid == pids[0]}
    second = {key for pid, _, key in attempts if pid == pids[1]}
    assert first[call] in second, "the interrupted call's key changed on resume"
    assert set(keys) == set(first.values()), "the calls' keys in the file"


@pytest.mark.parametrize("at", POINTS)
def test_sqlite_one_line_per_call_under_sigkill(tmp_path: Path, at: str) -> None:
    _case(tmp_path, f"sqlite:///{tmp_path / 'runs.db'}", 0, at)


@pytest.mark.parametrize("at", POINTS)
def test_postgres_one_line_per_call_under_sigkill(
    tmp_path: Path, postgres_dsn: str, at: str
) -> None:
    _case(tmp_path, postgres_dsn, 0, at)


@pytest.mark.slow
@pytest.mark.parametrize("at", POINTS)
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_second_call_under_sigkill(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, at: str
) -> None:
    store = (
        f"sqlite:///{tmp_path / 'runs.db'}"
        if kind == "sqlite"
        else request.getfixturevalue("postgres_dsn")
    )
    _case(tmp_path, store, 1, at)


async def test_once_returns_the_recorded_result_and_acts_once() -> None:
    results = CallResults(InMemoryCheckpointStore())
    acted: list[int] = []

    async def act() -> dict[str, int]:
        acted.append(1)
        return {"charge": len(acted)}

    assert await results.once("k", act) == {"charge": 1}
    assert await results.once("k", act) == {"charge": 1}
    assert await results.once("other", act) == {"charge": 2}
    assert acted == [1, 1]
    record = await results.get("k")
    assert record is not None and record.state == "done"


async def test_a_started_call_without_lookup_acts_again(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    results = CallResults(store)
    await results.start("k")  # an attempt that died before recording
    assert await results.once("k", lambda: "second") == "second"
    await results.start("j")
    assert await results.once("j", lambda: "acted", lookup=lambda: "found") == "found"
    again = CallResults(store)  # another connection sees the same table
    assert await again.once("k", lambda: "third") == "second"
    await results.close()
    await again.close()
    await store.close()


async def test_results_must_be_json_and_keys_strings() -> None:
    results = CallResults(InMemoryCheckpointStore())
    with pytest.raises(CheckpointArgumentError, match="JSON-serialisable"):
        await results.once("k", lambda: object())
    with pytest.raises(CheckpointArgumentError, match="non-empty string"):
        await results.once("", lambda: 1)
    with pytest.raises(CheckpointArgumentError, match="on a file"):
        CallResults(SQLiteCheckpointStore(":memory:"))
