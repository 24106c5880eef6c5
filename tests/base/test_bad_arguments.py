"""Bad arguments are named flowlib errors (issue 11.5): each one is a FlowlibError, a
TypeError or ValueError subclass as fits, names the argument and says what is expected;
nothing raw (AttributeError, pydantic's ValidationError) reaches the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from flowlib.agents import AssistantAgent
from flowlib.conditions import MaxMessageTermination, TimeoutTermination
from flowlib.errors import ArgumentTypeError, FlowlibError, GraphLoadError, StateError
from flowlib.graph import DiGraph
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import (
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from flowlib.testing import ScriptedAgent


def agent(name: str = "a") -> ScriptedAgent:
    return ScriptedAgent(name, ["x"])


def client() -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(["a"])


def team() -> RoundRobinGroupChat:
    return RoundRobinGroupChat([agent()], max_turns=1)


CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "round-robin of names": (lambda: RoundRobinGroupChat(["a"]), TypeError, "participants[0]"),
    "round-robin of None": (lambda: RoundRobinGroupChat(None), TypeError, "participants"),  # type: ignore[arg-type]
    "no participants": (lambda: RoundRobinGroupChat([]), ValueError, "participants"),
    "termination as text": (
        lambda: RoundRobinGroupChat([agent()], termination_condition="STOP"),  # type: ignore[arg-type]
        TypeError,
        "termination_condition",
    ),
    "max_turns as text": (
        lambda: RoundRobinGroupChat([agent()], max_turns="3"),  # type: ignore[arg-type]
        TypeError,
        "max_turns",
    ),
    "max_turns zero": (
        lambda: RoundRobinGroupChat([agent()], max_turns=0),
        ValueError,
        "max_turns",
    ),
    "graph None": (lambda: GraphFlow([agent()], graph=None), TypeError, "graph"),  # type: ignore[arg-type]
    "graph as dict": (lambda: GraphFlow([agent()], graph={}), TypeError, "graph"),  # type: ignore[arg-type]
    "swarm of names": (lambda: Swarm(["a"]), TypeError, "participants[0]"),  # type: ignore[list-item]
    "selector of names": (
        lambda: SelectorGroupChat(["a", "b"], model_client=client()),  # type: ignore[list-item]
        TypeError,
        "participants[0]",
    ),
    "selector without client": (
        lambda: SelectorGroupChat([agent("a"), agent("b")], model_client=None),  # type: ignore[arg-type]
        TypeError,
        "model_client",
    ),
    "magentic of names": (
        lambda: MagenticOneGroupChat(["a"], model_client=client()),  # type: ignore[list-item]
        TypeError,
        "participants[0]",
    ),
    "max messages as text": (lambda: MaxMessageTermination("5"), TypeError, "max_messages"),  # type: ignore[arg-type]
    "timeout as text": (lambda: TimeoutTermination("5"), TypeError, "timeout_seconds"),  # type: ignore[arg-type]
    "run(task=5)": (lambda: team().run(task=5), TypeError, "task"),  # type: ignore[arg-type]
    "run(task={...})": (lambda: team().run(task={"a": 1}), TypeError, "task"),  # type: ignore[arg-type]
    "run(task=[1])": (lambda: team().run(task=[1]), TypeError, "task[0]"),  # type: ignore[list-item]
    "agent run(task=5)": (lambda: agent().run(task=5), TypeError, "task"),  # type: ignore[arg-type]
    "team load_state(None)": (lambda: team().load_state(None), ValueError, "state"),  # type: ignore[arg-type]
    "agent load_state(None)": (lambda: agent().load_state(None), ValueError, "state"),  # type: ignore[arg-type]
    "assistant load_state(None)": (
        lambda: AssistantAgent("x", client()).load_state(None),  # type: ignore[arg-type]
        ValueError,
        "state",
    ),
    "assistant malformed state": (
        lambda: AssistantAgent("x", client()).load_state({"llm_context": 5}),
        StateError,
        "llm_context",
    ),
    "graph load None": (lambda: DiGraph.load(None), GraphLoadError, "DiGraph.dump()"),  # type: ignore[arg-type]
    "graph load bad nodes": (lambda: DiGraph.load({"nodes": 5}), GraphLoadError, "`nodes`"),
    "graph load bad edge": (
        lambda: DiGraph.load({"nodes": {"a": {"name": "a", "edges": [{"target": 3}]}}}),
        GraphLoadError,
        "nodes.a.edges.0.target",
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_argument_is_a_named_flowlib_error(case: str) -> None:
    call, kind, argument = CASES[case]

    def invoke() -> None:
        result = call()
        if asyncio.iscoroutine(result):
            asyncio.run(result)

    with pytest.raises(kind) as caught:
        invoke()
    error = caught.value
    assert isinstance(error, FlowlibError), f"{type(error).__name__}: {error}"
    assert argument in str(error)
    if isinstance(error, ArgumentTypeError):
        assert error.argument.startswith(argument.split("[")[0])


async def test_a_refused_task_leaves_the_team_as_it_was() -> None:
    rr = team()
    before = await rr.save_state()
    with pytest.raises(ArgumentTypeError):
        await rr.run(task=5)  # type: ignore[arg-type]
    assert await rr.save_state() == before
    assert (await rr.run(task="go")).messages[-1].to_text() == "x"
