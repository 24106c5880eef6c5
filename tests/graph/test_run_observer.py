"""The run observer seam (issue 22.4): a trace observer with the run and turn methods is
told when each run starts and ends and when each turn starts, takes a step and ends, by
the executor itself (telemetry's run and turn spans are such an observer)."""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Sequence

import pytest

from flowlib.agents import AssistantAgent
from flowlib.errors import NodeExecutionError
from flowlib.graph import RunObserver, RunTrace, TurnScope
from flowlib.messages import BaseChatMessage, ModelClientStreamingChunkEvent
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow
from flowlib.testing import ScriptedAgent

_IN_TURN: contextvars.ContextVar[str | None] = contextvars.ContextVar("in_turn", default=None)


class Scope:
    def __init__(self, log: list[tuple[object, ...]], name: str) -> None:
        self.log = log
        self.name = name
        self.steps = 0
        self.token: contextvars.Token[str | None] | None = None

    def enter(self) -> None:
        self.steps += 1
        self.token = _IN_TURN.set(self.name)

    def exit(self) -> None:
        assert self.token is not None
        _IN_TURN.reset(self.token)
        self.token = None

    def end(self, error: BaseException | None) -> None:
        self.log.append(("end", self.name, type(error).__name__ if error else None))


class Observer:
    def __init__(self) -> None:
        self.log: list[tuple[object, ...]] = []
        self.scopes: list[Scope] = []

    def on_start(self, trace: RunTrace, step: int) -> None:
        pass

    def on_fire(self, trace: RunTrace, position: int) -> None:
        pass

    def on_clear(self, trace: RunTrace) -> None:
        pass

    def on_run_start(self, trace: RunTrace) -> None:
        self.log.append(("run",))

    def on_run_end(
        self, trace: RunTrace, messages: int | None, error: BaseException | None
    ) -> None:
        self.log.append(("run end", messages, type(error).__name__ if error else None))

    def on_turn_start(self, trace: RunTrace, step: int) -> TurnScope | None:
        name = trace.names[trace.step_nodes[step]]
        self.log.append(("turn", name, step + 1, trace.activation_group(step)))
        scope = Scope(self.log, name)
        self.scopes.append(scope)
        return scope


def _reply(name: str) -> object:
    def reply(turn: int, messages: Sequence[BaseChatMessage]) -> str:
        # The turn's scope is entered while the agent works on its turn.
        return f"{name} ran in {_IN_TURN.get()}"

    return reply


def _chain(*agents: ScriptedAgent | AssistantAgent) -> GraphFlow:
    builder = DiGraphBuilder()
    for agent in agents:
        builder.add_node(agent)
    for source, target in itertools.pairwise(agents):
        builder.add_edge(source, target)
    return GraphFlow(builder.get_participants(), builder.build())


async def test_an_observer_is_told_of_the_run_and_of_each_turn_start_step_and_end() -> None:
    a = ScriptedAgent("a", _reply("a"))  # type: ignore[arg-type]
    b = ScriptedAgent("b", _reply("b"))  # type: ignore[arg-type]
    team = _chain(a, b)
    observer = Observer()
    seam: RunObserver = observer
    team.trace.add_observer(seam)
    seen_by_consumer = []
    async for _item in team.run_stream(task="go"):
        seen_by_consumer.append(_IN_TURN.get())

    assert observer.log == [
        ("run",),
        ("turn", "a", 1, None),
        ("end", "a", None),
        ("turn", "b", 2, "b"),
        ("end", "b", None),
        ("run end", 3, None),
    ]
    assert a.replies == ["a ran in a"] and b.replies == ["b ran in b"]
    assert all(scope.steps >= 1 and scope.token is None for scope in observer.scopes)
    assert seen_by_consumer and set(seen_by_consumer) == {None}  # never between items

    team.trace.remove_observer(seam)
    await team.run(task="again")
    assert len(observer.log) == 6


async def test_a_failed_turn_ends_with_its_error_and_the_run_with_the_node_error() -> None:
    team = _chain(ScriptedAgent("a", ["x"]), ScriptedAgent("b", []))
    observer = Observer()
    team.trace.add_observer(observer)
    with pytest.raises(NodeExecutionError):
        await team.run(task="go")
    assert observer.log[-2:] == [
        ("end", "b", "ScriptExhaustedError"),
        ("run end", None, "NodeExecutionError"),
    ]


async def test_a_consumer_that_stops_reading_during_a_turn_ends_the_turn() -> None:
    a = AssistantAgent(
        "a", ReplayChatCompletionClient(["one two three", "again"]), model_client_stream=True
    )
    team = _chain(a, ScriptedAgent("b", ["y"]))
    observer = Observer()
    team.trace.add_observer(observer)
    stream = team.run_stream(task="go")
    async for item in stream:
        if isinstance(item, ModelClientStreamingChunkEvent):
            break  # a's first chunk: its turn has not ended yet
    await stream.aclose()
    assert observer.log == [
        ("run",),
        ("turn", "a", 1, None),
        ("end", "a", "GeneratorExit"),
        ("run end", None, "GeneratorExit"),
    ]
    result = await team.run()  # the team is free again: a's turn runs again
    assert [m.source for m in result.messages] == ["a", "b"]
