"""A quick crash-and-resume property over random graphs (the durable suite has the full
one): a run that dies at its k-th checkpoint write, resumed by a fresh team from the
store, ends with the same thread as the run that never died.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowlib.checkpoint import CheckpointStore, InMemoryCheckpointStore
from flowlib.teams import GraphFlow
from flowlib.testing.strategies import DEFAULT_MAX_TURNS, GraphSpec, valid_graphs


class Crash(BaseException):
    """The process died (not an Exception: nothing may catch it on the way out)."""


class DyingStore(InMemoryCheckpointStore):
    """Dies at its ``die_at``-th append: that write and everything after it fail."""

    def __init__(self, die_at: int) -> None:
        super().__init__()
        self.die_at = die_at
        self.appends = 0
        self.dead = False

    async def append(self, record: Any, *, status: Any, lease_owner: str | None = None) -> None:
        self.appends += 1
        if self.dead or self.appends == self.die_at:
            self.dead = True
            raise Crash()
        await super().append(record, status=status, lease_owner=lease_owner)


def team_of(spec: GraphSpec, store: CheckpointStore) -> GraphFlow:
    builder = spec.builder()
    max_turns = (spec.run_bound() or DEFAULT_MAX_TURNS) if spec.is_cyclic else None
    return GraphFlow(
        builder.get_participants(), builder.build(), max_turns=max_turns, checkpoint_store=store
    )


def thread_of(state: Any) -> list[str]:
    thread = state["agent_states"]["GraphFlowManager"]["message_thread"]
    return [f"{m['source']}:{m['content']}" for m in thread]


async def crash_and_resume(spec: GraphSpec, die_at: int) -> tuple[list[str], list[str]]:
    whole = team_of(spec, InMemoryCheckpointStore())
    await whole.run(task="go", run_id="r")
    expected = thread_of(await whole.save_state())

    store = DyingStore(die_at)
    with contextlib.suppress(Crash):
        await team_of(spec, store).run(task="go", run_id="r")
    store.dead = False
    resumed = team_of(spec, store)
    run = await store.get_run("r")
    started = run is not None and any(h.kind == "start" for h in await store.history("r"))
    # A task whose run died before the task was stored is submitted again.
    await resumed.run(task=None if started else "go", run_id="r")
    return expected, thread_of(await resumed.save_state())


@settings(max_examples=int(os.environ.get("FLOWLIB_EXAMPLES", "40")), deadline=None)
@given(valid_graphs(max_nodes=5), st.integers(1, 30))
def test_a_run_that_dies_mid_write_resumes_to_the_same_thread(spec: GraphSpec, die_at: int) -> None:
    expected, got = asyncio.run(crash_and_resume(spec, die_at))
    assert got == expected
