"""Issue 16.1: the executor gives the event loop a chance between turns.

Plain function nodes never await, so without that a run keeps the loop to itself: a
cancellation or an external stop from another task has no effect, and other runs on the
loop starve. Every check counts turns and events, never time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from flowlib.base import CancellationToken
from flowlib.conditions import ExternalTermination
from flowlib.graph._executor import YIELD_EVERY
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow

TURNS = 100_000
AT = 50  # the turn after which the other task acts
SLACK = YIELD_EVERY + 2  # turns that may still start before the loop runs the other task
# The loop that is cancelled and then resumed: resuming runs the rest of its budget, so its
# size is that test's cost (99,950 turns, ~8 s of CPU, with TURNS); the cancellation still
# comes at turn AT, long before the loop would end (docs/choices.md, "The test command's
# speed").
RESUMED_TURNS = 5_000


def counting_loop(counter: list[int], turns: int = TURNS, **kw: object) -> GraphFlow:
    """A one-node self-loop of a plain function that counts its calls."""

    def step(messages: Sequence[BaseChatMessage]) -> str:
        counter[0] += 1
        return "again"

    builder = DiGraphBuilder().add_node(step)
    builder.add_edge("step", "step", condition="again").set_entry_point("step")
    return GraphFlow(builder.get_participants(), builder.build(), max_turns=turns, **kw)  # type: ignore[arg-type]


async def when(predicate: Callable[[], bool]) -> None:
    """Wait, one loop iteration at a time, until ``predicate()`` holds."""
    while not predicate():
        await asyncio.sleep(0)


async def test_token_cancellation_from_another_task_stops_within_a_few_turns() -> None:
    count = [0]
    token = CancellationToken()
    flow = counting_loop(count)
    running = asyncio.ensure_future(flow.run(task="go", cancellation_token=token))
    await when(lambda: count[0] >= AT)
    token.cancel()
    seen = count[0]
    with pytest.raises(asyncio.CancelledError):
        await running
    assert seen <= AT + SLACK
    assert count[0] <= seen + SLACK


@pytest.mark.timeout(600)  # a hang guard: 46 s of 120 in a whole run at load ~20
async def test_task_cancellation_from_another_task_stops_within_a_few_turns() -> None:
    count = [0]
    flow = counting_loop(count, RESUMED_TURNS)
    running = asyncio.ensure_future(flow.run(task="go"))
    await when(lambda: count[0] >= AT)
    running.cancel()
    seen = count[0]
    with pytest.raises(asyncio.CancelledError):
        await running
    assert count[0] <= seen + SLACK
    # The team is usable at once, and resumes the loop where it stopped, with the rest
    # of the run's budget (issue 20: the cancelled run's turns count toward max_turns).
    ran = count[0]  # the last of them may have been cancelled before it was recorded
    result = await flow.run()
    assert RESUMED_TURNS - ran <= len(result.messages) <= RESUMED_TURNS - ran + 1
    assert result.stop_reason == f"Maximum number of turns {RESUMED_TURNS} reached."


async def test_external_termination_from_another_task_stops_within_a_few_turns() -> None:
    count = [0]
    stop = ExternalTermination()
    flow = counting_loop(count, termination_condition=stop)
    running = asyncio.ensure_future(flow.run(task="go"))
    await when(lambda: count[0] >= AT)
    stop.set()
    seen = count[0]
    result = await running
    assert result.stop_reason is not None and "External" in result.stop_reason
    assert count[0] <= seen + SLACK


async def test_two_runs_on_one_loop_both_progress() -> None:
    first, second = [0], [0]
    progress_seen: list[int] = []

    def watch(messages: Sequence[BaseChatMessage]) -> str:
        first[0] += 1
        if first[0] % 1000 == 0:
            progress_seen.append(second[0])
        return "again"

    builder = DiGraphBuilder().add_node(watch)
    builder.add_edge("watch", "watch", condition="again").set_entry_point("watch")
    one = GraphFlow(builder.get_participants(), builder.build(), max_turns=5000)
    two = counting_loop(second)
    token = CancellationToken()
    other = asyncio.ensure_future(two.run(task="go", cancellation_token=token))
    result = await one.run(task="go")
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await other
    assert len(result.messages) == 5001
    # While the first run ran, the second kept moving: it was never starved.
    assert progress_seen == sorted(progress_seen)
    assert len(set(progress_seen)) == len(progress_seen) == 5
    assert progress_seen[0] > 0
