"""Regex edge conditions run in linear time (issue 21.2): a GraphFlow config whose
`Regex` edge is `^(a+)+$` (Python's `re` backtracks 2^n steps on `a`*n + `!`) routes a
model answer of 30 `a`s and `!` at once, and the event loop stays responsive; a pattern
that needs backtracking (a backreference, a lookaround) is refused when the graph is
built, from code or from a config."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.component import ComponentLoadError, dump_component, load_component
from flowlib.errors import InvalidConditionError
from flowlib.graph import Regex
from flowlib.messages import TextMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow

EVIL = r"^(a+)+$"


def flow_config(answer: str, pattern: str) -> dict[str, Any]:
    judge = AssistantAgent("judge", model_client=ReplayChatCompletionClient([answer]))
    match = AssistantAgent("match", model_client=ReplayChatCompletionClient(["matched"]))
    other = AssistantAgent("other", model_client=ReplayChatCompletionClient(["no match"]))
    builder = DiGraphBuilder()
    builder.add_node(judge).add_node(match).add_node(other)
    builder.add_edge(judge, match, condition=Regex(pattern="^ok$"))
    builder.add_edge(judge, other, condition=Regex(pattern="z"))
    data = dump_component(GraphFlow(builder.get_participants(), builder.build())).model_dump(
        mode="json"
    )
    # A config from elsewhere: the first edge's pattern is the hostile one.
    edges = data["config"]["graph"]["nodes"]["judge"]["edges"]
    edges[0]["condition"]["pattern"] = pattern
    edges[1]["condition"]["pattern"] = "!$"
    return data


@pytest.mark.parametrize("length", [30, 100_000])
async def test_a_hostile_pattern_from_a_config_does_not_freeze_the_loop(length: int) -> None:
    team = load_component(flow_config("a" * length + "!", EVIL), GraphFlow)
    gaps: list[float] = []

    async def heartbeat() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    try:
        result = await team.run(task="go")
    finally:
        beat.cancel()
    sources = [m.source for m in result.messages if isinstance(m, TextMessage)]
    assert sources == ["user", "judge", "other"]  # `^(a+)+$` did not match; `!$` did
    # With `re` the 30-character answer alone blocks the loop for minutes (5.4 s at 25
    # characters, doubling with each one); RE2 answers in microseconds.
    assert max(gaps, default=0.0) < 5.0


def test_the_hostile_pattern_matches_like_re_would() -> None:
    condition = Regex(pattern=EVIL)
    assert condition.compiled().search("a" * 30) is not None
    assert condition.compiled().search("a" * 30 + "!") is None
    assert Regex(pattern="^OK", ignore_case=True).compiled().search("ok then") is not None


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)b", r"(?<!x)y", r"(?!a)"])
def test_a_pattern_that_needs_backtracking_is_refused_at_build(pattern: str) -> None:
    builder = DiGraphBuilder()
    builder.add_node(AssistantAgent("a", model_client=ReplayChatCompletionClient(["x"])))
    builder.add_node(AssistantAgent("b", model_client=ReplayChatCompletionClient(["x"])))
    with pytest.raises(InvalidConditionError, match="backtracking"):
        builder.add_edge("a", "b", condition=Regex(pattern=pattern))
        builder.build()


def test_a_pattern_that_needs_backtracking_is_refused_in_a_config() -> None:
    with pytest.raises((InvalidConditionError, ComponentLoadError), match="backtracking"):
        load_component(flow_config("x", r"(a+)\1"))
