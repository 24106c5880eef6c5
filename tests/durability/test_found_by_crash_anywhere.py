"""Cases the crash-anywhere property test found, kept as plain regression tests.

Each is the shrunk example hypothesis printed, run through the same check as the
property. Those marked ``xfail(strict=True)`` are open defects of the executor: the
mark names the defect, and the test starts failing as XPASS the day it is fixed (then
remove the mark).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from test_crash_anywhere import Interruption, one_case

from flowlib.testing.strategies import EdgeSpec, GraphSpec, NodeSpec


def _run(spec: GraphSpec, how: Interruption, point: tuple[int, int], kind: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(one_case(spec, how, point, kind, Path(folder)))


FAN_OUT = GraphSpec(
    nodes=(NodeSpec("a"), NodeSpec("e"), NodeSpec("c"), NodeSpec("r0")),
    edges=(EdgeSpec("a", "e"), EdgeSpec("a", "c"), EdgeSpec("a", "r0")),
    shape="fan_out",
)


@pytest.mark.xfail(
    strict=True,
    reason="executor: a turn recorded while the consuming task is cancelled during its "
    "checkpoint write (`await self._after_record(...)` in GraphExecutor.run_stream) is "
    "added to `kept` only after that await, so its message is in the store but in no "
    "result: not streamed, not in the CancelledError's partial_result, not in the "
    "resumed run's result",
)
def test_a_turn_checkpointed_while_the_task_is_cancelled_reaches_the_caller() -> None:
    _run(FAN_OUT, "task", (1, 2), "sqlite")


def test_the_same_fan_out_interrupted_by_the_token_or_an_exception() -> None:
    _run(FAN_OUT, "token", (1, 2), "sqlite")
    _run(FAN_OUT, "exception", (1, 2), "sqlite")


# a's first reply fires a -> b and a -> a; b loops once on itself. b runs three times
# in the uninterrupted run: for a's first reply, for its own loop, for a's second reply.
SELF_LOOPS = GraphSpec(
    nodes=(
        NodeSpec("a", outputs=("<b0>",), then="ok"),
        NodeSpec("b", outputs=("<b2>",), then="ok"),
    ),
    edges=(
        EdgeSpec("a", "b"),
        EdgeSpec("a", "a", condition="<b0>", activation_group="J0", activation_condition="all"),
        EdgeSpec("a", "a", condition="<b1>"),
        EdgeSpec("b", "b", condition="<b2>"),
    ),
    entry="a",
    shape="dag_loops",
)

# a -> b, a -> c, b -> c (c joins a and b), and d (activation "any") follows a, b and c.
ANY_JOIN = GraphSpec(
    nodes=(
        NodeSpec("a", then="ok"),
        NodeSpec("b", then="ok"),
        NodeSpec("c", then="ok"),
        NodeSpec("d", then="ok", activation="any"),
    ),
    edges=(
        EdgeSpec("a", "c"),
        EdgeSpec("b", "c"),
        EdgeSpec("a", "d"),
        EdgeSpec("b", "d"),
        EdgeSpec("c", "d", condition="<k5>"),
        EdgeSpec("a", "b"),
        EdgeSpec("a", "a", condition="<b0>"),
    ),
    entry="a",
    shape="dag_loops",
)

ABSORBED = (
    "executor: a turn interrupted while it ran is re-run on resume with the messages "
    "that arrived meanwhile, and absorbs the activations that arrived meanwhile, so the "
    "node runs fewer times than in the uninterrupted run (an activation arriving while a "
    "node runs must stay pending after the interrupted turn is re-run)"
)


@pytest.mark.xfail(strict=True, reason=ABSORBED)
def test_an_activation_during_an_interrupted_turn_is_not_absorbed_token() -> None:
    _run(SELF_LOOPS, "token", (1, 1), "memory")


@pytest.mark.xfail(strict=True, reason=ABSORBED)
def test_an_activation_during_an_interrupted_turn_is_not_absorbed_any_join() -> None:
    _run(ANY_JOIN, "exception", (1, 0), "memory")
