"""How one turn runs on flowlib's own agents and teams.

Each conversation owns its state: a turn starts from the state the previous turn of the
same conversation ended with, and ends by saving the new one. So continuing from an
older reply continues that reply's conversation (a branch), never another one's.

- ``AssistantBackend`` (``Agent(name, model_client, ...)``) builds a fresh
  ``AssistantAgent`` for every turn, with the enqueue hook as its model context, and
  loads the conversation's state into it. Turns of different conversations can run at
  the same time.
- ``WrappedBackend`` (``Agent.from_chat_agent`` / ``Agent.from_team``) has one
  object, so it runs one turn at a time (a lock): load the conversation's state (or the
  object's state from before its first turn), run, save.
"""

from __future__ import annotations

import asyncio
import copy
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import KW_ONLY, dataclass
from typing import Any

from .._cancellation import CancellationToken
from ..agents import AssistantAgent
from ..base import ChatAgent, TaskResult, Team
from ..memory import Memory
from ..messages import BaseAgentEvent, BaseChatMessage
from ..model_context import UnboundedChatCompletionContext
from ..models import ChatCompletionClient
from ..tools import Tool
from ._errors import ConversationError
from ._inbox import InboxContext
from ._turn import Turn

__all__ = ["AssistantBackend", "Backend", "TurnOutcome", "WrappedBackend"]

_Item = BaseAgentEvent | BaseChatMessage | TaskResult


@dataclass(frozen=True)
class TurnOutcome:
    """A finished turn: what the agent or team returned and the conversation's new state."""

    task_result: TaskResult
    response: BaseChatMessage
    state: Mapping[str, Any]


class Backend(ABC):
    """Runs a turn of a conversation from its state."""

    name: str
    description: str

    async def run_turn(
        self,
        messages: Sequence[BaseChatMessage],
        state: Mapping[str, Any] | None,
        turn: Turn,
        token: CancellationToken,
    ) -> TurnOutcome:
        """Run one turn on ``messages``, starting from ``state`` (``None``: a new one),
        and save the new state."""
        async with self._runner(state, turn) as runner:
            items = runner.run_stream(task=list(messages), cancellation_token=token)
            result, response = await consume(self.name, items, messages, turn)
            return TurnOutcome(result, response, await runner.save_state())

    @abstractmethod
    def _runner(
        self, state: Mapping[str, Any] | None, turn: Turn
    ) -> AbstractAsyncContextManager[ChatAgent | Team]:
        """The agent or team that runs this turn, with ``state`` loaded, for the turn."""


@dataclass(eq=False)
class AssistantBackend(Backend):
    """A fresh ``AssistantAgent`` per turn, fed the conversation's state."""

    name: str
    model_client: ChatCompletionClient
    _: KW_ONLY
    system_message: str | None
    tools: Sequence[Tool]
    streaming: bool
    description: str
    max_tool_iterations: int
    memory: Sequence[Memory] | None

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        self.memory = None if self.memory is None else list(self.memory)
        # Build one agent now so invalid options fail here, not at the first turn.
        self._build(UnboundedChatCompletionContext())

    def _build(self, context: UnboundedChatCompletionContext | InboxContext) -> AssistantAgent:
        return AssistantAgent(
            self.name,
            self.model_client,
            tools=self.tools,
            model_context=context,
            description=self.description,
            system_message=self.system_message,
            model_client_stream=self.streaming,
            # Tools loop until the model answers: after max_tool_iterations rounds of
            # tool calls, one last call without tools makes it answer in text.
            reflect_on_tool_use=True,
            max_tool_iterations=self.max_tool_iterations,
            memory=self.memory,
        )

    @asynccontextmanager
    async def _runner(
        self, state: Mapping[str, Any] | None, turn: Turn
    ) -> AsyncIterator[ChatAgent | Team]:
        # A new agent each turn, fed the conversation's state.
        agent = self._build(InboxContext(UnboundedChatCompletionContext(), turn))
        if state is not None:
            await agent.load_state(copy.deepcopy(dict(state)))
        yield agent


class WrappedBackend(Backend):
    """One flowlib ``ChatAgent`` or ``Team``; its turns run one at a time."""

    def __init__(self, target: ChatAgent | Team) -> None:
        self.name = target.name
        self.description = target.description
        self.target = target
        self._lock: asyncio.Lock | None = None
        self._initial: Mapping[str, Any] | None = None

    @asynccontextmanager
    async def _runner(
        self, state: Mapping[str, Any] | None, turn: Turn
    ) -> AsyncIterator[ChatAgent | Team]:
        # The one target runs one turn at a time; a new conversation starts from its
        # state from before the first turn.
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._initial is None:
                self._initial = await self.target.save_state()
            start = state if state is not None else self._initial
            await self.target.load_state(copy.deepcopy(dict(start)))
            yield self.target


async def consume(
    name: str,
    items: AsyncGenerator[_Item, None],
    inputs: Sequence[BaseChatMessage],
    turn: Turn,
) -> tuple[TaskResult, BaseChatMessage]:
    """Emit what ``items`` yields; return its TaskResult and the turn's final message.

    Raises:
        HumanInputRequiredError: If a human was asked without a handler.
        ConversationError: If the turn produced no chat message.
    """
    result: TaskResult | None = None
    try:
        async with aclosing(items) as stream:
            async for item in stream:
                if isinstance(item, TaskResult):
                    result = item
                    continue
                await turn.emit(item)
                turn.check()
    except Exception as exc:
        # A tool or input function may have turned the missing-handler error into
        # something else (an error result, a RuntimeError); the turn fails with it.
        if turn.fatal is not None and turn.fatal is not exc:
            raise turn.fatal from exc
        raise
    turn.check()
    if result is None:  # pragma: no cover - run_stream always ends with a TaskResult
        raise ConversationError(f"`{name}` ended its turn without a TaskResult.")
    input_ids = {id(message) for message in inputs}
    for message in reversed(result.messages):
        if isinstance(message, BaseChatMessage) and id(message) not in input_ids:
            return result, message
    raise ConversationError(
        f"`{name}` ended its turn without producing a chat message, so there is no "
        "reply. For a team, check its termination condition and max_turns."
    )
