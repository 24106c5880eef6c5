"""save_state / load_state: JSON-safe, versioned, and resuming exactly where a run stopped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from _agents import Fake, texts

from flowlib.base import TaskResult
from flowlib.conditions import MaxMessageTermination
from flowlib.errors import StateError
from flowlib.graph import COMPLETE_REASON, GraphManagerState
from flowlib.messages import BaseChatMessage
from flowlib.teams import DiGraphBuilder, GraphFlow

GUARD = 30
MANAGER = "GraphFlowManager"


def lacks(text: str) -> Callable[[BaseChatMessage], bool]:
    def check(message: BaseChatMessage) -> bool:
        return text not in message.to_model_text()

    return check


# Each shape: (agent scripts, edges, entry). Agents are rebuilt from the scripts, so a
# "fresh" team has fresh agents that only know their turn count from the loaded state.
Shape = tuple[dict[str, Sequence[str]], list[tuple[Any, ...]], str | None]

SHAPES: dict[str, Shape] = {
    # A -> B -> A until B approves, then C.
    "ping_pong": (
        {"A": (), "B": ("revise", "revise", "revise", "APPROVE"), "C": ()},
        [("A", "B"), ("B", "A", lacks("APPROVE")), ("B", "C", "APPROVE")],
        "A",
    ),
    # A join inside a loop whose branches have different lengths, so a stop can fall
    # between the two halves of the join: B -> C -> E and B -> D1 -> D2 -> E.
    "join_loop": (
        {"A": (), "B": (), "C": (), "D1": (), "D2": (), "E": ("again", "again", "done"), "F": ()},
        [
            ("A", "B"),
            ("B", "C"),
            ("B", "D1"),
            ("D1", "D2"),
            ("C", "E"),
            ("D2", "E"),
            ("E", "B", "again"),
            ("E", "F", "done"),
        ],
        None,
    ),
    # A -> B -> (C1, C2) -> B with an `any` loop-back group, exit B -> X.
    "any_loop": (
        {"A": (), "B": ("go", "go", "go", "exit"), "C1": (), "C2": (), "X": ()},
        [
            ("A", "B"),
            ("B", "C1", lacks("exit")),
            ("B", "C2", lacks("exit")),
            ("B", "X", "exit"),
            ("C1", "B", {"activation_group": "back", "activation_condition": "any"}),
            ("C2", "B", {"activation_group": "back", "activation_condition": "any"}),
        ],
        None,
    ),
    # A self-loop after a fan-out.
    "self_loop": (
        {"A": (), "B": ("more", "more", "done"), "C": (), "D": ()},
        [("A", "B"), ("A", "C"), ("B", "B", "more"), ("B", "D", "done"), ("C", "D")],
        None,
    ),
}


def build(
    shape: Shape, *, max_messages: int | None = None, max_turns: int | None = None
) -> tuple[GraphFlow, dict[str, Fake]]:
    scripts, edges, entry = shape
    agents = {name: Fake(name, replies) for name, replies in scripts.items()}
    builder = DiGraphBuilder()
    for agent in agents.values():
        builder.add_node(agent)
    for source, target, *rest in edges:
        options = rest[0] if rest else {}
        if not isinstance(options, dict):
            options = {"condition": options}
        builder.add_edge(source, target, **options)
    if entry is not None:
        builder.set_entry_point(entry)
    flow = GraphFlow(
        builder.get_participants(),
        builder.build(),
        termination_condition=MaxMessageTermination(max_messages) if max_messages else None,
        max_turns=max_turns,
    )
    return flow, agents


async def run(flow: GraphFlow, **kw: Any) -> TaskResult:
    return await asyncio.wait_for(flow.run(**kw), GUARD)


async def reference(shape: Shape) -> tuple[list[str], list[str], dict[str, Fake]]:
    flow, agents = build(shape, max_messages=1000)
    result = await run(flow, task="go")
    assert result.stop_reason == COMPLETE_REASON
    return texts(result.messages), flow.trace.steps, agents


def stop_points(name: str) -> list[int]:
    """Every MaxMessageTermination limit that stops the reference run before its end."""
    total = {"ping_pong": 10, "join_loop": 18, "any_loop": 13, "self_loop": 7}[name]
    return list(range(2, total))


CASES = [(name, k) for name in SHAPES for k in stop_points(name)]


async def check_resume(name: str, **stop: int) -> GraphManagerState:
    """Stop a run with ``stop``, load its state into a fresh team, finish, compare.

    Returns the manager state that was saved.
    """
    shape = SHAPES[name]
    ref_texts, ref_steps, ref_agents = await reference(shape)

    original, original_agents = build(shape, **stop)
    first = await run(original, task="go")
    assert first.stop_reason is not None
    assert not first.stop_reason.startswith(COMPLETE_REASON)  # it stopped inside the run
    steps_before = list(original.trace.steps)

    saved = json.loads(json.dumps(await original.save_state()))
    fresh, fresh_agents = build(shape, max_messages=1000)
    await fresh.load_state(saved)
    second = await run(fresh)

    assert texts(first.messages) + texts(second.messages) == ref_texts
    assert steps_before + fresh.trace.steps == ref_steps
    assert second.stop_reason == COMPLETE_REASON
    for agent_name, ref_agent in ref_agents.items():
        before, after = original_agents[agent_name], fresh_agents[agent_name]
        # Fresh agents continue the script: their turn count came from the state.
        assert after.turns == ref_agent.turns, agent_name
        # Over both halves an agent is shown the others' messages exactly once and in
        # thread order (the cursors were restored): a prefix of the thread without its
        # own messages. Where branches run concurrently, whether a sibling's reply lands
        # before a turn starts is a race, so turn boundaries may differ from the
        # reference; in a purely sequential shape they may not.
        shown = [m for seen in before.seen + after.seen for m in seen]
        others = [m for m in ref_texts if not m.startswith(f"{agent_name}:")]
        assert shown == others[: len(shown)], agent_name
        if name == "ping_pong":
            assert before.seen + after.seen == ref_agent.seen, agent_name
    return GraphManagerState.model_validate(saved["agent_states"][MANAGER])


@pytest.mark.parametrize(("name", "limit"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
async def test_resume_after_max_messages_matches_uninterrupted_run(name: str, limit: int) -> None:
    await check_resume(name, max_messages=limit)


TURN_CASES = [
    (name, k)
    for name, total in {"ping_pong": 9, "join_loop": 17, "any_loop": 12, "self_loop": 6}.items()
    for k in range(1, total)
]


@pytest.mark.parametrize(("name", "turns"), TURN_CASES, ids=[f"{n}-{k}" for n, k in TURN_CASES])
async def test_resume_after_max_turns_matches_uninterrupted_run(name: str, turns: int) -> None:
    await check_resume(name, max_turns=turns)


async def test_saved_state_holds_partial_joins_and_absorbed_edges() -> None:
    # Stopping between the two halves of E's join saves the half that fired...
    joined = await check_resume("join_loop", max_messages=4)
    assert joined.fired == [("C", "E", "E:loop")]
    assert joined.ready == ["D2"]
    # ...and stopping after C1 re-entered B while C2 was still queued saves the
    # absorbed C2 -> B edge, so B still runs once for that round after loading.
    absorbed = await check_resume("any_loop", max_turns=3)
    assert absorbed.absorbed == [("C2", "B", "back")]
    assert absorbed.ready == ["C2", "B"]


async def test_save_state_is_json_serialisable_and_versioned() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=4)
    await run(flow, task="go")
    state = await flow.save_state()
    text = json.dumps(state)
    assert json.loads(text) == state
    assert state["version"] == 1
    assert set(state["agent_states"]) == {"A", "B", "C", MANAGER}
    assert state["agent_states"]["A"] == {"type": "FakeState", "turns": 2}
    assert state["agent_states"]["B"] == {"type": "FakeState", "turns": 1}
    manager = GraphManagerState.model_validate(state["agent_states"][MANAGER])
    assert manager.version == 1
    assert manager.type == "GraphManagerState"
    assert [m["content"] for m in manager.message_thread] == ["go", "A1", "revise", "A2"]
    assert manager.thread_nodes == [None, "A", "B", "A"]
    assert manager.ready == ["B"]
    assert manager.fresh is False


async def test_save_state_of_a_fresh_team() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=4)
    state = json.loads(json.dumps(await flow.save_state()))
    manager = GraphManagerState.model_validate(state["agent_states"][MANAGER])
    assert manager.message_thread == []
    assert manager.fresh is True


async def test_state_after_natural_completion_then_new_task_in_a_fresh_team() -> None:
    shape: Shape = ({"A": (), "B": ()}, [("A", "B")], None)
    flow, _ = build(shape, max_messages=100)
    await run(flow, task="one")
    saved = json.loads(json.dumps(await flow.save_state()))
    fresh, agents = build(shape, max_messages=100)
    await fresh.load_state(saved)
    result = await run(fresh, task="two")
    assert fresh.trace.steps == ["A", "B"]
    assert texts(result.messages) == ["user:two", "A:A2", "B:B2"]
    # The loaded thread is context: A is shown what it had not seen yet.
    assert agents["A"].seen == [["B:B1", "user:two"]]


async def test_load_state_into_team_with_different_participants() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=4)
    await run(flow, task="go")
    saved = await flow.save_state()
    other_shape: Shape = (
        {"A": (), "B": ("APPROVE",), "Z": ()},
        [("A", "B"), ("B", "A", lacks("APPROVE")), ("B", "Z", "APPROVE")],
        "A",
    )
    other, _ = build(other_shape, max_messages=4)
    with pytest.raises(StateError) as info:
        await other.load_state(saved)
    assert isinstance(info.value, ValueError)
    assert "`C`" in str(info.value)
    assert "`Z`" in str(info.value)


async def test_load_state_naming_an_unknown_node_in_the_manager_state() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=4)
    await run(flow, task="go")
    saved = json.loads(json.dumps(await flow.save_state()))
    saved["agent_states"][MANAGER]["ready"] = ["ghost"]
    fresh, _ = build(SHAPES["ping_pong"], max_messages=4)
    with pytest.raises(StateError, match="`ghost`"):
        await fresh.load_state(saved)


async def test_load_state_naming_an_unknown_edge() -> None:
    flow, _ = build(SHAPES["join_loop"], max_messages=4)
    await run(flow, task="go")
    saved = json.loads(json.dumps(await flow.save_state()))
    saved["agent_states"][MANAGER]["fired"] = [["A", "F", "F"]]
    fresh, _ = build(SHAPES["join_loop"], max_messages=4)
    with pytest.raises(StateError, match="`A -> F`"):
        await fresh.load_state(saved)


async def test_load_state_wrong_versions() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=4)
    await run(flow, task="go")
    saved = json.loads(json.dumps(await flow.save_state()))

    team_version = json.loads(json.dumps(saved))
    team_version["version"] = 99
    fresh, _ = build(SHAPES["ping_pong"], max_messages=4)
    with pytest.raises(StateError, match="99"):
        await fresh.load_state(team_version)

    manager_version = json.loads(json.dumps(saved))
    manager_version["agent_states"][MANAGER]["version"] = 99
    with pytest.raises(StateError, match="99"):
        await fresh.load_state(manager_version)

    with pytest.raises(StateError):
        await fresh.load_state({"version": 1})


async def test_failed_load_leaves_the_team_usable() -> None:
    flow, _ = build(SHAPES["ping_pong"], max_messages=100)
    saved = json.loads(json.dumps(await flow.save_state()))
    saved["agent_states"][MANAGER]["ready"] = ["ghost"]
    with pytest.raises(StateError):
        await flow.load_state(saved)
    result = await run(flow, task="go")
    assert flow.trace.steps == ["A", "B", "A", "B", "A", "B", "A", "B", "C"]
    assert result.stop_reason == COMPLETE_REASON


async def test_nested_team_state_round_trip() -> None:
    def make() -> tuple[GraphFlow, dict[str, Fake]]:
        x, y = Fake("X"), Fake("Y", ["again", "again", "done"])
        b = DiGraphBuilder().add_node(x).add_node(y).add_edge("X", "Y")
        inner = GraphFlow(b.get_participants(), b.build(), name="inner")
        a, c = Fake("A"), Fake("C")
        outer_builder = (
            DiGraphBuilder()
            .add_node(a)
            .add_node(inner)
            .add_node(c)
            .add_edge("A", "inner")
            .add_edge("inner", "A", condition="again")
            .add_edge("inner", "C", condition="done")
            .set_entry_point("A")
        )
        outer = GraphFlow(
            outer_builder.get_participants(),
            outer_builder.build(),
            termination_condition=MaxMessageTermination(6),
        )
        return outer, {"A": a, "X": x, "Y": y, "C": c}

    original, _ = make()
    first = await run(original, task="go")
    # The inner team's turn is one outer turn: the stop comes after its last message.
    assert texts(first.messages) == [
        "user:go",
        "A:A1",
        "X:X1",
        "Y:again",
        "A:A2",
        "X:X2",
        "Y:again",
    ]
    saved = json.loads(json.dumps(await original.save_state()))
    assert set(saved["agent_states"]) == {"A", "inner", "C", MANAGER}
    assert set(saved["agent_states"]["inner"]["agent_states"]) == {"X", "Y", MANAGER}

    fresh, agents = make()
    await fresh.load_state(saved)
    second = await run(fresh)
    assert fresh.trace.steps == ["A", "inner", "C"]
    assert texts(second.messages) == ["A:A3", "X:X3", "Y:done", "C:C1"]
    assert agents["A"].seen == [["X:X2", "Y:again"]]
