"""Flows for ``test_crash_check.py``: each ``build_*`` takes ``checkpoint_store=`` as
``flowlib check --crash`` needs; the check imports this file in fresh processes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowlib.agents import AssistantAgent, BaseChatAgent, FunctionAgent
from flowlib.base import CancellationToken, Response
from flowlib.graph import Not
from flowlib.messages import BaseChatMessage, TextMessage
from flowlib.models import ReplayChatCompletionClient
from flowlib.teams import DiGraphBuilder, GraphFlow


class Counter(BaseChatAgent):
    """Counts its turns and says the count. ``keep`` decides whether its state keeps it."""

    def __init__(self, name: str, *, keep: bool) -> None:
        super().__init__(name, "counts")
        self.count = 0
        self.keep = keep

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        self.count += 1
        return Response(chat_message=TextMessage(content=f"count {self.count}", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.count = 0

    async def save_state(self) -> Mapping[str, Any]:
        return {"count": self.count} if self.keep else {}

    async def load_state(self, state: Mapping[str, Any]) -> None:
        self.count = int(state.get("count", 0))


def _loop(node: Any, store: Any) -> GraphFlow:
    """`writer -> node`, back to `writer` until `node` says "3", then `done`."""
    writer = FunctionAgent(lambda messages: "next", name="writer")
    done = FunctionAgent(lambda messages: "done", name="done")
    builder = DiGraphBuilder().add_node(writer).add_node(node).add_node(done)
    builder.add_edge(writer, node)
    builder.add_edge(node, writer, condition=Not(condition="3"))
    builder.add_edge(node, done, condition="3")
    builder.set_entry_point(writer)
    return GraphFlow(
        builder.get_participants(), builder.build(), max_turns=30, checkpoint_store=store
    )


def build_forgetful(*, checkpoint_store: Any = None) -> GraphFlow:
    """`counter`'s save_state forgets its count."""
    return _loop(Counter("counter", keep=False), checkpoint_store)


def build_fixed(*, checkpoint_store: Any = None) -> GraphFlow:
    """The same flow, `counter` keeping its count."""
    return _loop(Counter("counter", keep=True), checkpoint_store)


TALLY = {"n": 0}


def _tally(messages: list[BaseChatMessage]) -> str:
    TALLY["n"] += 1
    return f"tally {TALLY['n']}"


def build_global(*, checkpoint_store: Any = None) -> GraphFlow:
    """A function node counting in a module global."""
    return _loop(FunctionAgent(_tally, name="tally"), checkpoint_store)


def _honest(messages: list[BaseChatMessage]) -> str:
    return f"seen {len(messages)}: " + " ".join(m.to_text() for m in messages)


def build_honest(*, checkpoint_store: Any = None) -> GraphFlow:
    """Function nodes whose replies depend only on what they are given, in a chain with
    a parallel pair: `writer -> (left, right) -> join`."""
    nodes = [FunctionAgent(_honest, name=name) for name in ("writer", "left", "right", "join")]
    writer, left, right, join = nodes
    builder = DiGraphBuilder()
    for node in nodes:
        builder.add_node(node)
    builder.add_edge(writer, left).add_edge(writer, right)
    builder.add_edge(left, join).add_edge(right, join)
    return GraphFlow(builder.get_participants(), builder.build(), checkpoint_store=checkpoint_store)


def build_scripted(*, checkpoint_store: Any = None) -> GraphFlow:
    """An AssistantAgent on a scripted model that answers on several turns, in a loop with
    a function-node critic: a resumed run must go on with the script where it was."""
    writer = AssistantAgent(
        "writer",
        model_client=ReplayChatCompletionClient(["draft 1", "draft 2", "draft 3"]),
    )
    critic = FunctionAgent(
        lambda messages: "APPROVE" if "draft 3" in messages[-1].to_text() else "REVISE",
        name="critic",
    )
    builder = DiGraphBuilder().add_node(writer).add_node(critic)
    builder.add_edge(writer, critic)
    builder.add_edge(critic, writer, condition="REVISE")
    builder.set_entry_point(writer)
    return GraphFlow(
        builder.get_participants(), builder.build(), max_turns=20, checkpoint_store=checkpoint_store
    )
