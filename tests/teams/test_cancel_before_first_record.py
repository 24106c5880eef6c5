"""A stored run cancelled before its first record is not left ``running``.

The run record is created before the first checkpoint; a cancel landing while it is
written (or before the executor writes the ``start`` record) used to leave a run
``running`` with no records: not resumable (it has no task) and reported as in progress
by ``runs list`` and the studio. Such a run had not started, so it is removed; a cancel
once the executor runs records the run's stop as before. Faults are in-process (a store
that waits inside its writes), so these tests are cheap.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flowlib.checkpoint import CheckpointRecord, RunRecord, SQLiteCheckpointStore
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent


class WaitingStore(SQLiteCheckpointStore):
    """Waits ``pause`` seconds inside ``create_run`` or the first ``append`` (before or
    after the write itself), with ``inside`` set, so a test can cancel there."""

    def __init__(self, path: Path, *, at: str, after: bool, pause: float = 0.3) -> None:
        super().__init__(path)
        self.at, self.after, self.pause = at, after, pause
        self.inside = asyncio.Event()
        self.appends = 0

    async def _wait_around(self, write: Any) -> Any:
        self.inside.set()
        if not self.after:
            await asyncio.sleep(self.pause)
        result = await write()
        if self.after:
            await asyncio.sleep(self.pause)
        return result

    async def create_run(self, run: RunRecord, **kwargs: Any) -> Any:
        def write() -> Any:
            return super(WaitingStore, self).create_run(run, **kwargs)

        return await (self._wait_around(write) if self.at == "create" else write())

    async def append(self, record: CheckpointRecord, **kwargs: Any) -> Any:
        self.appends += 1

        def write() -> Any:
            return super(WaitingStore, self).append(record, **kwargs)

        first = self.at == "append" and self.appends == 1
        return await (self._wait_around(write) if first else write())


def build(store: Any) -> GraphFlow:
    agents = [ScriptedAgent(name, [f"{name} said"]) for name in ("a", "b")]
    builder = DiGraphBuilder().add_node(agents[0]).add_node(agents[1]).add_edge("a", "b")
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)


@pytest.mark.parametrize(
    ("at", "after"), [("create", False), ("create", True), ("append", False), ("append", True)]
)
async def test_a_run_cancelled_before_its_first_record_is_not_left_running(
    tmp_path: Path, at: str, after: bool
) -> None:
    store = WaitingStore(tmp_path / "runs.db", at=at, after=after)
    try:
        run = asyncio.ensure_future(build(store).start_run("go", run_id="r"))
        await store.inside.wait()
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        assert run.cancelled()
        stored = await store.get_run("r")
        if at == "create":  # nothing ran: nothing is left
            assert stored is None
        else:  # the executor ran: its stop is recorded, with the task
            assert stored is not None and stored.status == "stopped", stored
        # Either way the run goes on to the uninterrupted run's transcript.
        store.at = ""
        again = build(store)
        if stored is None:
            result = await again.start_run("go", run_id="r")
        else:
            result = await again.resume_run("r")
        assert [m.to_text() for m in result.messages][-2:] == ["a said", "b said"]
        assert (await store.get_run("r")).status == "complete"  # type: ignore[union-attr]
    finally:
        await store.close()
