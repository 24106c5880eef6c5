"""Tests for flowlib.conditions and the termination protocol in flowlib.base."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

import flowlib.conditions
from flowlib.base import (
    AndTerminationCondition,
    OrTerminationCondition,
    TerminatedException,
    TerminationCondition,
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
from flowlib.errors import FlowlibError
from flowlib.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    StopMessage,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from flowlib.models import FunctionCall, FunctionExecutionResult, RequestUsage

Messages = Sequence[BaseAgentEvent | BaseChatMessage]


def text(content: str, source: str = "assistant", usage: RequestUsage | None = None) -> TextMessage:
    return TextMessage(content=content, source=source, models_usage=usage)


def tool_request(name: str = "add", source: str = "assistant") -> ToolCallRequestEvent:
    return ToolCallRequestEvent(
        content=[FunctionCall(id="1", arguments='{"a": 1}', name=name)], source=source
    )


def tool_result(
    name: str, source: str = "assistant", is_error: bool = False
) -> ToolCallExecutionEvent:
    return ToolCallExecutionEvent(
        content=[FunctionExecutionResult(content="ok", name=name, call_id="1", is_error=is_error)],
        source=source,
    )


def usage(prompt: int, completion: int) -> RequestUsage:
    return RequestUsage(prompt_tokens=prompt, completion_tokens=completion)


async def assert_spent(condition: TerminationCondition) -> None:
    assert condition.terminated
    with pytest.raises(TerminatedException) as caught:
        await condition([text("anything")])
    assert str(caught.value) == "Termination condition has already been reached"


# --------------------------------------------------------------------------- public surface


def test_conditions_all_matches_exports() -> None:
    exported = {name for name in dir(flowlib.conditions) if not name.startswith("_")}
    assert set(flowlib.conditions.__all__) == exported
    assert len(flowlib.conditions.__all__) == 11


def test_terminated_exception_is_a_flowlib_runtime_error() -> None:
    error = TerminatedException()
    assert isinstance(error, FlowlibError)
    assert isinstance(error, RuntimeError)
    assert str(error) == "Termination condition has already been reached"
    assert str(TerminatedException("custom")) == "custom"


def test_termination_condition_is_abstract() -> None:
    with pytest.raises(TypeError):
        TerminationCondition()  # type: ignore[abstract]


# --------------------------------------------------------------------------- MaxMessage


async def test_max_message_counts_chat_messages_across_calls() -> None:
    condition = MaxMessageTermination(3)
    assert not condition.terminated
    assert await condition([text("task", source="user")]) is None
    assert await condition([text("one")]) is None
    assert not condition.terminated
    stop = await condition([text("two")])
    assert stop is not None
    assert stop.content == "Maximum number of messages 3 reached, current message count: 3"
    assert stop.source == "MaxMessageTermination"
    await assert_spent(condition)


async def test_max_message_reports_overshoot_within_one_delta() -> None:
    condition = MaxMessageTermination(2)
    stop = await condition([text("a"), text("b"), text("c")])
    assert stop is not None
    assert stop.content == "Maximum number of messages 2 reached, current message count: 3"


async def test_max_message_ignores_events_by_default() -> None:
    condition = MaxMessageTermination(2)
    assert await condition([tool_request(), tool_result("add"), text("done")]) is None
    stop = await condition([tool_request(), text("again")])
    assert stop is not None
    assert stop.content.endswith("current message count: 2")


async def test_max_message_counts_events_when_asked() -> None:
    condition = MaxMessageTermination(3, include_agent_event=True)
    stop = await condition([tool_request(), tool_result("add"), text("done")])
    assert stop is not None
    assert stop.content == "Maximum number of messages 3 reached, current message count: 3"


async def test_max_message_reset_restarts_the_count() -> None:
    condition = MaxMessageTermination(2)
    assert await condition([text("a"), text("b")]) is not None
    await condition.reset()
    assert not condition.terminated
    assert await condition([text("c")]) is None
    assert await condition([text("d")]) is not None


def test_max_message_rejects_zero() -> None:
    with pytest.raises(ValueError, match="max_messages"):
        MaxMessageTermination(0)


# --------------------------------------------------------------------------- TextMention


async def test_text_mention_fires_on_substring() -> None:
    condition = TextMentionTermination("APPROVE")
    assert await condition([text("Looks good, but not yet.")]) is None
    stop = await condition([text("I APPROVE this.")])
    assert stop is not None
    assert stop.content == "Text 'APPROVE' mentioned"
    assert stop.source == "TextMentionTermination"
    await assert_spent(condition)


async def test_text_mention_is_case_sensitive() -> None:
    condition = TextMentionTermination("APPROVE")
    assert await condition([text("approve")]) is None


async def test_text_mention_checks_events_to_text() -> None:
    condition = TextMentionTermination("TERMINATE")
    event = tool_request(name="TERMINATE_now")
    assert "TERMINATE" in event.to_text()
    assert await condition([event]) is not None


async def test_text_mention_checks_other_chat_messages() -> None:
    condition = TextMentionTermination("TERMINATE")
    summary = ToolCallSummaryMessage(
        content="TERMINATE", source="assistant", tool_calls=[], results=[]
    )
    assert await condition([summary]) is not None


async def test_text_mention_sources_filter() -> None:
    condition = TextMentionTermination("APPROVE", sources=["critic"])
    assert await condition([text("APPROVE", source="primary")]) is None
    assert not condition.terminated
    stop = await condition([text("APPROVE", source="critic")])
    assert stop is not None
    assert stop.content == "Text 'APPROVE' mentioned"


async def test_text_mention_reset() -> None:
    condition = TextMentionTermination("STOP")
    assert await condition([text("STOP")]) is not None
    await condition.reset()
    assert not condition.terminated
    assert await condition([text("go on")]) is None


def test_text_mention_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        TextMentionTermination("")
    with pytest.raises(TypeError, match=r"sources=\['critic'\]"):
        TextMentionTermination("APPROVE", sources="critic")
    with pytest.raises(ValueError):
        TextMentionTermination("APPROVE", sources=[])


async def test_text_mention_copies_sources() -> None:
    sources = ["critic"]
    condition = TextMentionTermination("APPROVE", sources=sources)
    sources.append("primary")
    assert await condition([text("APPROVE", source="primary")]) is None


# --------------------------------------------------------------------------- StopMessage


async def test_stop_message_termination() -> None:
    condition = StopMessageTermination()
    assert await condition([]) is None
    assert await condition([text("stop")]) is None
    stop = await condition([text("hi"), StopMessage(content="bye", source="agent")])
    assert stop is not None
    assert stop.content == "Stop message received"
    assert stop.source == "StopMessageTermination"
    await assert_spent(condition)
    await condition.reset()
    assert await condition([text("hi")]) is None


# --------------------------------------------------------------------------- TokenUsage


def test_token_usage_needs_a_limit() -> None:
    with pytest.raises(ValueError, match="At least one of max_total_token"):
        TokenUsageTermination()
    with pytest.raises(ValueError, match="max_prompt_token"):
        TokenUsageTermination(max_prompt_token=0)


async def test_token_usage_total_sums_across_calls_and_events() -> None:
    condition = TokenUsageTermination(max_total_token=30)
    assert await condition([text("a", usage=usage(10, 5))]) is None
    assert await condition([text("no usage")]) is None
    event = ToolCallRequestEvent(
        content=[FunctionCall(id="1", arguments="{}", name="f")],
        source="assistant",
        models_usage=usage(10, 5),
    )
    stop = await condition([event])
    assert stop is not None
    assert stop.content == (
        "Token usage limit reached, total token count: 30, prompt token count: 20, "
        "completion token count: 10."
    )
    assert stop.source == "TokenUsageTermination"
    await assert_spent(condition)


async def test_token_usage_prompt_and_completion_limits() -> None:
    prompt = TokenUsageTermination(max_prompt_token=10)
    assert await prompt([text("a", usage=usage(9, 100))]) is None
    assert await prompt([text("b", usage=usage(1, 0))]) is not None

    completion = TokenUsageTermination(max_completion_token=10)
    assert await completion([text("a", usage=usage(100, 9))]) is None
    assert await completion([text("b", usage=usage(0, 1))]) is not None


async def test_token_usage_reset_clears_counts() -> None:
    condition = TokenUsageTermination(max_total_token=10)
    assert await condition([text("a", usage=usage(5, 5))]) is not None
    await condition.reset()
    assert not condition.terminated
    assert await condition([text("b", usage=usage(4, 5))]) is None


# --------------------------------------------------------------------------- Handoff


async def test_handoff_termination() -> None:
    condition = HandoffTermination("user")
    to_bob = HandoffMessage(content="over to bob", target="bob", source="alice")
    assert await condition([to_bob, text("user")]) is None
    to_user = HandoffMessage(content="need input", target="user", source="lazy_assistant")
    stop = await condition([to_user])
    assert stop is not None
    assert stop.content == "Handoff to user from lazy_assistant detected."
    assert stop.source == "HandoffTermination"
    await assert_spent(condition)
    await condition.reset()
    assert await condition([to_bob]) is None


# --------------------------------------------------------------------------- Timeout


async def test_timeout_fires_after_the_deadline() -> None:
    condition = TimeoutTermination(0.05)
    await asyncio.sleep(0.3)
    stop = await condition([])
    assert stop is not None
    assert stop.content == "Timeout of 0.05 seconds reached"
    assert stop.source == "TimeoutTermination"
    await assert_spent(condition)


async def test_timeout_does_not_fire_early() -> None:
    condition = TimeoutTermination(3600)
    assert await condition([text("hi")]) is None
    assert await condition([]) is None
    assert not condition.terminated


async def test_timeout_clock_starts_at_construction_and_restarts_on_reset() -> None:
    now = [100.0]
    condition = TimeoutTermination(10, clock=lambda: now[0])
    now[0] = 109.9
    assert await condition([]) is None
    now[0] = 110.0
    stop = await condition([])
    assert stop is not None
    assert stop.content == "Timeout of 10 seconds reached"
    now[0] = 200.0
    await condition.reset()
    now[0] = 205.0
    assert await condition([]) is None
    now[0] = 210.0
    assert await condition([]) is not None


def test_timeout_rejects_negative() -> None:
    with pytest.raises(ValueError):
        TimeoutTermination(-1)


# --------------------------------------------------------------------------- External


async def test_external_set_before_the_call() -> None:
    condition = ExternalTermination()
    assert await condition([text("a")]) is None
    condition.set()
    assert not condition.terminated
    stop = await condition([])
    assert stop is not None
    assert stop.content == "External termination requested"
    assert stop.source == "ExternalTermination"
    await assert_spent(condition)


async def test_external_set_while_a_call_is_pending() -> None:
    condition = ExternalTermination()
    first = await condition([text("turn 1")])
    assert first is None
    condition.set()  # e.g. a UI stop button, between two agent turns
    assert await condition([text("turn 2")]) is not None


async def test_external_reset_clears_the_request() -> None:
    condition = ExternalTermination()
    condition.set()
    await condition.reset()
    assert await condition([text("a")]) is None
    condition.set()
    assert await condition([text("b")]) is not None
    await condition.reset()
    assert not condition.terminated
    assert await condition([text("c")]) is None


# --------------------------------------------------------------------------- SourceMatch


async def test_source_match_termination() -> None:
    condition = SourceMatchTermination(["critic", "judge"])
    assert await condition([]) is None
    assert await condition([text("hello", source="primary")]) is None
    stop = await condition([text("hi", source="primary"), text("done", source="judge")])
    assert stop is not None
    assert stop.content == "'judge' answered"
    assert stop.source == "SourceMatchTermination"
    await assert_spent(condition)
    await condition.reset()
    assert await condition([text("x", source="primary")]) is None


def test_source_match_rejects_bad_sources() -> None:
    with pytest.raises(TypeError):
        SourceMatchTermination("critic")
    with pytest.raises(ValueError):
        SourceMatchTermination([])


# --------------------------------------------------------------------------- TextMessage


async def test_text_message_termination_any_source() -> None:
    condition = TextMessageTermination()
    assert await condition([tool_request(), tool_result("add")]) is None
    assert await condition([StopMessage(content="x", source="a")]) is None
    stop = await condition([text("answer", source="looped_assistant")])
    assert stop is not None
    assert stop.content == "Text message received from 'looped_assistant'"
    assert stop.source == "TextMessageTermination"
    await assert_spent(condition)


async def test_text_message_termination_source_filter() -> None:
    condition = TextMessageTermination("looped_assistant")
    assert await condition([text("task", source="user")]) is None
    assert await condition([text("answer", source="looped_assistant")]) is not None
    await condition.reset()
    assert await condition([text("task", source="user")]) is None


# --------------------------------------------------------------------------- FunctionCall


async def test_function_call_termination() -> None:
    condition = FunctionCallTermination("approve")
    assert await condition([tool_request("approve")]) is None
    assert await condition([tool_result("reject")]) is None
    stop = await condition([tool_result("approve")])
    assert stop is not None
    assert stop.content == "Function 'approve' was executed."
    assert stop.source == "FunctionCallTermination"
    await assert_spent(condition)
    await condition.reset()
    assert await condition([tool_result("reject")]) is None


async def test_function_call_termination_finds_one_result_among_several() -> None:
    condition = FunctionCallTermination("approve")
    event = ToolCallExecutionEvent(
        content=[
            FunctionExecutionResult(content="1", name="add", call_id="1", is_error=False),
            FunctionExecutionResult(content="ok", name="approve", call_id="2", is_error=True),
        ],
        source="assistant",
    )
    assert await condition([event]) is not None


# --------------------------------------------------------------------------- Functional


async def test_functional_termination_sync() -> None:
    seen: list[int] = []

    def last_is_stop(messages: Messages) -> bool:
        seen.append(len(messages))
        return bool(messages) and isinstance(messages[-1], StopMessage)

    condition = FunctionalTermination(last_is_stop)
    assert await condition([text("a"), text("b")]) is None
    stop = await condition([StopMessage(content="Stop", source="agent1")])
    assert stop == StopMessage(
        source="FunctionalTermination",
        content="Functional termination condition met",
        id=stop.id,
        created_at=stop.created_at,
    )
    assert seen == [2, 1]  # it receives each delta, not the whole history
    await assert_spent(condition)
    assert seen == [2, 1]
    await condition.reset()
    assert await condition([text("c")]) is None


async def test_functional_termination_async() -> None:
    async def mentions_done(messages: Messages) -> bool:
        await asyncio.sleep(0)
        return any("done" in message.to_text() for message in messages)

    condition = FunctionalTermination(mentions_done)
    assert await condition([text("working")]) is None
    stop = await condition([text("done")])
    assert stop is not None
    assert stop.content == "Functional termination condition met"
    assert stop.source == "FunctionalTermination"


def test_functional_termination_rejects_non_callable() -> None:
    with pytest.raises(TypeError):
        FunctionalTermination("not a function")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- And / Or


async def test_or_fires_when_either_fires() -> None:
    condition = MaxMessageTermination(10) | TextMentionTermination("APPROVE")
    assert isinstance(condition, OrTerminationCondition)
    assert await condition([text("draft")]) is None
    stop = await condition([text("APPROVE")])
    assert stop is not None
    assert stop.content == "Text 'APPROVE' mentioned"
    assert stop.source == "TextMentionTermination"
    await assert_spent(condition)


async def test_or_joins_parts_that_fire_together() -> None:
    condition = MaxMessageTermination(1) | TextMentionTermination("APPROVE")
    stop = await condition([text("APPROVE")])
    assert stop is not None
    assert stop.content == (
        "Maximum number of messages 1 reached, current message count: 1, Text 'APPROVE' mentioned"
    )
    assert stop.source == "MaxMessageTermination, TextMentionTermination"


async def test_or_feeds_every_part_every_delta_and_resets_them() -> None:
    count = MaxMessageTermination(3)
    external = ExternalTermination()
    condition = external | count
    assert await condition([text("a")]) is None
    external.set()
    stop = await condition([text("b")])
    assert stop is not None
    assert stop.content == "External termination requested"
    await condition.reset()
    assert not condition.terminated
    assert not external.terminated
    # The count was reset too: two more messages do not reach 3.
    assert await condition([text("c"), text("d")]) is None
    assert await condition([text("e")]) is not None


async def test_and_fires_once_every_part_has_fired_on_different_deltas() -> None:
    max_two = MaxMessageTermination(2)
    mention = TextMentionTermination("APPROVE")
    condition = mention & max_two
    assert isinstance(condition, AndTerminationCondition)
    assert await condition([text("APPROVE")]) is None
    assert mention.terminated
    assert not condition.terminated
    # `mention` already fired, so it is not called again (it would raise).
    stop = await condition([text("more")])
    assert stop is not None
    assert stop.content == (
        "Text 'APPROVE' mentioned, Maximum number of messages 2 reached, current message count: 2"
    )
    assert stop.source == "TextMentionTermination, MaxMessageTermination"
    await assert_spent(condition)


async def test_and_fires_when_parts_fire_on_the_same_delta() -> None:
    condition = TextMentionTermination("APPROVE") & MaxMessageTermination(1)
    stop = await condition([text("APPROVE")])
    assert stop is not None
    assert stop.source == "TextMentionTermination, MaxMessageTermination"


async def test_and_reset_resets_parts_and_forgets_fired_ones() -> None:
    mention = TextMentionTermination("APPROVE")
    external = ExternalTermination()
    condition = mention & external
    assert await condition([text("APPROVE")]) is None
    await condition.reset()
    assert not mention.terminated
    external.set()
    # After the reset `mention` must fire again before the AND does.
    assert await condition([text("no")]) is None
    stop = await condition([text("APPROVE")])
    assert stop is not None
    assert stop.content == "External termination requested, Text 'APPROVE' mentioned"


async def test_combinations_nest() -> None:
    condition = (TextMentionTermination("A") & TextMentionTermination("B")) | MaxMessageTermination(
        5
    )
    assert await condition([text("A")]) is None
    stop = await condition([text("B")])
    assert stop is not None
    assert stop.content == "Text 'A' mentioned, Text 'B' mentioned"


def test_combinator_validation() -> None:
    with pytest.raises(ValueError):
        AndTerminationCondition()
    with pytest.raises(ValueError):
        OrTerminationCondition()
    with pytest.raises(TypeError):
        OrTerminationCondition(MaxMessageTermination(1), "APPROVE")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MaxMessageTermination(1) | "APPROVE"  # type: ignore[operator]


# --------------------------------------------------------------------------- custom conditions


class _EveryOther(TerminationCondition):
    """A user-defined condition written as in the AutoGen docs."""

    def __init__(self) -> None:
        self._calls = 0
        self._terminated = False

    @property
    def terminated(self) -> bool:
        return self._terminated

    async def __call__(self, messages: Messages) -> StopMessage | None:
        if self._terminated:
            raise TerminatedException("Termination condition has already been reached")
        self._calls += 1
        if self._calls == 2:
            self._terminated = True
            return StopMessage(content="second call", source="EveryOther")
        return None

    async def reset(self) -> None:
        self._calls = 0
        self._terminated = False


async def test_custom_condition_combines_with_built_ins() -> None:
    condition = _EveryOther() | MaxMessageTermination(10)
    assert await condition([text("a")]) is None
    stop = await condition([text("b")])
    assert stop is not None
    assert stop.content == "second call"
    assert stop.source == "EveryOther"


def test_repr_shows_constructor_arguments() -> None:
    condition = MaxMessageTermination(3) | TextMentionTermination("APPROVE", sources=["critic"])
    assert repr(condition) == (
        "OrTerminationCondition(MaxMessageTermination(max_messages=3, include_agent_event=False), "
        "TextMentionTermination(text='APPROVE', sources=['critic']))"
    )
