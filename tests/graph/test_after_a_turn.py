"""Issue 22.3: coming back up from a turn, control flows one way. The executor records
the turn and tells the checkpointer through the graph's `RunRecorder` seam; the
checkpointer and the run object it writes are the graph's, so from the executor's
recording of a turn to the store's write no team code runs (teams only configure the
checkpointer when a run starts)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import flowlib
from flowlib.checkpoint import InMemoryCheckpointStore
from flowlib.teams import DiGraphBuilder, GraphFlow, RoundRobinGroupChat
from flowlib.testing import ScriptedAgent

ROOT = Path(flowlib.__file__).resolve().parent
TEAMS = str(ROOT / "teams")
EXECUTOR = str(ROOT / "graph" / "_executor.py")
AFTER_A_TURN = {"_record", "_cleanup"}  # the executor's recording of a finished turn


def _teams_code_under_the_turn_records(run: Any) -> tuple[list[str], int]:
    """Run ``run()`` under a profiler; the team functions called while the executor
    records a turn (its ``_record`` or ``_cleanup`` frame is among the callers), and how
    many calls reached the store's ``append`` that way."""
    seen: list[str] = []
    appends = 0

    def under_a_record(frame: FrameType | None) -> bool:
        while frame is not None:
            code = frame.f_code
            if code.co_filename == EXECUTOR and code.co_name in AFTER_A_TURN:
                return True
            frame = frame.f_back
        return False

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal appends
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.startswith(TEAMS) and under_a_record(frame.f_back):
            seen.append(f"{Path(code.co_filename).name}:{code.co_name}")
        elif (
            code.co_name == "append"
            and "checkpoint" in code.co_filename
            and under_a_record(frame.f_back)
        ):
            appends += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return sorted(set(seen)), appends


def test_no_team_code_runs_between_a_recorded_turn_and_its_checkpoint() -> None:
    import asyncio

    store = InMemoryCheckpointStore()
    a, b = ScriptedAgent("a", ["x"]), ScriptedAgent("b", ["y"])
    builder = DiGraphBuilder().add_node(a).add_node(b).add_edge(a, b)
    flow = GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)
    ring = RoundRobinGroupChat(
        [ScriptedAgent("c", ["1", "2"]), ScriptedAgent("d", ["3", "4"])],
        max_turns=3,
        checkpoint_store=InMemoryCheckpointStore(),
    )

    for team in (flow, ring):
        called, appends = _teams_code_under_the_turn_records(
            lambda team=team: asyncio.run(team.run(task="go", run_id="r1"))
        )
        assert appends >= 2  # a checkpoint per turn, written from the turn's record
        assert called == []
