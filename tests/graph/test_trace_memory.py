"""A run trace keeps a few bytes per turn (issue 22, item 7), and its logs still read as lists."""

from __future__ import annotations

import copy
import gc
import operator
import pickle
import tracemalloc

from flowlib.graph import FiredEdges, RunTrace, StepNodes


def _kept_per_turn(turns: int) -> float:
    trace = RunTrace(names=["a", "b"], edge_ends=[("a", "b"), ("b", "a")])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for turn in range(turns):
            step = trace.start(turn % 2)
            trace.fire(step, turn % 2)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(trace.step_nodes) == len(trace.fired) == turns
    return kept / turns


def test_a_long_run_keeps_a_few_bytes_per_turn_in_its_trace() -> None:
    # A list of (step, edge) tuples and a list of node numbers kept about 100 bytes a
    # turn (a tuple, two list slots, an int object per step past 256); the arrays keep
    # 16 (plus their growth margin).
    assert _kept_per_turn(20_000) < 24


def test_the_trace_logs_read_as_lists() -> None:
    trace = RunTrace(names=["a", "b"], edge_ends=[("a", "b")], step_nodes=[0, 1], fired=[(0, 0)])
    assert isinstance(trace.step_nodes, StepNodes) and isinstance(trace.fired, FiredEdges)
    assert trace.step_nodes == [0, 1] and operator.eq([0, 1], trace.step_nodes)
    assert trace.fired == [(0, 0)] and trace.fired == ((0, 0),) and trace.fired != [(0, 1)]
    assert trace.step_nodes != [0] and trace.fired != "x"
    trace.fire(1, 0)
    trace.start(0)
    assert trace.step_nodes[-1] == 0 and trace.step_nodes[1:] == [1, 0]
    assert trace.fired[1] == (1, 0) and trace.fired[:1] == [(0, 0)]
    assert list(reversed(trace.fired)) == [(1, 0), (0, 0)]
    assert list(reversed(trace.step_nodes)) == [0, 1, 0]
    assert repr(trace.fired) == "[(0, 0), (1, 0)]" and repr(trace.step_nodes) == "[0, 1, 0]"
    assert (1, 0) in trace.fired and trace.fired.index((1, 0)) == 1
    trace.fired[0] = (5, 0)
    trace.fired.insert(0, (4, 0))
    del trace.fired[2]
    assert trace.fired == [(4, 0), (5, 0)]
    trace.fired[0:1] = [(2, 0), (3, 0)]
    assert trace.fired == [(2, 0), (3, 0), (5, 0)]
    trace.step_nodes[0:2] = [1]
    trace.step_nodes.insert(0, 1)
    trace.step_nodes[2] = 1
    del trace.step_nodes[0]
    assert trace.step_nodes == [1, 1]
    assert trace.steps == ["b", "b"] and trace.visited == {"b"}
    for clone in (copy.deepcopy(trace), pickle.loads(pickle.dumps(trace))):
        assert clone.step_nodes == trace.step_nodes and clone.fired == trace.fired
        assert clone == trace
    trace.clear()
    assert trace.step_nodes == [] and trace.fired == [] and len(trace.fired) == 0
