"""Termination conditions save and load their progress (issue 20 item 2).

The property: feeding a sequence of deltas to one condition, or feeding a prefix, saving,
loading the state into a fresh condition (through JSON, as a checkpoint does) and feeding
the rest, gives the same stop messages at the same calls. Every one of the eleven
conditions and ``&`` / ``|`` combinations of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowlib.base import (
    AndTerminationCondition,
    OrTerminationCondition,
    TerminationCondition,
    saves_state,
)
from flowlib.conditions import (
    ExternalTermination,
    FunctionalTermination,
    FunctionCallTermination,
    HandoffTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    StopMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
    TimeoutTermination,
    TokenUsageTermination,
)
from flowlib.errors import StateError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    StopMessage,
    TextMessage,
    ToolCallExecutionEvent,
)
from flowlib.models import FunctionExecutionResult, RequestUsage

Item = BaseAgentEvent | BaseChatMessage


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _item(kind: int, n: int) -> Item:
    source = ("a", "b", "c")[n % 3]
    usage = RequestUsage(prompt_tokens=n % 5, completion_tokens=n % 3)
    if kind == 0:
        return TextMessage(
            content=f"m{n} {'DONE' if n % 7 == 0 else ''}", source=source, models_usage=usage
        )
    if kind == 1:
        return HandoffMessage(content="over", target=("user", "b")[n % 2], source=source)
    if kind == 2:
        return ToolCallExecutionEvent(
            content=[FunctionExecutionResult(content="ok", name=("f", "g")[n % 2], call_id="1")],
            source=source,
        )
    return StopMessage(content="bye", source=source)


deltas = st.lists(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30)), max_size=3).map(
        lambda pairs: [_item(k, n) for k, n in pairs]
    ),
    min_size=1,
    max_size=8,
)

Factory = Callable[[FakeClock], TerminationCondition]

FACTORIES: dict[str, Factory] = {
    "max_messages": lambda clock: MaxMessageTermination(5),
    "max_messages_events": lambda clock: MaxMessageTermination(6, include_agent_event=True),
    "text_mention": lambda clock: TextMentionTermination("DONE", sources=["a", "b"]),
    "token_usage": lambda clock: TokenUsageTermination(max_total_token=12),
    "handoff": lambda clock: HandoffTermination("user"),
    "timeout": lambda clock: TimeoutTermination(3.0, clock=clock),
    "external": lambda clock: _pressed(),
    "source_match": lambda clock: SourceMatchTermination(["c"]),
    "text_message": lambda clock: TextMessageTermination("b"),
    "function_call": lambda clock: FunctionCallTermination("g"),
    "stop_message": lambda clock: StopMessageTermination(),
    "functional": lambda clock: FunctionalTermination(lambda items: len(items) == 3),
    "or": lambda clock: MaxMessageTermination(7) | TokenUsageTermination(max_prompt_token=9),
    "and": lambda clock: (
        MaxMessageTermination(3) & TextMentionTermination("DONE") & FunctionCallTermination("f")
    ),
    "nested": lambda clock: (
        (MaxMessageTermination(4) & HandoffTermination("b")) | TimeoutTermination(4.0, clock=clock)
    ),
}


def _pressed() -> ExternalTermination:
    button = ExternalTermination()
    button.set()
    return button


async def _feed(
    condition: TerminationCondition, clock: FakeClock, batches: Sequence[Sequence[Item]]
) -> list[str | None]:
    out: list[str | None] = []
    for batch in batches:
        clock.now += 1.0
        if condition.terminated:
            out.append("<terminated>")
            continue
        stop = await condition(batch)
        out.append(None if stop is None else f"{stop.source}: {stop.content}")
    return out


@pytest.mark.parametrize("kind", sorted(FACTORIES))
@settings(max_examples=30, deadline=None)
@given(batches=deltas, split=st.integers(0, 8))
async def test_saved_and_loaded_condition_continues_as_the_uninterrupted_one(
    kind: str, batches: list[list[Item]], split: int
) -> None:
    factory = FACTORIES[kind]
    reference = FakeClock()
    expected = await _feed(factory(reference), reference, batches)

    split = min(split, len(batches))
    clock = FakeClock()
    first = factory(clock)
    head = await _feed(first, clock, batches[:split])
    state = json.loads(json.dumps(await first.save_state()))  # as a checkpoint holds it
    other = FakeClock()
    other.now = 5_000.0 + clock.now  # another process's monotonic clock
    second = factory(other)
    await second.load_state(state)
    tail = await _feed(second, other, batches[split:])
    assert head + tail == expected
    assert saves_state(second)


async def test_a_condition_saves_whether_it_fired() -> None:
    first = MaxMessageTermination(1)
    assert await first([TextMessage(content="x", source="a")]) is not None
    second = MaxMessageTermination(1)
    await second.load_state(await first.save_state())
    assert second.terminated


async def test_a_state_of_another_condition_is_refused_and_changes_nothing() -> None:
    counter = MaxMessageTermination(3)
    await counter([TextMessage(content="x", source="a")])
    before = await counter.save_state()
    with pytest.raises(StateError, match="saved by `TextMentionTermination`"):
        await counter.load_state(await TextMentionTermination("x").save_state())
    with pytest.raises(StateError, match="message_count"):
        await counter.load_state({**before, "message_count": -1})
    with pytest.raises(StateError, match="version"):
        await counter.load_state({**before, "version": 99})
    assert await counter.save_state() == before


async def test_a_combination_refuses_a_state_with_other_parts_and_rolls_back() -> None:
    either = MaxMessageTermination(3) | TextMentionTermination("x")
    await either([TextMessage(content="y", source="a")])
    before = await either.save_state()
    other = MaxMessageTermination(3) | MaxMessageTermination(4)
    with pytest.raises(StateError):
        await either.load_state(await other.save_state())
    assert await either.save_state() == before
    with pytest.raises(StateError, match="parts"):
        await either.load_state({**before, "parts": before["parts"][:1]})


class UserCondition(TerminationCondition):
    """A user subclass that does not implement save_state: the replay rule applies."""

    def __init__(self) -> None:
        self._seen = 0
        self._fired = False

    @property
    def terminated(self) -> bool:
        return self._fired

    async def __call__(self, messages: Sequence[Item]) -> StopMessage | None:
        self._seen += len(messages)
        if self._seen >= 4:
            self._fired = True
            return StopMessage(content="four", source="UserCondition")
        return None

    async def reset(self) -> None:
        self._seen = 0
        self._fired = False


async def test_a_user_condition_without_save_state_is_flagged_for_the_replay_rule() -> None:
    user = UserCondition()
    assert not saves_state(user)
    assert not saves_state(MaxMessageTermination(2) | user)
    assert saves_state(MaxMessageTermination(2) | TextMentionTermination("x"))
    assert await user.save_state() == {}
    await user.load_state({})
    with pytest.raises(StateError, match="keeps no saved state"):
        await user.load_state({"x": 1})


def _all_eleven() -> list[type[Any]]:
    import flowlib.conditions

    return [getattr(flowlib.conditions, name) for name in flowlib.conditions.__all__]


def test_all_eleven_built_in_conditions_save_their_state() -> None:
    kinds = _all_eleven()
    assert len(kinds) == 11
    for kind in [*kinds, AndTerminationCondition, OrTerminationCondition]:
        assert kind.save_state is not TerminationCondition.save_state, kind
        assert kind.load_state is not TerminationCondition.load_state, kind
