"""Bounded teams of every kind, for the "a crash never changes the outcome" tests.

Every model answers as a function of what it is sent (never of how often it was called),
so a team resumed in a fresh process must reproduce the uninterrupted run. Each team is
bounded by ``max_turns`` or by a counting termination condition that cuts it well before
it would end by itself, so a resumed run that restarted its budget would run longer.

``build(kind, bound, store, fail)``: ``fail`` is ``[calls left]``; the model call that
takes it below zero calls ``on_fail`` (raise, or kill the process).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from flowlib.agents import AssistantAgent
from flowlib.base import Handoff, TerminationCondition
from flowlib.checkpoint import CheckpointStore
from flowlib.conditions import (
    MaxMessageTermination,
    TextMentionTermination,
    TokenUsageTermination,
)
from flowlib.models import (
    CreateResult,
    FunctionCall,
    LLMMessage,
    ReplayChatCompletionClient,
    RequestUsage,
)
from flowlib.teams import (
    BaseGroupChat,
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)

Answer = Callable[[Sequence[LLMMessage]], "str | CreateResult"]
OnFail = Callable[[], None]


def _raise() -> None:
    raise RuntimeError("the model server is down")


class Scripted(ReplayChatCompletionClient):
    """A model whose answer is ``answer(messages)``; the call that takes ``fail[0]`` below
    zero calls ``on_fail`` first."""

    def __init__(self, answer: Answer, fail: list[int] | None, on_fail: OnFail) -> None:
        super().__init__(["unused"])
        self._answer = answer
        self._fail = fail
        self._on_fail = on_fail

    async def create(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> CreateResult:
        if self._fail is not None and self._fail[0] >= 0:
            self._fail[0] -= 1
            if self._fail[0] < 0:
                self._on_fail()
        answer = self._answer(messages)
        if isinstance(answer, CreateResult):
            return answer
        usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
        return CreateResult(finish_reason="stop", content=answer, usage=usage, cached=False)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, **kwargs)


BOUNDS: dict[str, Callable[[], dict[str, Any]]] = {
    "max_turns": lambda: {"max_turns": 5},
    "max_messages": lambda: {"termination_condition": MaxMessageTermination(6)},
    "token_usage": lambda: {"termination_condition": TokenUsageTermination(max_total_token=26)},
    "either": lambda: {
        "termination_condition": MaxMessageTermination(7, include_agent_event=True)
        | TextMentionTermination("never said")
    },
    "both": lambda: {
        "termination_condition": MaxMessageTermination(4)
        & TokenUsageTermination(max_completion_token=5)
    },
}


def _bounded(bound: str, *, cyclic_default: int | None = None) -> dict[str, Any]:
    kwargs = BOUNDS[bound]()
    if "max_turns" not in kwargs and cyclic_default is not None:
        kwargs["max_turns"] = cyclic_default  # a safety net far beyond the condition
    return kwargs


def _says(name: str) -> Answer:
    return lambda messages: f"{name} heard {len(messages)}"


def _agent(name: str, fail: list[int] | None, on_fail: OnFail, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(name, Scripted(_says(name), fail, on_fail), **kwargs)


def build(
    kind: str,
    bound: str,
    store: CheckpointStore | None,
    fail: list[int] | None = None,
    on_fail: OnFail = _raise,
    termination: TerminationCondition | None = None,
) -> BaseGroupChat:
    """A team of ``kind`` bounded by ``bound`` (see ``BOUNDS``)."""
    kwargs = _bounded(bound)
    if termination is not None:
        kwargs["termination_condition"] = termination
    if kind == "round_robin":
        agents = [_agent(name, fail, on_fail) for name in ("a", "b", "c")]
        return RoundRobinGroupChat(agents, checkpoint_store=store, **kwargs)
    if kind == "selector":
        names = ("a", "b", "c")

        def pick(messages: Sequence[LLMMessage]) -> str:
            return names[sum(len(str(m.content)) for m in messages) % 3]

        return SelectorGroupChat(
            [_agent(name, fail, on_fail) for name in names],
            model_client=Scripted(pick, fail, on_fail),
            allow_repeated_speaker=True,
            checkpoint_store=store,
            **kwargs,
        )
    if kind == "swarm":

        def hand(target: str, name: str) -> Answer:
            def answer(messages: Sequence[LLMMessage]) -> str | CreateResult:
                if len(messages) % 3 == 0:
                    call = FunctionCall(
                        id=f"c{len(messages)}", name=f"transfer_to_{target}", arguments="{}"
                    )
                    usage = RequestUsage(prompt_tokens=len(messages), completion_tokens=1)
                    return CreateResult(
                        finish_reason="function_calls", content=[call], usage=usage, cached=False
                    )
                return f"{name} heard {len(messages)}"

            return answer

        a = AssistantAgent(
            "a", Scripted(hand("b", "a"), fail, on_fail), handoffs=[Handoff(target="b")]
        )
        b = AssistantAgent(
            "b", Scripted(hand("a", "b"), fail, on_fail), handoffs=[Handoff(target="a")]
        )
        return Swarm([a, b], checkpoint_store=store, **kwargs)
    if kind == "magentic_one":

        def orchestrate(messages: Sequence[LLMMessage]) -> str:
            last = str(messages[-1].content)
            if last.startswith("We have been handed the request"):
                return "GIVEN FACTS: a question."
            if last.startswith("These are the members of the team"):
                return "- a answers\n- b checks"
            if last.startswith("As a reminder, the request"):
                speaker = ("a", "b")[len(messages) % 2]
                return json.dumps(
                    {
                        "is_request_satisfied": {"reason": "r", "answer": False},
                        "is_in_loop": {"reason": "r", "answer": False},
                        "is_progress_being_made": {"reason": "r", "answer": True},
                        "next_speaker": {"reason": "r", "answer": speaker},
                        "instruction_or_question": {"reason": "r", "answer": f"go {len(messages)}"},
                    }
                )
            return f"final answer after {len(messages)}"

        return MagenticOneGroupChat(
            [_agent(name, fail, on_fail) for name in ("a", "b")],
            model_client=Scripted(orchestrate, fail, on_fail),
            checkpoint_store=store,
            **kwargs,
        )
    if kind == "graph_flow":
        first, second = _agent("a", fail, on_fail), _agent("b", fail, on_fail)
        builder = DiGraphBuilder().add_node(first).add_node(second)
        builder.add_edge("a", "b").add_edge("b", "a", condition="heard").set_entry_point("a")
        return GraphFlow(
            builder.get_participants(), builder.build(), checkpoint_store=store, **kwargs
        )
    if kind == "nested":
        inner = RoundRobinGroupChat(
            [_agent("x", fail, on_fail), _agent("y", fail, on_fail)], max_turns=2, name="inner"
        )
        first, last = _agent("a", fail, on_fail), _agent("b", fail, on_fail)
        builder = DiGraphBuilder().add_node(first).add_node(inner).add_node(last)
        builder.add_edge("a", "inner").add_edge("inner", "b").set_entry_point("a")
        builder.add_edge("b", "a", condition="heard")
        return GraphFlow(
            builder.get_participants(), builder.build(), checkpoint_store=store, **kwargs
        )
    raise ValueError(f"unknown team kind {kind!r}")


KINDS = ("round_robin", "selector", "swarm", "magentic_one", "graph_flow", "nested")
