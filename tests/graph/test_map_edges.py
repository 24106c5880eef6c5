"""Map edges (issue 23.1): one target instance per item, a reduce that receives their
outputs in item order. See docs/graph-semantics.md, "Map edges"."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _agents import Fake

from flowlib.agents import AssistantAgent
from flowlib.checkpoint import SQLiteCheckpointStore
from flowlib.errors import (
    ArgumentTypeError,
    ConditionSerializationError,
    InvalidArgumentError,
    MapEdgeConflictError,
    NodeExecutionError,
)
from flowlib.graph import DiGraph
from flowlib.messages import BaseChatMessage, TextMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow


def split(message: BaseChatMessage | None) -> list[str]:
    text = message.to_text() if message is not None else ""
    return [part for part in text.split(";") if part]


class Recorder:
    """Function nodes that log starts and ends (the researcher sleeps per item)."""

    def __init__(self, delays: dict[str, float] | None = None) -> None:
        self.log: list[str] = []
        self.delays = delays or {}
        self.running = 0
        self.most = 0

    def planner(self, answer: str) -> Any:
        def planner(messages: list[BaseChatMessage]) -> str:
            self.log.append("planner")
            return answer

        return planner

    def researcher(self) -> Any:
        async def researcher(messages: list[BaseChatMessage]) -> str:
            (item,) = messages
            self.log.append(f"start:{item.to_text()}")
            self.running += 1
            self.most = max(self.most, self.running)
            await asyncio.sleep(self.delays.get(item.to_text(), 0.001))
            self.running -= 1
            self.log.append(f"end:{item.to_text()}")
            return f"about {item.to_text()}"

        return researcher

    def writer(self) -> Any:
        def writer(messages: list[BaseChatMessage]) -> str:
            self.log.append("writer")
            return " + ".join(m.to_text() for m in messages if m.source.startswith("researcher"))

        return writer


def map_reduce(
    recorder: Recorder, answer: str, *, max_concurrency: int | None = None, **team: Any
) -> GraphFlow:
    builder = DiGraphBuilder()
    builder.add_node(recorder.planner(answer)).add_node(recorder.researcher())
    builder.add_node(recorder.writer(), activation="all")
    builder.add_edge("planner", "researcher", map=split, max_concurrency=max_concurrency)
    builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build(), **team)


async def test_each_item_runs_one_instance_and_the_reduce_gets_them_in_item_order() -> None:
    # The first item finishes last: the reduce still receives the outputs in item order.
    recorder = Recorder({"a": 0.2, "b": 0.05, "c": 0.001})
    team = map_reduce(recorder, "a;b;c")
    result = await team.run(task="question")
    chat = [(m.source, m.to_text()) for m in result.messages if isinstance(m, TextMessage)]
    assert chat == [
        ("user", "question"),
        ("planner", "a;b;c"),
        ("researcher[0]", "about a"),
        ("researcher[1]", "about b"),
        ("researcher[2]", "about c"),
        ("writer", "about a + about b + about c"),
    ]
    assert recorder.log.count("writer") == 1
    assert recorder.log.index("writer") > max(recorder.log.index(f"end:{x}") for x in "abc")
    assert recorder.most == 3  # concurrently
    assert team.trace.steps == ["planner", "researcher", "writer"]
    assert sorted(name for _, name in team.trace.instances) == [
        "researcher[0]",
        "researcher[1]",
        "researcher[2]",
    ]
    assert team.trace.instance_counts() == {1: 3}


async def test_an_empty_list_skips_the_branch_and_the_reduce_still_fires() -> None:
    recorder = Recorder()
    team = map_reduce(recorder, "")
    result = await team.run(task="question")
    assert [m.source for m in result.messages] == ["user", "planner", "writer"]
    assert recorder.log == ["planner", "writer"]
    assert team.trace.instances == []


# --- each instance's output leaves along the target's out-edges --------------------------


class Watcher:
    """A function node (``activation="any"``) logging the instance outputs each turn saw."""

    def __init__(self, name: str = "watcher") -> None:
        self.turns: list[list[str]] = []
        self.name = name

    def node(self) -> Any:
        def watcher(messages: list[BaseChatMessage]) -> str:
            seen = [m.to_text() for m in messages if m.source.startswith("researcher[")]
            self.turns.append(seen)
            return f"saw {len(seen)}"

        watcher.__name__ = self.name
        return watcher


def with_watcher(
    recorder: Recorder,
    watcher: Watcher,
    answer: str,
    *,
    condition: str | None = None,
    max_concurrency: int | None = 1,
    **team: Any,
) -> GraphFlow:
    """planner =map=> researcher -> watcher (``any``, optional condition) and -> writer
    (``all``, the reduce)."""
    builder = DiGraphBuilder()
    builder.add_node(recorder.planner(answer)).add_node(recorder.researcher())
    builder.add_node(watcher.node(), activation="any")
    builder.add_node(recorder.writer(), activation="all")
    builder.add_edge("planner", "researcher", map=split, max_concurrency=max_concurrency)
    builder.add_edge("researcher", watcher.name, condition=condition)
    builder.add_edge("researcher", "writer")
    return GraphFlow(builder.get_participants(), builder.build(), **team)


async def test_each_instance_output_leaves_along_the_out_edges_on_its_own_condition() -> None:
    # The condition holds for the middle item's output only (not the last one's): the
    # watcher runs once, as that output is recorded, while the map is still running (it
    # receives the thread since its last turn, as any node does).
    recorder = Recorder({x: 0.02 for x in "abc"})
    watcher = Watcher()
    team = with_watcher(recorder, watcher, "a;b;c", condition="about b")
    result = await team.run(task="question")
    assert watcher.turns == [["about a", "about b"]]
    chat = [(m.source, m.to_text()) for m in result.messages if isinstance(m, TextMessage)]
    assert chat == [
        ("user", "question"),
        ("planner", "a;b;c"),
        ("researcher[0]", "about a"),
        ("researcher[1]", "about b"),
        ("watcher", "saw 2"),
        ("researcher[2]", "about c"),
        ("writer", "about a + about b + about c"),
    ]
    assert recorder.log.count("writer") == 1


async def test_an_any_node_after_a_map_runs_for_each_instance_output() -> None:
    recorder = Recorder({x: 0.02 for x in "abc"})
    watcher = Watcher()
    team = with_watcher(recorder, watcher, "a;b;c")
    result = await team.run(task="question")
    # One turn per instance, each on that instance's output; the reduce runs once, after
    # every instance, with their outputs in item order.
    assert watcher.turns == [["about a"], ["about b"], ["about c"]]
    assert recorder.log.count("writer") == 1
    assert result.messages[-1].to_text() == "about a + about b + about c"
    assert team.trace.steps == ["planner", "researcher", "watcher", "watcher", "watcher", "writer"]
    fired = [(step, source, target) for step, source, target in team.trace.fired_edges]
    assert fired.count((1, "researcher", "watcher")) == 3
    assert fired.count((1, "researcher", "writer")) == 1


async def test_instances_are_recorded_in_item_order_whatever_order_they_finish_in() -> None:
    # All at once, the last item first: the watcher still sees the outputs in item order.
    recorder = Recorder({"a": 0.15, "b": 0.08, "c": 0.001})
    watcher = Watcher()
    team = with_watcher(recorder, watcher, "a;b;c", max_concurrency=None)
    result = await team.run(task="question")
    assert [text for turn in watcher.turns for text in turn] == ["about a", "about b", "about c"]
    sources = [m.source for m in result.messages if m.source.startswith("researcher[")]
    assert sources == ["researcher[0]", "researcher[1]", "researcher[2]"]


async def test_an_empty_list_runs_nothing_after_the_map_but_the_reduce() -> None:
    recorder = Recorder()
    watcher = Watcher()
    team = with_watcher(recorder, watcher, "")
    result = await team.run(task="question")
    assert watcher.turns == []
    assert [m.source for m in result.messages] == ["user", "planner", "writer"]


async def test_a_conditional_edge_into_the_reduce_fires_once_if_any_instance_passed() -> None:
    for condition, runs in (("about b", 1), ("nowhere", 0)):
        recorder = Recorder()
        builder = DiGraphBuilder()
        builder.add_node(recorder.planner("a;b;c")).add_node(recorder.researcher())
        builder.add_node(recorder.writer(), activation="all")
        builder.add_edge("planner", "researcher", map=split)
        builder.add_edge("researcher", "writer", condition=condition)
        team = GraphFlow(builder.get_participants(), builder.build())
        result = await team.run(task="question")
        assert recorder.log.count("writer") == runs
        if not runs:
            assert "`researcher` matched none of its outgoing edges" in str(result.stop_reason)


async def test_a_map_edge_after_a_map_maps_every_instance_output() -> None:
    # planner =map=> expand =map=> researcher -> writer: each expand instance's output
    # is mapped, and the items are concatenated in item order.
    recorder = Recorder()

    def expand(messages: list[BaseChatMessage]) -> str:
        (item,) = messages
        return f"{item.to_text()}1;{item.to_text()}2"

    builder = DiGraphBuilder().add_node(recorder.planner("a;b")).add_node(expand)
    builder.add_node(recorder.researcher()).add_node(recorder.writer(), activation="all")
    builder.add_edge("planner", "expand", map=split).add_edge("expand", "researcher", map=split)
    builder.add_edge("researcher", "writer")
    team = GraphFlow(builder.get_participants(), builder.build())
    result = await team.run(task="question")
    assert result.messages[-1].to_text() == "about a1 + about a2 + about b1 + about b2"


async def test_a_map_resumed_from_its_checkpoints_runs_only_the_unfinished_instances(
    tmp_path: Path,
) -> None:
    # The third instance fails once; a fresh team resumes the stored run: the watcher
    # runs once more (for the third output), the first two instances do not run again,
    # and the stored transcript equals an uninterrupted run's.
    from flowlib.checkpoint import fold

    async def transcript(store: SQLiteCheckpointStore, run_id: str) -> list[tuple[str, str]]:
        folded = fold(await store.records(run_id))
        return [(m["source"], str(m["content"])) for m in folded.messages]

    broken = {"c"}
    started: list[str] = []
    first = Watcher()

    async def researcher(messages: list[BaseChatMessage]) -> str:
        item = messages[0].to_text()
        started.append(item)
        await asyncio.sleep(0.01)
        if item in broken:
            # Fail only once the watcher's turn on b's output has run (it runs beside the
            # map: on a loaded machine it might not have started yet, and would rightly
            # run again on resume).
            for _ in range(2000):
                if any("about b" in seen for seen in first.turns):
                    break
                await asyncio.sleep(0.005)
            raise ConnectionError(f"{item} is down")
        return f"about {item}"

    store = SQLiteCheckpointStore(str(tmp_path / "runs.db"))

    def team(watcher: Watcher) -> GraphFlow:
        recorder = Recorder()
        builder = DiGraphBuilder().add_node(recorder.planner("a;b;c")).add_node(researcher)
        builder.add_node(watcher.node(), activation="any")
        builder.add_node(recorder.writer(), activation="all")
        builder.add_edge("planner", "researcher", map=split, max_concurrency=1)
        builder.add_edge("researcher", "watcher").add_edge("researcher", "writer")
        return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)

    with pytest.raises(NodeExecutionError):
        await team(first).run(task="go", run_id="job")
    assert started == ["a", "b", "c"]
    broken.clear()
    started.clear()
    watcher = Watcher()
    await team(watcher).run(run_id="job")
    assert started == ["c"]
    assert watcher.turns == [["about c"]]
    await team(Watcher()).run(task="go", run_id="reference")
    got, want = await transcript(store, "job"), await transcript(store, "reference")
    # The same messages as an uninterrupted run. (Where the watcher's replies fall among
    # the instances' outputs depends on timing, in the uninterrupted run as well: it runs
    # concurrently with the map. The instances' outputs are in item order, the reduce
    # last.)
    assert sorted(got) == sorted(want)
    assert [m for m in got if m[0].startswith("researcher[")] == [
        ("researcher[0]", "about a"),
        ("researcher[1]", "about b"),
        ("researcher[2]", "about c"),
    ]
    assert got[-1] == ("writer", "about a + about b + about c")
    await store.close()


async def test_max_concurrency_bounds_the_instances_running_at_once() -> None:
    recorder = Recorder({str(i): 0.02 for i in range(7)})
    team = map_reduce(recorder, ";".join(str(i) for i in range(7)), max_concurrency=2)
    result = await team.run(task="q")
    assert recorder.most == 2
    assert result.messages[-1].to_text() == " + ".join(f"about {i}" for i in range(7))


async def test_a_map_runs_again_each_time_its_edge_fires() -> None:
    recorder = Recorder()
    team = map_reduce(recorder, "x;y")
    await team.run(task="one")
    result = await team.run(task="two")
    assert [m.source for m in result.messages][2:4] == ["researcher[0]", "researcher[1]"]


async def test_an_agent_target_gets_a_fresh_copy_per_item_from_its_config() -> None:
    # A copy from the component config starts its script (and its model context) afresh:
    # every instance answers the script's first line, having seen only its own item.
    client = ReplayChatCompletionClient(["first", "second"])
    template = AssistantAgent("researcher", client)
    builder = DiGraphBuilder().add_node(Recorder().planner("p;q;r")).add_node(template)
    builder.add_edge("planner", "researcher", map=split)
    team = GraphFlow(builder.get_participants(), builder.build())
    result = await team.run(task="go")
    assert [(m.source, m.to_text()) for m in result.messages[2:]] == [
        ("researcher[0]", "first"),
        ("researcher[1]", "first"),
        ("researcher[2]", "first"),
    ]
    assert client.requests == []  # the template itself never ran


async def test_an_instances_factory_builds_each_instance() -> None:
    built: list[Fake] = []

    def make(index: int) -> Fake:
        agent = Fake("researcher", [f"answer {index}"])
        built.append(agent)
        return agent

    builder = DiGraphBuilder().add_node(Recorder().planner("p;q"))
    builder.add_node(Fake("researcher"), instances=make)
    builder.add_edge("planner", "researcher", map=split)
    team = GraphFlow(builder.get_participants(), builder.build())
    result = await team.run(task="go")
    assert [m.to_text() for m in result.messages[2:]] == ["answer 0", "answer 1"]
    assert [agent.seen for agent in built] == [[["planner:p"]], [["planner:q"]]]


async def test_an_agent_without_a_config_and_no_factory_is_a_named_error() -> None:
    builder = DiGraphBuilder().add_node(Recorder().planner("p")).add_node(Fake("researcher"))
    builder.add_edge("planner", "researcher", map=split)
    team = GraphFlow(builder.get_participants(), builder.build())
    with pytest.raises(NodeExecutionError, match="instances=") as raised:
        await team.run(task="go")
    assert raised.value.node == "researcher"


async def test_a_bad_map_result_is_a_named_error_on_the_edge() -> None:
    def broken(message: BaseChatMessage | None) -> Any:
        return "not a list"

    builder = DiGraphBuilder().add_node(Recorder().planner("p")).add_node(Recorder().writer())
    builder.add_edge("planner", "writer", map=broken)
    team = GraphFlow(builder.get_participants(), builder.build())
    with pytest.raises(NodeExecutionError, match="map function of edge `planner -> writer`"):
        await team.run(task="go")


async def test_a_failed_instance_fails_the_map_and_finished_instances_do_not_run_again(
    tmp_path: Path,
) -> None:
    recorder = Recorder({"a": 0.001, "b": 0.3, "c": 0.001})
    broken = {"c"}

    async def researcher(messages: list[BaseChatMessage]) -> str:
        item = messages[0].to_text()
        recorder.log.append(f"start:{item}")
        if item in broken:
            await asyncio.sleep(0.05)
            raise ConnectionError(f"{item} is down")
        await asyncio.sleep(recorder.delays[item])
        return f"about {item}"

    store = SQLiteCheckpointStore(str(tmp_path / "runs.db"))

    def team() -> GraphFlow:
        builder = DiGraphBuilder().add_node(recorder.planner("a;b;c")).add_node(researcher)
        builder.add_node(recorder.writer())
        builder.add_edge("planner", "researcher", map=split).add_edge("researcher", "writer")
        return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=store)

    with pytest.raises(NodeExecutionError) as raised:
        await team().run(task="go", run_id="job")
    assert isinstance(raised.value.__cause__, ConnectionError)
    # `a` finished before `c` failed (and `b` was cancelled): a resumed run, in a fresh
    # team, runs `b` and `c` only.
    broken.clear()
    recorder.log.clear()
    result = await team().run(run_id="job")
    assert sorted(entry for entry in recorder.log if entry.startswith("start")) == [
        "start:b",
        "start:c",
    ]
    assert result.messages[-1].to_text() == "about a + about b + about c"
    await store.close()


async def test_the_map_state_saves_and_loads_with_the_team() -> None:
    recorder = Recorder()
    gate = asyncio.Event()

    async def researcher(messages: list[BaseChatMessage]) -> str:
        item = messages[0].to_text()
        recorder.log.append(item)
        if item == "b":
            await gate.wait()
        return f"about {item}"

    def build() -> GraphFlow:
        builder = DiGraphBuilder().add_node(recorder.planner("a;b")).add_node(researcher)
        builder.add_node(recorder.writer())
        builder.add_edge("planner", "researcher", map=split).add_edge("researcher", "writer")
        return GraphFlow(builder.get_participants(), builder.build())

    team = build()
    running = asyncio.ensure_future(team.run(task="go"))
    while "b" not in recorder.log or "a" not in recorder.log:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    state = await team.save_state()
    manager = state["agent_states"]["GraphFlowManager"]
    assert list(manager["map_items"]) == ["researcher"]
    # Instance 0 finished: it is recorded (its output is in the thread, map_next counts
    # it) and does not run again.
    assert manager["map_next"] == {"researcher": 1}
    assert not manager.get("map_done", {}).get("researcher")
    assert [m["source"] for m in manager["message_thread"]][-1] == "researcher[0]"
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    gate.set()
    recorder.log.clear()
    fresh = build()
    await fresh.load_state(state)
    result = await fresh.run()
    assert recorder.log == ["b", "writer"]
    assert result.messages[-1].to_text() == "about a + about b"


# --- build time -------------------------------------------------------------------------


def _nodes() -> DiGraphBuilder:
    recorder = Recorder()
    builder = DiGraphBuilder().add_node(recorder.planner("x")).add_node(recorder.researcher())
    return builder.add_node(recorder.writer())


def test_a_map_target_also_reached_by_a_plain_edge_is_refused() -> None:
    builder = _nodes().add_edge("planner", "researcher", map=split)
    builder.add_edge("planner", "writer").add_edge("writer", "researcher")
    with pytest.raises(MapEdgeConflictError, match="`writer -> researcher`") as raised:
        builder.build()
    assert raised.value.nodes == ("researcher",)


def test_a_map_self_loop_is_refused() -> None:
    builder = _nodes().add_edge("planner", "researcher").add_edge("researcher", "writer")
    builder.add_edge("writer", "writer", map=split, condition="again")
    with pytest.raises(MapEdgeConflictError, match="self-loop"):
        builder.build()


def test_bad_map_arguments_are_named_errors() -> None:
    with pytest.raises(ArgumentTypeError, match="`map` must be a function"):
        _nodes().add_edge("planner", "researcher", map="split")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="map edges only"):
        _nodes().add_edge("planner", "researcher", max_concurrency=2)
    with pytest.raises(InvalidArgumentError, match="positive integer"):
        _nodes().add_edge("planner", "researcher", map=split, max_concurrency=0)


def test_a_map_edge_dumps_by_name_and_loads_only_with_its_function() -> None:
    builder = _nodes().add_edge("planner", "researcher", map=split, max_concurrency=3)
    graph = builder.add_edge("researcher", "writer").build()
    data = graph.dump()
    edge = data["nodes"]["planner"]["edges"][0]
    assert (edge["map"], edge["max_concurrency"]) == ("split", 3)
    assert "map" not in data["nodes"]["researcher"]["edges"][0]  # plain edges as before
    with pytest.raises(ConditionSerializationError, match=r"maps=\{'split': func\}"):
        DiGraph.load(data)
    loaded = DiGraph.load(data, maps={"split": split})
    assert loaded.nodes["planner"].edges[0].map_function is split
    assert loaded.dump() == data
