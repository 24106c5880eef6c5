"""Hypothesis properties of map edges over generated map-reduce graphs (issue 23): every
item's instance runs once, the reduce fires once with all outputs in item order, and
nothing runs before its activation."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings

from flowlib.messages import TextMessage
from flowlib.testing.strategies import MapGraphSpec, map_graphs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(map_graphs())
def test_map_reduce_runs_every_instance_once_and_reduces_in_item_order(
    spec: MapGraphSpec,
) -> None:
    log: list[str] = []
    team = spec.team(log)
    result = asyncio.run(team.run(task="go"))
    labels = [f"mapped[{i}]" for i in range(spec.items)]

    # Every item's instance runs once.
    assert sorted(e for e in log if e.startswith("start:mapped[")) == sorted(
        f"start:{label}" for label in labels
    )
    assert len([e for e in log if e.startswith("end:mapped[")]) == spec.items

    # The reduce fires once, after every instance and the side branch, and receives the
    # instances' outputs in item order.
    assert log.count("start:reduce") == 1
    reduce_at = log.index("start:reduce")
    for label in labels:
        assert log.index(f"end:{label}") < reduce_at
    for name in spec.side:
        assert log.index(f"end:{name}") < reduce_at
    chat = [m for m in result.messages if isinstance(m, TextMessage)]
    outputs = [m.to_text() for m in chat if m.source.startswith("mapped[")]
    assert outputs == [f"output {i}" for i in range(spec.items)]
    assert [m.source for m in chat if m.source.startswith("mapped[")] == labels
    assert team.trace.steps.count("mapped") == 1
    assert sorted(name for _, name in team.trace.instances) == sorted(labels)

    # Nothing runs before its activation: instances after the source, the tail after the
    # reduce, the chain in order; the bound holds.
    source_end = log.index("end:source")
    for label in labels:
        assert log.index(f"start:{label}") > source_end
    chain = [*spec.before, "source"]
    for first, second in itertools.pairwise(chain):
        assert log.index(f"end:{first}") < log.index(f"start:{second}")
    for name in spec.tail:
        assert log.index(f"start:{name}") > log.index("end:reduce")
    if spec.max_concurrency is not None:
        running = most = 0
        for entry in log:
            if entry.startswith("start:mapped["):
                running += 1
                most = max(most, running)
            elif entry.startswith("end:mapped["):
                running -= 1
        assert most <= spec.max_concurrency
