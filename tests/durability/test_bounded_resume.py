"""A crash never changes the outcome of a bounded team (issue 20 item 2).

Every team kind, bounded by ``max_turns`` and by each counting termination condition
(and ``|`` / ``&`` of them), is interrupted at every model call (the call fails) and at
every checkpoint write (that write and all later ones fail, as when the process dies
there), then resumed by a fresh team on the same SQLite file: the stored transcript
*and the stop reason* equal the uninterrupted run's. Before issue 20 the budget of
``max_turns`` and the conditions' progress restarted at the resume, so the resumed run
ran longer (a 10-turn team ended with 16 turns).

The SIGKILL version (a real process killed at a hypothesis-chosen point, on SQLite and
PostgreSQL) is in ``test_bounded_sigkill.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _bounded import BOUNDS, KINDS, build

from flowlib.checkpoint import CheckpointStore, InMemoryCheckpointStore, SQLiteCheckpointStore, fold
from flowlib.errors import NodeExecutionError


class DyingStore:
    """A store whose appends fail from the n-th on: the process "died" there."""

    def __init__(self, inner: CheckpointStore, dies_at: int) -> None:
        self._inner = inner
        self._left = dies_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        self._left -= 1
        if self._left < 0:
            raise ConnectionError("the process is dead")
        await self._inner.append(record, status=status, lease_owner=lease_owner)


async def outcome(store: CheckpointStore, run_id: str = "r") -> tuple[list[str], str | None]:
    folded = fold(await store.records(run_id), run_id=run_id)
    run = await store.get_run(run_id)
    assert run is not None
    texts = [f"{m.get('source')}: {m.get('content')}" for m in folded.messages]
    return texts, run.stop_reason


async def reference(kind: str, bound: str) -> tuple[tuple[list[str], str | None], int, int]:
    store = InMemoryCheckpointStore()
    calls = [10_000]
    await build(kind, bound, store, calls).run(task="start", run_id="r")
    appends = len(await store.history("r"))
    return await outcome(store), 10_000 - calls[0], appends


@pytest.mark.parametrize("bound", sorted(BOUNDS))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_bounded_team_interrupted_anywhere_resumes_to_the_same_outcome(
    kind: str, bound: str, tmp_path: Path
) -> None:
    want, calls, appends = await reference(kind, bound)
    assert want[1] is not None and "complete" not in want[1], want[1]  # the bound ended it
    assert calls >= 4, calls
    points = [("model", n) for n in range(calls)] + [("write", n) for n in range(1, appends)]
    for how, at in points:
        path = tmp_path / f"{how}-{at}.db"
        store = SQLiteCheckpointStore(path)
        if how == "model":
            with pytest.raises(NodeExecutionError):
                await build(kind, bound, store, [at]).run(task="start", run_id="r")
        else:
            with pytest.raises(ConnectionError):
                await build(kind, bound, DyingStore(store, at)).run(  # type: ignore[arg-type]
                    task="start", run_id="r"
                )
        await store.close()
        store = SQLiteCheckpointStore(path)  # a fresh process's view of the file
        result = await build(kind, bound, store).run(run_id="r")
        assert await outcome(store) == want, (how, at)
        assert result.stop_reason == want[1], (how, at)
        await store.close()


async def test_continuing_a_stopped_run_with_a_new_task_is_a_new_budget(tmp_path: Path) -> None:
    store = SQLiteCheckpointStore(tmp_path / "runs.db")
    first = await build("round_robin", "max_turns", store).run(task="start", run_id="r")
    assert first.stop_reason == "Maximum number of turns 5 reached."
    again = await build("round_robin", "max_turns", store).run(task="more", run_id="r")
    assert [m.source for m in again.messages][1:] == ["c", "a", "b", "c", "a"]
    assert again.stop_reason == "Maximum number of turns 5 reached."
    await store.close()
